//! Socket operations (TCP and Unix).

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use super::{count, decode_filled, decode_sent, io_result, unit};
use crate::buf::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut, RawBuf};
use crate::operation::Op;
use crate::request::{Message, Outcome, Request, SockAddrBuf};

fn decode_fd(outcome: Outcome, _data: Option<Request>) -> io::Result<OwnedFd> {
    // SAFETY: a successful socket/accept result is a new descriptor nobody else owns.
    io_result(outcome).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `socket(domain, ty | SOCK_CLOEXEC, protocol)`.
pub fn socket(domain: i32, ty: i32, protocol: i32) -> Op<io::Result<OwnedFd>> {
    Op::new(
        Request::Socket {
            domain,
            ty,
            protocol,
        },
        decode_fd,
    )
}

/// Reads an IPv4/IPv6 address out of a kernel-filled buffer; `None` for other families.
pub(crate) fn to_socket_addr(addr: &SockAddrBuf) -> Option<SocketAddr> {
    match i32::from(addr.storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in, which it is large enough for.
            let sin = unsafe { &*(&raw const addr.storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6, which it is large enough for.
            let sin6 = unsafe { &*(&raw const addr.storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

fn decode_accept(
    outcome: Outcome,
    data: Option<Request>,
) -> io::Result<(OwnedFd, Option<SocketAddr>)> {
    let fd = decode_fd(outcome, None)?;
    let peer = match &data {
        Some(Request::Accept { addr, .. }) => to_socket_addr(addr),
        _ => None,
    };
    Ok((fd, peer))
}

/// Accepts a connection on the listening socket `fd`, returning the new socket and, for IP
/// sockets, the peer address. A late accept whose future is gone closes the accepted socket.
pub fn accept(fd: Arc<OwnedFd>) -> Op<io::Result<(OwnedFd, Option<SocketAddr>)>> {
    Op::new(
        Request::Accept {
            fd,
            addr: SockAddrBuf::empty(),
        },
        decode_accept,
    )
}

pub(super) fn ip_sockaddr(addr: SocketAddr) -> Box<SockAddrBuf> {
    let mut buf = SockAddrBuf::empty();
    match addr {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large enough and aligned for sockaddr_in.
            let sin = unsafe { &mut *(&raw mut buf.storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
            buf.len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        }
        SocketAddr::V6(v6) => {
            // SAFETY: sockaddr_storage is large enough and aligned for sockaddr_in6.
            let sin6 = unsafe { &mut *(&raw mut buf.storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
            sin6.sin6_flowinfo = v6.flowinfo();
            sin6.sin6_scope_id = v6.scope_id();
            buf.len = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
        }
    }
    buf
}

fn unix_sockaddr(path: &Path) -> Option<Box<SockAddrBuf>> {
    let bytes = path.as_os_str().as_bytes();
    let mut buf = SockAddrBuf::empty();
    // SAFETY: sockaddr_storage is large enough and aligned for sockaddr_un.
    let sun = unsafe { &mut *(&raw mut buf.storage).cast::<libc::sockaddr_un>() };
    if bytes.len() >= sun.sun_path.len() || bytes.contains(&0) {
        return None;
    }
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (dst, src) in sun.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    // The terminating NUL is counted only after a path: an empty path is the bare family,
    // which the kernel refuses for a connect with `EINVAL`, as for std's.
    let terminator = usize::from(!bytes.is_empty());
    buf.len =
        (std::mem::size_of::<libc::sa_family_t>() + bytes.len() + terminator) as libc::socklen_t;
    Some(buf)
}

/// Where to connect.
#[derive(Debug, Clone, Copy)]
pub enum ConnectTo<'a> {
    /// An IPv4 or IPv6 address.
    Ip(SocketAddr),
    /// A Unix socket path.
    Unix(&'a Path),
}

/// Connects `fd` (from [`socket`] or `std`) to `to`.
pub fn connect(fd: Arc<OwnedFd>, to: ConnectTo<'_>) -> Op<io::Result<()>> {
    let addr = match to {
        ConnectTo::Ip(addr) => ip_sockaddr(addr),
        ConnectTo::Unix(path) => match unix_sockaddr(path) {
            Some(addr) => addr,
            None => {
                return Op::invalid(
                    Request::Nop,
                    "unix socket path is too long or contains a NUL byte",
                    unit,
                );
            }
        },
    };
    Op::new(Request::Connect { fd, addr }, unit)
}

/// Sends `buf`'s initialized bytes (with `MSG_NOSIGNAL`). An empty buffer is `InvalidInput`.
pub fn send<B: IoBuf>(fd: Arc<OwnedFd>, buf: B) -> Op<(io::Result<usize>, B)> {
    let empty = buf.bytes_init() == 0;
    Op::new_unless(
        empty,
        Request::Send {
            fd,
            buf: RawBuf::new(buf),
        },
        "a send needs at least one byte to send (the buffer's initialized length is 0)",
        decode_sent::<B>,
    )
}

/// Receives into `buf`, from its beginning up to its capacity; its initialized length becomes
/// the count (0 means the peer shut down). A buffer with no capacity is `InvalidInput`.
pub fn recv<B: IoBufMut>(fd: Arc<OwnedFd>, buf: B) -> Op<(io::Result<usize>, B)> {
    receive(fd, buf, false)
}

/// [`recv`] on a socket that is probably drained (its last receive came back short, see
/// [`Stash::is_drained`](crate::Stash::is_drained)): the kernel waits for the socket to be
/// readable before its first attempt (`IORING_RECVSEND_POLL_FIRST`) instead of making one that
/// would fail and then waiting. Same results as [`recv`]; where the kernel lacks the flag it
/// is [`recv`].
pub fn recv_when_readable<B: IoBufMut>(fd: Arc<OwnedFd>, buf: B) -> Op<(io::Result<usize>, B)> {
    receive(fd, buf, true)
}

fn receive<B: IoBufMut>(fd: Arc<OwnedFd>, buf: B, poll_first: bool) -> Op<(io::Result<usize>, B)> {
    let empty = buf.bytes_total() == 0;
    Op::new_unless(
        empty,
        Request::Recv {
            fd,
            buf: RawBuf::new_mut(buf),
            poll_first,
        },
        "a receive needs a buffer with room for at least one byte: pass e.g. Vec::with_capacity(n)",
        decode_filled::<B>,
    )
}

/// Sends every buffer's initialized bytes, in order, in one `sendmsg` (with `MSG_NOSIGNAL`).
/// Buffers with nothing to send are `InvalidInput`.
pub fn send_vectored<V: IoVecBuf>(fd: Arc<OwnedFd>, bufs: V) -> Op<(io::Result<usize>, V)> {
    let bufs = bufs.into_raw_bufs();
    let empty = bufs.iter().all(|b| b.init() == 0);
    Op::new_unless(
        empty,
        Request::SendMsg {
            fd,
            msg: Message::new(bufs, false, None),
        },
        "a vectored send needs at least one byte to send",
        decode_sent_message::<V>,
    )
}

/// Receives into the buffers in order, each from its beginning up to its capacity, in one
/// `recvmsg`; each buffer's initialized length becomes what it got. Buffers with no room are
/// `InvalidInput`.
pub fn recv_vectored<V: IoVecBufMut>(fd: Arc<OwnedFd>, bufs: V) -> Op<(io::Result<usize>, V)> {
    let bufs = bufs.into_raw_bufs_mut();
    let empty = bufs.iter().all(|b| b.total() == 0);
    Op::new_unless(
        empty,
        Request::RecvMsg {
            fd,
            msg: Message::new(bufs, true, None),
        },
        "a vectored receive needs at least one buffer with room for a byte",
        decode_filled_message::<V>,
    )
}

fn decode_sent_message<V: IoVecBuf>(
    outcome: Outcome,
    data: Option<Request>,
) -> (io::Result<usize>, V) {
    match data {
        Some(Request::SendMsg { msg, .. }) => {
            // SAFETY: `send_vectored` built the message's buffers from a `V`.
            (count(outcome), unsafe { V::from_raw_bufs(msg.bufs) })
        }
        _ => (count(outcome), V::placeholder()),
    }
}

fn decode_filled_message<V: IoVecBufMut>(
    outcome: Outcome,
    data: Option<Request>,
) -> (io::Result<usize>, V) {
    let Some(Request::RecvMsg { msg, .. }) = data else {
        return (count(outcome), V::placeholder());
    };
    // SAFETY: `recv_vectored` built the message's buffers from a `V`.
    let mut bufs = unsafe { V::from_raw_bufs(msg.bufs) };
    let result = count(outcome);
    if let Ok(n) = &result {
        // SAFETY: the kernel filled `n` bytes across the message's iovecs, which point to these
        // buffers in order, each from its beginning (`Message::new` for a receive).
        unsafe { bufs.set_init_vectored(*n) };
    }
    (result, bufs)
}

/// `shutdown(2)`; retained.
pub fn shutdown(fd: Arc<OwnedFd>, how: Shutdown) -> Op<io::Result<()>> {
    let how = match how {
        Shutdown::Read => libc::SHUT_RD,
        Shutdown::Write => libc::SHUT_WR,
        Shutdown::Both => libc::SHUT_RDWR,
    };
    Op::new(Request::Shutdown { fd, how }, unit)
}
