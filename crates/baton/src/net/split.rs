//! Halves of a stream socket: borrowed ([`ReadHalf`], [`WriteHalf`]) and owned
//! ([`OwnedReadHalf`], [`OwnedWriteHalf`], reunited with [`OwnedReadHalf::reunite`]). A read
//! and a write may be in flight at once on one socket, through its two halves.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::Shutdown;
use std::sync::Arc;

use super::stream::Stream;
use super::stream::sealed::Sealed;
use crate::io::{AsyncRead, AsyncWrite, BufResult, IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};

/// The reading half of a borrowed stream ([`TcpStream::split`](super::TcpStream::split)).
#[derive(Debug)]
pub struct ReadHalf<'a, S>(&'a S);

/// The writing half of a borrowed stream. Its [`AsyncWrite::shutdown`] shuts the stream's
/// write side.
#[derive(Debug)]
pub struct WriteHalf<'a, S>(&'a S);

/// The reading half of a stream taken apart with `into_split`: `Send` and `'static`.
pub struct OwnedReadHalf<S>(Arc<S>);

/// The writing half of a stream taken apart with `into_split`: `Send` and `'static`. Dropping it
/// does not shut the stream down: the stream closes when both halves are gone.
pub struct OwnedWriteHalf<S>(Arc<S>);

impl<S> fmt::Debug for OwnedReadHalf<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedReadHalf").finish_non_exhaustive()
    }
}

impl<S> fmt::Debug for OwnedWriteHalf<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedWriteHalf").finish_non_exhaustive()
    }
}

/// Two halves that did not come from the same stream ([`OwnedReadHalf::reunite`]); both are
/// handed back.
#[derive(Debug, thiserror::Error)]
#[error("these halves belong to different streams; only the halves of one `into_split` reunite")]
pub struct ReuniteError<S>(pub OwnedReadHalf<S>, pub OwnedWriteHalf<S>);

pub(crate) fn split<S: Stream>(stream: &S) -> (ReadHalf<'_, S>, WriteHalf<'_, S>) {
    (ReadHalf(stream), WriteHalf(stream))
}

pub(crate) fn into_split<S: Stream>(stream: S) -> (OwnedReadHalf<S>, OwnedWriteHalf<S>) {
    let shared = Arc::new(stream);
    (OwnedReadHalf(Arc::clone(&shared)), OwnedWriteHalf(shared))
}

impl<S: Stream> OwnedReadHalf<S> {
    /// Puts the stream back together.
    ///
    /// # Errors
    ///
    /// [`ReuniteError`] (with both halves) when `write` came from another stream.
    pub fn reunite(self, write: OwnedWriteHalf<S>) -> Result<S, ReuniteError<S>> {
        if !Arc::ptr_eq(&self.0, &write.0) {
            return Err(ReuniteError(self, write));
        }
        drop(write);
        match Arc::try_unwrap(self.0) {
            Ok(stream) => Ok(stream),
            Err(_) => unreachable!("the two halves held the only references, and one is gone"),
        }
    }
}

/// A half's socket is its stream's, for the readiness-style calls ([`crate::io::PollIo`]).
macro_rules! half_socket {
    ($($half:ty),+) => {
        $(impl<S: Stream> Sealed for $half {
            #[allow(private_interfaces)]
            fn socket(&self) -> &crate::net::socket::Socket {
                Sealed::socket(&*self.0)
            }
        })+
    };
}

half_socket!(
    ReadHalf<'_, S>,
    WriteHalf<'_, S>,
    OwnedReadHalf<S>,
    OwnedWriteHalf<S>
);

impl<S: Stream> AsyncRead for ReadHalf<'_, S> {
    fn read<B: IoBufMut>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send {
        Sealed::socket(self.0).read(buf)
    }

    fn read_vectored<V: IoVecBufMut>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send {
        Sealed::socket(self.0).read_vectored(bufs)
    }
}

impl<S: Stream> AsyncRead for OwnedReadHalf<S> {
    fn read<B: IoBufMut>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send {
        Sealed::socket(&*self.0).read(buf)
    }

    fn read_vectored<V: IoVecBufMut>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send {
        Sealed::socket(&*self.0).read_vectored(bufs)
    }
}

/// The writing half's calls, shared by both kinds of half.
macro_rules! write_half {
    ($half:ty) => {
        impl<S: Stream> AsyncWrite for $half {
            fn write<B: IoBuf>(
                &mut self,
                buf: B,
            ) -> impl Future<Output = BufResult<usize, B>> + Send {
                Sealed::socket(&*self.0).write(buf)
            }

            fn write_vectored<V: IoVecBuf>(
                &mut self,
                bufs: V,
            ) -> impl Future<Output = BufResult<usize, V>> + Send {
                Sealed::socket(&*self.0).write_vectored(bufs)
            }

            fn flush(&mut self) -> impl Future<Output = io::Result<()>> + Send {
                std::future::ready(Ok(()))
            }

            fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send {
                Sealed::socket(&*self.0).shutdown(Shutdown::Write)
            }
        }
    };
}

write_half!(WriteHalf<'_, S>);
write_half!(OwnedWriteHalf<S>);
