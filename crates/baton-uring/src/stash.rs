//! Cancel-safe receives and accepts: the [`Stash`] where a result that completes after its
//! future is gone waits for the socket's next receive or accept.
//!
//! Stash rules (also drawn in `docs/protocols/uring.md`, cited as "stash rule S1" ... S4):
//!
//! S1. An operation bound to a stash ([`Operation::stash_late_result`](crate::Operation)) that is
//!    dropped while the kernel may still complete it takes a *ticket* from the stash first, so
//!    the stash counts the result as outstanding before the handle lets go. A handle dropped
//!    after its result already reached it deposits that result itself, without a ticket.
//!
//! S2. The ticket travels with the request's detachment — into the slot at a local drop, into the
//!    forwarding cell (under its lock) when the handle was forwarded — and ends exactly once:
//!    with the request's final result deposited (bytes received, a connection accepted), or
//!    with nothing (cancelled in time, failed, end of stream, never submitted). Dropping a
//!    ticket ends it with nothing.
//!
//! S3. The driver never touches a stash while its state is borrowed: a ticket it ends or a
//!    result it deposits goes to the deferred release, as wakers do.
//!
//! S4. A receive or accept on a socket whose stash is not idle does not go to the kernel: it
//!    waits until no ticket is outstanding, then takes the stashed results first, in the order
//!    the kernel completed them. So bytes come back in order and nothing received is discarded.
//!    A pipe's reads (`ops::read_stream`, `ops::readv_stream`) are kept the same way.
//!
//! S5. Sends keep their order the same way, through a stash of their own (a receive must not
//!    wait for a send, which may wait for the peer to read): a send is retained, so when its
//!    future is dropped before its final completion it keeps running and holds a ticket until
//!    then (ending with nothing kept); a pipe's writes likewise. The socket's next send, and a
//!    shutdown of its write side,
//!    wait until no ticket is outstanding ([`Stash::poll_settled`]), so the stream's bytes go out
//!    in the order their writes were made and none is cut off by the shutdown.
//!
//! The fast path costs one atomic load: [`Stash::is_idle`] is true while nothing is
//! outstanding or stashed, and a ticket is taken only on the drop path.

use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::task::{Context, Poll, Waker};

use crate::buf::{IoBufMut, IoVecBufMut, RawBuf};
use crate::ops::{Received, to_socket_addr};
use crate::request::{Outcome, Request, close_orphan_fd};
use crate::sync::{AtomicBool, AtomicUsize, Mutex, Ordering, lock};
// A std `Arc` even under loom: the models check the stash's lock and counter, which are loom's;
// the socket and its operations share the stash through a plain `std::sync::Arc`.
use std::sync::Arc;

/// An accepted connection: its socket and, for IP sockets, the peer's address.
pub type Accepted = (OwnedFd, Option<SocketAddr>);

/// A result kept for the next call (stash rule S4).
#[derive(Debug)]
enum Stashed {
    /// Bytes received: the first `len` bytes of `buf`, of which `start..len` are still to be
    /// handed out.
    Bytes {
        buf: RawBuf,
        start: usize,
        len: usize,
    },
    /// A datagram received: the first `len` bytes of `buf`, from `from` (`None` when the
    /// receive did not note a sender).
    Datagram {
        buf: RawBuf,
        len: usize,
        from: Option<SocketAddr>,
    },
    /// A connection accepted, with the peer's address for IP sockets.
    Connection(OwnedFd, Option<SocketAddr>),
}

#[derive(Debug, Default)]
struct StashState {
    /// Tickets not yet ended (stash rule S2).
    outstanding: usize,
    stashed: VecDeque<Stashed>,
    /// Callers waiting for the outstanding tickets to end.
    waiters: Vec<Waker>,
}

impl StashState {
    /// What [`Stash::pending`] mirrors.
    fn pending(&self) -> usize {
        self.outstanding + self.stashed.len()
    }
}

