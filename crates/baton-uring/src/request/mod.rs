//! What a request owns while the kernel may see it, how it becomes an SQE, and how its raw
//! result is classified.
//!
//! Everything an SQE points to lives on the heap (a `Vec`'s buffer, a `Box`, a `CString`), so
//! the slab can move the [`Request`] without moving what the kernel reads or writes.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use io_uring::{opcode, squeue, types};

mod message;
mod path;

pub(crate) use message::Message;
pub(crate) use path::PathRequest;

use crate::buf::RawBuf;
use crate::durability::SyncStart;
use crate::error::Error;

/// A raw completion result, or a runtime failure that replaced it.
pub(crate) type Outcome = Result<i32, Failure>;

/// Why a request did not produce a kernel result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The kernel returned `-errno`.
    Os(i32),
    /// A runtime failure (closed, deadline, unsupported).
    Runtime(Error),
    /// The input was refused before submission.
    Invalid(&'static str),
}

impl Failure {
    /// Converts into the `io::Error` users see.
    pub(crate) fn into_io(self) -> std::io::Error {
        match self {
            Failure::Os(errno) => std::io::Error::from_raw_os_error(errno),
            Failure::Runtime(err) => err.into_io(),
            Failure::Invalid(msg) => std::io::Error::new(std::io::ErrorKind::InvalidInput, msg),
        }
    }
}

/// A socket address buffer the kernel reads (connect) or fills (accept).
#[derive(Debug)]
pub(crate) struct SockAddrBuf {
    pub(crate) storage: libc::sockaddr_storage,
    pub(crate) len: libc::socklen_t,
}

impl SockAddrBuf {
    /// Room for any address (what accept and receive fill).
    pub(crate) fn empty() -> Box<SockAddrBuf> {
        Box::new(SockAddrBuf::unnamed_with_room())
    }

    fn unnamed_with_room() -> SockAddrBuf {
        SockAddrBuf {
            // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
            storage: unsafe { std::mem::zeroed() },
            len: std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t,
        }
    }

    /// No address (a connected socket's send), with room should a receive fill one.
    pub(crate) fn unnamed() -> SockAddrBuf {
        SockAddrBuf {
            len: 0,
            ..SockAddrBuf::unnamed_with_room()
        }
    }
}

/// The iovec array of a vectored request, pointing into that request's own buffers.
///
/// Invariant: every pointer targets the bytes of a [`RawBuf`] owned by the same [`Request`],
/// which do not move while the request exists (the `RawBuf` invariant).
#[derive(Debug)]
pub(crate) struct IoVecs(pub(crate) Vec<libc::iovec>);

// SAFETY: the raw pointers only refer to buffers owned by the same Request (type invariant), which
// moves between threads as a whole; nothing else aliases them.
unsafe impl Send for IoVecs {}

/// The buffers of a vectored request and the iovecs pointing into them, boxed so the common
/// requests' [`Request`] stays small (it is moved on every registration and completion).
#[derive(Debug)]
pub(crate) struct Vectored {
    pub(crate) bufs: Vec<RawBuf>,
    pub(crate) iovecs: IoVecs,
}

impl IoVecs {
    /// Iovecs over a vectored read's destinations (each `iov_len` is its capacity) or a
    /// vectored write's sources (each its initialized bytes).
    pub(crate) fn over(bufs: &[RawBuf], read: bool) -> IoVecs {
        IoVecs(
            bufs.iter()
                .map(|b| libc::iovec {
                    iov_base: b.ptr().cast(),
                    iov_len: if read { b.total() } else { b.init() },
                })
                .collect(),
        )
    }
}

impl Vectored {
    /// A vectored read's destinations or a vectored write's sources (see [`IoVecs::over`]).
    pub(crate) fn over(bufs: Vec<RawBuf>, read: bool) -> Box<Vectored> {
        let iovecs = IoVecs::over(&bufs, read);
        Box::new(Vectored { bufs, iovecs })
    }
}

/// The offset of a read or write at the descriptor's own position (io_uring's −1): a pipe's,
/// which waits on the process at its other end ([`Request::waits_on_peer`]). Positional
/// requests never carry it: their constructors refuse offsets above `i64::MAX`.
pub(crate) const CURSOR: u64 = u64::MAX;

