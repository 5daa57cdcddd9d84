//! [`Compat`]: a Baton socket driven readiness-style ([`baton::io::PollIo`]) — the caller's
//! buffers go straight to non-blocking `recv`/`sendmsg`, and a `WouldBlock` waits for a
//! one-shot readiness request on the ring — plus a read buffer for `poll_fill_buf` callers and
//! the in-flight shutdown. The trait impls (`tokio_io`, `futures_io`, `hyper`) are thin shells
//! over the `poll_*` methods here.

use std::fmt;
use std::future::Future;
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use baton::io::{AsyncWrite, PollIo, Readiness};

/// How many bytes one `poll_fill_buf` asks the socket for (its buffer's capacity).
const BUFFER_CAPACITY: usize = 16 * 1024;

/// The shutdown request, boxed once when it starts and kept until it completes.
type Shutdown = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

/// A Baton stream usable through the ecosystem's poll-based I/O traits.
///
/// `S` is one of Baton's stream sockets ([`baton::net::TcpStream`],
/// [`baton::net::UnixStream`]: [`PollIo`] and `&S: AsyncWrite`); a read and a write may wait at
/// once. Make one with [`CompatExt::compat`] or [`Compat::new`]; see the crate docs for what it
/// guarantees.
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
pub struct Compat<S> {
    stream: Arc<S>,
    /// Bytes `poll_fill_buf` read, `[read_pos..]` not yet handed out.
    read_buf: Vec<u8>,
    read_pos: usize,
    /// The readiness wait of a read that found nothing, kept across polls (M1).
    read_ready: Option<Readiness>,
    /// The readiness wait of a write the socket had no room for.
    write_ready: Option<Readiness>,
    shutdown_op: Option<Shutdown>,
}

impl<S> fmt::Debug for Compat<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compat")
            .field("buffered_read", &(self.read_buf.len() - self.read_pos))
            .field("reading", &self.read_ready.is_some())
            .field("writing", &self.write_ready.is_some())
            .field("shutting_down", &self.shutdown_op.is_some())
            .finish_non_exhaustive()
    }
}

/// `.compat()` on a Baton stream socket.
pub trait CompatExt: Sized {
    /// Wraps `self` in a [`Compat`].
    fn compat(self) -> Compat<Self>;
}

impl<S> CompatExt for S
where
    S: PollIo + Send + Sync + 'static,
    for<'a> &'a S: AsyncWrite,
{
    fn compat(self) -> Compat<Self> {
        Compat::new(self)
    }
}

/// Waits on the readiness request in `slot` (made by `make` when there is none) and clears
/// the slot once it ends.
fn poll_ready<S>(
    slot: &mut Option<Readiness>,
    stream: &S,
    make: fn(&S) -> Readiness,
    cx: &mut Context<'_>,
) -> Poll<io::Result<()>> {
    let ready = slot.get_or_insert_with(|| make(stream));
    let result = ready!(Pin::new(ready).poll(cx));
    *slot = None;
    Poll::Ready(result)
}

