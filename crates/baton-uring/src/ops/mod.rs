//! Operation constructors. Each takes owned inputs (buffers, `Arc<OwnedFd>`) and returns an
//! [`Op`](crate::Op) that hands the buffers back with the result. Nothing happens until the
//! operation is first polled.

mod fs;
mod net;
mod time;

pub use fs::{close, fdatasync, fsync, open, read_at, readv_at, statx, write_at, writev_at};
pub use net::{ConnectTo, accept, connect, recv, send, shutdown, socket};
pub use time::{nop, sleep, sleep_until};

use std::io;

use crate::op_data::{OpData, Outcome};

/// Converts a raw outcome into `io::Result<i32>`.
pub(crate) fn io_result(outcome: Outcome) -> io::Result<i32> {
    outcome.map_err(|f| f.into_io())
}

/// A count result (bytes moved).
pub(crate) fn count(outcome: Outcome) -> io::Result<usize> {
    io_result(outcome).map(|n| usize::try_from(n).unwrap_or(0))
}

/// A unit result.
pub(crate) fn unit(outcome: Outcome, _data: Option<OpData>) -> io::Result<()> {
    io_result(outcome).map(drop)
}
