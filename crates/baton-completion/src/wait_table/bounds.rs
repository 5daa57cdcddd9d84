//! Quarantine bounds (E13): a quarantined wait still pending after its deadline bound is
//! settled with `BoundExceeded` and counted, against an `Instant` the caller passes in.

use super::{WaitError, WaitState, WaitTable};
use baton_cancel::ResourceClass;
use std::task::Waker;
use web_time::Instant;

/// The result of [`WaitTable::check_bounds`].
#[must_use = "waits that exceeded their bound must be woken"]
#[derive(Debug, Default)]
pub struct BoundCheck {
    /// Waits that were settled with `BoundExceeded`.
    pub exceeded: usize,
    /// Their wakers, to wake outside your borrows.
    pub wakers: Vec<Waker>,
}

impl WaitTable {
    /// Settles every pending quarantined wait whose bound has passed at `now` with
    /// `BoundExceeded` and counts it (E13). Tests pass an injected clock.
    pub fn check_bounds(&mut self, now: Instant) -> BoundCheck {
        let mut check = BoundCheck::default();
        for entry in self.entries.values_mut() {
            let Some(bound) = entry.resource.as_ref().and_then(ResourceClass::bound) else {
                continue;
            };
            if matches!(entry.state, WaitState::Pending) && bound.is_exceeded_at(now) {
                check.exceeded += 1;
                if let Some(waker) = entry.settle(Err(WaitError::BoundExceeded { bound })) {
                    check.wakers.push(waker);
                }
            }
        }
        self.counters.bound_exceeded += check.exceeded as u64;
        check
    }
}
