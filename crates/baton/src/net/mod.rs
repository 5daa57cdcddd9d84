//! Sockets on the ring: TCP ([`TcpListener`], [`TcpStream`]) and Unix stream sockets
//! ([`UnixListener`], [`UnixStream`]).
//!
//! Accepts, connects, sends, receives and shutdowns are io_uring requests on the runtime's
//! worker. Reads and writes take an owned buffer (any [`IoBuf`](crate::io::IoBuf) /
//! [`IoBufMut`](crate::io::IoBufMut)) and hand it back with the result, so the buffer stays
//! alive until the kernel is done with it even when the future is dropped. Streams are
//! [`AsyncRead`](crate::io::AsyncRead) + [`AsyncWrite`](crate::io::AsyncWrite) (and so are `&`
//! them and their halves: [`TcpStream::split`], [`TcpStream::into_split`]). Binding and socket
//! pairs are synchronous system calls. Sockets stay in blocking mode: the kernel
//! then waits for readiness itself instead of failing with `EAGAIN`.
//!
//! # Cancel safety
//!
//! `read` and `accept` are cancel-safe: when their future is dropped (a `timeout`, a
//! `select!`, an abort) after the kernel completed the request, or while it does, the bytes or
//! the connection are kept by the socket and returned first, in order, by its next `read` or
//! `accept`. Nothing received is ever discarded. Writes and shutdowns are *retained* instead:
//! a dropped write still goes out (its count is lost with the future). Each method's docs
//! say which it is.

mod socket;
mod split;
mod stream;
mod tcp;
mod unix;

pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::Stream;
pub use tcp::{TcpListener, TcpStream};
pub use unix::{UnixListener, UnixStream};