impl<S> Compat<S>
where
    S: PollIo + Send + Sync + 'static,
    for<'a> &'a S: AsyncWrite,
{
    /// Wraps `stream`. The read buffer is allocated on the first `poll_fill_buf`.
    pub fn new(stream: S) -> Compat<S> {
        Compat {
            stream: Arc::new(stream),
            read_buf: Vec::new(),
            read_pos: 0,
            read_ready: None,
            write_ready: None,
            shutdown_op: None,
        }
    }

    /// The stream, for its own methods (`peer_addr`, socket options).
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// Reads into `dst`, possibly uninitialized: buffered bytes first, then straight from the
    /// socket, waiting for it to become readable when nothing is there (M1). On `Ok(n)` the
    /// first `n` bytes of `dst` are initialized; `Ok(0)` is the end of the stream (or an empty
    /// `dst`).
    pub fn poll_read_uninit(
        &mut self,
        cx: &mut Context<'_>,
        dst: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        if dst.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if self.read_pos < self.read_buf.len() {
            let buffered = &self.read_buf[self.read_pos..];
            let count = buffered.len().min(dst.len());
            for (slot, byte) in dst.iter_mut().zip(&buffered[..count]) {
                slot.write(*byte);
            }
            self.consume(count);
            return Poll::Ready(Ok(count));
        }
        loop {
            match ready!(self.stream.poll_try_read_uninit(cx, dst)) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    ready!(poll_ready(
                        &mut self.read_ready,
                        &*self.stream,
                        S::readable,
                        cx
                    ))?;
                }
                read => return Poll::Ready(read),
            }
        }
    }

    /// Reads into `dst` (see [`poll_read_uninit`](Self::poll_read_uninit)).
    pub fn poll_read_slice(
        &mut self,
        cx: &mut Context<'_>,
        dst: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        // SAFETY: viewing initialized bytes as `MaybeUninit` is sound as long as nothing writes
        // uninitialized bytes through the view; `poll_read_uninit` writes only initialized
        // ones (copies of buffered bytes, and `PollIo::poll_try_read_uninit`'s promise).
        let dst = unsafe { &mut *(std::ptr::from_mut(dst) as *mut [MaybeUninit<u8>]) };
        self.poll_read_uninit(cx, dst)
    }

    /// Bytes read from the stream but not yet handed out, or (at the end of the stream) an
    /// empty slice; reads into the `Compat`'s own buffer when nothing is buffered.
    pub fn poll_fill_buf(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        if self.read_pos == self.read_buf.len() {
            let mut buf = std::mem::take(&mut self.read_buf);
            buf.clear();
            buf.reserve_exact(BUFFER_CAPACITY);
            self.read_pos = 0;
            let read = self.poll_read_uninit(cx, buf.spare_capacity_mut());
            let count = match read {
                Poll::Ready(Ok(count)) => count,
                other => {
                    self.read_buf = buf;
                    return other.map_ok(|_| &[][..]);
                }
            };
            // SAFETY: `poll_read_uninit` initialized the first `count` bytes of the spare
            // capacity, which is at least `count` long.
            unsafe { buf.set_len(count) };
            self.read_buf = buf;
        }
        Poll::Ready(Ok(&self.read_buf[self.read_pos..]))
    }

    /// Marks `amount` bytes of [`poll_fill_buf`](Self::poll_fill_buf)'s slice as handed out.
    pub fn consume(&mut self, amount: usize) {
        self.read_pos = (self.read_pos + amount).min(self.read_buf.len());
    }

    /// Writes what the socket takes now of `src`, waiting for room when it takes nothing
    /// (M2).
    pub fn poll_write_slice(
        &mut self,
        cx: &mut Context<'_>,
        src: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(src)])
    }

    /// Like [`poll_write_slice`](Self::poll_write_slice) for the concatenation of `srcs`, in
    /// one `sendmsg` (hyper hands a response's head and body over this way, uncopied).
    pub fn poll_write_vectored(
        &mut self,
        cx: &mut Context<'_>,
        srcs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            match self.stream.try_write_vectored(srcs) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    ready!(poll_ready(
                        &mut self.write_ready,
                        &*self.stream,
                        S::writable,
                        cx
                    ))?;
                }
                written => return Poll::Ready(written),
            }
        }
    }

    /// Nothing to wait for: every accepted byte is already the kernel's (M2).
    pub fn poll_flush(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Shuts the stream's write side (`Ok` when the peer already closed, M4).
    pub fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let op = self.shutdown_op.get_or_insert_with(|| {
            let stream = Arc::clone(&self.stream);
            Box::pin(async move { (&mut &*stream).shutdown().await })
        });
        let result = ready!(op.as_mut().poll(cx));
        self.shutdown_op = None;
        Poll::Ready(result)
    }
}