/// Where a socket's late receives and accepts leave their results (see the module
/// documentation). Shared as `Arc<Stash>` between the socket and the operations bound to it.
///
/// Invariant: `pending` equals `outstanding + stashed.len()` of the state behind the lock; it
/// is written only under the lock, so a reader that sees zero (with `Acquire`) saw every ticket
/// taken and every result stashed before its own call began.
pub struct Stash {
    state: Mutex<StashState>,
    pending: AtomicUsize,
    /// The socket keeps message boundaries (UDP): each late receive is kept as one datagram,
    /// an empty one included, and handed out whole (truncated to the next buffer, as the
    /// kernel would).
    datagrams: bool,
    /// The stream's last receive came back short of its buffer, so the kernel had nothing more
    /// queued then (see [`Stash::is_drained`]). A hint: any value is correct, only slower.
    drained: AtomicBool,
}

impl fmt::Debug for Stash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stash")
            .field("pending", &self.pending.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Default for Stash {
    fn default() -> Self {
        Stash::new()
    }
}

impl Stash {
    /// An empty stash for a stream socket: late receives are kept as bytes, in order.
    pub fn new() -> Stash {
        Stash {
            state: Mutex::new(StashState::default()),
            pending: AtomicUsize::new(0),
            datagrams: false,
            drained: AtomicBool::new(false),
        }
    }

    /// An empty stash for a datagram socket: each late receive is kept as one datagram.
    pub fn for_datagrams() -> Stash {
        Stash {
            datagrams: true,
            ..Stash::new()
        }
    }

    /// Nothing is outstanding or stashed: the next receive or accept may go to the kernel
    /// (stash rule S4). One atomic load.
    pub fn is_idle(&self) -> bool {
        self.pending.load(Ordering::Acquire) == 0
    }

    /// Notes how much a completed stream receive got out of the room it had: less than the room
    /// means the socket was drained, as far as the kernel knew.
    pub fn note_received(&self, received: usize, room: usize) {
        // Relaxed: a hint that orders nothing; a stale value costs one extra attempt or wait.
        self.drained.store(received < room, Ordering::Relaxed);
    }

    /// Whether the last noted receive came back short, so the next one will probably find
    /// nothing yet and is better started as a readiness wait
    /// ([`recv_when_readable`](crate::ops::recv_when_readable)). A datagram socket is never
    /// drained by this measure (a short datagram says nothing about the queue).
    pub fn is_drained(&self) -> bool {
        !self.datagrams && self.drained.load(Ordering::Relaxed)
    }

    /// Stash rule S4 for receives: waits while tickets are outstanding, then copies stashed
    /// bytes into `buf` as a receive would (from its beginning, up to its capacity; its
    /// initialized length becomes the count) and returns how many; `Ready(None)` when nothing
    /// is stashed (receive from the kernel then). A buffer with no capacity takes nothing.
    pub fn poll_take_bytes<B: IoBufMut>(
        &self,
        cx: &mut Context<'_>,
        buf: &mut B,
    ) -> Poll<Option<usize>> {
        let room = buf.bytes_total();
        self.poll_take_with(cx, room, |bytes| {
            // SAFETY: `buf` is valid for writes of `room >= bytes.len()` bytes (IoBufMut
            // contract) and is not the stash's memory; the bytes are initialized by the copy.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.stable_mut_ptr(), bytes.len());
                buf.set_init(bytes.len());
            }
        })
    }

    /// [`poll_take_bytes`](Stash::poll_take_bytes) into borrowed, possibly uninitialized memory
    /// (a readiness-style read, which takes stashed bytes before it asks the kernel): up to
    /// `dst.len()` of them, the first `n` of `dst` initialized when it returns `Some(n)`.
    pub fn poll_take_slice(
        &self,
        cx: &mut Context<'_>,
        dst: &mut [std::mem::MaybeUninit<u8>],
    ) -> Poll<Option<usize>> {
        let room = dst.len();
        self.poll_take_with(cx, room, |bytes| {
            // SAFETY: `dst` is valid for writes of `room >= bytes.len()` bytes (a `&mut`
            // slice of that length) and is not the stash's memory.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    dst.as_mut_ptr().cast::<u8>(),
                    bytes.len(),
                );
            }
        })
    }

    /// [`poll_take_bytes`](Stash::poll_take_bytes) for a vectored receive: the stashed bytes
    /// fill `bufs` in order, as a vectored receive would.
    pub fn poll_take_bytes_vectored<V: IoVecBufMut>(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut V,
    ) -> Poll<Option<usize>> {
        let room = bufs.io_capacity();
        self.poll_take_with(cx, room, |bytes| {
            let copied = bufs.fill_from(bytes);
            debug_assert_eq!(copied, bytes.len());
        })
    }

    /// Takes up to `room` stashed bytes and hands them to `copy` (under the stash lock: our own
    /// copy, never user code); returns how many.
    fn poll_take_with(
        &self,
        cx: &mut Context<'_>,
        room: usize,
        copy: impl FnOnce(&[u8]),
    ) -> Poll<Option<usize>> {
        let mut copy = Some(copy);
        self.poll_take(cx, |stashed| match stashed {
            Stashed::Bytes {
                buf: held,
                start,
                len,
            } if room > 0 => {
                let n = (*len - *start).min(room);
                // SAFETY: the kernel initialized the first `len` bytes of `held` (the receive's
                // count), nothing writes them now, and `start + n <= len`.
                let bytes = unsafe { &held.filled(*len)[*start..*start + n] };
                if let Some(copy) = copy.take() {
                    copy(bytes);
                }
                *start += n;
                Take::Took(n, *start == *len)
            }
            _ => Take::Leave,
        })
        .map(|taken| taken.map(|(n, _)| n))
    }

    /// Stash rule S4 for datagram receives: waits while tickets are outstanding, then copies
    /// the oldest stashed datagram into `buf` as a receive would (truncated to its capacity,
    /// the rest discarded) and returns the count and sender; a `peek` leaves the datagram
    /// stashed. `Ready(None)` when no datagram is stashed (receive from the kernel then). A
    /// buffer with no capacity takes nothing.
    pub fn poll_take_datagram<B: IoBufMut>(
        &self,
        cx: &mut Context<'_>,
        buf: &mut B,
        peek: bool,
    ) -> Poll<Option<Received>> {
        let room = buf.bytes_total();
        let mut sender = None;
        self.poll_take(cx, |stashed| match stashed {
            Stashed::Datagram {
                buf: held,
                len,
                from,
            } if room > 0 => {
                let n = (*len).min(room);
                // SAFETY: the kernel initialized the first `len >= n` bytes of `held` (the
                // receive's count) and nothing writes them now; `buf` is valid for writes of
                // `room >= n` bytes (IoBufMut contract) and is not the stash's memory.
                unsafe {
                    std::ptr::copy_nonoverlapping(held.filled(n).as_ptr(), buf.stable_mut_ptr(), n);
                    buf.set_init(n);
                }
                sender = *from;
                Take::Took(n, !peek)
            }
            _ => Take::Leave,
        })
        .map(|taken| taken.map(|(n, _)| (n, sender)))
    }

    /// Stash rule S4 for accepts: waits while tickets are outstanding, then returns the oldest
    /// stashed connection; `Ready(None)` when none is stashed.
    pub fn poll_take_connection(&self, cx: &mut Context<'_>) -> Poll<Option<Accepted>> {
        self.poll_take(cx, |stashed| match stashed {
            Stashed::Connection(..) => Take::Took(0, true),
            Stashed::Bytes { .. } | Stashed::Datagram { .. } => Take::Leave,
        })
        .map(|taken| match taken {
            Some((_, Some(Stashed::Connection(fd, peer)))) => Some((fd, peer)),
            _ => None,
        })
    }

    /// The shared waiting and taking of rule S4: `take` looks at the oldest stashed result and
    /// says how much it took and whether that result is used up (it is then removed and
    /// returned).
    fn poll_take(
        &self,
        cx: &mut Context<'_>,
        mut take: impl FnMut(&mut Stashed) -> Take,
    ) -> Poll<Option<(usize, Option<Stashed>)>> {
        if self.is_idle() {
            return Poll::Ready(None);
        }
        let mut state = lock(&self.state);
        if state.outstanding > 0 {
            // Waker hygiene: clone outside the lock, then check again.
            drop(state);
            let waker = cx.waker().clone();
            state = lock(&self.state);
            if state.outstanding > 0 {
                if !state.waiters.iter().any(|w| w.will_wake(&waker)) {
                    state.waiters.push(waker);
                    return Poll::Pending;
                }
                drop(state);
                drop(waker);
                return Poll::Pending;
            }
        }
        let Some(front) = state.stashed.front_mut() else {
            return Poll::Ready(None);
        };
        let Take::Took(n, used_up) = take(front) else {
            return Poll::Ready(None);
        };
        let removed = used_up.then(|| state.stashed.pop_front()).flatten();
        self.pending.store(state.pending(), Ordering::Release);
        drop(state);
        Poll::Ready(Some((n, removed)))
    }

    /// Stash rule S4 as a stream read's first step: the bytes stashed for `buf` (after waiting
    /// out the tickets), or `None` when the read goes to the kernel. One atomic load when the
    /// stash is idle.
    pub async fn take_bytes_first<B: IoBufMut>(&self, buf: &mut B) -> Option<usize> {
        if self.is_idle() {
            return None;
        }
        std::future::poll_fn(|cx| self.poll_take_bytes(cx, buf)).await
    }

    /// [`take_bytes_first`](Stash::take_bytes_first) for a vectored read.
    pub async fn take_bytes_vectored_first<V: IoVecBufMut>(&self, bufs: &mut V) -> Option<usize> {
        if self.is_idle() {
            return None;
        }
        std::future::poll_fn(|cx| self.poll_take_bytes_vectored(cx, bufs)).await
    }

    /// [`poll_settled`](Stash::poll_settled) as a future, for a stream write's first step.
    pub async fn settled(&self) {
        std::future::poll_fn(|cx| self.poll_settled(cx)).await;
    }

    /// Stash rule S5: waits until no ticket is outstanding (the retained sends dropped before
    /// their completion are all done), ignoring anything stashed. One atomic load when none is
    /// (the check [`is_idle`](Stash::is_idle) makes), so callers need no check of their own.
    pub fn poll_settled(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_take(cx, |_| Take::Leave).map(|_| ())
    }

    /// Stash rule S1: counts one more outstanding result; the ticket ends it (S2).
    pub(crate) fn ticket(self: &Arc<Self>) -> StashTicket {
        let mut state = lock(&self.state);
        state.outstanding += 1;
        self.pending.store(state.pending(), Ordering::Release);
        StashTicket {
            stash: Some(Arc::clone(self)),
        }
    }

    /// Ends one ticket, keeping `result` if there is one, and wakes the waiters once nothing is
    /// outstanding (outside the lock).
    fn end(&self, result: Option<Stashed>) {
        let mut state = lock(&self.state);
        state.outstanding -= 1;
        state.stashed.extend(result);
        self.pending.store(state.pending(), Ordering::Release);
        let wake = if state.outstanding == 0 {
            std::mem::take(&mut state.waiters)
        } else {
            Vec::new()
        };
        drop(state);
        for waker in wake {
            waker.wake();
        }
    }
}

