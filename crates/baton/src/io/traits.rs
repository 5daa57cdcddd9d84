//! [`AsyncRead`] and [`AsyncWrite`]: streams over owned buffers.

use std::future::Future;
use std::io;

use baton_uring::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};

/// A result and the buffer handed back with it: `let (res, buf) = stream.read(buf).await;`.
pub type BufResult<T, B> = (io::Result<T>, B);

/// A source of bytes read into owned buffers.
///
/// A read fills `buf` from its beginning, up to its capacity, and sets its initialized length
/// to exactly the count; `Ok(0)` means the end of the stream (a buffer with no capacity is
/// `InvalidInput` instead). The returned futures are `Send`.
pub trait AsyncRead {
    /// Reads once into `buf`.
    ///
    /// # Cancel safety
    ///
    /// The implementor's: a socket's (and its read half's, a child's stdout's) is cancel-safe,
    /// the bytes of a dropped read kept for the next; a file's read dropped in flight leaves
    /// its cursor where it was, so the bytes are read again.
    fn read<B: IoBufMut>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send;

    /// Reads once into `bufs`, in order, each from its beginning; each one's initialized
    /// length becomes what it got.
    ///
    /// # Cancel safety
    ///
    /// As [`read`](AsyncRead::read).
    fn read_vectored<V: IoVecBufMut>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send;
}

/// A sink of bytes written from owned buffers.
///
/// A write sends the buffer's initialized bytes (an empty one is `InvalidInput`) and returns
/// how many were taken, which may be fewer. The returned futures are `Send`.
pub trait AsyncWrite {
    /// Writes once from `buf`.
    ///
    /// # Cancel safety
    ///
    /// Retained, not cancelled: a write the kernel already has may still happen after the
    /// future is dropped, and its count is lost with the future.
    fn write<B: IoBuf>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send;

    /// Writes once from `bufs`, in order.
    ///
    /// # Cancel safety
    ///
    /// As [`write`](AsyncWrite::write).
    fn write_vectored<V: IoVecBuf>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send;

    /// Sends whatever this writer still buffers (nothing, for unbuffered streams).
    ///
    /// # Cancel safety
    ///
    /// Dropping it keeps the bytes not yet sent buffered (a later `flush` sends them); a write
    /// already with the kernel is retained.
    fn flush(&mut self) -> impl Future<Output = io::Result<()>> + Send;

    /// Flushes, then shuts down the writing side (for a socket, `shutdown(Write)`: the peer
    /// reads end of stream).
    ///
    /// # Cancel safety
    ///
    /// As [`flush`](AsyncWrite::flush) until the flush is done; the shutdown itself is
    /// retained once submitted.
    fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send;
}

/// A reader borrowed mutably is a reader (as `&mut R: std::io::Read`), so helpers that take
/// their reader by value (`BufReader::new(&mut stream)`) can borrow one.
impl<R: AsyncRead + Send + ?Sized> AsyncRead for &mut R {
    fn read<B: IoBufMut>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send {
        (**self).read(buf)
    }

    fn read_vectored<V: IoVecBufMut>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send {
        (**self).read_vectored(bufs)
    }
}

/// A writer borrowed mutably is a writer (as `&mut W: std::io::Write`).
impl<W: AsyncWrite + Send + ?Sized> AsyncWrite for &mut W {
    fn write<B: IoBuf>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send {
        (**self).write(buf)
    }

    fn write_vectored<V: IoVecBuf>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send {
        (**self).write_vectored(bufs)
    }

    fn flush(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        (**self).flush()
    }

    fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        (**self).shutdown()
    }
}
