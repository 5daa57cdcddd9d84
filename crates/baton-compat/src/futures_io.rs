//! `futures_io::{AsyncRead, AsyncWrite, AsyncBufRead}` for [`Compat`] (feature `futures-io`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::Compat;
use crate::forward::{forward_buf_read, forward_writes, impl_for_stream};

impl_for_stream!(EngineRead: futures_io::AsyncRead => Compat<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_read_slice(cx, buf)
    }
});

impl_for_stream!(EngineRead: futures_io::AsyncBufRead => Compat<S> {
    forward_buf_read!();
});

impl_for_stream!(EngineWrite: futures_io::AsyncWrite => Compat<S> {
    forward_writes!(
        |this| this,
        /// Flushes, then shuts the write side (futures' `close`).
        poll_close
    );
});