/// What `take` did with the oldest stashed result.
enum Take {
    /// Took `n` bytes (or the connection); `true` when the result is used up.
    Took(usize, bool),
    /// Not what the caller takes (or nothing fits): leave it.
    Leave,
}

/// One outstanding late result (stash rule S2): ends exactly once, by [`deposit`]
/// (`StashTicket::deposit`) or by being dropped.
pub(crate) struct StashTicket {
    /// `None` once ended.
    stash: Option<Arc<Stash>>,
}

impl fmt::Debug for StashTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StashTicket")
            .field("ended", &self.stash.is_none())
            .finish()
    }
}

impl StashTicket {
    /// Ends the ticket with the request's final result: bytes received or a connection
    /// accepted are kept; anything else (an error, zero bytes, another kind of request) ends it
    /// with nothing. Called outside the driver's borrow (stash rule S3).
    pub(crate) fn deposit(mut self, outcome: Outcome, data: Option<Request>) {
        if let Some(stash) = self.stash.take() {
            let kept = stashed(outcome, data, stash.datagrams);
            stash.end(kept);
        }
    }
}

impl Drop for StashTicket {
    fn drop(&mut self) {
        if let Some(stash) = self.stash.take() {
            stash.end(None);
        }
    }
}

/// The part of a final result worth keeping (`datagrams`: the stash keeps message
/// boundaries); a descriptor the request created but the stash does not keep is closed.
fn stashed(outcome: Outcome, data: Option<Request>, datagrams: bool) -> Option<Stashed> {
    let Ok(res) = outcome else { return None };
    let n = usize::try_from(res).ok()?;
    match data? {
        // A datagram receive's count is the datagram's (possibly empty, possibly truncated)
        // length in its buffer, initialized from the beginning as for a stream receive.
        Request::Recv { buf, .. } if datagrams && n <= buf.total() => Some(Stashed::Datagram {
            buf,
            len: n,
            from: None,
        }),
        // A peek consumed nothing: the datagram is still queued in the kernel.
        Request::RecvMsg { msg, .. } if msg.peeks() => None,
        Request::RecvMsg { msg, .. } if datagrams => {
            let from = msg.sender();
            let buf = gather(&msg.bufs, n);
            let len = buf.len();
            Some(Stashed::Datagram {
                buf: RawBuf::new(buf),
                len,
                from,
            })
        }
        // The receive (or a pipe's read, the one kind of read a stash is attached to) pointed
        // the kernel at `buf` from its beginning and the driver owned it, unchanged, until this
        // final completion: a result `n` means its first `n` bytes are initialized
        // (`Stashed::Bytes`'s `len`).
        Request::Recv { buf, .. } | Request::Read { buf, .. } if n > 0 && n <= buf.total() => {
            Some(Stashed::Bytes {
                buf,
                start: 0,
                len: n,
            })
        }
        // A vectored receive's bytes span its buffers in order: gathered into one (a copy, on
        // this rare path).
        Request::RecvMsg { msg, .. } if n > 0 => {
            let gathered = gather(&msg.bufs, n);
            let len = gathered.len();
            Some(Stashed::Bytes {
                buf: RawBuf::new(gathered),
                start: 0,
                len,
            })
        }
        // A pipe's vectored read, the same way.
        Request::Readv { vectored, .. } if n > 0 => {
            let gathered = gather(&vectored.bufs, n);
            let len = gathered.len();
            Some(Stashed::Bytes {
                buf: RawBuf::new(gathered),
                start: 0,
                len,
            })
        }
        Request::Accept { addr, .. } => {
            // SAFETY: a successful accept's result is a new descriptor nobody else owns: its
            // future is gone, so the stash is its only owner.
            let fd = unsafe { OwnedFd::from_raw_fd(res) };
            Some(Stashed::Connection(fd, to_socket_addr(&addr)))
        }
        other => {
            if other.creates_fd() {
                close_orphan_fd(res);
            }
            None
        }
    }
}

/// The first `n` bytes a `recvmsg` left across `bufs`, gathered into one buffer.
fn gather(bufs: &[RawBuf], n: usize) -> Vec<u8> {
    let mut gathered = Vec::with_capacity(n);
    for part in bufs {
        let take = (n - gathered.len()).min(part.total());
        // SAFETY: the kernel filled the buffers in order from their beginnings (a receive's
        // message), so this one's first `take` bytes are initialized; nothing writes them now.
        gathered.extend_from_slice(unsafe { part.filled(take) });
    }
    gathered
}
