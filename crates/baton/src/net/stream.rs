//! What [`TcpStream`](super::TcpStream) and [`UnixStream`](super::UnixStream) share: the
//! owned-buffer read and write methods, their [`AsyncRead`]/[`AsyncWrite`] impls (for the
//! stream and for `&` it, so one task may read while another writes), and their halves.

use std::future::Future;
use std::io;
use std::net::Shutdown;

use crate::io::{AsyncRead, AsyncWrite, BufResult, IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};

/// A stream socket type of this module. Sealed: implemented by `TcpStream` and `UnixStream`.
pub trait Stream: sealed::Sealed + Send + Sync + 'static {}

pub(crate) mod sealed {
    /// Gives the shared code the socket inside a stream. Sealed: this module is private, so no
    /// one outside the crate can name the trait, implement it or call it — the crate-private
    /// socket type it returns never escapes, whatever the visibility lint infers from
    /// `Stream`'s public supertrait bound.
    pub trait Sealed {
        /// The stream's socket.
        #[allow(private_interfaces)]
        fn socket(&self) -> &crate::net::socket::Socket;
    }
}

/// The stream methods, documented once here and generated for each stream type.
macro_rules! stream_methods {
    ($stream:ty) => {
        impl $stream {
            /// Receives into `buf`, from its beginning up to its capacity: the buffer comes
            /// back with its initialized length set to the count (`buf.len()` for a `Vec`),
            /// and `Ok(0)` means the peer closed its side. A buffer with no capacity is
            /// `InvalidInput`.
            ///
            /// # Cancel safety
            ///
            /// Cancel-safe. If the future is dropped (by a `timeout`, a `select!`, an abort)
            /// after the kernel received bytes for it, or while it does, the bytes are kept by
            /// the stream and returned first, in order, by the next read: nothing received is
            /// lost. Only the buffer passed to the dropped call is gone.
            pub async fn read<B: $crate::io::IoBufMut>(
                &self,
                buf: B,
            ) -> $crate::io::BufResult<usize, B> {
                $crate::net::stream::sealed::Sealed::socket(self)
                    .read(buf)
                    .await
            }

            /// Receives into `bufs` in order, each from its beginning up to its capacity
            /// (`recvmsg`); each buffer's initialized length becomes what it got.
            ///
            /// # Cancel safety
            ///
            /// Cancel-safe, as [`read`](Self::read).
            pub async fn read_vectored<V: $crate::io::IoVecBufMut>(
                &self,
                bufs: V,
            ) -> $crate::io::BufResult<usize, V> {
                $crate::net::stream::sealed::Sealed::socket(self)
                    .read_vectored(bufs)
                    .await
            }

            /// Sends `buf`'s initialized bytes, returning how many the kernel took. An empty
            /// buffer sends nothing and is `Ok(0)`, as std's.
            ///
            /// # Cancel safety
            ///
            /// Not cancelled by a drop: a write is *retained*. Dropping the future does not
            /// stop the send the kernel already has, so some or all of the bytes may still be
            /// sent; the count is lost with the future. Use `write_all` to completion, or shut
            /// the stream down, rather than racing writes against a timeout when the count
            /// matters.
            pub async fn write<B: $crate::io::IoBuf>(
                &self,
                buf: B,
            ) -> $crate::io::BufResult<usize, B> {
                $crate::net::stream::sealed::Sealed::socket(self)
                    .write(buf)
                    .await
            }

            /// Sends every buffer's initialized bytes, in order, in one `sendmsg`.
            ///
            /// # Cancel safety
            ///
            /// Retained, as [`write`](Self::write).
            pub async fn write_vectored<V: $crate::io::IoVecBuf>(
                &self,
                bufs: V,
            ) -> $crate::io::BufResult<usize, V> {
                $crate::net::stream::sealed::Sealed::socket(self)
                    .write_vectored(bufs)
                    .await
            }

            /// Sends all of `buf`'s initialized bytes, continuing after short writes; the
            /// buffer comes back whole. An empty buffer sends nothing and succeeds.
            ///
            /// # Errors
            ///
            /// `WriteZero` if the peer takes no bytes, or the error of a send.
            ///
            /// # Cancel safety
            ///
            /// Not cancel-safe: each send is retained, but a drop between two sends leaves the
            /// rest unsent, and the caller cannot learn how much went out. Await it to
            /// completion.
            pub async fn write_all<B: $crate::io::IoBuf>(
                &self,
                buf: B,
            ) -> $crate::io::BufResult<(), B> {
                $crate::io::AsyncWriteExt::write_all(&mut &*self, buf).await
            }

            /// Shuts the write side down (`shutdown(2)` with `SHUT_WR`): the peer reads the end
            /// of the stream once every byte written before has arrived; reads go on. The same
            /// as [`AsyncWrite::shutdown`]($crate::io::AsyncWrite::shutdown) and tokio's
            /// `shutdown()`; [`shutdown_with`](Self::shutdown_with) shuts the read side or both.
            ///
            /// # Errors
            ///
            /// The OS error. A stream whose peer already reset the connection shuts down with
            /// `Ok(())`, as tokio's does (there is nothing left to shut).
            ///
            /// # Cancel safety
            ///
            /// Retained: once polled, the shutdown happens even if the future is dropped. It
            /// waits first for a write dropped before its completion, so it cuts none off.
            pub async fn shutdown(&self) -> std::io::Result<()> {
                self.shutdown_with(std::net::Shutdown::Write).await
            }

            /// Shuts down the read side, the write side, or both (`shutdown(2)`; std's
            /// `TcpStream::shutdown(how)`).
            ///
            /// # Errors
            ///
            /// As [`shutdown`](Self::shutdown).
            ///
            /// # Cancel safety
            ///
            /// As [`shutdown`](Self::shutdown).
            pub async fn shutdown_with(&self, how: std::net::Shutdown) -> std::io::Result<()> {
                $crate::net::stream::sealed::Sealed::socket(self)
                    .shutdown(how)
                    .await
            }

            /// Borrowed read and write halves: one task may read through the first while
            /// another writes through the second.
            pub fn split(
                &self,
            ) -> (
                $crate::net::ReadHalf<'_, Self>,
                $crate::net::WriteHalf<'_, Self>,
            ) {
                $crate::net::split::split(self)
            }

            /// Owned halves (`Send`, `'static`) that [`OwnedReadHalf::reunite`](
            /// $crate::net::OwnedReadHalf::reunite) puts back together.
            pub fn into_split(
                self,
            ) -> (
                $crate::net::OwnedReadHalf<Self>,
                $crate::net::OwnedWriteHalf<Self>,
            ) {
                $crate::net::split::into_split(self)
            }
        }

        impl $crate::net::stream::Stream for $stream {}
    };
}

