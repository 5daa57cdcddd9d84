//! [`JobCell`]: the facade's own view of one blocking job, shared by its handle (any thread)
//! and the job's body (a pool thread), so `cancel` and `is_finished` answer from any thread.
//!
//! The cancel-versus-start race is not re-implemented here: it is `baton-cancel`'s queue cell
//! (`queue_control`, loom-checked there), whose cancel side the handle keeps and whose start
//! token the body holds. The facade only adds the *finished* flag.
//!
//! # Rules (cited as "job-cell rule J1" ... J3)
//!
//! J1. The queue cell starts *queued* and leaves it once: to *cancelled* (the handle's cancel or
//!    drop, from any thread) or to *running* (the body claiming it on a pool thread). The two
//!    cannot both win, so a body never runs after a cancel reported `CancelledBeforeStart`.
//!
//! J2. A body whose claim finds the cell cancelled returns without running the closure; its
//!    wait then settles as cancelled.
//!
//! J3. *finished* is set after the closure returned or unwound, on the pool thread; from then
//!    on the result is on its way to the worker's inbox (awaiting takes it promptly).
//!
//! ```text
//!   queued ──cancel (any thread)──> cancelled
//!     │
//!     └──body claims──> running ──closure returned / panicked──> running + finished
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use baton_cancel::{CancelBeforeStart, CancelHandle, ClaimForRun, QueueState, StartToken};

use super::BlockingCancel;

/// One job's state (see the module rules). Invariant: `finished` is only set by the body that
/// won the claim (J3), so it implies the cell is *running*.
#[derive(Debug)]
pub(super) struct JobCell {
    cancel: CancelHandle,
    finished: AtomicBool,
}

/// What [`JobBody::begin`] decided on the pool thread.
#[must_use = "the closure runs only when the claim won"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Begin {
    /// Rule J1: the closure runs.
    Run,
    /// Rule J2: a cancel won first; the closure is dropped unrun.
    Cancelled,
}

/// The body's side: the start token and the shared cell.
#[derive(Debug)]
pub(super) struct JobBody {
    start: StartToken,
    cell: Arc<JobCell>,
}

impl JobCell {
    /// A fresh *queued* job: the handle's side and the body's side.
    pub(super) fn new() -> (Arc<JobCell>, JobBody) {
        let (cancel, start) = baton_cancel::queue_control();
        let cell = Arc::new(JobCell {
            cancel,
            finished: AtomicBool::new(false),
        });
        let body = JobBody {
            start,
            cell: Arc::clone(&cell),
        };
        (cell, body)
    }

    /// Rule J1, the handle's side.
    pub(super) fn cancel(&self) -> BlockingCancel {
        match self.cancel.cancel_before_start() {
            CancelBeforeStart::CancelledQueued => BlockingCancel::CancelledBeforeStart,
            CancelBeforeStart::AlreadyCancelled => BlockingCancel::AlreadyCancelled,
            CancelBeforeStart::AlreadyRunning if self.finished.load(Ordering::Acquire) => {
                BlockingCancel::AlreadyFinished
            }
            CancelBeforeStart::AlreadyRunning => BlockingCancel::AlreadyStarted,
        }
    }

    /// Whether the closure ran to its end (J3) or a cancel won (J1).
    pub(super) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire) || self.cancel.state() == QueueState::Cancelled
    }
}

impl JobBody {
    /// Rule J1, the body's side; the returned guard sets *finished* when dropped (J3).
    pub(super) fn begin(&self) -> Begin {
        match self.start.claim_for_run() {
            ClaimForRun::Run => Begin::Run,
            ClaimForRun::CompleteCancelled => Begin::Cancelled,
        }
    }

    /// Rule J3: marks the job finished when the returned guard drops, also on unwinding.
    pub(super) fn finish_on_drop(&self) -> FinishOnDrop<'_> {
        FinishOnDrop(&self.cell)
    }
}

/// Sets *finished* when dropped (J3).
pub(super) struct FinishOnDrop<'a>(&'a JobCell);

impl Drop for FinishOnDrop<'_> {
    fn drop(&mut self) {
        self.0.finished.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::{Begin, BlockingCancel, JobCell};

    #[test]
    fn cancel_then_claim() {
        let (cell, body) = JobCell::new();
        assert_eq!(cell.cancel(), BlockingCancel::CancelledBeforeStart);
        assert_eq!(cell.cancel(), BlockingCancel::AlreadyCancelled);
        assert_eq!(body.begin(), Begin::Cancelled);
        assert!(cell.is_finished());
    }

    #[test]
    fn claim_then_cancel_then_finish() {
        let (cell, body) = JobCell::new();
        assert_eq!(body.begin(), Begin::Run);
        assert_eq!(cell.cancel(), BlockingCancel::AlreadyStarted);
        assert!(!cell.is_finished());
        drop(body.finish_on_drop());
        assert_eq!(cell.cancel(), BlockingCancel::AlreadyFinished);
        assert!(cell.is_finished());
    }
}
