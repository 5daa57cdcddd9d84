//! Unix domain stream sockets: [`UnixListener`] and [`UnixStream`].

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::SocketAddr;
use std::path::Path;

use baton_uring::ops;

use crate::context;
use crate::net::socket::Socket;

/// A Unix stream socket listening at a path; [`accept`](UnixListener::accept) runs on the ring.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let path = std::env::temp_dir().join(format!("baton-doc-unix-{}", std::process::id()));
/// rt.block_on(async {
///     let listener = baton::net::UnixListener::bind(&path)?;
///     let client = baton::net::UnixStream::connect(&path).await?;
///     let (server, _peer) = listener.accept().await?;
///     let (res, _buf) = client.write_all(b"ok".to_vec()).await;
///     res?;
///     let (res, buf) = server.read(vec![0; 2]).await;
///     assert_eq!(res?, 2);
///     assert_eq!(buf, b"ok");
///     std::fs::remove_file(&path)
/// })
/// # }
/// ```
#[derive(Debug)]
pub struct UnixListener {
    socket: Socket,
}

impl UnixListener {
    /// Binds a listener at `path` (which must not exist yet), with a backlog of 1024
    /// connections as [`TcpListener::bind`](crate::net::TcpListener::bind).
    ///
    /// # Errors
    ///
    /// The OS error (`AddrInUse` when the path exists, ...); `InvalidInput` for a path too
    /// long for a socket address or holding a NUL byte (as std: the kernel would bind the
    /// path's prefix up to the NUL, or an abstract address for a leading one).
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        let path = path.as_ref();
        if path.as_os_str().as_bytes().contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a Unix socket path must not contain a NUL byte",
            ));
        }
        let addr = socket2::SockAddr::unix(path)?;
        let socket = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None)?;
        socket.bind(&addr)?;
        socket.listen(1024)?;
        Ok(UnixListener {
            socket: Socket::adopt(OwnedFd::from(socket))?,
        })
    }

    /// Adopts a standard-library listener (switched to blocking mode, which the ring needs).
    ///
    /// # Errors
    ///
    /// The OS error of changing its mode.
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        listener.set_nonblocking(false)?;
        Ok(UnixListener {
            socket: Socket::adopt(OwnedFd::from(listener))?,
        })
    }

    /// Accepts one connection, returning the stream and the peer's address.
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
    pub async fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let (fd, _) = self.socket.accept().await?;
        let stream = UnixStream {
            socket: Socket::new(fd, self.socket.runtime()),
        };
        let peer = stream.peer_addr()?;
        Ok((stream, peer))
    }

    /// The address the listener is bound to.
    ///
    /// # Errors
    ///
    /// The OS error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        std::os::unix::net::UnixListener::from(self.socket.duplicate()?).local_addr()
    }
}

/// A listener dropped while an `accept` is being cancelled is shut down first, so it stops
/// accepting before `drop` returns (as [`TcpListener`](crate::net::TcpListener)'s drop).
impl Drop for UnixListener {
    fn drop(&mut self) {
        self.socket.stop_listening();
    }
}

impl AsFd for UnixListener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// A Unix stream connection, with the same owned-buffer methods as
/// [`TcpStream`](super::TcpStream).
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let (a, b) = baton::net::UnixStream::pair()?;
///     let (res, _) = a.write_all(b"hi".to_vec()).await;
///     res?;
///     let (res, buf) = b.read(vec![0; 2]).await;
///     assert_eq!(&buf[..res?], b"hi");
///     Ok(())
/// })
/// # }
/// ```
#[derive(Debug)]
pub struct UnixStream {
    socket: Socket,
}

impl UnixStream {
    /// Connects to the listener at `path`.
    ///
    /// # Errors
    ///
    /// The OS error (`NotFound`, `ConnectionRefused`, ...), `InvalidInput` for a path that is
    /// too long or holds a NUL byte, or [`Error::NotInRuntime`](crate::Error::NotInRuntime).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the connect and closes its socket; no stream is created.
    pub async fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        let handle = context::require("net::UnixStream::connect")?;
        let socket = Socket::new(unix_stream_socket()?, Some(handle));
        socket.connect(ops::ConnectTo::Unix(path.as_ref())).await?;
        Ok(UnixStream { socket })
    }

    /// A connected pair of streams (`socketpair(2)`).
    ///
    /// # Errors
    ///
    /// The OS error.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = std::os::unix::net::UnixStream::pair()?;
        Ok((UnixStream::from_std(a)?, UnixStream::from_std(b)?))
    }

    /// Adopts a connected standard-library stream (switched to blocking mode).
    ///
    /// # Errors
    ///
    /// The OS error of changing its mode.
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(false)?;
        Ok(UnixStream {
            socket: Socket::adopt(OwnedFd::from(stream))?,
        })
    }

    /// This end's address.
    ///
    /// # Errors
    ///
    /// The OS error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        std::os::unix::net::UnixStream::from(self.socket.duplicate()?).local_addr()
    }

    /// The peer's address.
    ///
    /// # Errors
    ///
    /// The OS error.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        std::os::unix::net::UnixStream::from(self.socket.duplicate()?).peer_addr()
    }
}

crate::net::stream::stream_methods!(UnixStream);
crate::net::stream::stream_io!(UnixStream);

// Sealed (see the trait): the socket type never leaves the crate.
#[allow(private_interfaces)]
impl crate::net::stream::sealed::Sealed for UnixStream {
    fn socket(&self) -> &Socket {
        &self.socket
    }
}

impl AsFd for UnixStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// A new blocking-mode, close-on-exec Unix stream socket.
fn unix_stream_socket() -> io::Result<OwnedFd> {
    let socket = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None)?;
    Ok(OwnedFd::from(socket))
}
