//! [`Compat`]: a Baton socket behind the ecosystem's poll-based traits. Reads are
//! owned-buffer receives on the ring ([`PollRead::read_owned`], kept across polls unboxed) into
//! one read buffer. Writes up to 16 KiB are copied into the write buffer and written by the ring
//! in the background ([`PollWrite::write_all_owned`]); larger
//! ones go readiness-style ([`PollWrite::try_write_vectored`]): the caller's buffers straight to a
//! non-blocking `sendmsg`, a `WouldBlock` waiting for a one-shot readiness request on the ring.
//! The trait impls (`tokio_io`, `futures_io`, `hyper`) are thin shells over the `poll_*`
//! methods here.
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

use crate::write_waiters::{Side, WriteWaiters};

/// How many bytes one receive asks the kernel for (the read buffer's capacity).
const BUFFER_CAPACITY: usize = 16 * 1024;

/// The largest write copied into the write buffer and written by the ring; a larger one is
/// sent from the caller's memory. Measured on hyper's rows (docs/benchmarks.md): a JSON
/// response and a 12 KiB one are both cheaper copied and submitted with the other
/// connections' requests than sent by a system call of their own; a 1 MiB body is not copied.
const COPY_LIMIT: usize = 16 * 1024;

/// A Baton stream usable through the ecosystem's poll-based I/O traits.
///
/// `S` is a Baton socket ([`PollIo`]): a stream ([`baton::net::TcpStream`],
/// [`baton::net::UnixStream`]), a half of one (borrowed or owned) or a child's piped stdio.
/// The foreign read traits are implemented when `S` reads ([`PollRead`]), the write traits
/// when it writes ([`PollWrite`]); on a whole stream a read and a write may be in flight at
/// once. Make one with [`CompatExt::compat`] or [`Compat::new`]; see the crate docs for what
/// it guarantees.
///
/// Its `poll_*` methods are the whole mechanism and are public, so traits this crate does not
/// know (another runtime's, your own) can be implemented on it in a few lines; the features
/// implement tokio's, `futures_io`'s and hyper's with them.
///
/// ```
/// # #[cfg(feature = "tokio-io")]
/// # fn main() -> std::io::Result<()> {
/// use baton_compat::CompatExt;
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// baton::Runtime::new()?.block_on(async {
///     let listener = baton::net::TcpListener::bind("127.0.0.1:0")?;
///     let addr = listener.local_addr()?;
///     let server = baton::spawn(async move {
///         let (stream, _) = listener.accept().await?;
///         let mut stream = stream.compat();
///         let mut line = [0u8; 5];
///         stream.read_exact(&mut line).await?;
///         stream.write_all(&line).await?;
///         stream.shutdown().await
///     });
///     let mut client = baton::net::TcpStream::connect(addr).await?.compat();
///     client.write_all(b"hello").await?;
///     let mut echoed = Vec::new();
///     client.read_to_end(&mut echoed).await?;
///     assert_eq!(echoed, b"hello");
///     server.await.map_err(std::io::Error::other)?
/// })
/// # }
/// # #[cfg(not(feature = "tokio-io"))]
/// # fn main() {}
/// ```
pub struct Compat<S> {
    stream: S,
    /// The bytes of the last completed receive, `[read_pos..]` not yet handed out. Empty (and
    /// unallocated) while `read_op` holds it.
    read_buf: Vec<u8>,
    read_pos: usize,
    /// A receive returned 0 bytes; the end of the stream is reported by the next fill.
    read_eof: bool,
    /// The receive in flight, kept across polls (M1).
    read_op: Option<ReadOwned>,
    /// Empty while `write_op` holds it.
    write_buf: Vec<u8>,
    /// The background write of a small write, kept until it completes (M2).
    write_op: Option<WriteAllOwned>,
    /// The sides waiting on `write_op`: both are woken when it ends.
    write_waiters: WriteWaiters,
    /// The error of a background write that ended while a read was waiting on it, for the
    /// next write call.
    write_error: Option<io::Error>,
    /// The readiness wait of a large write the socket had no room for.
    write_ready: Option<Readiness>,
    /// The shutdown in flight, kept across polls.
    shutdown_op: Option<ShutdownWrite>,
}

impl<S> fmt::Debug for Compat<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compat")
            .field("buffered_read", &(self.read_buf.len() - self.read_pos))
            .field("reading", &self.read_op.is_some())
            .field(
                "writing",
                &(self.write_op.is_some() || self.write_ready.is_some()),
            )
            .field("shutting_down", &self.shutdown_op.is_some())
            .finish_non_exhaustive()
    }
}

/// `.compat()` on a Baton socket (a stream, a half, a child's piped stdio).
pub trait CompatExt: Sized {
    /// Wraps `self` in a [`Compat`].
    fn compat(self) -> Compat<Self>;
}

