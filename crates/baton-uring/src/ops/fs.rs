//! File operations: positional and vectored I/O, syncs, open and close, `statx`, and the
//! size and writeback requests (`ftruncate`, `sync_file_range`).

use std::ffi::CString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use super::path::{PATH_HAS_NUL, path_cstring};
use super::{
    decode_filled, decode_filled_vectored, decode_sent, decode_sent_vectored, io_result, unit,
};
use crate::buf::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut, RawBuf};
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

pub(super) const EMPTY_READ: &str = "a read needs a buffer with room for at least one byte: pass e.g. Vec::with_capacity(n) or vec![0; n]";

pub(super) const EMPTY_WRITE: &str =
    "a write needs at least one byte to write (the buffer's initialized length is 0)";

/// Reads at `offset` into `buf`, from its beginning up to its capacity; its initialized length
/// becomes the count (0 at end of file). A buffer with no capacity, and an offset above
/// `i64::MAX`, are `InvalidInput`, refused before anything is submitted.
pub fn read_at<B: IoBufMut>(fd: Arc<OwnedFd>, buf: B, offset: u64) -> Op<(io::Result<usize>, B)> {
    let empty = buf.bytes_total() == 0;
    positional(
        Request::Read {
            fd,
            buf: RawBuf::new_mut(buf),
            offset,
        },
        offset,
        empty.then_some(EMPTY_READ),
        decode_filled::<B>,
    )
}

/// Writes `buf`'s initialized bytes at `offset`; retained: dropping the future does not cancel
/// the write. An empty buffer, and an offset above `i64::MAX`, are `InvalidInput`, refused
/// before anything is submitted.
pub fn write_at<B: IoBuf>(fd: Arc<OwnedFd>, buf: B, offset: u64) -> Op<(io::Result<usize>, B)> {
    let empty = buf.bytes_init() == 0;
    positional(
        Request::Write {
            fd,
            buf: RawBuf::new(buf),
            offset,
        },
        offset,
        empty.then_some(EMPTY_WRITE),
        decode_sent::<B>,
    )
}

/// Vectored read at `offset`: fills the buffers in order, each from its beginning up to its
/// capacity, and sets each one's initialized length to what it got. Offsets are checked as
/// [`read_at`]'s are.
pub fn readv_at<V: IoVecBufMut>(
    fd: Arc<OwnedFd>,
    bufs: V,
    offset: u64,
) -> Op<(io::Result<usize>, V)> {
    let bufs = bufs.into_raw_bufs_mut();
    let empty = bufs.iter().all(|b| b.total() == 0);
    positional(
        Request::Readv {
            fd,
            vectored: Vectored::over(bufs, true),
            offset,
        },
        offset,
        empty.then_some("a vectored read needs at least one buffer with room for a byte"),
        decode_filled_vectored::<V>,
    )
}

/// Vectored write of each buffer's initialized bytes, in order, at `offset`; retained, and its
/// offset checked, like [`write_at`].
pub fn writev_at<V: IoVecBuf>(
    fd: Arc<OwnedFd>,
    bufs: V,
    offset: u64,
) -> Op<(io::Result<usize>, V)> {
    let bufs = bufs.into_raw_bufs();
    let empty = bufs.iter().all(|b| b.init() == 0);
    positional(
        Request::Writev {
            fd,
            vectored: Vectored::over(bufs, false),
            offset,
        },
        offset,
        empty.then_some("a vectored write needs at least one byte to write"),
        decode_sent_vectored::<V>,
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

/// `openat(AT_FDCWD, path, flags | O_CLOEXEC, mode)`. If the future is dropped and the open
/// completes anyway, the driver closes the new descriptor.
pub fn open(path: impl AsRef<Path>, flags: i32, mode: u32) -> Op<io::Result<OwnedFd>> {
    match path_cstring(path.as_ref()) {
        Some(path) => Op::new(Request::Open { path, flags, mode }, decode_fd),
        None => Op::invalid(Request::Nop, PATH_HAS_NUL, decode_fd),
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

/// A `statx` request for `STATX_ALL` (the basic fields and the birth time, what
/// `std::fs::metadata` asks for) on `path` relative to `dirfd` (`None`: the current
/// directory).
fn statx_request(dirfd: Option<Arc<OwnedFd>>, path: CString, flags: i32) -> Request {
    Request::Statx {
        dirfd,
        path,
        flags,
        // SAFETY: statx is plain old data; all-zero is a valid value.
        buf: Box::new(unsafe { std::mem::zeroed() }),
    }
}

fn statx_path(path: &Path, flags: i32) -> Op<io::Result<libc::statx>> {
    match path_cstring(path) {
        Some(path) => Op::new(statx_request(None, path, flags), decode_statx),
        None => Op::invalid(Request::Nop, PATH_HAS_NUL, decode_statx),
    }
}

/// `statx(AT_FDCWD, path, 0, STATX_ALL)`: follows a final symlink, as `stat(2)` does.
pub fn statx(path: impl AsRef<Path>) -> Op<io::Result<libc::statx>> {
    statx_path(path.as_ref(), 0)
}

/// `statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_ALL)`: a final symlink is described
/// itself, as `lstat(2)` does.
pub fn statx_nofollow(path: impl AsRef<Path>) -> Op<io::Result<libc::statx>> {
    statx_path(path.as_ref(), libc::AT_SYMLINK_NOFOLLOW)
}

/// `statx(fd, "", AT_EMPTY_PATH, STATX_ALL)`: the open file itself, as `fstat(2)` does.
pub fn statx_fd(fd: Arc<OwnedFd>) -> Op<io::Result<libc::statx>> {
    Op::new(
        statx_request(Some(fd), CString::default(), libc::AT_EMPTY_PATH),
        decode_statx,
    )
}

const LEN_TOO_LARGE: &str =
    "the length is above i64::MAX, which no file can have: pass a length of at most i64::MAX";

/// `ftruncate(fd, len)` (`IORING_OP_FTRUNCATE`, Linux 6.9+): cuts the file to `len` bytes or
/// extends it with zeroes. Retained, and counted as a write of the file for its durability
/// permit (the next sync really syncs). A `len` above `i64::MAX` is `InvalidInput`, refused
/// before anything is submitted.
pub fn ftruncate(fd: Arc<OwnedFd>, len: u64) -> Op<io::Result<()>> {
    Op::new_unless(
        len > MAX_OFFSET,
        Request::Ftruncate { fd, len },
        LEN_TOO_LARGE,
        unit,
    )
}

/// `sync_file_range(fd, offset, len, flags)` (`len` 0: to the end of the file): starts
/// writeback of the range's dirty pages and, with the `SYNC_FILE_RANGE_WAIT_*` flags, waits
/// for it. It flushes neither metadata nor the device's cache, so it is no durability
/// guarantee: it does not take the file's durability permit and never marks the file clean.
/// Retained. An `offset` above `i64::MAX` is `InvalidInput`, refused before anything is
/// submitted.
pub fn sync_file_range(fd: Arc<OwnedFd>, offset: u64, len: u32, flags: u32) -> Op<io::Result<()>> {
    positional(
        Request::SyncRange {
            fd,
            offset,
            len,
            flags,
        },
        offset,
        None,
        unit,
    )
}
