//! [`OwnedEngine`]: how a [`Compat`](crate::Compat) drives a Baton stream that is not a socket
//! (a [`File`](baton::fs::File), a [`BufReader`](baton::io::BufReader) or
//! [`BufWriter`](baton::io::BufWriter), a `Cursor<Vec<u8>>`): through its §9 owned-buffer
//! calls. Each call moves the stream and an owned buffer into one boxed future, which hands both
//! back when it ends; the `Compat` keeps that future across polls (rule M1), so one call holds
//! the stream at a time (rule M6). A write still running when the `Compat` is dropped is
//! finished by a task of the current runtime (rule M2). Reads read ahead; on a stream with a
//! cursor (a file, a cursor: [`OwnedStream::SEEKS`]) a write first moves the cursor back over
//! the bytes read ahead and not handed out, as tokio's `File` does, so it lands right after
//! what the caller read.
//!
//! Why not readiness-style, as for sockets: a file has no readiness (it is always "ready", and a
//! read may still block on the disk), and a buffered stream's state lives in its own calls.
//! The owned calls are the one interface all of them have. One future per call is boxed
//! because its type is the stream's (`impl Future` from a trait method) and cannot be named in
//! a field.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use baton::io::{AsyncRead, AsyncWrite, AsyncWriteExt, IoBuf};

use crate::engine::{Engine, EngineRead, EngineWrite, READ_CAPACITY};
use crate::read_buffer::ReadBuffer;
use crate::waiters::{Side, Waiters};

/// The most bytes one read asks for and one write copies: enough that a large transfer takes
/// few calls, bounded so a `Compat` never holds more than this per buffer.
const OWNED_LIMIT: usize = 1024 * 1024;

/// How many bytes one read asks for: what the caller takes (`want`; 16 KiB when it did not
/// say, for `poll_fill_buf`), at least 16 KiB so that small reads (`read_u8`) do not cost a
/// ring request each, at most 1 MiB.
fn read_size(want: usize) -> usize {
    want.clamp(READ_CAPACITY, OWNED_LIMIT)
}

/// A stream an [`OwnedEngine`] drives: whether its reads move a cursor that its writes start
/// from, and how to move that cursor back. Implemented by `baton-compat` for each stream it
/// wraps this way.
pub trait OwnedStream: Send + 'static {
    /// Reads and writes share a cursor (a file, a cursor), so bytes read ahead must be put
    /// back before a write.
    const SEEKS: bool = false;

    /// Moves the cursor back by `count` bytes read ahead and not handed out (only called when
    /// [`SEEKS`](OwnedStream::SEEKS)).
    fn step_back(&mut self, count: u64) -> io::Result<()> {
        let _ = count;
        Ok(())
    }
}

/// A stream driven through its owned-buffer calls; see the module docs.
///
/// Invariant: exactly one of `stream` and `op` is `Some` — the stream is either idle here or
/// held by the call in flight — unless a call panicked and took the stream with it: then both
/// are `None` for good, and every call fails.
///
pub struct OwnedEngine<S: OwnedStream> {
    /// The stream, while no call holds it.
    stream: Option<S>,
    /// The call in flight, which owns the stream (and its buffer) until it ends.
    op: Option<Call<S>>,
    /// The sides waiting on `op`: both are woken when it ends.
    waiters: Waiters,
    /// What the last read brought; lent to the read while it is in flight.
    read: ReadBuffer,
    /// A read failed while the write side waited on it, for the next read.
    read_error: Option<io::Error>,
    /// Empty while a write holds it.
    write_buf: Vec<u8>,
    /// A background write failed, for the next write, flush or shutdown.
    write_error: Option<io::Error>,
    /// A flush or shutdown ended while the read side waited on it, for the caller that
    /// started it.
    finished: Option<(Finish, io::Result<()>)>,
}

/// A call in flight: its future, and whether it writes (a write, a flush, a shutdown), which a
/// drop of the `Compat` hands to a task to finish (M2).
struct Call<S> {
    future: Pin<Box<dyn Future<Output = Ended<S>> + Send>>,
    writes: bool,
}

/// The error of every call once the stream is lost (the invariant on [`OwnedEngine`]).
fn lost() -> io::Error {
    io::Error::other("the stream is gone: a call on it panicked")
}

