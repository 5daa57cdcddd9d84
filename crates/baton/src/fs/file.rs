//! [`File`]: positional reads and writes, syncs and close through the ring.

use std::fmt;
use std::future::Future;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use baton_uring::{SyncReceiver, ops};

use crate::context;
use crate::error::convert;
use crate::fs::OpenOptions;
use crate::handle::Handle;
use crate::io::{BufResult, IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};

/// An open file whose I/O runs on a Baton runtime's ring.
///
/// Methods take owned buffers and hand them back with the result, like tokio-uring's:
/// `let (res, buf) = file.read_at(buf, 0).await;`. Besides the positional calls, a `File` is
/// an [`AsyncRead`](crate::io::AsyncRead) + [`AsyncWrite`](crate::io::AsyncWrite) that reads and
/// writes at its own cursor ([`seek`](File::seek), [`stream_position`](File::stream_position)). The file remembers the runtime it was
/// opened on, so its operations may be awaited on any thread (they are forwarded to that
/// runtime's worker). Dropping a `File` closes its descriptor once every operation that still
/// uses it has completed; writes and syncs in flight are never cancelled by a drop.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let path = std::env::temp_dir().join(format!("baton-doc-file-{}", std::process::id()));
/// rt.block_on(async {
///     let file = baton::fs::File::create(&path).await?;
///     let (res, _buf) = file.write_all_at(b"hello".to_vec(), 0).await;
///     res?;
///     file.sync_all().await?;
///     let file = baton::fs::File::open(&path).await?;
///     let (res, buf) = file.read_at(vec![0; 5], 0).await;
///     assert_eq!(&buf[..res?], b"hello");
///     baton::fs::remove_file(&path).await
/// })
/// # }
/// ```
pub struct File {
    pub(super) fd: Arc<OwnedFd>,
    pub(super) handle: Handle,
    /// Where the sequential view (`AsyncRead`, `AsyncWrite`, [`seek`](File::seek)) reads and
    /// writes next; positional calls neither use nor move it.
    pub(super) pos: u64,
    /// Opened with `O_APPEND`: every write lands at the end, and the sequential view's cursor
    /// follows it there.
    pub(super) appends: bool,
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("File")
            .field("fd", &self.fd.as_raw_fd())
            .finish_non_exhaustive()
    }
}

impl File {
    /// `appends`: whether `fd` was opened with `O_APPEND`.
    pub(crate) fn from_parts(fd: OwnedFd, handle: Handle, appends: bool) -> File {
        File {
            fd: Arc::new(fd),
            handle,
            pos: 0,
            appends,
        }
    }

    /// Opens `path` read-only.
    ///
    /// # Errors
    ///
    /// The OS error of `open(2)`, or [`Error::NotInRuntime`](crate::Error::NotInRuntime) outside
    /// a runtime.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the open; a file the kernel opened for it anyway is
    /// closed by the driver.
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Opens `path` for writing, creating it or truncating it.
    ///
    /// # Errors
    ///
    /// As [`File::open`].
    ///
    /// # Cancel safety
    ///
    /// As [`open`](File::open).
    pub async fn create(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// Adopts a standard-library file, running its I/O on the current runtime. The sequential
    /// view's cursor starts where std's was.
    ///
    /// # Errors
    ///
    /// [`Error::NotInRuntime`](crate::Error::NotInRuntime) outside a runtime.
    pub fn from_std(file: std::fs::File) -> io::Result<File> {
        let handle = context::require("fs::File::from_std")?;
        let fd = OwnedFd::from(file);
        // SAFETY: F_GETFL reads the descriptor's status flags and touches no memory; `fd` is
        // open (owned here).
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut file = File::from_parts(fd, handle, flags & libc::O_APPEND != 0);
        // The cursor goes on from std's, as a std read would; a descriptor that cannot seek
        // (a pipe) has none, and starts at 0.
        file.pos = file.kernel_seek(0, libc::SEEK_CUR).unwrap_or(0);
        Ok(file)
    }

    /// Reads at `offset` into `buf`, from its beginning up to its capacity: the buffer comes
    /// back with its initialized length set to the count (`buf.len()` for a `Vec`; 0 at end of
    /// file). Slice the buffer ([`IoBuf::slice`](crate::io::IoBuf::slice)) to read into part
    /// of it. A buffer with no capacity, and an `offset` above `i64::MAX`, are `InvalidInput`,
    /// refused before anything is submitted.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// use baton::io::IoBuf;
    /// let rt = baton::Runtime::new()?;
    /// # let path = std::env::temp_dir().join(format!("baton-doc-read-at-{}", std::process::id()));
    /// rt.block_on(async {
    ///     baton::fs::write(&path, b"0123456789").await?;
    ///     let file = baton::fs::File::open(&path).await?;
    ///     let (res, buf) = file.read_at(Vec::with_capacity(4), 3).await; // the buffer comes back
    ///     assert_eq!(res?, 4);
    ///     assert_eq!(buf, b"3456");
    ///     let mut buf = Vec::with_capacity(6);
    ///     buf.extend_from_slice(b"ab");
    ///     let (res, slice) = file.read_at(buf.slice(2..), 6).await; // after the contents
    ///     assert_eq!(res?, 4);
    ///     assert_eq!(slice.into_inner(), b"ab6789");
    ///     baton::fs::remove_file(&path).await
    /// })
    /// # }
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Nothing is lost by a drop: a positional read moves no cursor, so a read cancelled by a
    /// drop (its buffer with it) can simply be issued again at the same offset.
    pub async fn read_at<B: IoBufMut>(&self, buf: B, offset: u64) -> BufResult<usize, B> {
        let op = ops::read_at(Arc::clone(&self.fd), buf, offset);
        let (res, buf) = op.bind_borrowed(self.handle.driver()).await;
        (convert(res), buf)
    }

    /// Fills `buf`'s whole capacity from `offset` (continuing after short reads); its
    /// initialized length becomes its capacity.
    ///
    /// # Errors
    ///
    /// `UnexpectedEof` if the file ends first (the buffer then holds what was read),
    /// `InvalidInput` for an `offset` above `i64::MAX`, or the OS error of a read.
    ///
    /// # Cancel safety
    ///
    /// As [`read_at`](File::read_at): a drop between two reads loses only which part of the
    /// buffer was filled; issue it again at the same offset.
    pub async fn read_exact_at<B: IoBufMut>(&self, buf: B, offset: u64) -> BufResult<(), B> {
        let total = buf.bytes_total();
        let mut buf = buf;
        let mut filled = 0;
        while filled < total {
            let at = match offset_after(offset, filled) {
                Ok(at) => at,
                Err(err) => return (Err(err), buf),
            };
            let (res, slice) = self.read_at(buf.slice(filled..), at).await;
            buf = slice.into_inner();
            match res {
                Ok(0) => {
                    let err = io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the file ended before the buffer was filled",
                    );
                    return (Err(err), buf);
                }
                Ok(n) => filled += n,
                Err(err) => return (Err(err), buf),
            }
        }
        (Ok(()), buf)
    }

