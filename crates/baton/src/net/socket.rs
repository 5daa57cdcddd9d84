//! The stream socket both [`TcpStream`](super::TcpStream) and
//! [`UnixStream`](super::UnixStream) wrap: a descriptor, the runtime it belongs to, and the
//! ring requests on it.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use baton_uring::{Accepted, Op, Operation, Stash, ops};

use crate::error::{Error, convert};
use crate::handle::Handle;
use crate::io::{BufResult, IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};

/// A stream socket. Invariant: the descriptor is in blocking mode, so the kernel arms its own
/// poll for requests that cannot complete yet instead of failing with `EAGAIN`.
///
/// `handle` is the runtime the socket was made on; a socket made outside any runtime (a
/// synchronous `bind` or `pair` before `block_on`) runs each request on the runtime current
/// where the request is first polled.
///
/// `stash` makes receives and accepts cancel-safe: a receive or accept whose future is dropped
/// after (or while) the kernel completes it leaves its bytes or connection there, and the next
/// [`read`](Socket::read) or [`accept`](Socket::accept) hands them out first, in order (the
/// driver's stash rules).
///
/// `sends` keeps the sends in order: a send is retained, so one whose future is dropped keeps
/// running, holding a ticket there until its final completion; the next send and a shutdown of
/// the write side wait for it (stash rule S5), so bytes go out in the order their writes were
/// made.
pub(crate) struct Socket {
    fd: Arc<OwnedFd>,
    handle: Option<Handle>,
    stash: Arc<Stash>,
    sends: Arc<Stash>,
}

impl fmt::Debug for Socket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Socket")
            .field("fd", &self.fd.as_raw_fd())
            .finish_non_exhaustive()
    }
}

impl Socket {
    /// A stream socket (its stash keeps late receives as bytes).
    pub(crate) fn new(fd: OwnedFd, handle: Option<Handle>) -> Socket {
        Socket {
            fd: Arc::new(fd),
            handle,
            stash: Arc::new(Stash::new()),
            sends: Arc::new(Stash::new()),
        }
    }

    /// Adopts stream socket `fd` into the runtime current on this thread (if any), as a
    /// socket constructor does: a runtime that shut down refuses with [`Error::Closed`], as
    /// every other call does after shutdown.
    pub(crate) fn adopt(fd: OwnedFd) -> io::Result<Socket> {
        Ok(Socket::new(fd, current_open()?))
    }

    /// [`adopt`](Socket::adopt) for a datagram socket (its stash keeps each late receive as
    /// one datagram).
    pub(crate) fn adopt_datagram(fd: OwnedFd) -> io::Result<Socket> {
        Ok(Socket {
            fd: Arc::new(fd),
            handle: current_open()?,
            stash: Arc::new(Stash::for_datagrams()),
            sends: Arc::new(Stash::new()),
        })
    }

    /// The descriptor.
    pub(crate) fn fd(&self) -> &Arc<OwnedFd> {
        &self.fd
    }

    /// Where late receives and accepts are kept (stash rules).
    pub(crate) fn stash(&self) -> &Arc<Stash> {
        &self.stash
    }

    /// Where dropped sends still running hold their tickets (stash rule S5).
    pub(crate) fn sends(&self) -> &Arc<Stash> {
        &self.sends
    }

    /// Waits until every send dropped before its completion has finished (stash rule S5): one
    /// atomic load when none is running.
    pub(crate) async fn sends_settled(&self) {
        self.sends.settled().await;
    }

    /// The runtime the socket was made on, if any.
    pub(crate) fn runtime_handle(&self) -> Option<&Handle> {
        self.handle.as_ref()
    }

    /// The runtime this socket belongs to: the one it was made on, else the current one.
    pub(crate) fn runtime(&self) -> Option<Handle> {
        self.handle.clone().or_else(crate::context::current)
    }

