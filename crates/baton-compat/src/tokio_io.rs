//! `tokio::io::{AsyncRead, AsyncWrite, AsyncBufRead}` for [`Compat`] (feature `tokio-io`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::ReadBuf;

use crate::Compat;
use crate::forward::{forward_buf_read, forward_writes, impl_for_stream};

impl_for_stream!(EngineRead: tokio::io::AsyncRead => Compat<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let room = buf.remaining();
        ready!(self.get_mut().poll_read_into(cx, room, |bytes| buf.put_slice(bytes)))?;
        Poll::Ready(Ok(()))
    }
});

impl_for_stream!(EngineRead: tokio::io::AsyncBufRead => Compat<S> {
    forward_buf_read!();
});

impl_for_stream!(EngineWrite: tokio::io::AsyncWrite => Compat<S> {
    forward_writes!(|this| this, vectored, poll_shutdown);
});
