//! Timers and the no-op.

use std::io;
use std::time::Duration;

use web_time::Instant;

use super::unit;
use crate::operation::Op;
use crate::request::Request;

/// A request that does nothing in the kernel (useful for measuring the driver).
pub fn nop() -> Op<io::Result<()>> {
    Op::new(Request::Nop, unit)
}

/// Completes at `at`, from the driver's userspace timer heap: it needs no ring slot, so it fires
/// even when every slot holds an untimed request.
pub fn sleep_until(at: Instant) -> Op<io::Result<()>> {
    Op::new(Request::Sleep, unit).with_deadline(at)
}

/// How far ahead a deadline past the clock's range is clamped: about 30 years, never reached.
const FAR_FUTURE: Duration = Duration::from_secs(60 * 60 * 24 * 365 * 30);

/// Completes after `duration` (see [`sleep_until`]); a duration past the clock's range sleeps
/// until a far-future instant instead of overflowing.
pub fn sleep(duration: Duration) -> Op<io::Result<()>> {
    let now = Instant::now();
    let at = now
        .checked_add(duration)
        .unwrap_or_else(|| now + FAR_FUTURE);
    sleep_until(at)
}