    /// Writes `buf`'s initialized bytes at `offset`, returning how many were written and the
    /// buffer. The write is retained: dropping the future does not cancel it. An `offset`
    /// above `i64::MAX` is `InvalidInput`, refused before anything is submitted (io_uring
    /// would write at the file cursor); an empty buffer writes nothing and is `Ok(0)`, as
    /// std's.
    ///
    /// # Cancel safety
    ///
    /// Retained, not cancelled: a dropped write still lands (its count is lost with the
    /// future), and shutdown waits for it.
    pub async fn write_at<B: IoBuf>(&self, buf: B, offset: u64) -> BufResult<usize, B> {
        if buf.bytes_init() == 0 && offset <= i64::MAX as u64 {
            return (Ok(0), buf);
        }
        let op = ops::write_at(Arc::clone(&self.fd), buf, offset);
        let (res, buf) = op.bind_borrowed(self.handle.driver()).await;
        (convert(res), buf)
    }

    /// Writes all of `buf`'s initialized bytes at `offset`, continuing after short writes; the
    /// buffer comes back whole. An empty buffer writes nothing and succeeds.
    ///
    /// # Errors
    ///
    /// `WriteZero` if the kernel accepts no bytes, `InvalidInput` for an `offset` above
    /// `i64::MAX`, or the OS error of a write.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Runtime::new()?;
    /// # let path = std::env::temp_dir().join(format!("baton-doc-write-all-at-{}", std::process::id()));
    /// rt.block_on(async {
    ///     let file = baton::fs::File::create(&path).await?;
    ///     let (res, _buf) = file.write_all_at(b"abc".to_vec(), 2).await;
    ///     res?;
    ///     file.sync_data().await?;
    ///     assert_eq!(std::fs::read(&path)?, b"\0\0abc");
    ///     baton::fs::remove_file(&path).await
    /// })
    /// # }
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Not cancel-safe: each write is retained, but a drop between two writes leaves the rest
    /// unwritten. Await it to completion.
    pub async fn write_all_at<B: IoBuf>(&self, buf: B, offset: u64) -> BufResult<(), B> {
        let total = buf.bytes_init();
        let mut buf = buf;
        let mut written = 0;
        while written < total {
            let at = match offset_after(offset, written) {
                Ok(at) => at,
                Err(err) => return (Err(err), buf),
            };
            let (res, slice) = self.write_at(buf.slice(written..total), at).await;
            buf = slice.into_inner();
            match res {
                Ok(0) => return (Err(write_zero()), buf),
                Ok(n) => written += n,
                Err(err) => return (Err(err), buf),
            }
        }
        (Ok(()), buf)
    }

    /// Reads at `offset` into `bufs` in order, each from its beginning up to its capacity
    /// (`preadv`); each buffer's initialized length becomes what it got. Offsets are checked as
    /// [`read_at`](File::read_at)'s are.
    ///
    /// # Cancel safety
    ///
    /// As [`read_at`](File::read_at).
    pub async fn read_vectored_at<V: IoVecBufMut>(
        &self,
        bufs: V,
        offset: u64,
    ) -> BufResult<usize, V> {
        let op = ops::readv_at(Arc::clone(&self.fd), bufs, offset);
        let (res, bufs) = op.bind_borrowed(self.handle.driver()).await;
        (convert(res), bufs)
    }

