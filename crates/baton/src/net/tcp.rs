//! TCP: [`TcpListener`] and [`TcpStream`].

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use baton_uring::ops;

use crate::context;
use crate::net::lookup::{self, ToSocketAddrs, no_address, resolve_here};
use crate::net::socket::Socket;
use crate::net::tcp_socket::{TcpSocket, ip_addr};

/// The listen backlog of [`TcpListener::bind`], as tokio's.
const DEFAULT_BACKLOG: u32 = 1024;

/// A TCP socket listening for connections; [`accept`](TcpListener::accept) runs on the ring.
///
/// `bind` is synchronous (nothing to wait for), as in tokio-uring and `std`. A listener bound
/// inside a runtime belongs to it; one bound outside any runtime accepts on the runtime where
/// `accept` is awaited.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let listener = baton::net::TcpListener::bind("127.0.0.1:0")?;
///     let addr = listener.local_addr()?;
///     let client = baton::spawn(async move {
///         let stream = baton::net::TcpStream::connect(addr).await?;
///         let (res, _) = stream.write_all(b"ping".to_vec()).await;
///         res
///     });
///     let (stream, _peer) = listener.accept().await?;
///     let (res, buf) = stream.read(vec![0; 4]).await;
///     assert_eq!(&buf[..res?], b"ping");
///     client.await.map_err(std::io::Error::other)?
/// })
/// # }
/// ```
#[derive(Debug)]
pub struct TcpListener {
    socket: Socket,
    local: SocketAddr,
}

impl TcpListener {
    /// Binds a listener to the first address of `addr` that works, with `SO_REUSEADDR` (as
    /// `std` and tokio) and a backlog of 1024 connections (as tokio; `std`'s 128 drops SYNs in
    /// a connect storm). Use [`TcpSocket`](crate::net::TcpSocket) for other options or another
    /// backlog.
    ///
    /// Synchronous (nothing to wait for). An IP literal is parsed in place; a host name is
    /// resolved with the system resolver **on the calling thread** — pass an address (or
    /// resolve with [`lookup_host`](crate::net::lookup_host) first) to keep the worker free.
    ///
    /// # Errors
    ///
    /// The OS error of the last address tried (`AddrInUse`, `AddrNotAvailable`, ...),
    /// `InvalidInput` when `addr` names no address, or [`Error::Closed`](crate::Error::Closed)
    /// when the current runtime shut down.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        TcpListener::bind_with(addr, false)
    }

    /// Like [`bind`](TcpListener::bind), with `SO_REUSEPORT` set too, so several listeners —
    /// typically one per worker, each accepting on its own ring — may listen on one address;
    /// the kernel spreads new connections over them by a hash of each connection's addresses.
    /// Bind the first one to the port you want (or to port 0, then the others to its
    /// [`local_addr`](TcpListener::local_addr)).
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// use baton::net::TcpListener;
    /// let rt = baton::Builder::new().workers(2).build()?;
    /// let first = TcpListener::bind_reuseport("127.0.0.1:0")?;
    /// let addr = first.local_addr()?;
    /// let second = TcpListener::bind_reuseport(addr)?; // the same port, a second queue
    /// assert_eq!(second.local_addr()?, addr);
    /// # drop(rt);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`bind`](TcpListener::bind); `AddrInUse` when a listener on the address did not set
    /// `SO_REUSEPORT` (or belongs to another user).
    pub fn bind_reuseport(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        TcpListener::bind_with(addr, true)
    }

    fn bind_with(addr: impl ToSocketAddrs, reuseport: bool) -> io::Result<TcpListener> {
        let mut last = None;
        for addr in resolve_here(&addr)? {
            match TcpListener::bind_one(addr, reuseport) {
                Ok(listener) => return Ok(listener),
                Err(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or_else(no_address))
    }

    fn bind_one(addr: SocketAddr, reuseport: bool) -> io::Result<TcpListener> {
        let socket = TcpSocket::for_addr(addr)?;
        socket.set_reuseaddr(true)?;
        if reuseport {
            socket.set_reuseport(true)?;
        }
        socket.bind(addr)?;
        socket.listen(DEFAULT_BACKLOG)
    }

    /// Adopts a standard-library listener (switched to blocking mode, which the ring needs).
    ///
    /// # Errors
    ///
    /// The OS error of reading its address or mode.
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(false)?;
        let local = listener.local_addr()?;
        TcpListener::adopt(OwnedFd::from(listener), local)
    }

    /// A listener over `fd`, a blocking-mode socket listening on `local`.
    pub(crate) fn adopt(fd: OwnedFd, local: SocketAddr) -> io::Result<TcpListener> {
        Ok(TcpListener {
            socket: Socket::adopt(fd)?,
            local,
        })
    }

    /// Accepts one connection.
    ///
    /// # Errors
    ///
    /// The OS error of `accept(2)`, or a runtime error (closed, not in a runtime).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe. If the future is dropped (by a `timeout`, a `select!`, an abort) after the
    /// kernel accepted a connection for it, or while it does, the connection is kept by the
    /// listener and returned by the next `accept`: no client is ever dropped.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (fd, peer) = self.socket.accept().await?;
        let stream = TcpStream {
            socket: Socket::new(fd, self.socket.runtime()),
        };
        let peer = match peer {
            Some(peer) => peer,
            None => stream.peer_addr()?,
        };
        Ok((stream, peer))
    }

    /// The address the listener is bound to (with the port the OS chose for port 0).
    ///
    /// # Errors
    ///
    /// Never in practice; kept for parity with `std`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// Closing a listener releases its port before `drop` returns, even while the kernel still
