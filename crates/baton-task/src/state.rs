//! The task state word (rules 1–6 of the crate docs) and its transitions.
//!
//! One `AtomicUsize` per task holds every flag below. Each transition is a single atomic
//! read-modify-write and returns a `#[must_use]` enum naming what the caller must do next.

use crate::sync::{AtomicUsize, Ordering};

/// In a run queue, or about to be pushed into one by whoever set this bit (rule 2).
const NOTIFIED: usize = 1 << 0;
/// Being polled (or being claimed for cancellation) by the scheduler (rule 3).
const RUNNING: usize = 1 << 1;
/// Terminal: the future is gone and the result is published (rule 5).
const COMPLETE: usize = 1 << 2;
/// Abort requested (by the `JoinHandle` or by shutdown) (rule 4).
const CANCELLED: usize = 1 << 3;
/// The `JoinHandle` is alive and will take the output (rule 6).
const JOIN_INTEREST: usize = 1 << 4;
/// The `JoinHandle` stored a waker that completion must wake (rule 6).
const JOIN_WAKER: usize = 1 << 5;
/// The future was leaked with its allocation instead of dropped (rule 7).
const LEAKED: usize = 1 << 6;

/// A new task is queued once (its first poll) and has a `JoinHandle`.
const INITIAL: usize = NOTIFIED | JOIN_INTEREST;

/// The atomic state of one task.
#[derive(Debug)]
pub(crate) struct State(AtomicUsize);

/// What a wake (or an abort request) asks of the waker.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WakeOutcome {
    /// Rule 2: the task was idle; the caller now owns the queue entry and must push it.
    Submit,
    /// The task is already queued; this wake merged into that entry.
    Coalesced,
    /// Rule 3: the task is being polled; the poller requeues it when the poll returns.
    DuringPoll,
    /// Rule 5: the task finished; the wake is ignored.
    Complete,
}

/// What the scheduler does with a task it popped from a run queue.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartOutcome {
    /// Poll the future.
    Poll,
    /// Rule 4: an abort won before this poll: drop the future without polling it.
    Cancelled,
    /// The task finished while queued (shutdown claimed it): discard the entry.
    Stale,
}

/// What happens after a poll returned `Pending`.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdleOutcome {
    /// Nobody woke it: it waits for a waker.
    Parked,
    /// Rule 3: it was woken during the poll: the poller pushes it back into a queue.
    Requeue,
    /// Rule 4: an abort arrived during the poll: the poller still holds `RUNNING` and drops it.
    Cancel,
}

/// The shutdown path's attempt to take a task away from the queues.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClaimOutcome {
    /// The caller now holds `RUNNING` with `CANCELLED` set and must finish the task.
    Claimed,
    /// The task is being polled (shutdown ran from inside a poll); `CANCELLED` is set and the
    /// poller cancels it when its poll returns.
    Running,
    /// Already finished.
    Complete,
}

/// What the completer learned when it published completion.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Completed {
    /// Rule 6: the `JoinHandle` is still alive and will take the output.
    pub(crate) join_interest: bool,
    /// Rule 6: a join waker is stored and must be woken.
    pub(crate) join_waker: bool,
}

/// What the `JoinHandle`'s drop must do.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DetachOutcome {
    /// The task is still running; it now drops its own output when it completes.
    Detached,
    /// The task already completed: the handle drops the stored output.
    OutputIsOurs,
}

/// The result of registering a join waker.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JoinWakerOutcome {
    /// Completion will wake the stored waker.
    Registered,
    /// Completion happened first: read the output now.
    Complete,
}

/// A copy of the state bits, for queries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot(usize);

impl Snapshot {
    pub(crate) fn is_complete(self) -> bool {
        self.0 & COMPLETE != 0
    }

    pub(crate) fn is_leaked(self) -> bool {
        self.0 & LEAKED != 0
    }
}

impl State {
    pub(crate) fn new() -> State {
        State(AtomicUsize::new(INITIAL))
    }

    pub(crate) fn load(&self) -> Snapshot {
        Snapshot(self.0.load(Ordering::Acquire))
    }

    /// Rule 2: a wake sets `NOTIFIED`; only the waker that found the task idle pushes it.
    pub(crate) fn wake(&self) -> WakeOutcome {
        Self::classify(self.0.fetch_or(NOTIFIED, Ordering::AcqRel))
    }

