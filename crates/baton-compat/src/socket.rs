//! [`SocketEngine`]: how a [`Compat`](crate::Compat) drives a Baton socket. Reads are
//! owned-buffer receives on the ring ([`PollRead::read_owned`], kept across polls unboxed) into
//! one read buffer. Writes up to 16 KiB are copied into the write buffer and written by the ring
//! in the background ([`PollWrite::write_all_owned`]); larger
//! ones go readiness-style ([`PollWrite::try_write_vectored`]): the caller's buffers straight to a
//! non-blocking `sendmsg`, a `WouldBlock` waiting for a one-shot readiness request on the ring.
//!
//! Why: a read usually finds nothing yet (a server waits for the next request), so one receive
//! on the ring waits and reads at once, where trying a `recv` first would cost a failing
//! system call each time. A small write costs less copied and submitted with the other
//! connections' requests in one `io_uring_enter` than as a system call of its own; a large one
//! costs less sent from the caller's memory than copied.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use baton::io::{PollIo, PollRead, PollWrite, ReadOwned, Readiness, ShutdownWrite, WriteAllOwned};

use crate::engine::{Engine, EngineRead, EngineWrite, READ_CAPACITY};
use crate::read_buffer::ReadBuffer;
use crate::waiters::{Side, Waiters};

/// The largest write copied into the write buffer and written by the ring; a larger one is
/// sent from the caller's memory. Measured on hyper's rows (docs/benchmarks.md): a JSON
/// response and a 12 KiB one are both cheaper copied and submitted with the other
/// connections' requests than sent by a system call of their own; a 1 MiB body is not copied.
const COPY_LIMIT: usize = 16 * 1024;

/// A Baton socket ([`PollIo`]) driven readiness-style; see the module docs.
pub struct SocketEngine<S> {
    stream: S,
    /// What the last receive brought; lent to `read_op` while it is in flight.
    read: ReadBuffer,
    /// The receive in flight, kept across polls (M1).
    read_op: Option<ReadOwned>,
    /// Empty while `write_op` holds it.
    write_buf: Vec<u8>,
    /// The background write of a small write, kept until it completes (M2).
    write_op: Option<WriteAllOwned>,
    /// The sides waiting on `write_op`: both are woken when it ends.
    write_waiters: Waiters,
    /// The error of a background write that ended while a read was waiting on it, for the
    /// next write call.
    write_error: Option<io::Error>,
    /// The readiness wait of a large write the socket had no room for.
    write_ready: Option<Readiness>,
    /// The shutdown in flight, kept across polls.
    shutdown_op: Option<ShutdownWrite>,
}

impl<S> fmt::Debug for SocketEngine<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compat")
            .field("buffered_read", &self.read.waiting())
            .field("reading", &self.read_op.is_some())
            .field(
                "writing",
                &(self.write_op.is_some() || self.write_ready.is_some()),
            )
            .field("shutting_down", &self.shutdown_op.is_some())
            .finish_non_exhaustive()
    }
}

impl<S: PollIo> Engine for SocketEngine<S> {
    type Stream = S;

    /// The read buffer is allocated on the first read, the write buffer on the first small
    /// write.
    fn new(stream: S) -> SocketEngine<S> {
        SocketEngine {
            stream,
            read: ReadBuffer::default(),
            read_op: None,
            write_buf: Vec::new(),
            write_op: None,
            write_waiters: Waiters::default(),
            write_error: None,
            write_ready: None,
            shutdown_op: None,
        }
    }
}

impl<S> SocketEngine<S> {
    /// The socket.
    pub(crate) fn get_ref(&self) -> &S {
        &self.stream
    }
}

impl<S: PollIo> SocketEngine<S> {
    /// Drives the background write, if any, to its end, keeping its error for the next
    /// `poll_write`/`poll_flush`/`poll_shutdown`.
    fn poll_write_settled(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Err(error) = ready!(self.poll_write_done(cx, Side::Reader)) {
            self.write_error = Some(error);
        }
        Poll::Ready(())
    }