/// A request's owned inputs: everything the kernel can see. Rarely used large fields live
/// behind a `Box`, so the common ones stay small (see the size test).
#[derive(Debug)]
pub(crate) enum Request {
    Nop,
    Sleep,
    /// Reads into `buf` from its beginning, up to its capacity.
    Read {
        fd: Arc<OwnedFd>,
        buf: RawBuf,
        offset: u64,
    },
    /// Writes `buf`'s initialized bytes.
    Write {
        fd: Arc<OwnedFd>,
        buf: RawBuf,
        offset: u64,
    },
    Readv {
        fd: Arc<OwnedFd>,
        vectored: Box<Vectored>,
        offset: u64,
    },
    Writev {
        fd: Arc<OwnedFd>,
        vectored: Box<Vectored>,
        offset: u64,
    },
    Fsync {
        fd: Arc<OwnedFd>,
        datasync: bool,
        start: Option<SyncStart>,
    },
    Open {
        path: CString,
        flags: i32,
        mode: u32,
    },
    /// `fd` is `None` once submitted: the kernel took ownership of the descriptor.
    Close {
        fd: Option<OwnedFd>,
    },
    /// `statx` of `path` relative to `dirfd` (`None`: the current directory); with
    /// `AT_EMPTY_PATH` and an empty path, of `dirfd` itself.
    Statx {
        dirfd: Option<Arc<OwnedFd>>,
        path: CString,
        flags: i32,
        buf: Box<libc::statx>,
    },
    Socket {
        domain: i32,
        ty: i32,
        protocol: i32,
    },
    Accept {
        fd: Arc<OwnedFd>,
        addr: Box<SockAddrBuf>,
    },
    Connect {
        fd: Arc<OwnedFd>,
        addr: Box<SockAddrBuf>,
    },
    Send {
        fd: Arc<OwnedFd>,
        buf: RawBuf,
    },
    /// Receives into `buf` from its beginning, like [`Request::Read`]; with `poll_first` the
    /// kernel waits for readiness before its first attempt (where it can, see
    /// [`Request::prepare`]).
    Recv {
        fd: Arc<OwnedFd>,
        buf: RawBuf,
        poll_first: bool,
    },
    /// `sendmsg`: the message's buffers in order (with `MSG_NOSIGNAL`), to its address if any.
    SendMsg {
        fd: Arc<OwnedFd>,
        msg: Box<Message>,
    },
    /// `recvmsg`: into the message's buffers in order, noting the sender's address.
    RecvMsg {
        fd: Arc<OwnedFd>,
        msg: Box<Message>,
    },
    Shutdown {
        fd: Arc<OwnedFd>,
        how: i32,
    },
    /// Waits until `fd` signals one of `events` (`POLLIN`, `POLLOUT`), once: a pidfd when its
    /// process exits, a socket that can be read or written without waiting.
    Poll {
        fd: Arc<OwnedFd>,
        events: u32,
    },
    /// A namespace request (mkdir, rename, unlink, link, symlink) on paths it owns.
    Path(PathRequest),
    /// `ftruncate(fd, len)`; a write of the file for durability.
    Ftruncate {
        fd: Arc<OwnedFd>,
        len: u64,
    },
    /// `sync_file_range(fd, offset, len, flags)`; no durability permit (it is no fsync).
    SyncRange {
        fd: Arc<OwnedFd>,
        offset: u64,
        len: u32,
        flags: u32,
    },
}

fn len32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

impl Request {
    /// The io_uring opcode and its name, or `None` for driver-only requests (sleeps).
    pub(crate) fn opcode(&self) -> Option<(u8, &'static str)> {
        Some(match self {
            Request::Sleep => return None,
            Request::Nop => (opcode::Nop::CODE, "IORING_OP_NOP"),
            Request::Read { .. } => (opcode::Read::CODE, "IORING_OP_READ"),
            Request::Write { .. } => (opcode::Write::CODE, "IORING_OP_WRITE"),
            Request::Readv { .. } => (opcode::Readv::CODE, "IORING_OP_READV"),
            Request::Writev { .. } => (opcode::Writev::CODE, "IORING_OP_WRITEV"),
            Request::Fsync { .. } => (opcode::Fsync::CODE, "IORING_OP_FSYNC"),
            Request::Open { .. } => (opcode::OpenAt::CODE, "IORING_OP_OPENAT"),
            Request::Close { .. } => (opcode::Close::CODE, "IORING_OP_CLOSE"),
            Request::Statx { .. } => (opcode::Statx::CODE, "IORING_OP_STATX"),
            Request::Socket { .. } => (opcode::Socket::CODE, "IORING_OP_SOCKET"),
            Request::Accept { .. } => (opcode::Accept::CODE, "IORING_OP_ACCEPT"),
            Request::Connect { .. } => (opcode::Connect::CODE, "IORING_OP_CONNECT"),
            Request::Send { .. } => (opcode::Send::CODE, "IORING_OP_SEND"),
            Request::Recv { .. } => (opcode::Recv::CODE, "IORING_OP_RECV"),
            Request::SendMsg { .. } => (opcode::SendMsg::CODE, "IORING_OP_SENDMSG"),
            Request::RecvMsg { .. } => (opcode::RecvMsg::CODE, "IORING_OP_RECVMSG"),
            Request::Shutdown { .. } => (opcode::Shutdown::CODE, "IORING_OP_SHUTDOWN"),
            Request::Poll { .. } => (opcode::PollAdd::CODE, "IORING_OP_POLL_ADD"),
            Request::Path(path) => path.opcode(),
            Request::Ftruncate { .. } => (opcode::Ftruncate::CODE, "IORING_OP_FTRUNCATE"),
            Request::SyncRange { .. } => {
                let name = "IORING_OP_SYNC_FILE_RANGE";
                (opcode::SyncFileRange::CODE, name)
            }
        })
    }

