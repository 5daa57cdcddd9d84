//! [`PollIo`]: a socket driven readiness-style — borrowed buffers, non-blocking calls, and
//! one-shot readiness waits on the ring — for adapters to poll-based I/O traits
//! (`baton-compat`'s `Compat`), where copying through an owned buffer would cost a copy per
//! byte and a ring round trip per call.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use baton_uring::Op;

use crate::error::convert;

/// Readiness-style access to a stream socket (`TcpStream`, `UnixStream`; sealed).
///
/// The protocol is the one of readiness-based runtimes: try the call; on
/// [`WouldBlock`](io::ErrorKind::WouldBlock) wait for [`readable`](PollIo::readable) or
/// [`writable`](PollIo::writable), then try again (a readiness wait may end without the call
/// then succeeding: try, and wait again on `WouldBlock`).
///
/// It mixes with the owned-buffer calls on one socket in the order the calls are made, with
/// one rule: a read here takes first what a cancelled owned-buffer receive left behind (stash
/// rule S4), so nothing received is skipped or reordered.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use baton::io::PollIo;
/// use std::future::poll_fn;
///
/// baton::Runtime::new()?.block_on(async {
///     let (a, b) = baton::net::UnixStream::pair()?;
///     assert_eq!(a.try_write_vectored(&[std::io::IoSlice::new(b"ping")])?, 4);
///     let mut got = [0_u8; 8];
///     let n = loop {
///         match poll_fn(|cx| b.poll_try_read(cx, &mut got)).await {
///             Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => b.readable().await?,
///             read => break read?,
///         }
///     };
///     assert_eq!(&got[..n], b"ping");
///     Ok(())
/// })
/// # }
/// ```
pub trait PollIo: crate::net::Stream {
    /// Reads into `dst` without waiting for the peer: bytes a cancelled receive left behind
    /// first (`Pending` only while such a receive is still in the kernel: its bytes come
    /// first), then a non-blocking `recv(2)`. `Ok(0)` is the end of the stream (or an empty
    /// `dst`); [`WouldBlock`](io::ErrorKind::WouldBlock) means nothing is there yet.
    fn poll_try_read(&self, cx: &mut Context<'_>, dst: &mut [u8]) -> Poll<io::Result<usize>>;

    /// Writes what the socket takes now of `srcs`, in order (a non-blocking `sendmsg(2)`;
    /// no `SIGPIPE`); [`WouldBlock`](io::ErrorKind::WouldBlock) when it takes nothing.
    fn try_write_vectored(&self, srcs: &[io::IoSlice<'_>]) -> io::Result<usize>;

    /// Waits until the socket is readable, or has an error or hang-up for a read to report.
    fn readable(&self) -> Readiness;

    /// Waits until the socket is writable, or has an error or hang-up for a write to report.
    fn writable(&self) -> Readiness;
}

/// A one-shot readiness wait (a ring poll request) from [`PollIo`]; `'static`, so an adapter
/// can keep it across polls. Dropping it cancels the wait, which holds no data.
pub struct Readiness {
    op: Pin<Box<Op<io::Result<()>>>>,
}

impl Readiness {
    pub(crate) fn new(op: Op<io::Result<()>>) -> Readiness {
        Readiness { op: Box::pin(op) }
    }
}

impl fmt::Debug for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Readiness").finish_non_exhaustive()
    }
}

impl Future for Readiness {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.op.as_mut().poll(cx).map(convert)
    }
}
