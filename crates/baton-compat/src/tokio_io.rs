//! `tokio::io::{AsyncRead, AsyncWrite, AsyncBufRead}` for [`Compat`] (feature `tokio-io`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use baton::io::{AsyncRead, AsyncWrite};
use tokio::io::ReadBuf;

use crate::Compat;

impl<S> tokio::io::AsyncRead for Compat<S>
where
    S: Send + Sync + 'static,
    for<'a> &'a S: AsyncRead + AsyncWrite,
{
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // An empty `ReadBuf` asks for nothing; starting a read for it would hold bytes back.
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let available = ready!(this.poll_fill_buf(cx))?;
        let count = available.len().min(buf.remaining());
        buf.put_slice(&available[..count]);
        this.consume(count);
        Poll::Ready(Ok(()))
    }
}

impl<S> tokio::io::AsyncBufRead for Compat<S>
where
    S: Send + Sync + 'static,
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
    S: Send + Sync + 'static,
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
