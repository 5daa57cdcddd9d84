//! [`JobCell`]: the facade's own view of one blocking job, shared by its handle (any thread)
//! and the job's body (a pool thread), so `cancel` and `is_finished` answer from any thread.
//!
//! # Rules (cited as "job-cell rule N")
//!
//! 1. The cell starts *queued* and leaves it at most once, by compare-exchange: to *cancelled*
//!    (the handle's cancel or drop) or to *running* (the pool thread entering the body). The
//!    two cannot both win, so a body never runs after a cancel reported `CancelledBeforeStart`.
//! 2. A body that finds the cell cancelled returns without running the closure; its wait then
//!    settles as cancelled.
//! 3. *finished* is set after the closure returned or unwound, on the pool thread; from then
//!    on the result is on its way to the worker's inbox (awaiting takes it promptly).
//!
//! ```text
//!   queued ──cancel (any thread)──> cancelled
//!     │
//!     └──pool claims──> running ──closure returned / panicked──> finished
//! ```

use std::sync::atomic::{AtomicU8, Ordering};

use super::BlockingCancel;

const QUEUED: u8 = 0;
const RUNNING: u8 = 1;
const CANCELLED: u8 = 2;
const FINISHED: u8 = 3;

/// One job's state (see the module rules). Invariant: the state only moves along the arrows
/// of the diagram above.
#[derive(Debug, Default)]
pub(super) struct JobCell {
    state: AtomicU8,
}

/// What [`JobCell::begin`] decided on the pool thread.
#[must_use = "the body runs only when the claim won"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Begin {
    /// Rule 1: the body runs.
    Run,
    /// Rule 2: a cancel won first; the closure is dropped unrun.
    Cancelled,
}

impl JobCell {
    /// Rule 1, the handle's side.
    pub(super) fn cancel(&self) -> BlockingCancel {
        match self
            .state
            .compare_exchange(QUEUED, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => BlockingCancel::CancelledBeforeStart,
            Err(CANCELLED) => BlockingCancel::AlreadyCancelled,
            Err(RUNNING) => BlockingCancel::AlreadyStarted,
            Err(_) => BlockingCancel::AlreadyFinished,
        }
    }

    /// Rule 1, the pool thread's side.
    pub(super) fn begin(&self) -> Begin {
        match self
            .state
            .compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Begin::Run,
            Err(_) => Begin::Cancelled,
        }
    }

    /// Rule 3.
    pub(super) fn finish(&self) {
        self.state.store(FINISHED, Ordering::Release);
    }

    /// Whether the body ran to its end or a cancel won (rules 1 and 3).
    pub(super) fn is_finished(&self) -> bool {
        matches!(self.state.load(Ordering::Acquire), CANCELLED | FINISHED)
    }
}

/// Marks the cell finished when the body ends, also when the closure unwinds (rule 3).
pub(super) struct FinishOnDrop<'a>(pub(super) &'a JobCell);

impl Drop for FinishOnDrop<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::{Begin, BlockingCancel, JobCell};

    #[test]
    fn cancel_then_claim() {
        let cell = JobCell::default();
        assert_eq!(cell.cancel(), BlockingCancel::CancelledBeforeStart);
        assert_eq!(cell.cancel(), BlockingCancel::AlreadyCancelled);
        assert_eq!(cell.begin(), Begin::Cancelled);
        assert!(cell.is_finished());
    }

    #[test]
    fn claim_then_cancel_then_finish() {
        let cell = JobCell::default();
        assert_eq!(cell.begin(), Begin::Run);
        assert_eq!(cell.cancel(), BlockingCancel::AlreadyStarted);
        assert!(!cell.is_finished());
        cell.finish();
        assert_eq!(cell.cancel(), BlockingCancel::AlreadyFinished);
        assert!(cell.is_finished());
    }
}
