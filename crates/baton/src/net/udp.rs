//! UDP: [`UdpSocket`].

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use socket2::{Domain, Protocol, Type};

use crate::io::{BufResult, IoBuf, IoBufMut};
use crate::net::lookup::{self, ToSocketAddrs, no_address, resolve_here};
use crate::net::socket::Socket;
use crate::net::tcp_socket::ip_addr;

/// A UDP socket. Sends and receives are io_uring requests taking owned buffers, as streams'
/// are: `let (res, buf) = socket.recv_from(buf).await;`.
///
/// Each send is one datagram (an empty buffer sends an empty datagram); each receive gets one
/// datagram, from the buffer's beginning up to its capacity — a datagram larger than that is
/// truncated and its rest discarded, as `std` and `recvfrom(2)` do. Methods take `&self`, so
/// tasks may send and receive on one socket at once (share it in an `Arc`).
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let a = baton::net::UdpSocket::bind("127.0.0.1:0")?;
///     let b = baton::net::UdpSocket::bind("127.0.0.1:0")?;
///     let (res, _) = a.send_to(b"ping".to_vec(), b.local_addr()?).await;
///     res?;
///     let (res, buf) = b.recv_from(Vec::with_capacity(1500)).await;
///     let (n, from) = res?;
///     assert_eq!((&buf[..n], from), (&b"ping"[..], a.local_addr()?));
///     Ok(())
/// })
/// # }
/// ```
///
/// # Cancel safety
///
/// Receives (`recv`, `recv_from`) are cancel-safe: a datagram the kernel delivered for a
/// receive whose future was dropped is kept by the socket and returned, whole, by the next
/// receive. A `peek_from` dropped late loses nothing (the datagram stays queued). Sends are
/// *retained*: a dropped send still goes out.
#[derive(Debug)]
pub struct UdpSocket {
    socket: Socket,
}

