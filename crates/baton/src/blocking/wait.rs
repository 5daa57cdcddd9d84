//! The waiting side of a blocking job: reaching the worker's wait table from a handle, and the
//! relay task that takes a wait over when its handle is not on the worker.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use baton_completion::{CancelOutcome, WaitError, WaitKey};
use baton_uring::{Waits, with_current_waits};

use super::BlockingCancel;
use super::job_cell::{JobCell, NoValue};
use crate::error::BlockingError;
use crate::handle::Handle;
use crate::task::JoinError;

/// Runs `f` on the wait table when this thread runs `handle`'s home worker (whose registrar
/// issues the handle's jobs, so their waits live there); `None` elsewhere.
pub(super) fn on_worker<R>(handle: &Handle, f: impl FnOnce(&mut Waits<'_>) -> R) -> Option<R> {
    let runtime = handle.home().runtime_id();
    with_current_waits(|waits| (waits.runtime_id() == runtime).then(|| f(waits)))
        .ok()
        .flatten()
}

pub(super) fn cancel_outcome(outcome: CancelOutcome) -> BlockingCancel {
    match outcome {
        CancelOutcome::CancelledQueued { waker } => {
            // Woken after the table borrow ended (the table never wakes itself).
            if let Some(waker) = waker {
                waker.wake();
            }
            BlockingCancel::CancelledBeforeStart
        }
        // The job cell's cancel won first (job-cell rule J1); the table settled the wait now.
        CancelOutcome::AlreadyCancelled { waker } => {
            if let Some(waker) = waker {
                waker.wake();
            }
            BlockingCancel::AlreadyCancelled
        }
        CancelOutcome::Interrupted(_)
        | CancelOutcome::AlreadyInterrupted
        | CancelOutcome::Quarantined { .. } => BlockingCancel::AlreadyStarted,
        CancelOutcome::AlreadySettled | CancelOutcome::Unknown => BlockingCancel::AlreadyFinished,
    }
}

/// The relay's future: takes over a registered wait and awaits it on the worker. Dropping it
/// before the result arrived withdraws a job that has not started (job-cell rule J1: the
/// runtime's shutdown dropped the relay, or the handle cancelled the cell before aborting it)
/// and discards the wait.
pub(super) struct WaitFor<T> {
    key: WaitKey,
    cell: Arc<JobCell<T>>,
    done: bool,
}

impl<T> WaitFor<T> {
    pub(super) fn new(key: WaitKey, cell: Arc<JobCell<T>>) -> WaitFor<T> {
        WaitFor {
            key,
            cell,
            done: false,
        }
    }
}

impl<T: Send + 'static> Future for WaitFor<T> {
    type Output = Result<T, BlockingError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let key = self.key;
        match with_current_waits(|waits| waits.poll_wait::<()>(key, cx)) {
            Ok(Poll::Ready(result)) => {
                self.done = true;
                Poll::Ready(from_body(result, &self.cell))
            }
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => {
                self.done = true;
                Poll::Ready(Err(self.cell.no_value(NoValue::Lost)))
            }
        }
    }
}

impl<T> Drop for WaitFor<T> {
    fn drop(&mut self) {
        if !self.done {
            // Job-cell rule J1: withdrawn before the discard, which would cancel it instead.
            let _withdrawn = self.cell.withdraw();
            let key = self.key;
            let _ = with_current_waits(|waits| waits.discard(key));
        }
    }
}

/// A polled wait's value: the body's output from the job's cell (job-cell rule J3), or why
/// there is none (J4). A wait that settled is marked taken (J5); one the worker's shutdown
/// discarded is not.
pub(super) fn from_body<T: Send + 'static>(
    result: Result<(), WaitError>,
    cell: &JobCell<T>,
) -> Result<T, BlockingError> {
    let err = match result {
        Ok(()) => {
            cell.mark_taken();
            return Ok(cell.take_output().expect(
                "job-cell rule J3: a completed job left its output before it was delivered",
            ));
        }
        Err(WaitError::UnknownWait { .. }) => return Err(cell.no_value(NoValue::Lost)),
        Err(err) => err,
    };
    cell.mark_taken();
    Err(match err {
        WaitError::Cancelled => cell.no_value(NoValue::SettledCancelled),
        WaitError::WorkerPanic { message } => BlockingError::Panicked { message },
        WaitError::BoundExceeded { bound } => {
            crate::trace::bound_exceeded(&bound);
            BlockingError::BoundExceeded { bound }
        }
        other => BlockingError::Panicked {
            message: other.to_string(),
        },
    })
}

/// A relay task's outcome as the handle's: its result, or, for a relay that never returned
/// one (aborted by the handle's cancel, dropped or refused by the runtime's shutdown), what
/// the job's cell says (job-cell rule J4).
pub(super) fn flatten_relay<T>(
    joined: Result<Result<T, BlockingError>, JoinError>,
    cell: &JobCell<T>,
) -> Result<T, BlockingError> {
    match joined {
        Ok(result) => result,
        Err(err) => match err.cancel_reason() {
            Some(_) => Err(cell.no_value(NoValue::Lost)),
            None => Err(BlockingError::Panicked {
                message: err.to_string(),
            }),
        },
    }
}
