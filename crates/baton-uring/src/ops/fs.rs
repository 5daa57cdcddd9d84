//! File operations.

use std::ffi::CString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use super::{count, io_result, read_into_spare, unit};
use crate::operation::{Decode, Op};
use crate::request::{Outcome, Request, Vectored};

/// The largest positional offset. io_uring reads a negative offset — −1, that is `u64::MAX`, in
/// particular — as "use the file cursor", so a larger one would silently read or write at the
/// cursor instead of where the caller asked.
const MAX_OFFSET: u64 = i64::MAX as u64;

const OFFSET_TOO_LARGE: &str = "the offset is above i64::MAX, which io_uring would read as \"use the file cursor\": pass a positional offset of at most i64::MAX";

/// A positional request, or one refused before registration: first for an offset above
/// [`MAX_OFFSET`], then for `buffers_refused` (the constructor's own buffer check).
fn positional<T>(
    data: Request,
    offset: u64,
    buffers_refused: Option<&'static str>,
    decode: Decode<T>,
) -> Op<T> {
    let refusal = if offset > MAX_OFFSET {
        Some(OFFSET_TOO_LARGE)
    } else {
        buffers_refused
    };
    match refusal {
        Some(reason) => Op::invalid(data, reason, decode),
        None => Op::new(data, decode),
    }
}

fn buffer(data: Option<Request>) -> Vec<u8> {
    match data {
        Some(Request::Read { buf, .. } | Request::Write { buf, .. }) => buf,
        _ => Vec::new(),
    }
}

fn buffers(data: Option<Request>) -> Vec<Vec<u8>> {
    match data {
        Some(Request::Readv { vectored, .. } | Request::Writev { vectored, .. }) => vectored.bufs,
        _ => Vec::new(),
    }
}

fn decode_read(outcome: Outcome, data: Option<Request>) -> (io::Result<usize>, Vec<u8>) {
    read_into_spare(outcome, buffer(data))
}

fn decode_rw(outcome: Outcome, data: Option<Request>) -> (io::Result<usize>, Vec<u8>) {
    (count(outcome), buffer(data))
}

fn decode_rwv(outcome: Outcome, data: Option<Request>) -> (io::Result<usize>, Vec<Vec<u8>>) {
    (count(outcome), buffers(data))
}

/// Reads up to `buf.capacity() - buf.len()` bytes at `offset` into `buf`'s spare capacity; the
/// buffer comes back holding its old contents followed by the bytes read, and the count says how
/// many (0 at end of file). A buffer with no spare capacity, and an offset above `i64::MAX`, are
/// `InvalidInput`, refused before anything is submitted.
pub fn read_at(fd: Arc<OwnedFd>, buf: Vec<u8>, offset: u64) -> Op<(io::Result<usize>, Vec<u8>)> {
    let full = buf.len() == buf.capacity();
    positional(
        Request::Read { fd, buf, offset },
        offset,
        full.then_some("read_at reads into the buffer's spare capacity and it has none: reserve capacity, e.g. Vec::with_capacity"),
        decode_read,
    )
}

/// Writes `buf` at `offset`; retained: dropping the future does not cancel the write. An empty
/// buffer, and an offset above `i64::MAX`, are `InvalidInput`, refused before anything is
/// submitted.
pub fn write_at(fd: Arc<OwnedFd>, buf: Vec<u8>, offset: u64) -> Op<(io::Result<usize>, Vec<u8>)> {
    let empty = buf.is_empty();
    positional(
        Request::Write { fd, buf, offset },
        offset,
        empty.then_some("write_at needs a buffer of non-zero length"),
        decode_rw,
    )
}

/// Vectored read at `offset` into each buffer's full length (unlike [`read_at`], not its spare
/// capacity: each buffer's length is unchanged and the count says how much was read). Offsets
/// are checked as [`read_at`]'s are.
pub fn readv_at(
    fd: Arc<OwnedFd>,
    bufs: Vec<Vec<u8>>,
    offset: u64,
) -> Op<(io::Result<usize>, Vec<Vec<u8>>)> {
    let empty = bufs.iter().all(Vec::is_empty);
    positional(
        Request::Readv {
            fd,
            vectored: Vectored::over(bufs),
            offset,
        },
        offset,
        empty.then_some("readv_at needs at least one non-empty buffer"),
        decode_rwv,
    )
}

/// Vectored write at `offset`; retained, and its offset checked, like [`write_at`].
pub fn writev_at(
    fd: Arc<OwnedFd>,
    bufs: Vec<Vec<u8>>,
    offset: u64,
) -> Op<(io::Result<usize>, Vec<Vec<u8>>)> {
    let empty = bufs.iter().all(Vec::is_empty);
    positional(
        Request::Writev {
            fd,
            vectored: Vectored::over(bufs),
            offset,
        },
        offset,
        empty.then_some("writev_at needs at least one non-empty buffer"),
        decode_rwv,
    )
}

/// `fsync(2)` through the file's durability permit; retained.
pub fn fsync(fd: Arc<OwnedFd>) -> Op<io::Result<()>> {
    Op::new(
        Request::Fsync {
            fd,
            datasync: false,
            start: None,
        },
        unit,
    )
}

/// `fdatasync(2)` through the file's durability permit; retained.
pub fn fdatasync(fd: Arc<OwnedFd>) -> Op<io::Result<()>> {
    Op::new(
        Request::Fsync {
            fd,
            datasync: true,
            start: None,
        },
        unit,
    )
}

fn decode_fd(outcome: Outcome, _data: Option<Request>) -> io::Result<OwnedFd> {
    // SAFETY: a successful open/socket/accept result is a new descriptor nobody else owns.
    io_result(outcome).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

fn path_cstring(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// `openat(AT_FDCWD, path, flags | O_CLOEXEC, mode)`. If the future is dropped and the open
/// completes anyway, the driver closes the new descriptor.
pub fn open(path: impl AsRef<Path>, flags: i32, mode: u32) -> Op<io::Result<OwnedFd>> {
    match path_cstring(path.as_ref()) {
        Some(path) => Op::new(Request::Open { path, flags, mode }, decode_fd),
        None => Op::invalid(Request::Nop, "path contains a NUL byte", decode_fd),
    }
}

/// Closes `fd` through the ring; retained.
pub fn close(fd: OwnedFd) -> Op<io::Result<()>> {
    Op::new(Request::Close { fd: Some(fd) }, unit)
}

fn decode_statx(outcome: Outcome, data: Option<Request>) -> io::Result<libc::statx> {
    io_result(outcome)?;
    match data {
        Some(Request::Statx { buf, .. }) => Ok(*buf),
        _ => Err(io::Error::other("statx result lost its buffer")),
    }
}

/// `statx(AT_FDCWD, path, 0, STATX_ALL)`.
pub fn statx(path: impl AsRef<Path>) -> Op<io::Result<libc::statx>> {
    match path_cstring(path.as_ref()) {
        Some(path) => Op::new(
            Request::Statx {
                path,
                // SAFETY: statx is plain old data; all-zero is a valid value.
                buf: Box::new(unsafe { std::mem::zeroed() }),
            },
            decode_statx,
        ),
        None => Op::invalid(Request::Nop, "path contains a NUL byte", decode_statx),
    }
}