impl UdpSocket {
    /// Binds a socket to the first address of `addr` that works.
    ///
    /// Synchronous, as [`TcpListener::bind`](crate::net::TcpListener::bind): an IP literal is
    /// parsed in place, a host name resolved on the calling thread.
    ///
    /// # Errors
    ///
    /// The OS error of the last address tried (`AddrInUse`, ...), `InvalidInput` when `addr`
    /// names no address, or [`Error::Closed`](crate::Error::Closed) when the current runtime
    /// shut down.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        UdpSocket::bind_with(addr, false)
    }

    /// Like [`bind`](UdpSocket::bind), with `SO_REUSEPORT` set, so several sockets — one per
    /// worker, say — may be bound to one address; the kernel spreads incoming datagrams over
    /// them by a hash of the sender's and receiver's addresses (so one peer's datagrams keep
    /// going to one socket).
    ///
    /// # Errors
    ///
    /// As [`bind`](UdpSocket::bind); `AddrInUse` when a socket on the address did not set
    /// `SO_REUSEPORT`.
    pub fn bind_reuseport(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        UdpSocket::bind_with(addr, true)
    }

    fn bind_with(addr: impl ToSocketAddrs, reuseport: bool) -> io::Result<UdpSocket> {
        let mut last = None;
        for addr in resolve_here(&addr)? {
            let bound =
                socket2::Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
                    .and_then(|socket| {
                        if reuseport {
                            socket.set_reuse_port(true)?;
                        }
                        socket.bind(&addr.into()).map(|()| socket)
                    });
            match bound {
                Ok(socket) => return UdpSocket::adopt(OwnedFd::from(socket)),
                Err(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or_else(no_address))
    }

    /// Adopts a standard-library socket (switched to blocking mode, which the ring needs).
    ///
    /// # Errors
    ///
    /// The OS error of changing its mode.
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(false)?;
        UdpSocket::adopt(OwnedFd::from(socket))
    }

    fn adopt(fd: OwnedFd) -> io::Result<UdpSocket> {
        Ok(UdpSocket {
            socket: Socket::adopt_datagram(fd)?,
        })
    }

    /// Connects the socket to `addr` — the first address that works, a host name resolved on
    /// the blocking pool: [`send`](UdpSocket::send) then goes there, and only datagrams from
    /// there are received. No packet is sent.
    ///
    /// # Errors
    ///
    /// The OS error of the last address tried, the resolver's error, `InvalidInput` when
    /// `addr` names no address.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropped while it resolves, the socket is left as it was; dropped after an
    /// address was set, the socket stays connected to it (a `connect` is one system call, not
    /// a ring request, so nothing is left in flight).
    pub async fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        let addrs = lookup::resolve(&addr, "net::UdpSocket::connect").await?;
        lookup::each_address(addrs, |addr| async move {
            socket2::SockRef::from(self).connect(&addr.into())
        })
        .await
    }

    /// The address the socket is bound to.
    ///
    /// # Errors
    ///
    /// The OS error of `getsockname(2)`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        ip_addr(socket2::SockRef::from(self).local_addr()?)
    }

    /// The address the socket is connected to.
    ///
    /// # Errors
    ///
    /// `NotConnected` for a socket that is not connected.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        ip_addr(socket2::SockRef::from(self).peer_addr()?)
    }

    /// Sends `buf`'s initialized bytes as one datagram to the connected address.
    ///
    /// # Errors
    ///
    /// The OS error (`NotConnected` when not connected, `EMSGSIZE` for a datagram larger
    /// than the protocol allows, `ConnectionRefused` after an ICMP port-unreachable, ...).
    ///
    /// # Cancel safety
    ///
    /// Retained: dropping the future does not stop the send.
    pub async fn send<B: IoBuf>(&self, buf: B) -> BufResult<usize, B> {
        self.socket.send_to(buf, None).await
    }

    /// Sends `buf`'s initialized bytes as one datagram to `target` (its first address; a host
    /// name is resolved on the blocking pool).
    ///
    /// # Errors
    ///
    /// As [`send`](UdpSocket::send), and `InvalidInput` when `target` names no address.
    ///
    /// # Cancel safety
    ///
    /// Retained once the send is submitted; dropping the future during a lookup sends nothing.
    pub async fn send_to<B: IoBuf>(
        &self,
        buf: B,
        target: impl ToSocketAddrs,
    ) -> BufResult<usize, B> {
        let to = match lookup::resolve(&target, "net::UdpSocket::send_to").await {
            Ok(addrs) => addrs.first().copied(),
            Err(err) => return (Err(err), buf),
        };
        match to {
            Some(to) => self.socket.send_to(buf, Some(to)).await,
            None => (Err(no_address()), buf),
        }
    }

    /// Receives one datagram from the connected address into `buf` (from its beginning; its
    /// initialized length becomes the count, truncated to its capacity). An empty datagram is
    /// `Ok(0)`. A buffer with no capacity is `InvalidInput`.
    ///
    /// # Errors
    ///
    /// The OS error (`ConnectionRefused` after an ICMP port-unreachable for an earlier send,
    /// ...).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a datagram received for a dropped future is returned by the next receive.
    pub async fn recv<B: IoBufMut>(&self, buf: B) -> BufResult<usize, B> {
        self.socket.recv(buf).await
    }

    /// Receives one datagram into `buf`, as [`recv`](UdpSocket::recv), and the address it came
    /// from.
    ///
    /// # Errors
    ///
    /// As [`recv`](UdpSocket::recv).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`recv`](UdpSocket::recv).
    pub async fn recv_from<B: IoBufMut>(&self, buf: B) -> BufResult<(usize, SocketAddr), B> {
        let (res, buf) = self.socket.recv_from(buf, false).await;
        (res.and_then(with_sender), buf)
    }

    /// Looks at the next datagram as [`recv_from`](UdpSocket::recv_from) does, leaving it
    /// queued: the next receive gets it again.
    ///
    /// # Errors
    ///
    /// As [`recv`](UdpSocket::recv).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a peek consumes nothing.
    pub async fn peek_from<B: IoBufMut>(&self, buf: B) -> BufResult<(usize, SocketAddr), B> {
        let (res, buf) = self.socket.recv_from(buf, true).await;
        (res.and_then(with_sender), buf)
    }

    /// Whether `SO_BROADCAST` is set.
    ///
    /// # Errors
    ///
    /// The OS error of `getsockopt(2)`.
    pub fn broadcast(&self) -> io::Result<bool> {
        socket2::SockRef::from(self).broadcast()
    }

    /// Sets `SO_BROADCAST`: the socket may send to a broadcast address.
    ///
    /// # Errors
    ///
    /// The OS error of `setsockopt(2)`.
    pub fn set_broadcast(&self, broadcast: bool) -> io::Result<()> {
        socket2::SockRef::from(self).set_broadcast(broadcast)
    }

    /// Joins the IPv4 multicast group `multiaddr` on the interface with address `interface`
    /// (`Ipv4Addr::UNSPECIFIED`: the system picks).
    ///
    /// # Errors
    ///
    /// The OS error of `setsockopt(2)` (`InvalidInput` for an address that is not multicast).
    pub fn join_multicast_v4(&self, multiaddr: Ipv4Addr, interface: Ipv4Addr) -> io::Result<()> {
        socket2::SockRef::from(self).join_multicast_v4(&multiaddr, &interface)
    }

    /// Leaves an IPv4 multicast group joined with [`join_multicast_v4`](Self::join_multicast_v4).
    ///
    /// # Errors
    ///
    /// The OS error of `setsockopt(2)`.
    pub fn leave_multicast_v4(&self, multiaddr: Ipv4Addr, interface: Ipv4Addr) -> io::Result<()> {
        socket2::SockRef::from(self).leave_multicast_v4(&multiaddr, &interface)
    }

    /// Joins the IPv6 multicast group `multiaddr` on interface index `interface` (0: the
    /// system picks).
    ///
    /// # Errors
    ///
    /// The OS error of `setsockopt(2)`.
    pub fn join_multicast_v6(&self, multiaddr: Ipv6Addr, interface: u32) -> io::Result<()> {
        socket2::SockRef::from(self).join_multicast_v6(&multiaddr, interface)
    }

    /// Leaves an IPv6 multicast group joined with [`join_multicast_v6`](Self::join_multicast_v6).
    ///
    /// # Errors
    ///
    /// The OS error of `setsockopt(2)`.
    pub fn leave_multicast_v6(&self, multiaddr: Ipv6Addr, interface: u32) -> io::Result<()> {
        socket2::SockRef::from(self).leave_multicast_v6(&multiaddr, interface)
    }

    /// Whether IPv4 multicast datagrams this socket sends loop back to local listeners.
    ///
    /// # Errors
    ///
    /// The OS error of `getsockopt(2)`.
    pub fn multicast_loop_v4(&self) -> io::Result<bool> {
        socket2::SockRef::from(self).multicast_loop_v4()
    }

    /// Sets `IP_MULTICAST_LOOP`.
    ///
    /// # Errors
    ///
    /// The OS error of `setsockopt(2)`.
    pub fn set_multicast_loop_v4(&self, on: bool) -> io::Result<()> {
        socket2::SockRef::from(self).set_multicast_loop_v4(on)
    }

    /// The time-to-live of IPv4 multicast datagrams (`IP_MULTICAST_TTL`; 1 by default: the
    /// local network only).
    ///
    /// # Errors
    ///
    /// The OS error of `getsockopt(2)`.
    pub fn multicast_ttl_v4(&self) -> io::Result<u32> {
        socket2::SockRef::from(self).multicast_ttl_v4()
    }

    /// Sets `IP_MULTICAST_TTL`.
    ///
    /// # Errors
    ///
    /// The OS error of `setsockopt(2)`.
    pub fn set_multicast_ttl_v4(&self, ttl: u32) -> io::Result<()> {
        socket2::SockRef::from(self).set_multicast_ttl_v4(ttl)
    }

    /// Whether IPv6 multicast datagrams this socket sends loop back to local listeners.
    ///
    /// # Errors
    ///
    /// The OS error of `getsockopt(2)`.
    pub fn multicast_loop_v6(&self) -> io::Result<bool> {
        socket2::SockRef::from(self).multicast_loop_v6()
    }

    /// Sets `IPV6_MULTICAST_LOOP`.
    ///
    /// # Errors
    ///
    /// The OS error of `setsockopt(2)`.
    pub fn set_multicast_loop_v6(&self, on: bool) -> io::Result<()> {
        socket2::SockRef::from(self).set_multicast_loop_v6(on)
    }
}

crate::net::options::ip_options!(UdpSocket);

impl AsFd for UdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// A receive's count and sender; an IP socket's receive always names one.
fn with_sender((n, from): (usize, Option<SocketAddr>)) -> io::Result<(usize, SocketAddr)> {
    from.map(|from| (n, from))
        .ok_or_else(|| io::Error::other("the kernel reported no sender address for the datagram"))
}