    /// Retained requests are finished even when their future is dropped (durability):
    /// writes and sends, syncs, close and shutdown, and the effects on the file system that a
    /// cancel could not undo (mkdir, rename, unlink, link, symlink, truncate, range sync).
    pub(crate) fn is_retained(&self) -> bool {
        matches!(
            self,
            Request::Write { .. }
                | Request::Writev { .. }
                | Request::Send { .. }
                | Request::SendMsg { .. }
                | Request::Fsync { .. }
                | Request::Close { .. }
                | Request::Shutdown { .. }
                | Request::Path(_)
                | Request::Ftruncate { .. }
                | Request::SyncRange { .. }
        )
    }

    /// Retained requests that closure still runs to completion (lifecycle rule U9): all but
    /// the sends and a pipe's writes, which wait on a peer that may never read again, so
    /// closure cancels them as
    /// it does receives — a shutdown must not hang on a stalled connection.
    pub(crate) fn outlives_closure(&self) -> bool {
        self.is_retained() && !self.waits_on_peer()
    }

    /// Requests that wait on a peer (a receive waits for bytes, a send for window space, an
    /// accept for a client, a connect for the handshake, a pipe's read or write for the process
    /// at its other end) and may stay in flight indefinitely.
    /// They are bounded by the sockets and buffers the application holds, never by the
    /// driver's in-flight limit, so idle connections cannot hold back other requests.
    pub(crate) fn waits_on_peer(&self) -> bool {
        matches!(
            self,
            Request::Read { offset: CURSOR, .. }
                | Request::Write { offset: CURSOR, .. }
                | Request::Readv { offset: CURSOR, .. }
                | Request::Writev { offset: CURSOR, .. }
        ) || matches!(
            self,
            Request::Recv { .. }
                | Request::Send { .. }
                | Request::SendMsg { .. }
                | Request::RecvMsg { .. }
                | Request::Accept { .. }
                | Request::Connect { .. }
                | Request::Poll { .. }
        )
    }

    /// Requests whose success creates a descriptor the driver must close if nobody takes it.
    pub(crate) fn creates_fd(&self) -> bool {
        matches!(
            self,
            Request::Open { .. } | Request::Accept { .. } | Request::Socket { .. }
        )
    }

    /// Whether this is a write (for durability tracking), with the file it writes; a
    /// truncate changes what a sync must flush as much as a write does.
    pub(crate) fn written_file(&self) -> Option<&Arc<OwnedFd>> {
        match self {
            // A pipe has nothing to sync.
            Request::Write { offset: CURSOR, .. } | Request::Writev { offset: CURSOR, .. } => None,
            Request::Write { fd, .. }
            | Request::Writev { fd, .. }
            | Request::Ftruncate { fd, .. } => Some(fd),
            _ => None,
        }
    }