    /// Writes every buffer's initialized bytes, in order, at `offset` (`pwritev`); retained,
    /// and its offset checked, like [`write_at`](File::write_at).
    ///
    /// # Cancel safety
    ///
    /// Retained, as [`write_at`](File::write_at).
    pub async fn write_vectored_at<V: IoVecBuf>(
        &self,
        bufs: V,
        offset: u64,
    ) -> BufResult<usize, V> {
        let op = ops::writev_at(Arc::clone(&self.fd), bufs, offset);
        let (res, bufs) = op.bind_borrowed(self.handle.driver()).await;
        if offset > i64::MAX as u64 {
            return (convert(res), bufs);
        }
        (crate::io::empty_write_is_zero(convert(res), &bufs), bufs)
    }

    /// Flushes data and metadata to the device (`fsync(2)`); retained.
    ///
    /// # Cancel safety
    ///
    /// Retained: a dropped sync still runs to completion.
    pub async fn sync_all(&self) -> io::Result<()> {
        let op = ops::fsync(Arc::clone(&self.fd));
        convert(op.bind_borrowed(self.handle.driver()).await)
    }

    /// Flushes data, and only the metadata needed to read it back (`fdatasync(2)`); retained.
    ///
    /// # Cancel safety
    ///
    /// Retained: a dropped sync still runs to completion.
    pub async fn sync_data(&self) -> io::Result<()> {
        let op = ops::fdatasync(Arc::clone(&self.fd));
        convert(op.bind_borrowed(self.handle.driver()).await)
    }

    /// Starts a detached `fsync` at once and returns its receiver: the sync runs whether or not
    /// the receiver is awaited or dropped. Syncs of one file run one at a time.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Runtime::new()?;
    /// # let path = std::env::temp_dir().join(format!("baton-doc-start-sync-{}", std::process::id()));
    /// rt.block_on(async {
    ///     let file = baton::fs::File::create(&path).await?;
    ///     let (res, _buf) = file.write_at(b"durable".to_vec(), 0).await;
    ///     res?;
    ///     let sync = file.start_sync(); // runs even if `sync` is dropped
    ///     file.close().await?;
    ///     sync.await?;
    ///     baton::fs::remove_file(&path).await
    /// })
    /// # }
    /// ```
    pub fn start_sync(&self) -> StartedSync {
        StartedSync {
            receiver: self.handle.driver().start_sync(Arc::clone(&self.fd), false),
        }
    }

    /// Closes the file through the ring, reporting the close's error. When operations still
    /// use the descriptor, it is closed after the last of them completes instead.
    ///
    /// # Errors
    ///
    /// The OS error of `close(2)`.
    ///
    /// # Cancel safety
    ///
    /// Retained: once polled, the close happens even if the future is dropped.
    pub async fn close(self) -> io::Result<()> {
        match Arc::try_unwrap(self.fd) {
            Ok(fd) => convert(ops::close(fd).bind_borrowed(self.handle.driver()).await),
            Err(shared) => {
                drop(shared);
                Ok(())
            }
        }
    }
}

impl AsFd for File {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

fn write_zero() -> io::Error {
    io::Error::new(io::ErrorKind::WriteZero, "the kernel accepted no bytes")
}

/// The offset `done` bytes past `offset`, for the loops that continue a short read or write.
/// A sum that does not fit in a `u64` is `InvalidInput` instead of wrapping around to the start
/// of the file. (The driver refuses offsets above `i64::MAX`, so a loop that started at a valid
/// offset stays far below this limit; the check keeps the arithmetic honest regardless.)
fn offset_after(offset: u64, done: usize) -> io::Result<u64> {
    u64::try_from(done)
        .ok()
        .and_then(|done| offset.checked_add(done))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the offset plus the bytes already transferred does not fit in a u64: pass a positional offset of at most i64::MAX",
            )
        })
}

/// A detached sync started by [`File::start_sync`]; resolves to the sync's result.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let path = std::env::temp_dir().join(format!("baton-doc-started-sync-{}", std::process::id()));
/// rt.block_on(async {
///     let file = baton::fs::File::create(&path).await?;
///     let started: baton::fs::StartedSync = file.start_sync();
///     started.await?;
///     baton::fs::remove_file(&path).await
/// })
/// # }
/// ```
#[derive(Debug)]
#[must_use = "the sync runs anyway; await this to learn its result"]
pub struct StartedSync {
    receiver: SyncReceiver,
}

impl Future for StartedSync {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.receiver).poll(cx).map(convert)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_after_adds_what_was_transferred() {
        assert_eq!(offset_after(10, 5).expect("fits"), 15);
        assert_eq!(offset_after(u64::MAX - 1, 1).expect("fits"), u64::MAX);
    }

    #[test]
    fn offset_after_that_would_wrap_is_invalid_input() {
        let err = offset_after(u64::MAX, 1).expect_err("wraps");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("i64::MAX"), "{err}");
    }
}