    /// Binds `op` to the socket's runtime, if it has one, for as long as the socket is
    /// borrowed (no count on the driver per operation): to the ring of the runtime's worker
    /// this thread runs, else to the socket's home worker ([`Handle::local_driver`]).
    fn bind<'s, T>(&'s self, op: Operation<'s, T>) -> Operation<'s, T> {
        match &self.handle {
            Some(handle) => op.bind_borrowed(handle.local_driver()),
            None => op,
        }
    }

    /// Accepts one connection, cancel-safely: a connection the kernel accepted for an earlier
    /// `accept` whose future was dropped comes first (stash rule S4).
    pub(crate) async fn accept(&self) -> io::Result<Accepted> {
        if !self.stash.is_idle()
            && let Some(accepted) = poll_fn(|cx| self.stash.poll_take_connection(cx)).await
        {
            return Ok(accepted);
        }
        let op = ops::accept(Arc::clone(&self.fd)).stash_late_result(&self.stash);
        convert(self.bind(op).await)
    }

    /// Shuts a listening socket down now if an in-flight request still holds its descriptor
    /// (an accept being cancelled): the kernel then stops listening and frees the port at
    /// once instead of when the last reference closes it. Without such a request, the drop
    /// that follows closes the descriptor at once anyway.
    pub(crate) fn stop_listening(&self) {
        if Arc::strong_count(&self.fd) > 1 {
            // Nothing to report from a drop: the socket is going away either way.
            let _ = socket2::SockRef::from(&*self.fd).shutdown(Shutdown::Both);
        }
    }

    /// A duplicate of the descriptor, for the standard library's address and option calls.
    pub(crate) fn duplicate(&self) -> io::Result<OwnedFd> {
        self.fd.as_fd().try_clone_to_owned()
    }

    /// Connects an unconnected socket through the ring.
    pub(crate) async fn connect(&self, to: ops::ConnectTo<'_>) -> io::Result<()> {
        let op = ops::connect(Arc::clone(&self.fd), to);
        convert(self.bind(op).await)
    }

    /// Receives, cancel-safely: bytes the kernel received for an earlier read whose future was
    /// dropped come first, in order (stash rule S4). After a short receive the next one starts
    /// as a readiness wait ([`Stash::is_drained`]).
    pub(crate) async fn read<B: IoBufMut>(&self, buf: B) -> BufResult<usize, B> {
        let mut buf = buf;
        if let Some(n) = self.stash.take_bytes_first(&mut buf).await {
            return (Ok(n), buf);
        }
        let room = buf.bytes_total();
        let op = stream_receive(Arc::clone(&self.fd), buf, &self.stash);
        let (res, buf) = self.bind(op.stash_late_result(&self.stash)).await;
        if let Ok(received) = res {
            self.stash.note_received(received, room);
        }
        (convert(res), buf)
    }

    /// A vectored receive, cancel-safe as [`read`](Socket::read).
    pub(crate) async fn read_vectored<V: IoVecBufMut>(&self, bufs: V) -> BufResult<usize, V> {
        let mut bufs = bufs;
        if let Some(n) = self.stash.take_bytes_vectored_first(&mut bufs).await {
            return (Ok(n), bufs);
        }
        let op = ops::recv_vectored(Arc::clone(&self.fd), bufs).stash_late_result(&self.stash);
        let (res, bufs) = self.bind(op).await;
        (convert(res), bufs)
    }

    /// A stream send, after any dropped send still running (S5); an empty buffer sends
    /// nothing and is `Ok(0)`, as std's `write` (the ring's `send` refuses it). Retained: a
    /// drop leaves the send running.
    pub(crate) async fn write<B: IoBuf>(&self, buf: B) -> BufResult<usize, B> {
        if buf.bytes_init() == 0 {
            return (Ok(0), buf);
        }
        self.sends_settled().await;
        let op = ops::send(Arc::clone(&self.fd), buf).stash_late_result(&self.sends);
        let (res, buf) = self.bind(op).await;
        (convert(res), buf)
    }

    /// [`write`](Self::write) of several buffers in one `sendmsg`; all empty is `Ok(0)`.
    pub(crate) async fn write_vectored<V: IoVecBuf>(&self, bufs: V) -> BufResult<usize, V> {
        self.sends_settled().await;
        let op = ops::send_vectored(Arc::clone(&self.fd), bufs).stash_late_result(&self.sends);
        let (res, bufs) = self.bind(op).await;
        (crate::io::empty_write_is_zero(convert(res), &bufs), bufs)
    }

