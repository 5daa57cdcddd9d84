//! [`Message`]: what a `sendmsg`/`recvmsg` request hands the kernel — its buffers, their
//! iovecs, a socket address and the `msghdr` pointing at them — kept at one stable heap address.

use super::{IoVecs, SockAddrBuf};
use crate::buf::RawBuf;

/// A message's parts, boxed: the `msghdr` points at the iovecs and the address inside the same
/// box, and the iovecs at the buffers' bytes.
///
/// Invariants: `hdr.msg_iov`/`msg_iovlen` describe `iovecs`, and `hdr.msg_name`/`msg_namelen`
/// describe `addr` (or are null/0 for a connected socket's send), all inside this box, which
/// never moves while the request exists; each iovec targets the bytes of one of `bufs` (the
/// [`IoVecs`] invariant).
#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) bufs: Vec<RawBuf>,
    iovecs: IoVecs,
    pub(crate) addr: SockAddrBuf,
    hdr: libc::msghdr,
    /// A receive that leaves the datagram queued (`MSG_PEEK`).
    peek: bool,
}

// SAFETY: the raw pointers of `hdr` and `iovecs` refer only to memory the same box owns (type
// invariant); the whole message moves between threads as one value, nothing else aliases it.
unsafe impl Send for Message {}

impl Message {
    /// A message over `bufs` — a receive's destinations (each iovec its capacity) or a send's
    /// sources (each its initialized bytes) — to or from `addr` (`None`: a connected socket's
    /// send names no address; a receive always has room for the sender's).
    pub(crate) fn new(bufs: Vec<RawBuf>, receive: bool, addr: Option<SockAddrBuf>) -> Box<Message> {
        let iovecs = IoVecs::over(&bufs, receive);
        let named = addr.is_some() || receive;
        let mut msg = Box::new(Message {
            bufs,
            iovecs,
            addr: addr.unwrap_or_else(SockAddrBuf::unnamed),
            // SAFETY: msghdr is plain old data; all-zero (null pointers, zero lengths) is valid.
            hdr: unsafe { std::mem::zeroed() },
            peek: false,
        });
        msg.hdr.msg_iov = msg.iovecs.0.as_mut_ptr();
        msg.hdr.msg_iovlen = msg.iovecs.0.len();
        if named {
            if receive {
                msg.addr.len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            }
            msg.hdr.msg_name = (&raw mut msg.addr.storage).cast();
            msg.hdr.msg_namelen = msg.addr.len;
        }
        msg
    }

    /// Makes a receive leave what it reads queued (`MSG_PEEK`).
    pub(crate) fn peek(mut self: Box<Message>) -> Box<Message> {
        self.peek = true;
        self
    }

    /// The `flags` argument of a `recvmsg` on this message.
    pub(crate) fn recv_flags(&self) -> u32 {
        if self.peek { libc::MSG_PEEK as u32 } else { 0 }
    }

    /// Whether this is a receive that only looked (its data is still queued).
    pub(crate) fn peeks(&self) -> bool {
        self.peek
    }

    /// The sender's address as the kernel wrote it (a receive on an IP socket), else `None`.
    pub(crate) fn sender(&self) -> Option<std::net::SocketAddr> {
        crate::ops::to_socket_addr(&self.addr)
    }

    /// The header to hand the kernel.
    pub(crate) fn hdr(&mut self) -> *mut libc::msghdr {
        &raw mut self.hdr
    }
}
