//! The two ways a [`Compat`](crate::Compat) drives what it wraps, behind one interface: a
//! socket readiness-style ([`SocketEngine`](crate::socket::SocketEngine)), any other Baton
//! stream through its owned-buffer calls ([`OwnedEngine`](crate::owned::OwnedEngine)). The
//! foreign-trait impls are written once, over these traits.
//!
//! The traits are public in a private module: they appear in `Compat`'s bounds, but nobody
//! outside this crate can name or implement them.

use std::fmt;
use std::io;
use std::task::{Context, Poll};

/// How many bytes a read asks for at least (a socket's read buffer is exactly this).
pub(crate) const READ_CAPACITY: usize = 16 * 1024;

/// A way of driving a stream of type `Self::Stream`.
pub trait Engine: fmt::Debug + Send + Unpin {
    /// What it drives.
    type Stream;

    /// Starts driving `stream`; nothing is allocated until the first call.
    fn new(stream: Self::Stream) -> Self;
}

/// The read side of an [`Engine`] whose stream reads.
pub trait EngineRead: Engine {
    /// Bytes received but not yet handed out, or (at the end of the stream) an empty slice.
    /// `want` is how many the caller takes at most (0: unknown), a hint for how much one
    /// read may ask for.
    fn poll_fill_buf(&mut self, cx: &mut Context<'_>, want: usize) -> Poll<io::Result<&[u8]>>;

    /// Marks `amount` bytes of [`poll_fill_buf`](Self::poll_fill_buf)'s slice as handed out.
    fn consume(&mut self, amount: usize);
}

/// The write side of an [`Engine`] whose stream writes.
pub trait EngineWrite: Engine {
    /// Accepts bytes of the concatenation of `srcs`, in order (rule M2).
    fn poll_write_vectored(
        &mut self,
        cx: &mut Context<'_>,
        srcs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>>;

    /// Waits until every accepted byte is written (and the stream's own buffer, if it has
    /// one, flushed).
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;

    /// Flushes, then shuts the stream's write side.
    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}
