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
//! # Rules (cited as "job-cell rule J1" ... J6)
//!
//! J1. The queue cell starts *queued* and leaves it once: to *cancelled* (the handle's cancel or
//!    drop from any thread, or the wait table's cancel on the worker), to *withdrawn* (the
//!    runtime's shutdown gave the job up: the pool withdrew it from its queue, pool rule P5, or
//!    the runtime refused or dropped the relay task carrying it) or to *running* (the pool's
//!    dispatch claiming it on a pool thread). No two can win, so a body never runs after a
//!    cancel reported `CancelledBeforeStart`. A relay shares the cell with the handle, whose
//!    cancel and drop are the only ones that mean "the user cancelled": a relay dropped before
//!    its job's result withdraws the cell and never cancels it (the handle, when it aborts a
//!    relay, has cancelled the cell first, so that withdrawal then changes nothing).
//!
//! J2. A dispatch whose claim finds the cell cancelled or withdrawn delivers `Cancelled`
//!    without running the body (completion rule E6); the job's wait then settles as cancelled.
//!    A job cancelled before it was even bound (a relayed one) is bound with its cell already
//!    cancelled, with the same outcome.
//!
//! J3. *finished* is set after the closure returned or unwound, on the pool thread; from then
//!    on the result is on its way to the worker's inbox (awaiting takes it promptly). A
//!    returning closure's output is in the cell's slot before *finished* is set and before the
//!    completion is delivered, so a handle whose wait settled as completed finds it there. An
//!    output nobody took is dropped, contained, when the last holder lets the cell go.
//!
//! J4. What a handle that gets no value resolves to is decided here, in one place
//!    ([`JobCell::no_value`]): `Cancelled` when a cancel won (J1) — the handle's, or the
//!    pool's when it discarded the job unstarted without shutting down (pool rule P4, which
//!    cancels the cell through its start token, completion rule E6) — or when the wait
//!    settled cancelled with the cell still queued; `Closed` otherwise: the shutdown withdrew the job, or the worker's
//!    closure lost its wait (discarded it, dropped or refused its relay) before a result
//!    reached the handle — a result arriving later is dropped. (On a shared executor the
//!    closure's discard of a job still queued there cancels the cell: that job resolves
//!    `Cancelled`, and `cancel` says `AlreadyCancelled`.)
//!    [`BlockingHandle::cancel`](super::BlockingHandle::cancel) agrees: `Closed` for a
//!    withdrawn cell, for a started job whose worker closed before its wait was taken
//!    (J5), since its result can then never reach the handle, and after the handle resolved
//!    `Closed` (it remembers that, whatever the cell says by then).
//!
//! J5. *taken* is set on the worker when the handle or its relay takes the job's settled wait,
//!    before the relay returns. The worker closes its inbox before it discards its waits and
//!    polls no task afterwards, so once the inbox is seen closed, *taken* no longer changes:
//!    a cell not taken by then is one whose result is lost (J4).
//!
//! J6. A job that could not be submitted is given up before it was queued, before its wait
//!    is discarded (whose cancel would otherwise look like the user's): its cell is withdrawn
//!    (J1), and first marked *start failed* when the pool refused it (or no identity was left)
//!    while the runtime is not shutting down. The body never runs; the handle resolves to the
//!    refusal (`Rejected`), `cancel` reports `AlreadyFinished` ("failed to start") and
//!    `is_finished` is true. A refusal because the runtime is shutting down (its pool closed,
//!    its lease detached), a worker that closed before the job was registered, and a job
//!    started on a closed worker are the shutdown's: withdrawn unmarked, they resolve `Closed`
//!    and `cancel` says `Closed`. A cancel of the user's that won the cell first makes the job
//!    resolve `Cancelled`.
//!
//! ```text
//!   queued ──cancel (any thread)──> cancelled
//!     │ ──shutdown gives it up──> withdrawn
//!     │
//!     └──dispatch claims──> running ──closure returned / panicked──> running + finished
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use baton_cancel::{
    CancelBeforeStart, CancelHandle, ContainedDrop, QueueCell, QueueHost, QueueState, StartToken,
    WithdrawBeforeStart, hosted_queue_control,
};

use super::BlockingCancel;
use crate::error::BlockingError;