    /// `shutdown(2)`, after any dropped send still running when it shuts the write side (S5).
    /// A socket whose peer already reset the connection is no longer connected; shutting it
    /// down then succeeds (there is nothing left to shut), as tokio's does, instead of failing
    /// with `NotConnected`.
    pub(crate) async fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        if how != Shutdown::Read {
            self.sends_settled().await;
        }
        let op = ops::shutdown(Arc::clone(&self.fd), how);
        shutdown_result(convert(self.bind(op).await))
    }
}

/// A shutdown's result as the caller sees it: a socket whose peer already closed or reset
/// (`ENOTCONN`) shuts down with `Ok(())`, as tokio's does (there is nothing left to shut).
pub(crate) fn shutdown_result(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(err) if err.raw_os_error() == Some(libc::ENOTCONN) => Ok(()),
        other => other,
    }
}

/// The ring receive a stream socket's next read starts: a readiness wait first when its last
/// receive came back short ([`Stash::is_drained`]), an immediate attempt otherwise. The caller
/// reports what the receive got with [`Stash::note_received`].
pub(crate) fn stream_receive<B: IoBufMut>(
    fd: Arc<OwnedFd>,
    buf: B,
    stash: &Stash,
) -> Op<(io::Result<usize>, B)> {
    if stash.is_drained() {
        ops::recv_when_readable(fd, buf)
    } else {
        ops::recv(fd, buf)
    }
}

/// Datagram requests.
impl Socket {
    /// Receives one datagram on a connected socket, cancel-safely (a datagram received for an
    /// earlier receive whose future was dropped comes first, stash rule S4).
    pub(crate) async fn recv<B: IoBufMut>(&self, buf: B) -> BufResult<usize, B> {
        let mut buf = buf;
        if !self.stash.is_idle()
            && let Some((n, _)) =
                poll_fn(|cx| self.stash.poll_take_datagram(cx, &mut buf, false)).await
        {
            return (Ok(n), buf);
        }
        let op = ops::recv(Arc::clone(&self.fd), buf).stash_late_result(&self.stash);
        let (res, buf) = self.bind(op).await;
        (convert(res), buf)
    }

    /// Receives (or, with `peek`, looks at) one datagram and its sender, cancel-safely.
    pub(crate) async fn recv_from<B: IoBufMut>(
        &self,
        buf: B,
        peek: bool,
    ) -> BufResult<ops::Received, B> {
        let mut buf = buf;
        if !self.stash.is_idle()
            && let Some(received) =
                poll_fn(|cx| self.stash.poll_take_datagram(cx, &mut buf, peek)).await
        {
            return (Ok(received), buf);
        }
        let fd = Arc::clone(&self.fd);
        let op = if peek {
            ops::peek_from(fd, buf)
        } else {
            ops::recv_from(fd, buf)
        };
        let (res, buf) = self.bind(op.stash_late_result(&self.stash)).await;
        (convert(res), buf)
    }

    /// Sends one datagram, to `to` or (with `None`) to the connected peer, after any dropped
    /// send still running (S5), so datagrams leave in the order they were sent.
    pub(crate) async fn send_to<B: IoBuf>(
        &self,
        buf: B,
        to: Option<SocketAddr>,
    ) -> BufResult<usize, B> {
        self.sends_settled().await;
        let op = ops::send_to(Arc::clone(&self.fd), buf, to).stash_late_result(&self.sends);
        let (res, buf) = self.bind(op).await;
        (convert(res), buf)
    }
}

impl AsFd for Socket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The runtime current on this thread, unless it is shutting down (then [`Error::Closed`]).
fn current_open() -> io::Result<Option<Handle>> {
    let handle = crate::context::current();
    if handle.as_ref().is_some_and(Handle::is_shutting_down) {
        return Err(Error::Closed.into_io());
    }
    Ok(handle)
}
