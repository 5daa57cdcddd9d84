//! The driver's idle point (forward rule F8): linger first after a delivery (a forward or a
//! completion), or time the blocking wait that re-arms lingering.

use web_time::Instant;

use super::Driver;
use crate::backend::Wait;
use crate::linger::{Budget, IdleChoice, LINGER, Linger};
use crate::mailbox::Mailbox;
use crate::state::DriverState;

/// What the driver did at an idle point, before any blocking wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IdlePoint {
    /// It lingered and an unpark answered: take the token and serve, do not block.
    Lingered,
    /// It blocks, timing the wait from this instant (the linger policy's re-arm).
    Timed(Instant),
    /// It blocks (or its linger expired).
    Block,
}

impl Driver {
    /// Marks the idle point (F9) and lingers when the policy says so (F8), never past `until`
    /// (the turn's deadline or next timer).
    pub(super) fn idle_point(
        &self,
        core: &mut DriverState,
        shared: &Mailbox,
        until: Option<Instant>,
    ) -> IdlePoint {
        shared.reach_idle_point();
        let mut policy = self.linger.get();
        let point = match policy.choose(core.counts.forwarded + core.counts.completed) {
            IdleChoice::Linger if !core.closed => {
                let budget = until.map_or(LINGER, |t| {
                    LINGER.min(t.saturating_duration_since(Instant::now()))
                });
                // What this turn queued goes to the kernel now, so the replies it waits for
                // can come during the linger.
                if core.has_unsubmitted() {
                    let _ = core.submit(Wait::No);
                }
                let answered = shared.linger(Budget::of(budget), || core.completions_ready())
                    != Linger::Expired;
                policy.record(answered);
                if answered {
                    IdlePoint::Lingered
                } else {
                    IdlePoint::Block
                }
            }
            IdleChoice::BlockTimed => IdlePoint::Timed(Instant::now()),
            IdleChoice::Linger | IdleChoice::Block => IdlePoint::Block,
        };
        self.linger.set(policy);
        point
    }

    /// F8: a timed wait that an unpark or a completion ended within the budget re-arms
    /// lingering.
    pub(super) fn timed_wait_ended(&self, started: Instant, unparked: bool) {
        let mut policy = self.linger.get();
        policy.record(unparked && started.elapsed() < LINGER);
        self.linger.set(policy);
    }
}
