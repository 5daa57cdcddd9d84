//! Datagram operations (UDP): sends to an address, receives noting the sender, peeks.
//!
//! Each datagram is one `sendmsg`/`recvmsg` over one buffer. A datagram larger than the
//! receive buffer is truncated to it, the rest discarded, as `recvfrom(2)` and `std` do; an
//! empty datagram is a valid send.

use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use super::count;
use super::net::ip_sockaddr;
use crate::buf::{IoBuf, IoBufMut, RawBuf};
use crate::operation::Op;
use crate::request::{Message, Outcome, Request};

/// What a receive from an unconnected socket returns: the count and the sender's address
/// (`None` for a family without one, as a Unix datagram socket's unnamed peer).
pub type Received = (usize, Option<SocketAddr>);

/// Sends `buf`'s initialized bytes as one datagram, to `to` — or, with `None`, to the address
/// the socket is connected to. An empty buffer sends an empty datagram.
pub fn send_to<B: IoBuf>(
    fd: Arc<OwnedFd>,
    buf: B,
    to: Option<SocketAddr>,
) -> Op<(io::Result<usize>, B)> {
    let addr = to.map(|to| *ip_sockaddr(to));
    let msg = Message::new(vec![RawBuf::new(buf)], false, addr);
    Op::new(Request::SendMsg { fd, msg }, decode_sent_to::<B>)
}

/// Receives one datagram into `buf` (from its beginning; its initialized length becomes the
/// count) and the sender's address. A buffer with no capacity is `InvalidInput`.
pub fn recv_from<B: IoBufMut>(fd: Arc<OwnedFd>, buf: B) -> Op<(io::Result<Received>, B)> {
    receive(fd, buf, false)
}

/// [`recv_from`] that leaves the datagram queued (`MSG_PEEK`): the next receive gets it again.
pub fn peek_from<B: IoBufMut>(fd: Arc<OwnedFd>, buf: B) -> Op<(io::Result<Received>, B)> {
    receive(fd, buf, true)
}

fn receive<B: IoBufMut>(fd: Arc<OwnedFd>, buf: B, peek: bool) -> Op<(io::Result<Received>, B)> {
    let empty = buf.bytes_total() == 0;
    let msg = Message::new(vec![RawBuf::new_mut(buf)], true, None);
    let msg = if peek { msg.peek() } else { msg };
    Op::new_unless(
        empty,
        Request::RecvMsg { fd, msg },
        "a receive needs a buffer with room for at least one byte: pass e.g. Vec::with_capacity(n)",
        decode_received::<B>,
    )
}

/// The one buffer of a datagram message, as the `B` it was built from.
fn take_buffer<B: IoBuf>(msg: &mut Message) -> Option<B> {
    let buf = msg.bufs.pop()?;
    // SAFETY: `send_to` and `receive` build the message's only buffer from a `B`, the type
    // their decode is instantiated for.
    Some(unsafe { buf.into_value() })
}

fn decode_sent_to<B: IoBuf>(outcome: Outcome, data: Option<Request>) -> (io::Result<usize>, B) {
    let buf = match data {
        Some(Request::SendMsg { mut msg, .. }) => take_buffer(&mut msg),
        _ => None,
    };
    (count(outcome), buf.unwrap_or_else(B::placeholder))
}

fn decode_received<B: IoBufMut>(
    outcome: Outcome,
    data: Option<Request>,
) -> (io::Result<Received>, B) {
    let Some(Request::RecvMsg { mut msg, .. }) = data else {
        return (count(outcome).map(|n| (n, None)), B::placeholder());
    };
    let sender = msg.sender();
    let Some(mut buf) = take_buffer::<B>(&mut msg) else {
        return (count(outcome).map(|n| (n, None)), B::placeholder());
    };
    let result = match count(outcome) {
        Ok(n) if n <= buf.bytes_total() => {
            // SAFETY: the message's one iovec pointed the kernel at this buffer's
            // `bytes_total()` bytes from its beginning, and the driver owned the buffer,
            // unchanged, until this final completion; a result `n` (which fits, checked above)
            // means the kernel initialized its first `n` bytes.
            unsafe { buf.set_init(n) };
            Ok((n, sender))
        }
        Ok(n) => Err(io::Error::other(format!(
            "the kernel reported receiving {n} bytes, more than the buffer holds"
        ))),
        Err(err) => Err(err),
    };
    (result, buf)
}
