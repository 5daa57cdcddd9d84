//! Operation constructors. Each takes owned inputs (buffers, `Arc<OwnedFd>`) and returns an
//! [`Op`](crate::Op) that hands the buffers back with the result. Nothing happens until the
//! operation is first polled.
//!
//! Buffers are any [`IoBuf`] (writes, sends) or [`IoBufMut`] (reads, receives), vectored ones
//! any [`IoVecBuf`] / [`IoVecBufMut`]. A read fills the buffer **from its beginning**, up to its
//! capacity, and sets its initialized length to exactly the count (so `Vec::with_capacity(n)`
//! needs no zero-fill, and `buf.len()` is the count afterwards); slice a buffer
//! ([`IoBuf::slice`]) to read into part of it. A buffer with no capacity
//! is refused with `InvalidInput`, as is an empty write. A vectored read fills its buffers in
//! order.
//!
//! Positional offsets above `i64::MAX` are refused with `InvalidInput` before anything is
//! submitted: io_uring reads offset −1 (`u64::MAX`) as "use the file cursor", so such a write
//! would otherwise land at the cursor.

mod datagram;
mod fs;
mod net;
mod path;
mod pipe;
mod poll;
mod time;

pub use datagram::{Received, peek_from, recv_from, send_to};
pub use fs::{close, fdatasync, fsync, open, read_at, readv_at, statx, write_at, writev_at};
pub use fs::{ftruncate, statx_fd, statx_nofollow, sync_file_range};
pub(crate) use net::to_socket_addr;
pub use net::{
    ConnectTo, accept, connect, recv, recv_vectored, recv_when_readable, send, send_vectored,
    shutdown, socket,
};
pub use path::{linkat, mkdirat, renameat, symlinkat, unlinkat};
pub use pipe::{read_stream, readv_stream, write_stream, writev_stream};
pub use poll::{poll_readable, poll_writable};
pub use time::{nop, sleep, sleep_until};

use std::io;

use crate::buf::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};
use crate::request::{Outcome, Request};

/// Converts a raw outcome into `io::Result<i32>`.
pub(crate) fn io_result(outcome: Outcome) -> io::Result<i32> {
    outcome.map_err(|f| f.into_io())
}

/// A count result (bytes moved).
pub(crate) fn count(outcome: Outcome) -> io::Result<usize> {
    io_result(outcome).map(|n| usize::try_from(n).unwrap_or(0))
}

/// The buffer a request hands back: the caller's own, or — when the driver closed while the
/// kernel still owned it, and kept it — a placeholder ([`IoBuf::placeholder`]); the outcome is
/// then an error. `Some` with the buffer's own value, so a decode knows which it has.
fn take_buffer<B: IoBuf>(data: Option<Request>) -> Option<B> {
    match data? {
        Request::Read { buf, .. }
        | Request::Write { buf, .. }
        | Request::Send { buf, .. }
        | Request::Recv { buf, .. } => {
            // SAFETY: every constructor in this module builds the request's buffer from the `B`
            // its decode is instantiated for.
            Some(unsafe { buf.into_value() })
        }
        _ => None,
    }
}

fn take_buffers<V: IoVecBuf>(data: Option<Request>) -> Option<V> {
    match data? {
        Request::Readv { vectored, .. } | Request::Writev { vectored, .. } => {
            // SAFETY: the vectored constructors build the buffers from the `V` their decode is
            // instantiated for.
            Some(unsafe { V::from_raw_bufs(vectored.bufs) })
        }
        _ => None,
    }
}

/// Decodes a read or receive: on success the buffer's initialized length becomes the count.
pub(crate) fn decode_filled<B: IoBufMut>(
    outcome: Outcome,
    data: Option<Request>,
) -> (io::Result<usize>, B) {
    let Some(mut buf) = take_buffer::<B>(data) else {
        return (count(outcome), B::placeholder());
    };
    let result = match count(outcome) {
        Ok(n) if n <= buf.bytes_total() => {
            // SAFETY: the request pointed the kernel at this buffer's `bytes_total()` bytes from
            // its beginning, and the driver owned the buffer, unchanged, until this final
            // completion; a successful result `n` means the kernel initialized exactly `n` bytes
            // from the beginning, and `n` fits (checked above).
            unsafe { buf.set_init(n) };
            Ok(n)
        }
        Ok(n) => Err(io::Error::other(format!(
            "the kernel reported reading {n} bytes, more than the buffer holds"
        ))),
        Err(err) => Err(err),
    };
    (result, buf)
}

/// Decodes a write or send: the count, and the buffer unchanged.
pub(crate) fn decode_sent<B: IoBuf>(
    outcome: Outcome,
    data: Option<Request>,
) -> (io::Result<usize>, B) {
    (
        count(outcome),
        take_buffer::<B>(data).unwrap_or_else(B::placeholder),
    )
}

/// Decodes a vectored read: the buffers in order hold the count's bytes.
pub(crate) fn decode_filled_vectored<V: IoVecBufMut>(
    outcome: Outcome,
    data: Option<Request>,
) -> (io::Result<usize>, V) {
    let Some(mut bufs) = take_buffers::<V>(data) else {
        return (count(outcome), V::placeholder());
    };
    let result = count(outcome);
    if let Ok(n) = &result {
        // SAFETY: the kernel filled `n` bytes across the request's iovecs, which point to these
        // buffers in order, each from its beginning (`Vectored::over` for reads).
        unsafe { bufs.set_init_vectored(*n) };
    }
    (result, bufs)
}

/// Decodes a vectored write: the count, and the buffers unchanged.
pub(crate) fn decode_sent_vectored<V: IoVecBuf>(
    outcome: Outcome,
    data: Option<Request>,
) -> (io::Result<usize>, V) {
    (
        count(outcome),
        take_buffers::<V>(data).unwrap_or_else(V::placeholder),
    )
}

/// A unit result.
pub(crate) fn unit(outcome: Outcome, _data: Option<Request>) -> io::Result<()> {
    io_result(outcome).map(drop)
}