impl<S: PollIo> CompatExt for S {
    fn compat(self) -> Compat<Self> {
        Compat::new(self)
    }
}

impl<S: PollIo> Compat<S> {
    /// Wraps `stream`. The read buffer is allocated on the first read.
    pub fn new(stream: S) -> Compat<S> {
        Compat {
            stream,
            read_buf: Vec::new(),
            read_pos: 0,
            read_eof: false,
            read_op: None,
            write_buf: Vec::new(),
            write_op: None,
            write_waiters: WriteWaiters::default(),
            write_error: None,
            write_ready: None,
            shutdown_op: None,
        }
    }

    /// The stream, for its own methods (`peer_addr`, socket options).
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

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
impl<S: PollRead> Compat<S> {
    /// Copies buffered bytes into `dst` (receiving first when nothing is buffered); `Ok(0)` at
    /// the end of the stream or for an empty `dst`.
    pub fn poll_read_slice(
        &mut self,
        cx: &mut Context<'_>,
        dst: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_read_into(cx, dst.len(), |bytes| {
            dst[..bytes.len()].copy_from_slice(bytes);
        })
    }

    /// Hands up to `room` buffered bytes to `put` (receiving first when nothing is buffered)
    /// and marks them consumed; `Ok(0)` at the end of the stream or when `room` is zero, which
    /// asks for nothing (starting a receive for it would hold bytes back). The one read path of
    /// every foreign read trait: `put` copies into that trait's buffer.
    pub(crate) fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        room: usize,
        put: impl FnOnce(&[u8]),
    ) -> Poll<io::Result<usize>> {
        if room == 0 {
            return Poll::Ready(Ok(0));
        }
        let available = ready!(self.poll_fill_buf(cx))?;
        let count = available.len().min(room);
        put(&available[..count]);
        self.consume(count);
        Poll::Ready(Ok(count))
    }

    /// Bytes received but not yet handed out, or (at the end of the stream) an empty slice.
    /// Starts a receive when nothing is buffered; a receive already in flight is resumed, so
    /// stopping between polls loses nothing (M1). The end of the stream is reported only once
    /// the background write, if any, has finished (M5).
    pub fn poll_fill_buf(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        loop {
            if self.read_pos < self.read_buf.len() {
                return Poll::Ready(Ok(&self.read_buf[self.read_pos..]));
            }
            if self.read_eof {
                if self.write_op.is_some() {
                    ready!(self.poll_write_settled(cx));
                    // The write ended unseen by the caller: its flush sees that first, and
                    // the end of the stream comes one (self-woken) poll later.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                self.read_eof = false;
                return Poll::Ready(Ok(&[]));
            }
            let op = self.read_op.get_or_insert_with(|| {
                let mut buf = std::mem::take(&mut self.read_buf);
                buf.clear();
                if buf.capacity() == 0 {
                    buf.reserve_exact(BUFFER_CAPACITY);
                }
                self.stream.read_owned(buf)
            });
            let (result, buf) = ready!(Pin::new(op).poll(cx));
            self.read_op = None;
            self.read_buf = buf;
            self.read_pos = 0;
            match result {
                Ok(0) => self.read_eof = true,
                Ok(_) => {}
                Err(error) => {
                    // A failed receive fills nothing; the buffer is kept for the next attempt.
                    self.read_buf.clear();
                    return Poll::Ready(Err(error));
                }
            }
        }
    }

    /// Marks `amount` bytes of [`poll_fill_buf`](Self::poll_fill_buf)'s slice as handed out.
    pub fn consume(&mut self, amount: usize) {
        self.read_pos = (self.read_pos + amount).min(self.read_buf.len());
    }
}

/// The write side: when `S` writes.
impl<S: PollWrite> Compat<S> {
    /// Writes `src` (M2): up to 16 KiB are copied into the write buffer and written in the
    /// background; more are sent from `src` itself, as much as the socket takes now. Waits
    /// first for the background write before it.
    pub fn poll_write_slice(
        &mut self,
        cx: &mut Context<'_>,
        src: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(src)])
    }

    /// Like [`poll_write_slice`](Self::poll_write_slice) for the concatenation of `srcs`, in
    /// order (hyper hands a response's head and body over this way).
    pub fn poll_write_vectored(
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

    /// Waits until every accepted byte is written.
    pub fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_write_done(cx, Side::Writer)
    }

    /// Flushes, then shuts the stream's write side (`Ok` when the peer already closed, M4).
    pub fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_flush(cx))?;
        let op = self
            .shutdown_op
            .get_or_insert_with(|| self.stream.shutdown_write());
        let result = ready!(Pin::new(op).poll(cx));
        self.shutdown_op = None;
        Poll::Ready(result)
    }
}