/// One job's state (see the module rules). Invariants: `finished` is only set by the body,
/// which runs only once the dispatch won the claim (J1, J3), so it implies the cell is
/// *running*; `output` is filled once, by a body whose closure returned, before its
/// completion is delivered (J3), and taken once, by the handle that saw that completion;
/// `taken` is only set on the worker, before its inbox closes (J5); `start_failed` is set
/// once, before the handle learns of the failure, and never together with `finished` (J6).
#[derive(Debug)]
pub(super) struct JobCell<T> {
    queue: QueueCell,
    finished: AtomicBool,
    taken: AtomicBool,
    start_failed: AtomicBool,
    output: Mutex<Option<T>>,
}

/// How a handle's wait ended without a value (rule J4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NoValue {
    /// The wait settled as cancelled: the dispatch delivered `Cancelled` (J2), or a cancel
    /// went through the wait table.
    SettledCancelled,
    /// The wait never settled for the handle: the worker's closure discarded it or dropped or
    /// refused its relay, or the handle's own cancel aborted the relay.
    Lost,
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
            taken: AtomicBool::new(false),
            start_failed: AtomicBool::new(false),
            output: Mutex::new(None),
        })
    }

    /// Both sides of the embedded queue cell, for the job's binding (rule J1).
    pub(super) fn control(self: &Arc<Self>) -> (CancelHandle, StartToken) {
        hosted_queue_control(Arc::clone(self) as Arc<dyn QueueHost>)
    }
}

impl<T> JobCell<T> {
    /// Rule J1, the handle's side; a withdrawn job reports `Closed` (J4).
    pub(super) fn cancel(&self) -> BlockingCancel {
        match self.queue.cancel_before_start() {
            CancelBeforeStart::CancelledQueued => BlockingCancel::CancelledBeforeStart,
            // Rule J6: the handle resolves to the failure to start.
            CancelBeforeStart::AlreadyCancelled if self.queue.was_withdrawn() => {
                if self.start_failed() {
                    BlockingCancel::AlreadyFinished
                } else {
                    BlockingCancel::Closed
                }
            }
            CancelBeforeStart::AlreadyCancelled => BlockingCancel::AlreadyCancelled,
            CancelBeforeStart::AlreadyRunning if self.finished.load(Ordering::Acquire) => {
                BlockingCancel::AlreadyFinished
            }
            CancelBeforeStart::AlreadyRunning => BlockingCancel::AlreadyStarted,
        }
    }

    /// Rule J6: the job was refused before it could be queued; its body never runs.
    pub(super) fn fail_start(&self) {
        self.start_failed.store(true, Ordering::Release);
    }

    /// Rule J6: whether the job was refused before it could be queued.
    pub(super) fn start_failed(&self) -> bool {
        self.start_failed.load(Ordering::Acquire)
    }

    /// Rule J1, a relay's side: the runtime dropped or refused it before the job's result.
    pub(super) fn withdraw(&self) -> WithdrawBeforeStart {
        self.queue.withdraw_before_start()
    }

    /// Whether the closure ran to its end (J3), or a cancel or the shutdown made sure it never
    /// starts (J1).
    pub(super) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
            || self.start_failed()
            || self.queue.state() == QueueState::Cancelled
    }

    /// Rule J4: what a handle whose wait ended `why` resolves to.
    pub(super) fn no_value(&self, why: NoValue) -> BlockingError {
        match (self.queue.state(), why) {
            (QueueState::Cancelled, _) if self.queue.was_withdrawn() => BlockingError::Closed,
            (QueueState::Cancelled, _) | (QueueState::Queued, NoValue::SettledCancelled) => {
                BlockingError::Cancelled
            }
            (QueueState::Running, _) | (QueueState::Queued, NoValue::Lost) => BlockingError::Closed,
        }
    }

    /// Rule J5, on the worker: a handle or its relay took the job's settled wait.
    pub(super) fn mark_taken(&self) {
        self.taken.store(true, Ordering::Release);
    }

    /// Rule J5: whether a handle or its relay took the job's settled wait.
    pub(super) fn is_taken(&self) -> bool {
        self.taken.load(Ordering::Acquire)
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
#[path = "../tests/job_cell.rs"]
mod tests;
