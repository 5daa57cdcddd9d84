//! `futures_io::{AsyncRead, AsyncWrite, AsyncBufRead}` for [`Compat`] (feature `futures-io`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use baton::io::{AsyncRead, AsyncWrite, PollIo};

use crate::Compat;

impl<S> futures_io::AsyncRead for Compat<S>
where
    S: PollIo + Send + Sync + 'static,
    for<'a> &'a S: AsyncRead + AsyncWrite,
{
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_read_slice(cx, buf)
    }
}

impl<S> futures_io::AsyncBufRead for Compat<S>
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

impl<S> futures_io::AsyncWrite for Compat<S>
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

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_flush(cx)
    }

    /// Flushes, then shuts the write side (futures' `close`).
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_shutdown(cx)
    }
}