    /// Rule 4: an abort is a wake that also sets `CANCELLED`.
    pub(crate) fn abort(&self) -> WakeOutcome {
        Self::classify(self.0.fetch_or(NOTIFIED | CANCELLED, Ordering::AcqRel))
    }

    fn classify(previous: usize) -> WakeOutcome {
        if previous & COMPLETE != 0 {
            WakeOutcome::Complete
        } else if previous & NOTIFIED != 0 {
            WakeOutcome::Coalesced
        } else if previous & RUNNING != 0 {
            WakeOutcome::DuringPoll
        } else {
            WakeOutcome::Submit
        }
    }

    /// Rule 3: the queue entry is consumed (`NOTIFIED` cleared) and `RUNNING` taken.
    pub(crate) fn start(&self) -> StartOutcome {
        let mut current = self.0.load(Ordering::Acquire);
        loop {
            if current & COMPLETE != 0 {
                return StartOutcome::Stale;
            }
            debug_assert!(current & NOTIFIED != 0, "rule 2: a queued task is notified");
            debug_assert!(current & RUNNING == 0, "rule 3: one poller at a time");
            let next = (current & !NOTIFIED) | RUNNING;
            match self
                .0
                .compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if current & CANCELLED != 0 => return StartOutcome::Cancelled,
                Ok(_) => return StartOutcome::Poll,
                Err(actual) => current = actual,
            }
        }
    }

    /// Rule 3: release `RUNNING` after a `Pending` poll, unless a wake or abort arrived.
    pub(crate) fn idle(&self) -> IdleOutcome {
        let mut current = self.0.load(Ordering::Acquire);
        loop {
            debug_assert!(current & RUNNING != 0, "rule 3: only the poller goes idle");
            if current & CANCELLED != 0 {
                return IdleOutcome::Cancel;
            }
            let next = current & !RUNNING;
            match self
                .0
                .compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if current & NOTIFIED != 0 => return IdleOutcome::Requeue,
                Ok(_) => return IdleOutcome::Parked,
                Err(actual) => current = actual,
            }
        }
    }

    /// Rule 8: shutdown takes `RUNNING` on any task that is not being polled.
    pub(crate) fn claim_for_shutdown(&self) -> ClaimOutcome {
        let mut current = self.0.load(Ordering::Acquire);
        loop {
            if current & COMPLETE != 0 {
                return ClaimOutcome::Complete;
            }
            let (next, outcome) = if current & RUNNING != 0 {
                (current | CANCELLED, ClaimOutcome::Running)
            } else {
                (current | RUNNING | CANCELLED, ClaimOutcome::Claimed)
            };
            match self
                .0
                .compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return outcome,
                Err(actual) => current = actual,
            }
        }
    }

    /// Rule 5: the holder of `RUNNING` publishes completion (with `LEAKED` when rule 7 applied).
    pub(crate) fn complete(&self, leaked: bool) -> Completed {
        let set = if leaked { COMPLETE | LEAKED } else { COMPLETE };
        let previous = self
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |current| {
                Some((current & !RUNNING) | set)
            })
            .unwrap_or_else(|unchanged| unchanged);
        debug_assert!(previous & RUNNING != 0, "rule 5: only RUNNING completes");
        Completed {
            join_interest: previous & JOIN_INTEREST != 0,
            join_waker: previous & JOIN_WAKER != 0,
        }
    }

    /// Rule 6: the handle gives up its interest unless the output is already there.
    pub(crate) fn detach(&self) -> DetachOutcome {
        let mut current = self.0.load(Ordering::Acquire);
        loop {
            if current & COMPLETE != 0 {
                return DetachOutcome::OutputIsOurs;
            }
            let next = current & !(JOIN_INTEREST | JOIN_WAKER);
            match self
                .0
                .compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return DetachOutcome::Detached,
                Err(actual) => current = actual,
            }
        }
    }

    /// Rule 6: published after the waker is stored, so completion either sees the bit or the
    /// handle sees `COMPLETE`.
    pub(crate) fn set_join_waker(&self) -> JoinWakerOutcome {
        let previous = self.0.fetch_or(JOIN_WAKER, Ordering::AcqRel);
        if previous & COMPLETE != 0 {
            JoinWakerOutcome::Complete
        } else {
            JoinWakerOutcome::Registered
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn first_start_polls_and_consumes_the_notification() {
        let state = State::new();
        assert_eq!(state.start(), StartOutcome::Poll);
        assert_eq!(state.idle(), IdleOutcome::Parked);
        assert_eq!(state.wake(), WakeOutcome::Submit);
    }

    #[test]
    fn wake_during_poll_requeues() {
        let state = State::new();
        assert_eq!(state.start(), StartOutcome::Poll);
        assert_eq!(state.wake(), WakeOutcome::DuringPoll);
        assert_eq!(state.wake(), WakeOutcome::Coalesced);
        assert_eq!(state.idle(), IdleOutcome::Requeue);
        assert_eq!(state.start(), StartOutcome::Poll);
    }

    #[test]
    fn wake_of_queued_task_coalesces() {
        let state = State::new();
        assert_eq!(state.wake(), WakeOutcome::Coalesced);
    }

    #[test]
    fn abort_before_start_cancels_without_polling() {
        let state = State::new();
        assert_eq!(state.abort(), WakeOutcome::Coalesced);
        assert_eq!(state.start(), StartOutcome::Cancelled);
    }

    #[test]
    fn abort_during_poll_cancels_at_idle() {
        let state = State::new();
        assert_eq!(state.start(), StartOutcome::Poll);
        assert_eq!(state.abort(), WakeOutcome::DuringPoll);
        assert_eq!(state.idle(), IdleOutcome::Cancel);
    }

    #[test]
    fn abort_of_idle_task_submits_it() {
        let state = State::new();
        assert_eq!(state.start(), StartOutcome::Poll);
        assert_eq!(state.idle(), IdleOutcome::Parked);
        assert_eq!(state.abort(), WakeOutcome::Submit);
        assert_eq!(state.start(), StartOutcome::Cancelled);
    }

    #[test]
    fn wakes_and_aborts_after_completion_are_ignored() {
        let state = State::new();
        assert_eq!(state.start(), StartOutcome::Poll);
        let completed = state.complete(false);
        assert!(completed.join_interest);
        assert!(!completed.join_waker);
        assert_eq!(state.wake(), WakeOutcome::Complete);
        assert_eq!(state.abort(), WakeOutcome::Complete);
        assert_eq!(state.start(), StartOutcome::Stale);
        assert_eq!(state.claim_for_shutdown(), ClaimOutcome::Complete);
    }

    #[test]
    fn join_waker_then_complete_reports_the_waker() {
        let state = State::new();
        assert_eq!(state.set_join_waker(), JoinWakerOutcome::Registered);
        assert_eq!(state.start(), StartOutcome::Poll);
        assert!(state.complete(false).join_waker);
    }

    #[test]
    fn complete_then_join_waker_reads_the_output() {
        let state = State::new();
        assert_eq!(state.start(), StartOutcome::Poll);
        let _ = state.complete(false);
        assert_eq!(state.set_join_waker(), JoinWakerOutcome::Complete);
    }

    #[test]
    fn detach_before_completion_leaves_output_to_completer() {
        let state = State::new();
        assert_eq!(state.detach(), DetachOutcome::Detached);
        assert_eq!(state.start(), StartOutcome::Poll);
        assert!(!state.complete(false).join_interest);
    }

    #[test]
    fn detach_after_completion_owns_output() {
        let state = State::new();
        assert_eq!(state.start(), StartOutcome::Poll);
        let _ = state.complete(false);
        assert_eq!(state.detach(), DetachOutcome::OutputIsOurs);
    }

    #[test]
    fn shutdown_claims_idle_task_but_not_running_one() {
        let idle = State::new();
        assert_eq!(idle.claim_for_shutdown(), ClaimOutcome::Claimed);
        let _ = idle.complete(true);
        assert!(idle.load().is_leaked());
        let running = State::new();
        assert_eq!(running.start(), StartOutcome::Poll);
        assert_eq!(running.claim_for_shutdown(), ClaimOutcome::Running);
        assert_eq!(running.idle(), IdleOutcome::Cancel);
    }
}
