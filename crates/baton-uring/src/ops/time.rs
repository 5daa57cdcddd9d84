//! Timers and the no-op.

use std::io;
use std::time::Duration;

use web_time::Instant;

use super::unit;
use crate::op::Op;
use crate::op_data::OpData;

/// A request that does nothing in the kernel (useful for measuring the driver).
pub fn nop() -> Op<io::Result<()>> {
    Op::new(OpData::Nop, unit)
}

/// Completes at `at`, from the driver's userspace timer heap: it needs no ring slot, so it fires
/// even when every slot holds an untimed request.
pub fn sleep_until(at: Instant) -> Op<io::Result<()>> {
    Op::new(OpData::Sleep, unit).with_deadline(at)
}

/// Completes after `duration` (see [`sleep_until`]).
pub fn sleep(duration: Duration) -> Op<io::Result<()>> {
    sleep_until(Instant::now() + duration)
}