    /// Waits for the background write, if any, to finish, on behalf of `side`; its error is
    /// returned here.
    fn poll_write_done(&mut self, cx: &mut Context<'_>, side: Side) -> Poll<io::Result<()>> {
        if let Some(error) = self.write_error.take() {
            return Poll::Ready(Err(error));
        }
        let Some(op) = &mut self.write_op else {
            return Poll::Ready(Ok(()));
        };
        let (result, mut buf) = ready!(
            self.write_waiters
                .poll(side, cx, |cx| Pin::new(op).poll(cx))
        );
        self.write_op = None;
        buf.clear();
        self.write_buf = buf;
        Poll::Ready(result)
    }
}

/// The read side: when `S` reads.
impl<S: PollRead> EngineRead for SocketEngine<S> {
    /// Starts a receive of the read buffer's capacity (16 KiB, whatever `want` is) when nothing
    /// is buffered; a receive already in flight is resumed, so stopping between polls loses
    /// nothing (M1). The end of the stream is reported only once the background write, if
    /// any, has finished (M5).
    fn poll_fill_buf(&mut self, cx: &mut Context<'_>, _want: usize) -> Poll<io::Result<&[u8]>> {
        loop {
            if self.read.waiting() > 0 {
                return Poll::Ready(Ok(self.read.bytes()));
            }
            if self.read.at_eof() {
                if self.write_op.is_some() {
                    ready!(self.poll_write_settled(cx));
                    // The write ended unseen by the caller: its flush sees that first, and
                    // the end of the stream comes one (self-woken) poll later.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                self.read.eof_reported();
                return Poll::Ready(Ok(&[]));
            }
            let op = self
                .read_op
                .get_or_insert_with(|| self.stream.read_owned(self.read.lend(READ_CAPACITY)));
            let (result, buf) = ready!(Pin::new(op).poll(cx));
            self.read_op = None;
            if let Err(error) = self.read.filled(result, buf) {
                return Poll::Ready(Err(error));
            }
        }
    }

    fn consume(&mut self, amount: usize) {
        self.read.consume(amount);
    }
}

/// The write side: when `S` writes.
impl<S: PollWrite> EngineWrite for SocketEngine<S> {
    /// Up to 16 KiB are copied into the write buffer and written in the background; more are
    /// sent from `srcs` themselves, as much as the socket takes now. Waits first for the
    /// background write before it.
    fn poll_write_vectored(
        &mut self,
        cx: &mut Context<'_>,
        srcs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let offered = srcs.iter().map(|src| src.len()).sum::<usize>();
        if offered == 0 {
            return Poll::Ready(Ok(0));
        }
        // In order: the background write goes out before anything after it.
        ready!(self.poll_write_done(cx, Side::Writer))?;
        if offered > COPY_LIMIT {
            return self.poll_send_direct(cx, srcs);
        }
        let mut buf = std::mem::take(&mut self.write_buf);
        buf.reserve(offered);
        for src in srcs {
            buf.extend_from_slice(src);
        }
        self.write_op = Some(self.stream.write_all_owned(buf));
        // Polled once now so the write is submitted before the caller's next poll; when it
        // fails at once, the bytes were not taken and the error is returned instead.
        match self.poll_write_done(cx, Side::Starter) {
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Ready(Ok(())) | Poll::Pending => Poll::Ready(Ok(offered)),
        }
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_write_done(cx, Side::Writer)
    }

    /// `Ok` when the peer already closed (M4).
    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_flush(cx))?;
        let op = self
            .shutdown_op
            .get_or_insert_with(|| self.stream.shutdown_write());
        let result = ready!(Pin::new(op).poll(cx));
        self.shutdown_op = None;
        Poll::Ready(result)
    }
}

impl<S: PollWrite> SocketEngine<S> {
    /// A large write, readiness-style: `sendmsg` on the caller's buffers, waiting for room when
    /// the socket takes nothing.
    fn poll_send_direct(
        &mut self,
        cx: &mut Context<'_>,
        srcs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            match self.stream.try_write_vectored(srcs) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    let ready = self
                        .write_ready
                        .get_or_insert_with(|| self.stream.writable());
                    let result = ready!(Pin::new(ready).poll(cx));
                    self.write_ready = None;
                    result?;
                }
                written => return Poll::Ready(written),
            }
        }
    }
}