    /// Builds the SQE. Pointers in it target heap memory owned by `self`. `polls_first`: the
    /// kernel accepts `IORING_RECVSEND_POLL_FIRST` (older kernels refuse the flag with
    /// `EINVAL`, so a receive's `poll_first` is dropped without it: the same result, one
    /// attempt sooner).
    pub(crate) fn prepare(&mut self, user_data: u64, polls_first: bool) -> squeue::Entry {
        let entry = match self {
            Request::Nop | Request::Sleep => opcode::Nop::new().build(),
            Request::Read { fd, buf, offset } => {
                opcode::Read::new(types::Fd(fd.as_raw_fd()), buf.ptr(), len32(buf.total()))
                    .offset(*offset)
                    .build()
            }
            Request::Write { fd, buf, offset } => {
                opcode::Write::new(types::Fd(fd.as_raw_fd()), buf.ptr(), len32(buf.init()))
                    .offset(*offset)
                    .build()
            }
            Request::Readv {
                fd,
                vectored,
                offset,
            } => opcode::Readv::new(
                types::Fd(fd.as_raw_fd()),
                vectored.iovecs.0.as_ptr(),
                len32(vectored.iovecs.0.len()),
            )
            .offset(*offset)
            .build(),
            Request::Writev {
                fd,
                vectored,
                offset,
            } => opcode::Writev::new(
                types::Fd(fd.as_raw_fd()),
                vectored.iovecs.0.as_ptr(),
                len32(vectored.iovecs.0.len()),
            )
            .offset(*offset)
            .build(),
            Request::Fsync { fd, datasync, .. } => {
                let flags = if *datasync {
                    types::FsyncFlags::DATASYNC
                } else {
                    types::FsyncFlags::empty()
                };
                opcode::Fsync::new(types::Fd(fd.as_raw_fd()))
                    .flags(flags)
                    .build()
            }
            Request::Open { path, flags, mode } => {
                opcode::OpenAt::new(types::Fd(libc::AT_FDCWD), path.as_ptr())
                    .flags(*flags | libc::O_CLOEXEC)
                    .mode(*mode)
                    .build()
            }
            Request::Close { fd } => {
                let raw = fd.as_ref().map_or(-1, AsRawFd::as_raw_fd);
                opcode::Close::new(types::Fd(raw)).build()
            }
            Request::Statx {
                dirfd,
                path,
                flags,
                buf,
            } => opcode::Statx::new(
                types::Fd(dirfd.as_ref().map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd())),
                path.as_ptr(),
                (&raw mut **buf).cast::<types::statx>(),
            )
            .flags(*flags)
            .mask(libc::STATX_ALL)
            .build(),
            Request::Socket {
                domain,
                ty,
                protocol,
            } => opcode::Socket::new(*domain, *ty | libc::SOCK_CLOEXEC, *protocol).build(),
            Request::Accept { fd, addr } => {
                addr.len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
                opcode::Accept::new(
                    types::Fd(fd.as_raw_fd()),
                    (&raw mut addr.storage).cast(),
                    &raw mut addr.len,
                )
                .flags(libc::SOCK_CLOEXEC)
                .build()
            }
            Request::Connect { fd, addr } => opcode::Connect::new(
                types::Fd(fd.as_raw_fd()),
                (&raw const addr.storage).cast(),
                addr.len,
            )
            .build(),
            Request::Send { fd, buf } => {
                opcode::Send::new(types::Fd(fd.as_raw_fd()), buf.ptr(), len32(buf.init()))
                    .flags(libc::MSG_NOSIGNAL)
                    .build()
            }
            Request::Recv {
                fd,
                buf,
                poll_first,
            } => {
                let ioprio = if *poll_first && polls_first {
                    RECVSEND_POLL_FIRST
                } else {
                    0
                };
                opcode::Recv::new(types::Fd(fd.as_raw_fd()), buf.ptr(), len32(buf.total()))
                    .ioprio(ioprio)
                    .build()
            }
            Request::SendMsg { fd, msg } => {
                opcode::SendMsg::new(types::Fd(fd.as_raw_fd()), msg.hdr().cast_const())
                    .flags(libc::MSG_NOSIGNAL as u32)
                    .build()
            }
            Request::RecvMsg { fd, msg } => {
                let flags = msg.recv_flags();
                opcode::RecvMsg::new(types::Fd(fd.as_raw_fd()), msg.hdr())
                    .flags(flags)
                    .build()
            }
            Request::Shutdown { fd, how } => {
                opcode::Shutdown::new(types::Fd(fd.as_raw_fd()), *how).build()
            }
            Request::Poll { fd, events } => {
                opcode::PollAdd::new(types::Fd(fd.as_raw_fd()), *events).build()
            }
            Request::Path(path) => path.prepare(),
            Request::Ftruncate { fd, len } => {
                opcode::Ftruncate::new(types::Fd(fd.as_raw_fd()), *len).build()
            }
            Request::SyncRange {
                fd,
                offset,
                len,
                flags,
            } => opcode::SyncFileRange::new(types::Fd(fd.as_raw_fd()), *len)
                .offset(*offset)
                .flags(*flags)
                .build(),
        };
        entry.user_data(user_data)
    }

    /// Called once the SQE is in the ring: a close hands its descriptor to the kernel.
    pub(crate) fn mark_submitted(&mut self) {
        if let Request::Close { fd } = self
            && let Some(fd) = fd.take()
        {
            let _ = fd.into_raw_fd();
        }
    }
}

/// `IORING_RECVSEND_POLL_FIRST` (`io_uring::sys` is private): in a receive's `ioprio`, arm a
/// readiness poll before the first attempt.
const RECVSEND_POLL_FIRST: u16 = 1;

/// Closes a descriptor created by a request nobody will consume (late accept/open/socket).
pub(crate) fn close_orphan_fd(raw: RawFd) {
    // SAFETY: `raw` was just created by the kernel for a request whose future is gone, so this
    // is its only owner.
    drop(unsafe { OwnedFd::from_raw_fd(raw) });
}
