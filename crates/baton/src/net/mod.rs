//! Sockets on the ring: TCP ([`TcpListener`], [`TcpStream`], the [`TcpSocket`] builder), UDP
//! ([`UdpSocket`]) and Unix stream sockets ([`UnixListener`], [`UnixStream`]).
//!
//! Accepts, connects, sends, receives and shutdowns are io_uring requests on the runtime's
//! worker. Reads and writes take an owned buffer (any [`IoBuf`](crate::io::IoBuf) /
//! [`IoBufMut`](crate::io::IoBufMut)) and hand it back with the result, so the buffer stays
//! alive until the kernel is done with it even when the future is dropped. Streams are
//! [`AsyncRead`](crate::io::AsyncRead) + [`AsyncWrite`](crate::io::AsyncWrite) (and so are `&`
//! them and their halves: [`TcpStream::split`], [`TcpStream::into_split`]). Binding and socket
//! pairs are synchronous system calls, and so are socket options (`socket2` makes them),
//! readable and settable on every socket type. Sockets stay in blocking mode: the kernel then
//! waits for readiness itself instead of failing with `EAGAIN`.
//!
//! # Names
//!
//! `connect` takes any [`ToSocketAddrs`]: an IP literal is parsed in place; a host name is
//! resolved on the blocking pool ([`lookup_host`]; the runtime's resolver, see
//! [`Builder::resolver`](crate::Builder::resolver)), so a slow DNS server never stalls the
//! worker, and each address is tried in order. The synchronous `bind`s resolve a host name on
//! the calling thread and say so.
//!
//! # Cancel safety
//!
//! `read`, `accept` and UDP's receives are cancel-safe: when their future is dropped (a
//! `timeout`, a `select!`, an abort) after the kernel completed the request, or while it does,
//! the bytes, the datagram or the connection are kept by the socket and returned first, in
//! order, by its next receive or `accept` (a UDP socket keeps each datagram whole). Nothing
//! received is ever discarded. Writes and shutdowns are *retained* instead: a dropped write
//! still goes out (its count is lost with the future). Each method's docs say which it is.

mod lookup;
mod options;
mod readiness;
mod socket;
mod split;
mod stream;
mod tcp;
mod tcp_socket;
mod udp;
mod unix;

pub use lookup::{ToSocketAddrs, lookup_host};
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::Stream;
pub use tcp::{TcpListener, TcpStream};
pub use tcp_socket::TcpSocket;
pub use udp::UdpSocket;
pub use unix::{UnixListener, UnixStream};

pub(crate) use lookup::Resolver;
#[cfg(test)]
pub(crate) use socket::Socket;
pub(crate) use socket::{shutdown_result, stream_receive};
pub(crate) use stream::sealed::Sealed;
