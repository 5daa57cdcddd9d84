//! `tokio::io::{AsyncRead, AsyncWrite, AsyncBufRead}` for [`Compat`] (feature `tokio-io`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use baton::io::{AsyncRead, AsyncWrite, PollIo};
use tokio::io::ReadBuf;

use crate::Compat;

impl<S> tokio::io::AsyncRead for Compat<S>
where
    S: PollIo + Send + Sync + 'static,
    for<'a> &'a S: AsyncRead + AsyncWrite,
{
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // An empty `ReadBuf` asks for nothing.
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        // SAFETY: `poll_read_uninit` only writes initialized bytes into the unfilled part and
        // never de-initializes any, as `unfilled_mut` requires.
        let unfilled = unsafe { buf.unfilled_mut() };
        let count = ready!(this.poll_read_uninit(cx, unfilled))?;
        // SAFETY: `poll_read_uninit` initialized the first `count` bytes of the unfilled part.
        unsafe { buf.assume_init(count) };
        buf.advance(count);
        Poll::Ready(Ok(()))
    }
}

impl<S> tokio::io::AsyncBufRead for Compat<S>
where
    S: PollIo + Send + Sync + 'static,
    for<'a> &'a S: AsyncRead + AsyncWrite,
{
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.get_mut().poll_fill_buf(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.get_mut().consume(amt);
    }
}

impl<S> tokio::io::AsyncWrite for Compat<S>
where
    S: PollIo + Send + Sync + 'static,
    for<'a> &'a S: AsyncRead + AsyncWrite,
{
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_slice(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_shutdown(cx)
    }
}
