//! [`Compat`]: a Baton stream behind the ecosystem's poll-based traits, and [`CompatIo`], the
//! streams it wraps. A socket is driven readiness-style ([`SocketEngine`]); any other stream
//! through its owned-buffer calls ([`OwnedEngine`]). The trait impls (`tokio_io`,
//! `futures_io`, `hyper`) are thin shells over the `poll_*` methods here.

use std::fmt;
use std::io::{self, SeekFrom};
use std::task::{Context, Poll, ready};

use baton::fs::File;
use baton::io::{BufReader, BufWriter, Cursor};
use baton::net::{
    OwnedReadHalf, OwnedWriteHalf, ReadHalf, Stream, TcpStream, UnixStream, WriteHalf,
};
use baton::process::{ChildStderr, ChildStdin, ChildStdout};

use crate::engine::{Engine, EngineRead, EngineWrite};
use crate::owned::{OwnedEngine, OwnedStream};
use crate::socket::SocketEngine;

/// A Baton stream usable through the ecosystem's poll-based I/O traits.
///
/// `S` is any Baton stream ([`CompatIo`]): a socket ([`baton::net::TcpStream`],
/// [`baton::net::UnixStream`]), a half of one (borrowed or owned), a child's piped stdio, a
/// [`File`], a [`BufReader`] or [`BufWriter`], or a `Cursor<Vec<u8>>`. The foreign read
/// traits are implemented when `S` reads, the write traits when it writes. On a socket a read
/// and a write may be in flight at once (M3); on the others one call at a time (M6). Make one
/// with [`CompatExt::compat`] or [`Compat::new`]; see the crate docs for what it guarantees.
///
/// Its `poll_*` methods are the whole mechanism and are public, so traits this crate does not
/// know (another runtime's, your own) can be implemented on it in a few lines; the features
/// implement tokio's, `futures_io`'s and hyper's with them.
///
/// ```
/// # #[cfg(feature = "tokio-io")]
/// # fn main() -> std::io::Result<()> {
/// use baton_compat::CompatExt;
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// baton::Runtime::new()?.block_on(async {
///     let listener = baton::net::TcpListener::bind("127.0.0.1:0")?;
///     let addr = listener.local_addr()?;
///     let server = baton::spawn(async move {
///         let (stream, _) = listener.accept().await?;
///         let mut stream = stream.compat();
///         let mut line = [0u8; 5];
///         stream.read_exact(&mut line).await?;
///         stream.write_all(&line).await?;
///         stream.shutdown().await
///     });
///     let mut client = baton::net::TcpStream::connect(addr).await?.compat();
///     client.write_all(b"hello").await?;
///     let mut echoed = Vec::new();
///     client.read_to_end(&mut echoed).await?;
///     assert_eq!(echoed, b"hello");
///     server.await.map_err(std::io::Error::other)?
/// })
/// # }
/// # #[cfg(not(feature = "tokio-io"))]
/// # fn main() {}
/// ```
pub struct Compat<S: CompatIo> {
    engine: S::Engine,
}

impl<S: CompatIo> fmt::Debug for Compat<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.engine.fmt(f)
    }
}

/// A Baton stream a [`Compat`] can wrap. Sealed; implemented by:
///
/// - the sockets, driven readiness-style (full duplex): [`TcpStream`], [`UnixStream`] and
///   their borrowed and owned halves;
/// - the other §9 streams, driven through their owned-buffer calls (one at a time): a
///   child's piped [`ChildStdin`], [`ChildStdout`] and [`ChildStderr`] (pipes, each one way),
///   [`File`] (its cursor), [`BufReader<R>`] and [`BufWriter<W>`] over any `Send + 'static`
///   stream, and `Cursor<Vec<u8>>`.
pub trait CompatIo: Sized + sealed::Sealed {
    /// How the `Compat` drives it.
    #[doc(hidden)]
    type Engine: Engine<Stream = Self>;
}

mod sealed {
    pub trait Sealed {}
}

/// Sockets that are not halves: readiness-style.
macro_rules! socket_io {
    ($($ty:ty),+) => {
        $(
            impl sealed::Sealed for $ty {}
            impl CompatIo for $ty {
                type Engine = SocketEngine<$ty>;
            }
        )+
    };
}

socket_io!(TcpStream, UnixStream);

impl<S: Stream> sealed::Sealed for OwnedReadHalf<S> {}
impl<S: Stream> CompatIo for OwnedReadHalf<S> {
    type Engine = SocketEngine<OwnedReadHalf<S>>;
}
impl<S: Stream> sealed::Sealed for OwnedWriteHalf<S> {}
impl<S: Stream> CompatIo for OwnedWriteHalf<S> {
    type Engine = SocketEngine<OwnedWriteHalf<S>>;
}
impl<S: Stream> sealed::Sealed for ReadHalf<'_, S> {}
impl<'a, S: Stream> CompatIo for ReadHalf<'a, S> {
    type Engine = SocketEngine<ReadHalf<'a, S>>;
}
impl<S: Stream> sealed::Sealed for WriteHalf<'_, S> {}
impl<'a, S: Stream> CompatIo for WriteHalf<'a, S> {
    type Engine = SocketEngine<WriteHalf<'a, S>>;
}

/// The other streams that are not generic: through their owned calls.
macro_rules! owned_io {
    ($($ty:ty),+) => {
        $(
            impl sealed::Sealed for $ty {}
            impl CompatIo for $ty {
                type Engine = OwnedEngine<$ty>;
            }
        )+
    };
}

