//! [`JobCell`]: the facade's own view of one blocking job, shared by its handle (any thread),
//! the job's body (a pool thread) and the job's binding, so `cancel` and `is_finished` answer
//! from any thread.
//!
//! The cancel-versus-start race is not re-implemented here: it is `baton-cancel`'s queue cell
//! (`QueueCell`, loom-checked there), embedded in the job cell and handed to the registrar's
//! bind (`Registrar::bind_send_with_control`), so the handle, the wait table and the pool's
//! dispatch all decide on the one cell, and no second cell is allocated. The facade only adds
//! the *finished* flag and the slot the body leaves its output in, so the completion the pool
//! delivers carries nothing that needs an allocation.
//!
//! # Rules (cited as "job-cell rule J1" ... J3)
//!
//! J1. The queue cell starts *queued* and leaves it once: to *cancelled* (the handle's cancel or
//!    drop from any thread, or the wait table's cancel on the worker) or to *running* (the
//!    pool's dispatch claiming it on a pool thread). The two cannot both win, so a body never
//!    runs after a cancel reported `CancelledBeforeStart`.
//!
//! J2. A dispatch whose claim finds the cell cancelled delivers `Cancelled` without running the
//!    body (completion rule E6); the job's wait then settles as cancelled. A job cancelled
//!    before it was even bound (a relayed one) is bound with its cell already cancelled, with
//!    the same outcome.
//!
//! J3. *finished* is set after the closure returned or unwound, on the pool thread; from then
//!    on the result is on its way to the worker's inbox (awaiting takes it promptly). A
//!    returning closure's output is in the cell's slot before *finished* is set and before the
//!    completion is delivered, so a handle whose wait settled as completed finds it there. An
//!    output nobody took is dropped, contained, when the last holder lets the cell go.
//!
//! ```text
//!   queued ──cancel (any thread)──> cancelled
//!     │
//!     └──dispatch claims──> running ──closure returned / panicked──> running + finished
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use baton_cancel::{
    CancelBeforeStart, CancelHandle, ContainedDrop, QueueCell, QueueHost, QueueState, StartToken,
    hosted_queue_control,
};

use super::BlockingCancel;

/// One job's state (see the module rules). Invariants: `finished` is only set by the body,
/// which runs only once the dispatch won the claim (J1, J3), so it implies the cell is
/// *running*; `output` is filled once, by a body whose closure returned, before its
/// completion is delivered (J3), and taken once, by the handle that saw that completion.
#[derive(Debug)]
pub(super) struct JobCell<T> {
    queue: QueueCell,
    finished: AtomicBool,
    output: Mutex<Option<T>>,
}

impl<T: Send + 'static> QueueHost for JobCell<T> {
    fn queue_cell(&self) -> &QueueCell {
        &self.queue
    }
}

impl<T: Send + 'static> JobCell<T> {
    /// A fresh *queued* job.
    pub(super) fn new() -> Arc<JobCell<T>> {
        Arc::new(JobCell {
            queue: QueueCell::new(),
            finished: AtomicBool::new(false),
            output: Mutex::new(None),
        })
    }

    /// Both sides of the embedded queue cell, for the job's binding (rule J1).
    pub(super) fn control(self: &Arc<Self>) -> (CancelHandle, StartToken) {
        hosted_queue_control(Arc::clone(self) as Arc<dyn QueueHost>)
    }
}

impl<T> JobCell<T> {
    /// Rule J1, the handle's side.
    pub(super) fn cancel(&self) -> BlockingCancel {
        match self.queue.cancel_before_start() {
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
        self.finished.load(Ordering::Acquire) || self.queue.state() == QueueState::Cancelled
    }

    /// Rule J3: marks the job finished when the returned guard drops, also on unwinding.
    pub(super) fn finish_on_drop(&self) -> FinishOnDrop<'_, T> {
        FinishOnDrop(self)
    }

    /// Rule J3, the body's side: leaves the closure's output for the handle.
    pub(super) fn put_output(&self, output: T) {
        // The slot holds a plain value and no code runs under its lock, so a poisoned lock
        // (impossible) would still hold a consistent `Option`.
        *self.output.lock().unwrap_or_else(PoisonError::into_inner) = Some(output);
    }

    /// Rule J3, the handle's side, once its wait settled as completed.
    pub(super) fn take_output(&self) -> Option<T> {
        self.output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// An output nobody took (the handle was dropped while the job ran) is dropped contained: the
/// last reference may be the pool's start token on a lane thread, where a panicking destructor
/// must not unwind the thread (SPEC's containment of hostile user code).
impl<T> Drop for JobCell<T> {
    fn drop(&mut self) {
        let output = self
            .output
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(output) = output {
            let _ = ContainedDrop::drop_value(output);
        }
    }
}

/// Sets *finished* when dropped (J3).
pub(super) struct FinishOnDrop<'a, T>(&'a JobCell<T>);

impl<T> Drop for FinishOnDrop<'_, T> {
    fn drop(&mut self) {
        self.0.finished.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::{BlockingCancel, JobCell};
    use baton_cancel::ClaimForRun;

    #[test]
    fn cancel_then_claim() {
        let cell = JobCell::<()>::new();
        let (_cancel, start) = cell.control();
        assert_eq!(cell.cancel(), BlockingCancel::CancelledBeforeStart);
        assert_eq!(cell.cancel(), BlockingCancel::AlreadyCancelled);
        assert_eq!(start.claim_for_run(), ClaimForRun::CompleteCancelled);
        assert!(cell.is_finished());
    }

    #[test]
    fn claim_then_cancel_then_finish() {
        let cell = JobCell::new();
        let (cancel, start) = cell.control();
        assert_eq!(start.claim_for_run(), ClaimForRun::Run);
        assert_eq!(cell.cancel(), BlockingCancel::AlreadyStarted);
        assert_eq!(
            cancel.cancel_before_start(),
            baton_cancel::CancelBeforeStart::AlreadyRunning
        );
        assert!(!cell.is_finished());
        cell.put_output(7_u8);
        drop(cell.finish_on_drop());
        assert_eq!(cell.cancel(), BlockingCancel::AlreadyFinished);
        assert!(cell.is_finished());
        assert_eq!(cell.take_output(), Some(7));
        assert_eq!(cell.take_output(), None, "taken once");
    }
}
