//! Tests of `ops/time.rs`.

use std::time::Duration;

use crate::ops::sleep;

#[test]
fn sleep_for_a_duration_past_the_clock_range_does_not_overflow() {
    let op = sleep(Duration::MAX);
    drop(op);
}
