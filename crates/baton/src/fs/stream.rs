//! The sequential view of a [`File`]: [`AsyncRead`] and [`AsyncWrite`] at the file's own
//! cursor, and [`File::seek`]. The cursor is the file's, not the kernel's: each call is a
//! positional request at the cursor, which moves by the count once the request is done. Only
//! [`File::seek`] sets the descriptor's offset too, so that the kernel checks the position.

use std::future::Future;
use std::io::{self, SeekFrom};

use super::File;
use crate::io::{AsyncRead, AsyncWrite, BufResult, IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};

impl File {
    /// Moves the cursor of the sequential view and returns its new position (`End` is measured
    /// from the file's size now). The kernel checks the position, as it does std's: the
    /// descriptor's own offset is set to it, though Baton's reads and writes never use it.
    ///
    /// # Errors
    ///
    /// As std's: `InvalidInput` for a position before the start of the file or past the
    /// largest offset its file system allows (16 TiB on ext4, near `i64::MAX` on xfs), and the
    /// OS error (`ESPIPE`) for a descriptor that cannot seek, such as a pipe. A refused seek
    /// leaves the cursor where it was.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// use baton::io::AsyncReadExt;
    /// let rt = baton::Runtime::new()?;
    /// # let path = std::env::temp_dir().join(format!("baton-doc-seek-{}", std::process::id()));
    /// rt.block_on(async {
    ///     baton::fs::write(&path, b"0123456789").await?;
    ///     let mut file = baton::fs::File::open(&path).await?;
    ///     file.seek(std::io::SeekFrom::End(-3))?;
    ///     let (res, tail) = file.read_to_end(Vec::new()).await;
    ///     res?;
    ///     assert_eq!(tail, b"789");
    ///     baton::fs::remove_file(&path).await
    /// })
    /// # }
    /// ```
    pub fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let (offset, whence) = match to {
            SeekFrom::Start(at) => (i64::try_from(at).ok(), libc::SEEK_SET),
            SeekFrom::Current(delta) => (
                self.pos
                    .checked_add_signed(delta)
                    .and_then(|pos| i64::try_from(pos).ok()),
                libc::SEEK_SET,
            ),
            SeekFrom::End(delta) => (Some(delta), libc::SEEK_END),
        };
        let offset = offset.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the seek would move the cursor before the start of the file or past i64::MAX",
            )
        })?;
        self.pos = self.kernel_seek(offset, whence)?;
        Ok(self.pos)
    }

    /// Where the sequential view reads and writes next.
    pub fn stream_position(&self) -> u64 {
        self.pos
    }

    /// Moves the cursor past what a positional read or write at it transferred (nothing on an
    /// error), handing its result on.
    fn advance<T>(&mut self, (res, buf): BufResult<usize, T>) -> BufResult<usize, T> {
        if let Ok(n) = &res {
            self.pos += *n as u64;
        }
        (res, buf)
    }

    /// [`advance`](Self::advance) for a write. A file opened for appending took the bytes at
    /// its end whatever the offset, so the cursor goes to the end, as std's does (the size
    /// after the write; past the bytes written if the size cannot be read).
    fn advance_written<T>(&mut self, written: BufResult<usize, T>) -> BufResult<usize, T> {
        let (res, buf) = self.advance(written);
        if res.is_ok() && self.appends {
            self.pos = self.len_now().unwrap_or(self.pos);
        }
        (res, buf)
    }
}

/// # Cancel safety
///
/// Reads lose nothing when dropped: the cursor moves only when a read completes, so the bytes
/// are read again. Writes are retained: a dropped write still lands, but the cursor does not
/// move past it.
impl AsyncRead for File {
    async fn read<B: IoBufMut>(&mut self, buf: B) -> BufResult<usize, B> {
        self.advance(self.read_at(buf, self.pos).await)
    }

    async fn read_vectored<V: IoVecBufMut>(&mut self, bufs: V) -> BufResult<usize, V> {
        self.advance(self.read_vectored_at(bufs, self.pos).await)
    }
}

impl AsyncWrite for File {
    async fn write<B: IoBuf>(&mut self, buf: B) -> BufResult<usize, B> {
        self.advance_written(self.write_at(buf, self.pos).await)
    }

    async fn write_vectored<V: IoVecBuf>(&mut self, bufs: V) -> BufResult<usize, V> {
        self.advance_written(self.write_vectored_at(bufs, self.pos).await)
    }

    /// Nothing to flush: every write goes to the kernel as it is made (use
    /// [`sync_data`](File::sync_data) for durability).
    fn flush(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        std::future::ready(Ok(()))
    }

    /// As [`flush`](AsyncWrite::flush): a file has no write side to shut.
    fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        std::future::ready(Ok(()))
    }
}