owned_io!(File, Cursor<Vec<u8>>, ChildStdin, ChildStdout, ChildStderr);

/// A file's reads and writes share its cursor.
impl OwnedStream for File {
    const SEEKS: bool = true;

    fn step_back(&mut self, count: u64) -> io::Result<()> {
        let back = i64::try_from(count).map_err(io::Error::other)?;
        self.seek(SeekFrom::Current(-back)).map(drop)
    }
}

/// A cursor's reads and writes share its position.
impl OwnedStream for Cursor<Vec<u8>> {
    const SEEKS: bool = true;

    fn step_back(&mut self, count: u64) -> io::Result<()> {
        self.set_position(self.position().saturating_sub(count));
        Ok(())
    }
}

/// Pipes have no cursor.
impl OwnedStream for ChildStdin {}
impl OwnedStream for ChildStdout {}
impl OwnedStream for ChildStderr {}
/// A buffered stream keeps its own read-ahead; its writes go past it to the inner stream, as
/// they do without a `Compat`.
impl<R: Send + 'static> OwnedStream for BufReader<R> {}
impl<W: Send + 'static> OwnedStream for BufWriter<W> {}
impl<R: Send + 'static> sealed::Sealed for BufReader<R> {}
impl<R: Send + 'static> CompatIo for BufReader<R> {
    type Engine = OwnedEngine<BufReader<R>>;
}
impl<W: Send + 'static> sealed::Sealed for BufWriter<W> {}
impl<W: Send + 'static> CompatIo for BufWriter<W> {
    type Engine = OwnedEngine<BufWriter<W>>;
}

/// `.compat()` on a Baton stream ([`CompatIo`]).
pub trait CompatExt: CompatIo {
    /// Wraps `self` in a [`Compat`].
    fn compat(self) -> Compat<Self>;
}

impl<S: CompatIo> CompatExt for S {
    fn compat(self) -> Compat<Self> {
        Compat::new(self)
    }
}

impl<S: CompatIo> Compat<S> {
    /// Wraps `stream`. Its buffers are allocated on first use.
    pub fn new(stream: S) -> Compat<S> {
        Compat {
            engine: S::Engine::new(stream),
        }
    }
}

impl<S> Compat<S>
where
    S: CompatIo<Engine = SocketEngine<S>>,
{
    /// The socket, for its own methods (`peer_addr`, socket options). Only for sockets: any
    /// other stream is held by its call in flight (M6).
    pub fn get_ref(&self) -> &S {
        self.engine.get_ref()
    }
}

/// The read side: when `S` reads.
impl<S: CompatIo> Compat<S>
where
    S::Engine: EngineRead,
{
    /// Copies buffered bytes into `dst` (reading first when nothing is buffered); `Ok(0)` at
    /// the end of the stream or for an empty `dst`.
    pub fn poll_read_slice(
        &mut self,
        cx: &mut Context<'_>,
        dst: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_read_into(cx, dst.len(), |bytes| {
            dst[..bytes.len()].copy_from_slice(bytes);
        })
    }

    /// Hands up to `room` buffered bytes to `put` (reading first when nothing is buffered)
    /// and marks them consumed; `Ok(0)` at the end of the stream or when `room` is zero, which
    /// asks for nothing (starting a read for it would hold bytes back). The one read path of
    /// every foreign read trait: `put` copies into that trait's buffer.
    pub(crate) fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        room: usize,
        put: impl FnOnce(&[u8]),
    ) -> Poll<io::Result<usize>> {
        if room == 0 {
            return Poll::Ready(Ok(0));
        }
        let available = ready!(self.engine.poll_fill_buf(cx, room))?;
        let count = available.len().min(room);
        put(&available[..count]);
        self.engine.consume(count);
        Poll::Ready(Ok(count))
    }

    /// Bytes read but not yet handed out, or (at the end of the stream) an empty slice.
    /// Starts a read when nothing is buffered; a read already in flight is resumed, so
    /// stopping between polls loses nothing (M1). On a socket, the end of the stream is
    /// reported only once the background write, if any, has finished (M5).
    pub fn poll_fill_buf(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.engine.poll_fill_buf(cx, 0)
    }

    /// Marks `amount` bytes of [`poll_fill_buf`](Self::poll_fill_buf)'s slice as handed out.
    pub fn consume(&mut self, amount: usize) {
        self.engine.consume(amount);
    }
}

/// The write side: when `S` writes.
impl<S: CompatIo> Compat<S>
where
    S::Engine: EngineWrite,
{
    /// Writes `src` (M2): on a socket up to 16 KiB are copied into the write buffer and
    /// written in the background, and more are sent from `src` itself, as much as the socket
    /// takes now; on any other stream up to 1 MiB are copied and written in the background.
    /// Waits first for the background write before it.
    pub fn poll_write_slice(
        &mut self,
        cx: &mut Context<'_>,
        src: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(src)])
    }

    /// Like [`poll_write_slice`](Self::poll_write_slice) for the concatenation of `srcs`, in
    /// order (hyper hands a response's head and body over this way).
    pub fn poll_write_vectored(
        &mut self,
        cx: &mut Context<'_>,
        srcs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.engine.poll_write_vectored(cx, srcs)
    }

    /// Waits until every accepted byte is written (and a buffered stream's buffer flushed).
    pub fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.engine.poll_flush(cx)
    }

    /// Flushes, then shuts the stream's write side (`Ok` when a socket's peer already closed,
    /// M4; a file has no write side to shut, so this is its flush).
    pub fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.engine.poll_shutdown(cx)
    }
}