/// A call that ended: the stream back, and what the call did.
struct Ended<S> {
    stream: S,
    outcome: Outcome,
}

enum Outcome {
    Read(io::Result<usize>, Vec<u8>),
    Write(io::Result<()>, Vec<u8>),
    Finished(Finish, io::Result<()>),
}

/// A call that only reports success: the stream's `flush` or its `shutdown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    Flush,
    Shutdown,
}

// The stream is never pinned where it lies: each call moves it into its own boxed future.
impl<S: OwnedStream> Unpin for OwnedEngine<S> {}

impl<S: OwnedStream> fmt::Debug for OwnedEngine<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compat")
            .field("buffered_read", &self.read.waiting())
            .field("busy", &self.op.is_some())
            .finish_non_exhaustive()
    }
}

impl<S: OwnedStream> Engine for OwnedEngine<S> {
    type Stream = S;

    /// The buffers are allocated on the first read and the first write.
    fn new(stream: S) -> OwnedEngine<S> {
        OwnedEngine {
            stream: Some(stream),
            op: None,
            waiters: Waiters::default(),
            read: ReadBuffer::default(),
            read_error: None,
            write_buf: Vec::new(),
            write_error: None,
            finished: None,
        }
    }
}

impl<S: OwnedStream> OwnedEngine<S> {
    /// Drives the call in flight, if any, to its end on behalf of `side`, and files what it
    /// did: a read's bytes (or error) for the read side, a write's error and a flush's or
    /// shutdown's result for the write side. `Ready` once the stream is idle.
    fn poll_idle(&mut self, cx: &mut Context<'_>, side: Side) -> Poll<()> {
        // Out of its place while polled: a call that panics (a user's stream under a
        // `BufReader`) takes the stream with it, and later calls fail instead of polling a
        // panicked future again.
        let Some(mut op) = self.op.take() else {
            return Poll::Ready(());
        };
        let ended = match self
            .waiters
            .poll(side, cx, |cx| op.future.as_mut().poll(cx))
        {
            Poll::Ready(ended) => ended,
            Poll::Pending => {
                self.op = Some(op);
                return Poll::Pending;
            }
        };
        self.stream = Some(ended.stream);
        match ended.outcome {
            Outcome::Read(result, buf) => {
                if let Err(error) = self.read.filled(result, buf) {
                    self.read_error = Some(error);
                }
            }
            Outcome::Write(result, mut buf) => {
                buf.clear();
                self.write_buf = buf;
                if let Err(error) = result {
                    self.write_error = Some(error);
                }
            }
            Outcome::Finished(finish, result) => self.finished = Some((finish, result)),
        }
        Poll::Ready(())
    }

    /// Starts `call` on the idle stream (`writes`: it is a write, a flush or a shutdown).
    /// Fails once the stream is lost.
    fn start<F>(&mut self, writes: bool, call: impl FnOnce(S) -> F) -> io::Result<()>
    where
        F: Future<Output = Ended<S>> + Send + 'static,
    {
        let stream = self.stream.take().ok_or_else(lost)?;
        self.op = Some(Call {
            future: Box::pin(call(stream)),
            writes,
        });
        Ok(())
    }
}

impl<S: AsyncRead + OwnedStream> EngineRead for OwnedEngine<S> {
    /// Waits for the call in flight (a write, a flush) first: one call holds the stream
    /// (M6). A read asks for [`read_size`] bytes; one abandoned between polls stays in flight
    /// and its bytes come next (M1).
    fn poll_fill_buf(&mut self, cx: &mut Context<'_>, want: usize) -> Poll<io::Result<&[u8]>> {
        loop {
            if self.read.waiting() > 0 {
                return Poll::Ready(Ok(self.read.bytes()));
            }
            if let Some(error) = self.read_error.take() {
                return Poll::Ready(Err(error));
            }
            if self.read.at_eof() {
                self.read.eof_reported();
                return Poll::Ready(Ok(&[]));
            }
            if self.op.is_some() {
                ready!(self.poll_idle(cx, Side::Reader));
                continue;
            }
            let size = read_size(want);
            // The slice keeps a buffer grown by an earlier, larger read from asking for more.
            let buf = self.read.lend(size).slice(..size);
            self.start(false, |mut stream| async move {
                let (result, buf) = stream.read(buf).await;
                Ended {
                    stream,
                    outcome: Outcome::Read(result, buf.into_inner()),
                }
            })?;
        }
    }

