//! [`PollIo`]: a socket driven readiness-style — borrowed buffers, non-blocking calls, and
//! one-shot readiness waits on the ring — for adapters to poll-based I/O traits
//! (`baton-compat`'s `Compat`), where copying through an owned buffer would cost a copy per
//! byte and a ring round trip per call.

use std::fmt;
use std::future::Future;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use baton_uring::{Op, Stash, ops};

use crate::error::convert;
use crate::handle::Handle;
use crate::io::ext::write_zero;
use crate::io::{BufResult, IoBuf, Slice};
use crate::net::Sealed;
use crate::net::shutdown_result;
use crate::net::stream_receive;

/// A Baton socket that adapters to poll-based I/O traits drive readiness-style: `TcpStream`,
/// `UnixStream` and their halves (borrowed and owned). Sealed. What it can do is in
/// [`PollRead`] (streams, read halves) and [`PollWrite`] (streams, write halves).
///
/// The protocol is the one of readiness-based runtimes: try the call; on
/// [`WouldBlock`](io::ErrorKind::WouldBlock) wait for [`readable`](PollRead::readable) or
/// [`writable`](PollWrite::writable), then try again (a readiness wait may end without the
/// call then succeeding: try, and wait again on `WouldBlock`).
///
/// It mixes with the owned-buffer calls on one socket in the order the calls are made, with
/// one rule: a read here takes first what a cancelled owned-buffer receive left behind (stash
/// rule S4), so nothing received is skipped or reordered.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use baton::io::{PollRead, PollWrite};
/// use std::future::poll_fn;
///
/// baton::Runtime::new()?.block_on(async {
///     let (a, b) = baton::net::UnixStream::pair()?;
///     assert_eq!(a.try_write_vectored(&[std::io::IoSlice::new(b"ping")])?, 4);
///     let mut got = [0_u8; 8];
///     let n = loop {
///         match poll_fn(|cx| b.poll_try_read(cx, &mut got)).await {
///             Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => b.readable().await?,
///             read => break read?,
///         }
///     };
///     assert_eq!(&got[..n], b"ping");
///     Ok(())
/// })
/// # }
/// ```
pub trait PollIo: Sealed + Send + Sync + Unpin {}

/// The reading side of a [`PollIo`] socket.
pub trait PollRead: PollIo {
    /// Reads into `dst` without waiting for the peer: bytes a cancelled receive left behind
    /// first (`Pending` only while such a receive is still in the kernel: its bytes come
    /// first), then a non-blocking `recv(2)`. `Ok(0)` is the end of the stream (or an empty
    /// `dst`); [`WouldBlock`](io::ErrorKind::WouldBlock) means nothing is there yet.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a `Pending` poll holds nothing; the bytes stay with the socket.
    fn poll_try_read(&self, cx: &mut Context<'_>, dst: &mut [u8]) -> Poll<io::Result<usize>> {
        // SAFETY: viewing initialized bytes as `MaybeUninit` is sound as long as nothing writes
        // uninitialized bytes through the view, and `Socket::poll_try_read` writes only
        // initialized ones.
        let dst = unsafe { &mut *(std::ptr::from_mut(dst) as *mut [MaybeUninit<u8>]) };
        Sealed::socket(self).poll_try_read(cx, dst)
    }

    /// Waits until the socket is readable, or has an error or hang-up for a read to report.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the wait holds no data.
    fn readable(&self) -> Readiness {
        Sealed::socket(self).readiness(ops::poll_readable, false)
    }

    /// An owned-buffer receive into `buf` (from its beginning up to its capacity), as `read`
    /// does, as a `'static`, `Unpin` future an adapter can keep across polls without boxing.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as `read`: dropped after the kernel received, it leaves the bytes for the
    /// socket's next read.
    fn read_owned(&self, buf: Vec<u8>) -> ReadOwned {
        ReadOwned::new(Sealed::socket(self).ring_start(), buf)
    }
}

/// The writing side of a [`PollIo`] socket.
pub trait PollWrite: PollIo {
    /// Writes what the socket takes now of `srcs`, in order (a non-blocking `sendmsg(2)`;
    /// no `SIGPIPE`); [`WouldBlock`](io::ErrorKind::WouldBlock) when it takes nothing, or
    /// while a write dropped before its completion still runs (a write is retained, and its
    /// bytes go first).
    fn try_write_vectored(&self, srcs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        Sealed::socket(self).try_write_vectored(srcs)
    }

    /// Waits until the socket is writable, or has an error or hang-up for a write to report,
    /// and no dropped send is still running (its bytes go first).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the wait holds no data.
    fn writable(&self) -> Readiness {
        Sealed::socket(self).readiness(ops::poll_writable, true)
    }

