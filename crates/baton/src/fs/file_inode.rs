//! What a [`File`] asks of and does to its inode beyond reads and writes: its metadata
//! (`statx` on the descriptor), its length (`ftruncate`), and writeback of a range
//! (`sync_file_range`) — ring requests, with the system call on the blocking pool where the
//! kernel lacks the opcode.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use baton_uring::ops;

use super::fallback::{OnDrop, ring_or_pool};
use super::{File, Metadata};

impl File {
    /// The file's metadata (`statx(2)` on the descriptor, through the ring), as
    /// `std::fs::File::metadata` gives it.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Runtime::new()?;
    /// # let path = std::env::temp_dir().join(format!("baton-doc-file-metadata-{}", std::process::id()));
    /// rt.block_on(async {
    ///     let file = baton::fs::File::create(&path).await?;
    ///     let (res, _buf) = file.write_all_at(b"abc".to_vec(), 0).await;
    ///     res?;
    ///     let meta = file.metadata().await?;
    ///     assert!(meta.is_file());
    ///     assert_eq!(meta.len(), 3);
    ///     baton::fs::remove_file(&path).await
    /// })
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The OS error (rare: the descriptor is open).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it changes nothing, so a dropped call can be made again.
    pub async fn metadata(&self) -> io::Result<Metadata> {
        let ring = ops::statx_fd(Arc::clone(&self.fd)).bind_borrowed(self.handle.driver());
        let ring = async { ring.await.map(|stx| Metadata::from_statx(&stx)) };
        ring_or_pool(
            &self.handle,
            "fs::File::metadata",
            OnDrop::Cancel,
            ring,
            || {
                let fd = Arc::clone(&self.fd);
                move || {
                    let file = std::fs::File::from(fd.try_clone()?);
                    file.metadata().map(Metadata::from)
                }
            },
        )
        .await
    }