    fn consume(&mut self, amount: usize) {
        self.read.consume(amount);
    }
}

impl<S: AsyncWrite + OwnedStream> EngineWrite for OwnedEngine<S> {
    /// Waits for the call in flight first (M6), then copies up to 1 MiB into the write buffer
    /// and writes it all in the background (M2).
    fn poll_write_vectored(
        &mut self,
        cx: &mut Context<'_>,
        srcs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if srcs.iter().all(|src| src.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        ready!(self.poll_idle(cx, Side::Writer));
        if let Some(error) = self.write_error.take() {
            return Poll::Ready(Err(error));
        }
        let unread = self.read.waiting();
        if S::SEEKS && unread > 0 {
            // The write lands right after what the caller read, not after the read-ahead.
            let stream = self.stream.as_mut().ok_or_else(lost)?;
            stream.step_back(unread as u64)?;
            self.read.discard();
        }
        let mut buf = std::mem::take(&mut self.write_buf);
        for src in srcs {
            let room = OWNED_LIMIT - buf.len();
            if room == 0 {
                break;
            }
            buf.extend_from_slice(&src[..src.len().min(room)]);
        }
        let accepted = buf.len();
        // A flush finished before this write does not cover it.
        self.finished = None;
        self.start(true, |mut stream| async move {
            let (result, buf) = stream.write_all(buf).await;
            Ended {
                stream,
                outcome: Outcome::Write(result, buf),
            }
        })?;
        // Polled once now so the write is submitted before the caller's next poll; when it
        // fails at once, the bytes were not taken and the error is returned instead.
        if self.poll_idle(cx, Side::Starter).is_ready()
            && let Some(error) = self.write_error.take()
        {
            return Poll::Ready(Err(error));
        }
        Poll::Ready(Ok(accepted))
    }

    /// Waits for the background write, then for the stream's own `flush`.
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_finish(cx, Finish::Flush)
    }

    /// Waits for the background write, then for the stream's own `shutdown` (which flushes
    /// first).
    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_finish(cx, Finish::Shutdown)
    }
}

impl<S: AsyncWrite + OwnedStream> OwnedEngine<S> {
    /// Runs the stream's `flush` or `shutdown` once every accepted byte is written; its result
    /// is kept until the caller polls again if another side drove it to its end.
    fn poll_finish(&mut self, cx: &mut Context<'_>, finish: Finish) -> Poll<io::Result<()>> {
        loop {
            if self.op.is_some() {
                ready!(self.poll_idle(cx, Side::Writer));
                continue;
            }
            if let Some(error) = self.write_error.take() {
                return Poll::Ready(Err(error));
            }
            // The other call's result is dropped: nobody waits for it any more (a flush
            // polled while a shutdown was in flight starts a flush of its own).
            if let Some((done, result)) = self.finished.take()
                && done == finish
            {
                return Poll::Ready(result);
            }
            self.start(true, move |mut stream| async move {
                let result = match finish {
                    Finish::Flush => stream.flush().await,
                    Finish::Shutdown => stream.shutdown().await,
                };
                Ended {
                    stream,
                    outcome: Outcome::Finished(finish, result),
                }
            })?;
        }
    }
}

/// M2: a write, flush or shutdown still running when the `Compat` goes is finished by a task
/// of the current runtime, so `write_all(..).await?` then a drop delivers every byte (a pipe
/// takes 64 KiB at a time, and the rest of a write needs polls). Outside a runtime, or once
/// it shuts down, the call is dropped with the rest of its bytes.
impl<S: OwnedStream> Drop for OwnedEngine<S> {
    fn drop(&mut self) {
        let Some(call) = self.op.take().filter(|call| call.writes) else {
            return;
        };
        if let Ok(handle) = baton::Handle::try_current() {
            // Refused only by a shutdown, which would cancel the task anyway.
            drop(handle.try_spawn(async move {
                drop(call.future.await);
            }));
        }
    }
}
