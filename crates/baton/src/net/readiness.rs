//! Readiness-style calls on a stream socket ([`PollIo`]): a non-blocking receive into a
//! borrowed slice (after what the stash holds), a non-blocking vectored send, one-shot
//! readiness waits and a shutdown on the socket's ring; and which types have them.

use std::io;
use std::mem::MaybeUninit;
use std::net::Shutdown;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::task::{Context, Poll};

use baton_uring::{Op, Stash, ops};

use super::socket::Socket;
use super::split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use super::stream::Stream;
use super::{TcpStream, UnixStream};
use crate::io::{PollIo, PollRead, PollWrite, Readiness, RingStart};

/// Linux's limit on the buffers of one `sendmsg` (`UIO_MAXIOV`, `<linux/uio.h>`).
const UIO_MAXIOV: usize = 1024;

impl Socket {
    /// [`PollRead::poll_try_read`]: stash rule S4 first, then `recv(MSG_DONTWAIT)`. Only
    /// ever writes initialized bytes into `dst` (the stash's copy, the kernel's receive).
    pub(crate) fn poll_try_read(
        &self,
        cx: &mut Context<'_>,
        dst: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        if dst.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if !self.stash().is_idle() {
            match self.stash().poll_take_slice(cx, dst) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(taken)) => return Poll::Ready(Ok(taken)),
                Poll::Ready(None) => {}
            }
        }
        loop {
            // SAFETY: `dst` is valid for writes of `dst.len()` bytes for the whole call, and the
            // descriptor is open (the socket owns it); `recv` writes at most that many.
            let received = unsafe {
                libc::recv(
                    self.fd().as_raw_fd(),
                    dst.as_mut_ptr().cast(),
                    dst.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            match usize::try_from(received) {
                Ok(count) => return Poll::Ready(Ok(count)),
                Err(_) => {
                    let err = io::Error::last_os_error();
                    if err.kind() != io::ErrorKind::Interrupted {
                        return Poll::Ready(Err(err));
                    }
                }
            }
        }
    }

    /// [`PollWrite::try_write_vectored`]: `sendmsg(MSG_DONTWAIT | MSG_NOSIGNAL)`, or
    /// `WouldBlock` while a dropped send still runs (stash rule S5: its bytes go first; the
    /// socket's [`writable`](PollWrite::writable) wait ends after it).
    pub(crate) fn try_write_vectored(&self, srcs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        if srcs.iter().all(|src| src.is_empty()) {
            return Ok(0);
        }
        if !self.sends().is_idle() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        // `IoSlice` is ABI-compatible with `iovec`; the kernel takes at most `UIO_MAXIOV` of
        // them (a longer list is `EINVAL`), so the rest waits for the next call.
        let count = srcs.len().min(UIO_MAXIOV);
        // SAFETY: `msghdr` is a plain C struct, valid when zeroed (no name, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = srcs.as_ptr().cast_mut().cast();
        msg.msg_iovlen = count;
        loop {
            // SAFETY: `msg` points at `count` live `iovec`s (the borrowed `IoSlice`s) that the
            // kernel only reads during the call; the descriptor is open (the socket owns it).
            let sent = unsafe {
                libc::sendmsg(
                    self.fd().as_raw_fd(),
                    &msg,
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            match usize::try_from(sent) {
                Ok(count) => return Ok(count),
                Err(_) => {
                    let err = io::Error::last_os_error();
                    if err.kind() != io::ErrorKind::Interrupted {
                        return Err(err);
                    }
                }
            }
        }
    }

    /// What an owned receive or send of [`PollIo`] needs to start its ring requests.
    pub(crate) fn ring_start(&self) -> RingStart {
        RingStart {
            fd: Arc::clone(self.fd()),
            stash: Arc::clone(self.stash()),
            sends: Arc::clone(self.sends()),
            handle: self.runtime_handle().cloned(),
        }
    }

    /// A `shutdown(how)` on this socket's runtime's ring (or the one current where it is first
    /// polled), for [`PollWrite::shutdown_write`]; it waits first for any dropped send still
    /// running (stash rule S5).
    pub(crate) fn shutdown_op(&self, how: Shutdown) -> (Op<io::Result<()>>, Arc<Stash>) {
        let op = ops::shutdown(Arc::clone(self.fd()), how);
        let op = match self.runtime_handle() {
            Some(handle) => op.bind(handle.local_driver()),
            None => op,
        };
        (op, Arc::clone(self.sends()))
    }

    /// A readiness wait made by `make` on this socket, on its runtime's ring (or the one current
    /// where it is first polled, for a socket made outside a runtime). A wait for writing
    /// (`after_sends`) first waits for any dropped send still running (stash rule S5).
    pub(crate) fn readiness(
        &self,
        make: fn(Arc<OwnedFd>) -> Op<io::Result<()>>,
        after_sends: bool,
    ) -> Readiness {
        let op = make(Arc::clone(self.fd()));
        let op = match self.runtime_handle() {
            Some(handle) => op.bind(handle.local_driver()),
            None => op,
        };
        Readiness::new(op, after_sends.then(|| Arc::clone(self.sends())))
    }
}

// Which types are `PollIo` sockets, and which sides of one they have.
impl PollIo for TcpStream {}
impl PollRead for TcpStream {}
impl PollWrite for TcpStream {}
impl PollIo for UnixStream {}
impl PollRead for UnixStream {}
impl PollWrite for UnixStream {}
impl<S: Stream> PollIo for OwnedReadHalf<S> {}
impl<S: Stream> PollRead for OwnedReadHalf<S> {}
impl<S: Stream> PollIo for OwnedWriteHalf<S> {}
impl<S: Stream> PollWrite for OwnedWriteHalf<S> {}
impl<S: Stream> PollIo for ReadHalf<'_, S> {}
impl<S: Stream> PollRead for ReadHalf<'_, S> {}
impl<S: Stream> PollIo for WriteHalf<'_, S> {}
impl<S: Stream> PollWrite for WriteHalf<'_, S> {}