/// holds the descriptor for an `accept` being cancelled: the listening socket is shut down
/// first, so an immediate re-`bind` of the same port succeeds. (A descriptor duplicated from
/// the listener stops accepting too.)
impl Drop for TcpListener {
    fn drop(&mut self) {
        self.socket.stop_listening();
    }
}

crate::net::options::ip_options!(TcpListener);
crate::net::options::tcp_options!(TcpListener);

impl AsFd for TcpListener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// A TCP connection. Reads and writes take owned buffers and hand them back:
/// `let (res, buf) = stream.read(buf).await;`.
///
/// Methods take `&self`, so one task may read while another writes (share the stream in an
/// `Arc`). Dropping the stream closes it once its in-flight requests completed.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let listener = baton::net::TcpListener::bind("127.0.0.1:0")?; // synchronous
///     let addr = listener.local_addr()?;
///     let client = baton::spawn(async move {
///         let stream = baton::net::TcpStream::connect(addr).await?;
///         let (res, _buf) = stream.write_all(b"hi".to_vec()).await;
///         res?;
///         stream.shutdown().await
///     });
///     let (server, _peer) = listener.accept().await?;
///     let (res, buf) = server.read(Vec::with_capacity(8)).await;
///     assert_eq!(&buf[..res?], b"hi");
///     client.await.map_err(std::io::Error::other)?
/// })
/// # }
/// ```
#[derive(Debug)]
pub struct TcpStream {
    socket: Socket,
}

impl TcpStream {
    /// Connects to the first address of `addr` that accepts, trying each in order. A host
    /// name is resolved on the blocking pool (never on the worker); an IP literal is parsed
    /// in place.
    ///
    /// # Errors
    ///
    /// The error of the last address tried (`ConnectionRefused`, ...), `InvalidInput` when
    /// `addr` resolves to nothing, the resolver's error, or
    /// [`Error::NotInRuntime`](crate::Error::NotInRuntime).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the lookup or the connect and closes its socket; no stream
    /// is created.
    pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        let addrs = lookup::resolve(&addr, "net::TcpStream::connect").await?;
        lookup::each_address(addrs, |addr| async move {
            TcpSocket::for_addr(addr)?.connect(addr).await
        })
        .await
    }

    /// Connects `fd`, a fresh TCP socket of `addr`'s family, through the ring.
    pub(crate) async fn connect_socket(fd: OwnedFd, addr: SocketAddr) -> io::Result<TcpStream> {
        let handle = context::require("net::TcpStream::connect")?;
        let socket = Socket::new(fd, Some(handle));
        socket.connect(ops::ConnectTo::Ip(addr)).await?;
        Ok(TcpStream { socket })
    }

    /// Adopts a connected standard-library stream (switched to blocking mode).
    ///
    /// # Errors
    ///
    /// The OS error of changing its mode.
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(false)?;
        Ok(TcpStream {
            socket: Socket::adopt(OwnedFd::from(stream))?,
        })
    }

    /// This end's address.
    ///
    /// # Errors
    ///
    /// The OS error of `getsockname(2)`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        ip_addr(socket2::SockRef::from(self).local_addr()?)
    }

    /// The peer's address.
    ///
    /// # Errors
    ///
    /// The OS error of `getpeername(2)` (`NotConnected`, ...).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        ip_addr(socket2::SockRef::from(self).peer_addr()?)
    }
}

crate::net::options::ip_options!(TcpStream);
crate::net::options::tcp_options!(TcpStream);
crate::net::stream::stream_methods!(TcpStream);
crate::net::stream::stream_io!(TcpStream);

// Sealed (see the trait): the socket type never leaves the crate.
#[allow(private_interfaces)]
impl crate::net::stream::sealed::Sealed for TcpStream {
    fn socket(&self) -> &Socket {
        &self.socket
    }
}

impl AsFd for TcpStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_outside_a_runtime_works_and_reports_its_port() {
        let listener = TcpListener::bind("127.0.0.1:0");
        let port = listener.and_then(|l| l.local_addr()).map(|a| a.port());
        assert!(matches!(port, Ok(p) if p != 0));
    }

    #[test]
    fn bind_in_use_is_addr_in_use() {
        let first = std::net::TcpListener::bind("127.0.0.1:0");
        let Ok(first) = first else {
            panic!("loopback bind failed: {first:?}");
        };
        let taken = first.local_addr().map(|a| a.port()).unwrap_or(0);
        let err = TcpListener::bind(("127.0.0.1", taken))
            .err()
            .map(|e| e.kind());
        assert_eq!(err, Some(io::ErrorKind::AddrInUse));
    }
}
