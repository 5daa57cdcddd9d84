//! [`Pipe`]: our end of a pipe to a child (its piped standard stream), and the ring requests on
//! it.

use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use baton_uring::{Operation, Stash, ops};

use crate::error::convert;
use crate::handle::Handle;
use crate::io::{BufResult, IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};

/// One end of a pipe. Invariant: the descriptor is in blocking mode, so the kernel arms its
/// own poll for a read of an empty pipe (or a write to a full one) instead of failing with
/// `EAGAIN`.
///
/// `handle` is the runtime the pipe was made on (the one `spawn` ran on); its requests run
/// there.
///
/// `stash` makes reads cancel-safe, as a socket's receives are: a read whose future is dropped
/// after (or while) the kernel completes it leaves its bytes there, and the next read hands
/// them out first (stash rule S4). `sends` keeps writes in order: a write is retained, so one
/// whose future is dropped keeps running, holding a ticket there until its final completion;
/// the next write waits for it (stash rule S5).
pub(crate) struct Pipe {
    fd: Arc<OwnedFd>,
    handle: Handle,
    stash: Arc<Stash>,
    sends: Arc<Stash>,
}

impl fmt::Debug for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipe")
            .field("fd", &self.fd.as_raw_fd())
            .finish_non_exhaustive()
    }
}

/// A pipe pair for one piped standard stream: (ours, the child's). Both close on exec; the
/// child's end becomes its stream through `dup2`, which clears the flag on the copy.
pub(crate) fn pipe_pair(child_reads: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = pipe2_cloexec()?;
    Ok(if child_reads {
        (write, read)
    } else {
        (read, write)
    })
}

/// `pipe2(O_CLOEXEC)`: (read end, write end).
fn pipe2_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a writable array of two descriptors, as pipe2 requires.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both are fresh descriptors that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Pipe {
    /// Adopts our end `fd` of a pipe into `handle`'s runtime.
    pub(crate) fn new(fd: OwnedFd, handle: Handle) -> Pipe {
        Pipe {
            fd: Arc::new(fd),
            handle,
            stash: Arc::new(Stash::new()),
            sends: Arc::new(Stash::new()),
        }
    }

    /// Binds `op` to the pipe's runtime for as long as the pipe is borrowed.
    fn bind<'p, T>(&'p self, op: Operation<'p, T>) -> Operation<'p, T> {
        op.bind_borrowed(self.handle.local_driver())
    }

    /// Reads, cancel-safely: bytes the kernel read for an earlier read whose future was dropped
    /// come first, in order (stash rule S4).
    pub(crate) async fn read<B: IoBufMut>(&self, buf: B) -> BufResult<usize, B> {
        let mut buf = buf;
        if let Some(n) = self.stash.take_bytes_first(&mut buf).await {
            return (Ok(n), buf);
        }
        let op = ops::read_stream(Arc::clone(&self.fd), buf).stash_late_result(&self.stash);
        let (res, buf) = self.bind(op).await;
        (convert(res), buf)
    }

    /// A vectored read, cancel-safe as [`read`](Pipe::read).
    pub(crate) async fn read_vectored<V: IoVecBufMut>(&self, bufs: V) -> BufResult<usize, V> {
        let mut bufs = bufs;
        if let Some(n) = self.stash.take_bytes_vectored_first(&mut bufs).await {
            return (Ok(n), bufs);
        }
        let op = ops::readv_stream(Arc::clone(&self.fd), bufs).stash_late_result(&self.stash);
        let (res, bufs) = self.bind(op).await;
        (convert(res), bufs)
    }

    /// Waits until every write dropped before its completion has finished (stash rule S5).
    pub(crate) async fn writes_settled(&self) {
        self.sends.settled().await;
    }

    /// Writes, after any dropped write still running (S5); an empty buffer writes nothing and
    /// is `Ok(0)`, as std's `write`. Retained: a drop leaves the write running.
    pub(crate) async fn write<B: IoBuf>(&self, buf: B) -> BufResult<usize, B> {
        if buf.bytes_init() == 0 {
            return (Ok(0), buf);
        }
        self.writes_settled().await;
        let op = ops::write_stream(Arc::clone(&self.fd), buf).stash_late_result(&self.sends);
        let (res, buf) = self.bind(op).await;
        (convert(res), buf)
    }

    /// [`write`](Self::write) of several buffers in one `writev`; all empty is `Ok(0)`.
    pub(crate) async fn write_vectored<V: IoVecBuf>(&self, bufs: V) -> BufResult<usize, V> {
        self.writes_settled().await;
        let op = ops::writev_stream(Arc::clone(&self.fd), bufs).stash_late_result(&self.sends);
        let (res, bufs) = self.bind(op).await;
        (crate::io::empty_write_is_zero(convert(res), &bufs), bufs)
    }
}

impl Pipe {
    /// Closes our end for the child: the descriptor is pointed at `/dev/null` in one
    /// `dup3(2)`, so the pipe's write end is gone (the child reads the end of the stream) while
    /// the descriptor number stays ours. Only when no request is in flight on it (the caller
    /// settled the writes first): one would otherwise reach `/dev/null`.
    pub(crate) fn close_for_child(&self) -> io::Result<()> {
        let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
        // SAFETY: both descriptors are open and owned (`null` here, `fd` by this pipe, which
        // keeps owning the number); dup3 only replaces what `fd` refers to.
        let replaced =
            unsafe { libc::dup3(null.as_raw_fd(), self.fd.as_raw_fd(), libc::O_CLOEXEC) };
        match replaced {
            -1 => Err(io::Error::last_os_error()),
            _ => Ok(()),
        }
    }
}

impl AsFd for Pipe {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
