//! The stream socket both [`TcpStream`](super::TcpStream) and
//! [`UnixStream`](super::UnixStream) wrap: a descriptor, the runtime it belongs to, and the
//! ring requests on it.

use std::fmt;
use std::io;
use std::net::Shutdown;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use baton_uring::{Op, Operation, ops};

use crate::error::convert;
use crate::handle::Handle;
use crate::io_buf::ReadTarget;

/// A stream socket. Invariant: the descriptor is in blocking mode, so the kernel arms its own
/// poll for requests that cannot complete yet instead of failing with `EAGAIN`.
///
/// `handle` is the runtime the socket was made on; a socket made outside any runtime (a
/// synchronous `bind` or `pair` before `block_on`) runs each request on the runtime current
/// where the request is first polled.
pub(crate) struct Socket {
    fd: Arc<OwnedFd>,
    handle: Option<Handle>,
}

impl fmt::Debug for Socket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Socket")
            .field("fd", &self.fd.as_raw_fd())
            .finish_non_exhaustive()
    }
}

impl Socket {
    pub(crate) fn new(fd: OwnedFd, handle: Option<Handle>) -> Socket {
        Socket {
            fd: Arc::new(fd),
            handle,
        }
    }

    /// The runtime this socket belongs to: the one it was made on, else the current one.
    pub(crate) fn runtime(&self) -> Option<Handle> {
        self.handle.clone().or_else(crate::context::current)
    }

    /// Binds `op` to the socket's runtime, if it has one, for as long as the socket is
    /// borrowed (no count on the driver per operation).
    fn bind<T>(&self, op: Op<T>) -> Operation<'_, T> {
        match &self.handle {
            Some(handle) => op.bind_borrowed(handle.driver()),
            None => op,
        }
    }

    /// The shared descriptor, for requests made elsewhere (accept).
    pub(crate) fn fd(&self) -> &Arc<OwnedFd> {
        &self.fd
    }

    /// Runs `op` on the socket's runtime.
    pub(crate) async fn run<T>(&self, op: Op<T>) -> T {
        self.bind(op).await
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

    pub(crate) async fn read(&self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        let mut target = ReadTarget::new(buf);
        let op = ops::recv(Arc::clone(&self.fd), target.take());
        let (res, buf) = self.bind(op).await;
        let res = convert(res);
        let buf = target.finish(buf);
        (res, buf)
    }

    pub(crate) async fn write(&self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        let op = ops::send(Arc::clone(&self.fd), buf);
        let (res, buf) = self.bind(op).await;
        (convert(res), buf)
    }

    pub(crate) async fn write_all(&self, buf: Vec<u8>) -> (io::Result<()>, Vec<u8>) {
        if buf.is_empty() {
            return (Ok(()), buf);
        }
        let total = buf.len();
        let (res, buf) = self.write(buf).await;
        let mut written = match res {
            Ok(n) if n == total => return (Ok(()), buf),
            Ok(0) => return (Err(write_zero()), buf),
            Ok(n) => n,
            Err(err) => return (Err(err), buf),
        };
        // A short send: send the rest from a copy, and hand the caller's buffer back intact.
        let mut rest = buf[written..].to_vec();
        while written < total {
            let (res, back) = self.write(rest).await;
            rest = back;
            match res {
                Ok(0) => return (Err(write_zero()), buf),
                Ok(n) => {
                    written += n;
                    rest.drain(..n);
                }
                Err(err) => return (Err(err), buf),
            }
        }
        (Ok(()), buf)
    }

    pub(crate) async fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        let op = ops::shutdown(Arc::clone(&self.fd), how);
        convert(self.bind(op).await)
    }
}

impl AsFd for Socket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

fn write_zero() -> io::Error {
    io::Error::new(io::ErrorKind::WriteZero, "the peer accepted no bytes")
}

/// A new blocking-mode, close-on-exec stream socket of `domain`.
pub(crate) fn stream_socket(domain: i32) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) has no memory-safety preconditions; the result is checked below.
    let fd = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
