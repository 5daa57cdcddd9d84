//! Operation constructors. Each takes owned inputs (buffers, `Arc<OwnedFd>`) and returns an
//! [`Op`](crate::Op) that hands the buffers back with the result. Nothing happens until the
//! operation is first polled.
//!
//! Reads and receives ([`read_at`], [`recv`]) write into the buffer's *spare capacity*
//! (`buf.len()..buf.capacity()`), never over its contents, and the buffer comes back holding its
//! old contents followed by the bytes read (so `Vec::with_capacity(n)` needs no zero-fill). A
//! buffer with no spare capacity is refused with `InvalidInput`. Vectored reads ([`readv_at`])
//! still read into each buffer's length.
//!
//! Positional offsets above `i64::MAX` are refused with `InvalidInput` before anything is
//! submitted: io_uring reads offset −1 (`u64::MAX`) as "use the file cursor", so such a write
//! would otherwise land at the cursor.

mod fs;
mod net;
mod time;

pub use fs::{close, fdatasync, fsync, open, read_at, readv_at, statx, write_at, writev_at};
pub(crate) use net::to_socket_addr;
pub use net::{ConnectTo, accept, connect, recv, send, shutdown, socket};
pub use time::{nop, sleep, sleep_until};

use std::io;

use crate::request::{Outcome, Request};

/// Converts a raw outcome into `io::Result<i32>`.
pub(crate) fn io_result(outcome: Outcome) -> io::Result<i32> {
    outcome.map_err(|f| f.into_io())
}

/// A count result (bytes moved).
pub(crate) fn count(outcome: Outcome) -> io::Result<usize> {
    io_result(outcome).map(|n| usize::try_from(n).unwrap_or(0))
}

/// Decodes a read or recv into `buf`'s spare capacity: on success, extends `buf` over the bytes
/// the kernel wrote.
pub(crate) fn read_into_spare(outcome: Outcome, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
    let result = match count(outcome) {
        Ok(n) if n <= buf.capacity() - buf.len() => {
            // SAFETY: the request pointed the kernel at `buf`'s spare capacity (`Request::Read`/
            // `Recv`), and `buf` was owned by the driver, unchanged, until this final completion;
            // a successful result `n` means the kernel initialized exactly `n` bytes starting at
            // the old length, and `n` fits in the capacity (checked above).
            unsafe { buf.set_len(buf.len() + n) };
            Ok(n)
        }
        Ok(n) => Err(io::Error::other(format!(
            "the kernel reported reading {n} bytes, more than the buffer's spare capacity"
        ))),
        Err(err) => Err(err),
    };
    (result, buf)
}

/// A unit result.
pub(crate) fn unit(outcome: Outcome, _data: Option<Request>) -> io::Result<()> {
    io_result(outcome).map(drop)
}