pub(crate) use stream_methods;

impl<S: Stream> AsyncRead for &S {
    fn read<B: IoBufMut>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send {
        self.socket().read(buf)
    }

    fn read_vectored<V: IoVecBufMut>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send {
        self.socket().read_vectored(bufs)
    }
}

impl<S: Stream> AsyncWrite for &S {
    fn write<B: IoBuf>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send {
        self.socket().write(buf)
    }

    fn write_vectored<V: IoVecBuf>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send {
        self.socket().write_vectored(bufs)
    }

    fn flush(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        std::future::ready(Ok(()))
    }

    fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        self.socket().shutdown(Shutdown::Write)
    }
}

/// Forwards a stream's [`AsyncRead`] and [`AsyncWrite`] to `&` it.
macro_rules! stream_io {
    ($stream:ty) => {
        impl $crate::io::AsyncRead for $stream {
            fn read<B: $crate::io::IoBufMut>(
                &mut self,
                buf: B,
            ) -> impl std::future::Future<Output = $crate::io::BufResult<usize, B>> + Send {
                $crate::net::stream::sealed::Sealed::socket(&*self).read(buf)
            }

            fn read_vectored<V: $crate::io::IoVecBufMut>(
                &mut self,
                bufs: V,
            ) -> impl std::future::Future<Output = $crate::io::BufResult<usize, V>> + Send {
                $crate::net::stream::sealed::Sealed::socket(&*self).read_vectored(bufs)
            }
        }

        impl $crate::io::AsyncWrite for $stream {
            fn write<B: $crate::io::IoBuf>(
                &mut self,
                buf: B,
            ) -> impl std::future::Future<Output = $crate::io::BufResult<usize, B>> + Send {
                $crate::net::stream::sealed::Sealed::socket(&*self).write(buf)
            }

            fn write_vectored<V: $crate::io::IoVecBuf>(
                &mut self,
                bufs: V,
            ) -> impl std::future::Future<Output = $crate::io::BufResult<usize, V>> + Send {
                $crate::net::stream::sealed::Sealed::socket(&*self).write_vectored(bufs)
            }

            fn flush(&mut self) -> impl std::future::Future<Output = std::io::Result<()>> + Send {
                std::future::ready(Ok(()))
            }

            fn shutdown(
                &mut self,
            ) -> impl std::future::Future<Output = std::io::Result<()>> + Send {
                $crate::net::stream::sealed::Sealed::socket(&*self)
                    .shutdown(std::net::Shutdown::Write)
            }
        }
    };
}

pub(crate) use stream_io;