    /// Writes all of `buf`'s bytes through the ring, as `write_all` does, as a `'static`,
    /// `Unpin` future an adapter can keep across polls (a background write) without boxing.
    ///
    /// # Cancel safety
    ///
    /// Not cancel-safe: dropping it lets the send in flight (or not yet submitted) finish; the
    /// rest of the buffer, after a short send, is not sent.
    fn write_all_owned(&self, buf: Vec<u8>) -> WriteAllOwned {
        WriteAllOwned::new(Sealed::socket(self).ring_start(), buf)
    }

    /// Shuts the write side down (`shutdown(Write)`: the peer reads the end of the stream), as
    /// a `'static`, `Unpin` future. A socket whose peer already closed or reset shuts down
    /// with `Ok(())`. It waits first for any write dropped before its completion that still
    /// runs, so it cuts none of it off.
    ///
    /// # Cancel safety
    ///
    /// Retained: once it reached the ring, the shutdown happens even if the future is dropped.
    fn shutdown_write(&self) -> ShutdownWrite {
        let (op, sends) = Sealed::socket(self).shutdown_op(std::net::Shutdown::Write);
        ShutdownWrite {
            after: AfterSends::new(sends),
            op,
        }
    }
}

/// The wait at the start of a send-side request until the socket's dropped sends still running
/// are done (stash rule S5); one atomic load once it has nothing to wait for.
struct AfterSends(Option<Arc<Stash>>);

impl AfterSends {
    fn new(sends: Arc<Stash>) -> AfterSends {
        AfterSends(Some(sends))
    }

    /// Ready once the wait is over; a later poll does not wait again (the request it guards
    /// may already be on the ring, ahead of sends dropped since).
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(sends) = &self.0 {
            ready!(sends.poll_settled(cx));
            self.0 = None;
        }
        Poll::Ready(())
    }
}

/// A write-side shutdown from [`PollWrite::shutdown_write`].
pub struct ShutdownWrite {
    after: AfterSends,
    op: Op<io::Result<()>>,
}

impl fmt::Debug for ShutdownWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShutdownWrite").finish_non_exhaustive()
    }
}

impl Future for ShutdownWrite {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.after.poll(cx));
        Pin::new(&mut self.op)
            .poll(cx)
            .map(|result| shutdown_result(convert(result)))
    }
}

/// A one-shot readiness wait (a ring poll request) from [`PollIo`]; `'static` and `Unpin`, so
/// an adapter can keep it across polls. Dropping it cancels the wait, which holds no data.
pub struct Readiness {
    /// For a wait for writing: the socket's dropped sends still running come first (S5).
    after: AfterSends,
    op: Op<io::Result<()>>,
}

impl Readiness {
    pub(crate) fn new(op: Op<io::Result<()>>, after_sends: Option<Arc<Stash>>) -> Readiness {
        Readiness {
            after: AfterSends(after_sends),
            op,
        }
    }
}

impl fmt::Debug for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Readiness").finish_non_exhaustive()
    }
}

impl Future for Readiness {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.after.poll(cx));
        Pin::new(&mut self.op).poll(cx).map(convert)
    }
}

/// What a receive or send of [`PollIo`] needs to start a ring request on its socket: the
/// descriptor, the stash of late receives, the stash of dropped sends still running (S5), and
/// the runtime the socket belongs to (`None`: the one current where the request is first
/// polled).
pub(crate) struct RingStart {
    pub(crate) fd: Arc<OwnedFd>,
    pub(crate) stash: Arc<Stash>,
    pub(crate) sends: Arc<Stash>,
    pub(crate) handle: Option<Handle>,
}

impl RingStart {
    fn bound<T>(&self, op: Op<T>) -> Op<T> {
        match &self.handle {
            Some(handle) => op.bind(handle.local_driver()),
            None => op,
        }
    }

    /// A stream receive ([`stream_receive`]), its late result kept in the stash.
    fn receive(&self, buf: Vec<u8>) -> Op<(io::Result<usize>, Vec<u8>)> {
        let op = stream_receive(Arc::clone(&self.fd), buf, &self.stash);
        self.bound(op)
            .stash_late_result_shared(Arc::clone(&self.stash))
    }

    /// A send, retained: dropped, it holds a ticket in the send stash until it is done (S5).
    fn send(&self, buf: Slice<Vec<u8>>) -> Op<(io::Result<usize>, Slice<Vec<u8>>)> {
        self.bound(ops::send(Arc::clone(&self.fd), buf))
            .stash_late_result_shared(Arc::clone(&self.sends))
    }
}

