//! [`TcpSocket`]: a TCP socket not yet connected or listening, to set options on first.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use socket2::{Domain, Protocol, Type};

use crate::net::{TcpListener, TcpStream};

/// A TCP socket to configure before it becomes a [`TcpListener`] ([`listen`]) or a
/// [`TcpStream`] ([`connect`]), as tokio's `TcpSocket`: every option of the listener and
/// stream can be set here, before `bind`, where some of them (`SO_REUSEPORT`, `IPV6_V6ONLY`,
/// buffer sizes for the handshake's window) must be.
///
/// [`listen`]: TcpSocket::listen
/// [`connect`]: TcpSocket::connect
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let socket = baton::net::TcpSocket::new_v4()?;
///     socket.set_reuseaddr(true)?;
///     socket.set_reuseport(true)?;
///     socket.bind("127.0.0.1:0".parse().unwrap())?;
///     let listener = socket.listen(1024)?;
///     let addr = listener.local_addr()?;
///
///     let client = baton::net::TcpSocket::new_v4()?;
///     client.set_nodelay(true)?;
///     let stream = client.connect(addr).await?;
///     let (_server, peer) = listener.accept().await?;
///     assert_eq!(peer, stream.local_addr()?);
///     Ok(())
/// })
/// # }
/// ```
#[derive(Debug)]
pub struct TcpSocket {
    inner: socket2::Socket,
}

impl TcpSocket {
    /// A new IPv4 TCP socket (close-on-exec, blocking mode as the ring needs).
    ///
    /// # Errors
    ///
    /// The OS error of `socket(2)` (`EMFILE`, ...).
    pub fn new_v4() -> io::Result<TcpSocket> {
        TcpSocket::new(Domain::IPV4)
    }

    /// A new IPv6 TCP socket (close-on-exec, blocking mode).
    ///
    /// # Errors
    ///
    /// The OS error of `socket(2)`.
    pub fn new_v6() -> io::Result<TcpSocket> {
        TcpSocket::new(Domain::IPV6)
    }

    /// A new TCP socket of `addr`'s family.
    pub(crate) fn for_addr(addr: SocketAddr) -> io::Result<TcpSocket> {
        TcpSocket::new(Domain::for_address(addr))
    }

    fn new(domain: Domain) -> io::Result<TcpSocket> {
        Ok(TcpSocket {
            inner: socket2::Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?,
        })
    }

    /// Binds the socket to `addr` (port 0: the OS picks one).
    ///
    /// # Errors
    ///
    /// The OS error of `bind(2)` (`AddrInUse`, `AddrNotAvailable`, ...).
    pub fn bind(&self, addr: SocketAddr) -> io::Result<()> {
        self.inner.bind(&addr.into())
    }

    /// The address the socket is bound to.
    ///
    /// # Errors
    ///
    /// The OS error of `getsockname(2)`, or `InvalidInput` for a socket not bound to an IP
    /// address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        ip_addr(self.inner.local_addr()?)
    }

    /// Starts listening, with room for `backlog` connections the kernel completed but nobody
    /// accepted yet (past it, further SYNs are dropped and the clients retry after a second or
    /// more; [`TcpListener::bind`] uses 1024).
    ///
    /// # Errors
    ///
    /// The OS error of `listen(2)` (`AddrInUse` when another socket listens on the port), or
    /// [`Error::Closed`](crate::Error::Closed) when the current runtime shut down.
    pub fn listen(self, backlog: u32) -> io::Result<TcpListener> {
        let backlog = i32::try_from(backlog).unwrap_or(i32::MAX);
        self.inner.listen(backlog)?;
        let local = self.local_addr()?;
        TcpListener::adopt(OwnedFd::from(self.inner), local)
    }

    /// Connects to `addr` through the ring.
    ///
    /// # Errors
    ///
    /// The OS error of `connect(2)` (`ConnectionRefused`, `TimedOut`, ...), or
    /// [`Error::NotInRuntime`](crate::Error::NotInRuntime).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the connect and closes the socket; no stream is created.
    pub async fn connect(self, addr: SocketAddr) -> io::Result<TcpStream> {
        TcpStream::connect_socket(OwnedFd::from(self.inner), addr).await
    }
}

crate::net::options::ip_options!(TcpSocket);
crate::net::options::tcp_options!(TcpSocket);

impl AsFd for TcpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.as_fd()
    }
}

/// The IP address inside a socket address the OS reported.
pub(crate) fn ip_addr(addr: socket2::SockAddr) -> io::Result<SocketAddr> {
    addr.as_socket().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the socket is not bound to an IP address",
        )
    })
}