    /// The file's size now, for the calls that need it without awaiting (`seek` from the end,
    /// `fs::read`'s first allocation): one `fstat(2)`, which an open descriptor answers from
    /// the inode without blocking on a path lookup.
    pub(super) fn len_now(&self) -> io::Result<u64> {
        let mut stat = MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `stat` is writable memory for one `struct stat`, and the descriptor is open
        // (this file owns a count of it).
        let rc = unsafe { libc::fstat(self.fd.as_raw_fd(), stat.as_mut_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fstat returned 0, so it filled `stat` in.
        let stat = unsafe { stat.assume_init() };
        Ok(u64::try_from(stat.st_size).unwrap_or(0))
    }

    /// Sets the descriptor's own offset with `lseek(2)` and returns where it landed, so the
    /// kernel judges a position as it does for std: past the file system's largest offset is
    /// `EINVAL`, and a pipe or socket is `ESPIPE`. Called without awaiting, like
    /// [`len_now`](File::len_now): on a local file system it reads at most the open inode's
    /// size, and does no I/O.
    pub(super) fn kernel_seek(&self, offset: i64, whence: libc::c_int) -> io::Result<u64> {
        // SAFETY: lseek reads and writes no memory of ours; the descriptor is open (this file
        // owns a count of it).
        let pos = unsafe { libc::lseek(self.fd.as_raw_fd(), offset, whence) };
        u64::try_from(pos).map_err(|_| io::Error::last_os_error())
    }

    /// Cuts the file to `size` bytes, or extends it with zeroes (`ftruncate(2)`: on the ring
    /// with `IORING_OP_FTRUNCATE`, Linux 6.9+; on the blocking pool before), as
    /// `std::fs::File::set_len` does. The change counts as a write: the next
    /// [`sync_all`](File::sync_all) really syncs.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Runtime::new()?;
    /// # let path = std::env::temp_dir().join(format!("baton-doc-set-len-{}", std::process::id()));
    /// rt.block_on(async {
    ///     let file = baton::fs::File::create(&path).await?;
    ///     let (res, _buf) = file.write_all_at(b"0123456789".to_vec(), 0).await;
    ///     res?;
    ///     file.set_len(4).await?;
    ///     assert_eq!(baton::fs::read(&path).await?, b"0123");
    ///     baton::fs::remove_file(&path).await
    /// })
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a `size` above `i64::MAX` (before anything is submitted), or the OS
    /// error (`EINVAL` for a file not open for writing, `EFBIG` past the file system's limit).
    ///
    /// # Cancel safety
    ///
    /// Retained: once polled, the length changes even if the future is dropped.
    pub async fn set_len(&self, size: u64) -> io::Result<()> {
        let Ok(len) = i64::try_from(size) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the length is above i64::MAX, which no file can have: pass a length of at \
                 most i64::MAX",
            ));
        };
        let driver = self.handle.driver();
        let ring = ops::ftruncate(Arc::clone(&self.fd), size).bind_borrowed(driver);
        // Atomic only so the future stays `Send`: this future alone sets and reads it, and its
        // polls are ordered.
        let on_pool = AtomicBool::new(false);
        ring_or_pool(
            &self.handle,
            "fs::File::set_len",
            OnDrop::Finish,
            ring,
            || {
                on_pool.store(true, Ordering::Relaxed);
                let (fd, driver) = (Arc::clone(&self.fd), driver.clone());
                move || {
                    retry_interrupted(|| {
                        // SAFETY: the descriptor stays open for the call: `fd` holds a count.
                        unsafe { libc::ftruncate(fd.as_raw_fd(), len) }
                    })?;
                    // Durability rule D3: the driver did not see this change; the next sync must
                    // not find the file clean. Noted here, so a dropped call notes it too.
                    driver.note_write(&fd);
                    Ok(())
                }
            },
        )
        .await?;
        if on_pool.load(Ordering::Relaxed) {
            // ... and again in program order, for a sync this caller makes next: the pool's
            // note may still sit in the driver's mailbox. (Through the ring, the driver counted
            // the truncate itself before this call returned.)
            driver.note_write(&self.fd);
        }
        Ok(())
    }

    /// Starts writeback of the file's dirty pages in `offset..offset + len` (`len` 0: to the
    /// end of the file) and waits for it (`sync_file_range(2)` with `WAIT_BEFORE | WRITE |
    /// WAIT_AFTER`, on the ring) — the way databases pace their writeback. It is **no
    /// durability guarantee**: it flushes neither the file's metadata nor the device's cache,
    /// so it never stands in for [`sync_data`](File::sync_data), and it does not make the next
    /// sync cheaper. Retained.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Runtime::new()?;
    /// # let path = std::env::temp_dir().join(format!("baton-doc-sync-range-{}", std::process::id()));
    /// rt.block_on(async {
    ///     let file = baton::fs::File::create(&path).await?;
    ///     let (res, _buf) = file.write_all_at(vec![7; 8192], 0).await;
    ///     res?;
    ///     file.sync_range(0, 4096).await?; // the first page is on its way to the device
    ///     file.sync_data().await?; // now the data is durable
    ///     baton::fs::remove_file(&path).await
    /// })
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a range that ends past `i64::MAX` (before anything is submitted, as
    /// the kernel's `EINVAL`), or the OS error (`ESPIPE` for a pipe, say).
    ///
    /// # Cancel safety
    ///
    /// Retained: a dropped call still runs each request it started. A range longer than
    /// 1 GiB is several requests; a drop between two leaves the rest unsynced.
    pub async fn sync_range(&self, offset: u64, len: u64) -> io::Result<()> {
        let end = offset
            .checked_add(len)
            .filter(|&end| end <= i64::MAX as u64)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the range does not fit: offset + len must be at most i64::MAX \
                     (len 0 syncs to the end of the file)",
                )
            })?;
        if len == 0 {
            return self.sync_chunk(offset, 0).await;
        }
        // Past the end of the file there is nothing to write back; requests for it would only
        // cost time (a range near i64::MAX is billions of 1 GiB requests).
        let end = end.min(self.len_now()?.max(offset));
        let mut at = offset;
        while at < end {
            let chunk = (end - at).min(SYNC_RANGE_CHUNK);
            self.sync_chunk(at, chunk as u32).await?;
            at += chunk;
        }
        Ok(())
    }

    /// One `sync_file_range` of at most [`SYNC_RANGE_CHUNK`] bytes (the ring's length is 32
    /// bits), on the ring, or on the pool where the kernel lacks the opcode.
    async fn sync_chunk(&self, offset: u64, len: u32) -> io::Result<()> {
        const FLAGS: u32 = libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        let ring = ops::sync_file_range(Arc::clone(&self.fd), offset, len, FLAGS);
        let ring = ring.bind_borrowed(self.handle.driver());
        ring_or_pool(
            &self.handle,
            "fs::File::sync_range",
            OnDrop::Finish,
            ring,
            || {
                let fd = Arc::clone(&self.fd);
                move || {
                    let offset = i64::try_from(offset).unwrap_or(i64::MAX);
                    retry_interrupted(|| {
                        // SAFETY: the descriptor stays open for the call: `fd` holds a count.
                        unsafe { libc::sync_file_range(fd.as_raw_fd(), offset, len.into(), FLAGS) }
                    })
                }
            },
        )
        .await
    }
}

/// The longest range one `sync_file_range` request covers (its length is 32 bits).
const SYNC_RANGE_CHUNK: u64 = 1 << 30;

/// Runs a system call that returns 0 or -1 with `errno`, again while it is interrupted.
fn retry_interrupted(mut call: impl FnMut() -> libc::c_int) -> io::Result<()> {
    loop {
        if call() == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}
