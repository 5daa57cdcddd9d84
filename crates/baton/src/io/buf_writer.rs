//! [`BufWriter`]: a writer with an owned internal buffer, for many small writes.

use std::future::Future;
use std::io;

use baton_uring::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};

use super::cursor::initialized;
use super::{AsyncRead, AsyncWrite, BufResult};

/// The internal buffer's default capacity.
const DEFAULT_CAPACITY: usize = 8 * 1024;

/// Buffers a writer: small writes are copied into an owned buffer that goes to the inner
/// writer when it is full, on [`flush`](AsyncWrite::flush) and on
/// [`shutdown`](AsyncWrite::shutdown); a write at least as large as the buffer goes straight
/// through once the buffer is empty. It is also an [`AsyncRead`] when the inner writer is one.
/// Dropping a `BufWriter` with buffered bytes loses them: flush first.
///
/// # Cancel safety
///
/// A buffered write completes at once. A flush in flight when its future is dropped still goes
/// out (writes are retained), but the writer no longer knows how much did: its buffer went
/// with the flush.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use baton::io::{AsyncWrite, AsyncWriteExt, BufWriter};
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let mut out = BufWriter::new(std::io::Cursor::new(Vec::new()));
///     for word in ["small ", "writes ", "coalesce"] {
///         let (res, _) = out.write_all(word).await;
///         res?;
///     }
///     out.flush().await?;
///     assert_eq!(out.get_ref().get_ref(), b"small writes coalesce");
///     Ok(())
/// })
/// # }
/// ```
///
/// Invariant: `buf` is `None` only after a flush of it was dropped in flight.
#[derive(Debug)]
pub struct BufWriter<W> {
    inner: W,
    buf: Option<Vec<u8>>,
    capacity: usize,
}

impl<W: AsyncWrite> BufWriter<W> {
    /// A writer with an 8 KiB buffer.
    pub fn new(inner: W) -> BufWriter<W> {
        BufWriter::with_capacity(DEFAULT_CAPACITY, inner)
    }

    /// A writer with a buffer of `capacity` bytes (at least 1).
    pub fn with_capacity(capacity: usize, inner: W) -> BufWriter<W> {
        let capacity = capacity.max(1);
        BufWriter {
            inner,
            buf: Some(Vec::with_capacity(capacity)),
            capacity,
        }
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The inner writer, mutably (writing to it directly skips the buffered bytes).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// The inner writer; buffered bytes are lost (flush first).
    pub fn into_inner(self) -> W {
        self.inner
    }

    /// The bytes buffered and not written yet.
    pub fn buffer(&self) -> &[u8] {
        self.buf.as_deref().unwrap_or(&[])
    }

    /// Writes out everything buffered. After an error the bytes already written are dropped
    /// from the buffer (as std's `BufWriter` does), so a retry sends each byte once.
    async fn flush_buf(&mut self) -> io::Result<()>
    where
        W: Send,
    {
        let mut buf = self
            .buf
            .take()
            .unwrap_or_else(|| Vec::with_capacity(self.capacity));
        let mut written = 0;
        let mut res = Ok(());
        while written < buf.len() {
            let (sent, slice) = self.inner.write(buf.slice(written..)).await;
            buf = slice.into_inner();
            match sent {
                Ok(0) => {
                    res = Err(super::ext::write_zero());
                    break;
                }
                Ok(n) => written += n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => {
                    res = Err(err);
                    break;
                }
            }
        }
        buf.drain(..written);
        self.buf = Some(buf);
        res
    }
}

impl<W: AsyncWrite + Send> AsyncWrite for BufWriter<W> {
    async fn write<B: IoBuf>(&mut self, buf: B) -> BufResult<usize, B> {
        if self.buffer().len() + buf.bytes_init() > self.capacity
            && let Err(err) = self.flush_buf().await
        {
            return (Err(err), buf);
        }
        if buf.bytes_init() >= self.capacity {
            return self.inner.write(buf).await;
        }
        let bytes = initialized(&buf);
        let target = self
            .buf
            .get_or_insert_with(|| Vec::with_capacity(self.capacity));
        target.extend_from_slice(bytes);
        let n = bytes.len();
        (Ok(n), buf)
    }

    async fn write_vectored<V: IoVecBuf>(&mut self, bufs: V) -> BufResult<usize, V> {
        let total: usize = bufs.io_slices().iter().map(|s| s.len()).sum();
        if self.buffer().len() + total > self.capacity
            && let Err(err) = self.flush_buf().await
        {
            return (Err(err), bufs);
        }
        if total >= self.capacity {
            return self.inner.write_vectored(bufs).await;
        }
        let target = self
            .buf
            .get_or_insert_with(|| Vec::with_capacity(self.capacity));
        for slice in bufs.io_slices() {
            target.extend_from_slice(slice);
        }
        (Ok(total), bufs)
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.flush_buf().await?;
        self.inner.flush().await
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        self.flush_buf().await?;
        self.inner.shutdown().await
    }
}

impl<W: AsyncRead + AsyncWrite + Send> AsyncRead for BufWriter<W> {
    fn read<B: IoBufMut>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send {
        self.inner.read(buf)
    }

    fn read_vectored<V: IoVecBufMut>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send {
        self.inner.read_vectored(bufs)
    }
}