/// An owned-buffer receive from [`PollRead::read_owned`].
pub struct ReadOwned {
    state: ReadState,
}

enum ReadState {
    /// Bytes a cancelled receive left behind come first (stash rule S4), then a receive.
    Stashed {
        buf: Vec<u8>,
        start: RingStart,
    },
    Receiving {
        op: Op<(io::Result<usize>, Vec<u8>)>,
        /// Told how much the receive got ([`Stash::note_received`]).
        stash: Arc<Stash>,
    },
    Done,
}

impl ReadOwned {
    /// Starts in `Stashed`: whether bytes wait in the stash is decided at the first poll, not
    /// here, because an earlier receive still in flight now may be dropped late (leaving its
    /// bytes in the stash) before this one is first polled (stash rule S4).
    pub(crate) fn new(start: RingStart, buf: Vec<u8>) -> ReadOwned {
        ReadOwned {
            state: ReadState::Stashed { buf, start },
        }
    }
}

impl fmt::Debug for ReadOwned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadOwned").finish_non_exhaustive()
    }
}

impl Future for ReadOwned {
    type Output = BufResult<usize, Vec<u8>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            match &mut this.state {
                ReadState::Stashed { buf, start } => {
                    // The idle check is the lock-free fast path of the take.
                    let taken = if start.stash.is_idle() {
                        None
                    } else {
                        ready!(start.stash.poll_take_bytes(cx, buf))
                    };
                    match taken {
                        Some(taken) => {
                            let ReadState::Stashed { buf, .. } =
                                std::mem::replace(&mut this.state, ReadState::Done)
                            else {
                                unreachable!("matched Stashed just above")
                            };
                            return Poll::Ready((Ok(taken), buf));
                        }
                        None => {
                            let ReadState::Stashed { buf, start } =
                                std::mem::replace(&mut this.state, ReadState::Done)
                            else {
                                unreachable!("matched Stashed just above")
                            };
                            this.state = ReadState::Receiving {
                                op: start.receive(buf),
                                stash: start.stash,
                            };
                        }
                    }
                }
                ReadState::Receiving { op, stash } => {
                    let (result, buf) = ready!(Pin::new(op).poll(cx));
                    if let Ok(received) = result {
                        stash.note_received(received, buf.bytes_total());
                    }
                    this.state = ReadState::Done;
                    return Poll::Ready((convert(result), buf));
                }
                ReadState::Done => panic!("a ReadOwned was polled after it completed"),
            }
        }
    }
}

/// An owned-buffer background write from [`PollWrite::write_all_owned`].
pub struct WriteAllOwned {
    start: RingStart,
    written: usize,
    total: usize,
    state: WriteState,
}

enum WriteState {
    /// Not sent yet: waits for the socket's dropped sends still running (S5), then sends; an
    /// empty buffer is complete at once (a send of zero bytes is refused by the socket layer,
    /// and `write_all` of nothing is `Ok`).
    Starting(Vec<u8>),
    Sending(Op<(io::Result<usize>, Slice<Vec<u8>>)>),
    Done,
}

impl WriteAllOwned {
    pub(crate) fn new(start: RingStart, buf: Vec<u8>) -> WriteAllOwned {
        WriteAllOwned {
            start,
            written: 0,
            total: buf.len(),
            state: WriteState::Starting(buf),
        }
    }
}

impl fmt::Debug for WriteAllOwned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteAllOwned")
            .field("written", &self.written)
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

impl Future for WriteAllOwned {
    type Output = BufResult<(), Vec<u8>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            let op = match &mut this.state {
                WriteState::Sending(op) => op,
                WriteState::Starting(_) => {
                    if this.total > 0 {
                        ready!(this.start.sends.poll_settled(cx));
                    }
                    let WriteState::Starting(buf) =
                        std::mem::replace(&mut this.state, WriteState::Done)
                    else {
                        unreachable!("matched Starting just above")
                    };
                    if this.total == 0 {
                        return Poll::Ready((Ok(()), buf));
                    }
                    this.state = WriteState::Sending(this.start.send(buf.slice(0..this.total)));
                    continue;
                }
                WriteState::Done => panic!("a WriteAllOwned was polled after it completed"),
            };
            let (result, slice) = ready!(Pin::new(op).poll(cx));
            this.state = WriteState::Done;
            let buf = slice.into_inner();
            match convert(result) {
                Ok(0) => return Poll::Ready((Err(write_zero()), buf)),
                Ok(sent) => this.written += sent,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Poll::Ready((Err(err), buf)),
            }
            if this.written >= this.total {
                return Poll::Ready((Ok(()), buf));
            }
            this.state = WriteState::Sending(this.start.send(buf.slice(this.written..this.total)));
        }
    }
}
