//! The submitting side of a blocking job (steps 1 and 2 of the module docs): a prepared
//! operation bound to an identity, its runtime half in the worker's wait table, its submission
//! on the executor lease.

use std::marker::PhantomData;
use std::sync::Arc;

use baton_cancel::{HookOutcome, QuarantineBound, WithdrawBeforeStart};
use baton_completion::{
    CompletionKind, RejectReason, SendDecoder, SendInterruptible, SendPreparedOperation, WaitKey,
    from_fn,
};
use baton_uring::with_current_waits;

use super::job_cell::JobCell;
use super::wait::{WaitFor, on_worker};
use super::{BlockingHandle, State};
use crate::error::BlockingError;
use crate::handle::Handle;

/// The completion kind of an interruptible blocking job.
const BLOCKING_KIND: u32 = 1;
/// The completion kind of a quarantined blocking job.
const QUARANTINED_KIND: u32 = 2;

fn kind(raw: u32) -> CompletionKind {
    CompletionKind::try_from_raw(raw).expect("the facade's completion kinds are non-zero")
}

/// The prepared operation of a job: interruptible (a no-op hook: a running closure cannot be
/// stopped, only a queued one) or quarantined under `bound`. Its identity decoder, the `Send`
/// value it hands on and its hook are all `Send`, so its runtime half may go to the worker's
/// migratable wait table.
fn prepare<F>(bound: Option<QuarantineBound>, f: F) -> SendPreparedOperation
where
    F: FnOnce() + Send + 'static,
{
    let job = from_fn(f);
    match bound {
        None => {
            let hook = || -> Result<HookOutcome, String> { Ok(HookOutcome::PendingReap) };
            SendPreparedOperation::interruptible_blocking(
                kind(BLOCKING_KIND),
                job,
                SendDecoder::identity(),
                SendInterruptible::new("blocking job", hook),
            )
        }
        Some(bound) => SendPreparedOperation::quarantined_blocking(
            kind(QUARANTINED_KIND),
            job,
            SendDecoder::identity(),
            bound,
        ),
    }
}

/// Starts a job: here when this thread runs `handle`'s home worker, through a relay task there
/// otherwise.
pub(super) fn start<F, T>(
    handle: &Handle,
    bound: Option<QuarantineBound>,
    f: F,
) -> BlockingHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    if handle.home().handle().is_closed() {
        // Job-cell rule J1: given up before it was queued, as the shutdown gives up a queued
        // job, so `cancel` says `Closed` too.
        let cell = JobCell::new();
        let _withdrawn = cell.withdraw();
        return BlockingHandle {
            state: State::Failed(Some(BlockingError::Closed)),
            cell: Some(cell),
            _result: PhantomData,
        };
    }
    let cell = JobCell::new();
    if on_worker(handle, |_| ()).is_some() {
        let state = match submit_job(handle, bound, f, &cell) {
            Ok(key) => State::Waiting {
                key,
                handle: handle.clone(),
            },
            Err(err) => State::Failed(Some(err)),
        };
        return BlockingHandle {
            state,
            cell: Some(cell),
            _result: PhantomData,
        };
    }
    let relay_handle = handle.clone();
    let unsubmitted = Unsubmitted(Some(Arc::clone(&cell)));
    let join = handle.spawn_home(async move {
        // Spawned on the home worker, the relay runs on its thread; were it to run elsewhere,
        // it could not submit, and the hold, dropped on return, withdraws the job.
        if on_worker(&relay_handle, |_| ()).is_none() {
            return Err(BlockingError::Closed);
        }
        let cell = unsubmitted.into_cell();
        let key = submit_job(&relay_handle, bound, f, &cell)?;
        WaitFor::new(key, cell).await
    });
    BlockingHandle {
        state: State::Relayed {
            join,
            handle: handle.clone(),
        },
        cell: Some(cell),
        _result: PhantomData,
    }
}

/// A relay's hold on the job it has not submitted yet. The runtime drops a relay before it ran
/// only when its shutdown refuses or drops the task (the handle's abort comes after its cancel
/// won), so dropping the hold withdraws the job (job-cell rule J1).
struct Unsubmitted<T>(Option<Arc<JobCell<T>>>);

impl<T> Unsubmitted<T> {
    /// The relay runs: the job is its to submit.
    fn into_cell(mut self) -> Arc<JobCell<T>> {
        self.0
            .take()
            .expect("the hold keeps its cell until it is given up or dropped")
    }
}

impl<T> Drop for Unsubmitted<T> {
    fn drop(&mut self) {
        if let Some(cell) = self.0.take() {
            let _withdrawn = cell.withdraw();
        }
    }
}

/// Binds and submits the job on the thread running `handle`'s home worker, its body wrapped
/// to keep the job-cell rules.
fn submit_job<F, T>(
    handle: &Handle,
    bound: Option<QuarantineBound>,
    f: F,
    cell: &Arc<JobCell<T>>,
) -> Result<WaitKey, BlockingError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let body_cell = Arc::clone(cell);
    // Job-cell rules J1 and J2: the dispatch runs this only once it claimed the cell.
    let body = move || {
        // Job-cell rule J3: finished after the closure returned or unwound.
        let _finish = body_cell.finish_on_drop();
        body_cell.put_output(f());
    };
    submit(handle, prepare(bound, body), cell)
}

/// Steps 1 and 2 of the module docs, on the thread running the worker, for the job of `cell`
/// (its queue cell's control goes with the binding, job-cell rule J1). A job that cannot be
/// submitted is given up through [`refuse`] before its wait is discarded.
fn submit<T: Send + 'static>(
    handle: &Handle,
    prepared: SendPreparedOperation,
    cell: &Arc<JobCell<T>>,
) -> Result<WaitKey, BlockingError> {
    let home = handle.home();
    let identity = match home.registrar().issue(prepared.kind()) {
        Ok(identity) => identity,
        Err(exhausted) => return Err(refuse(cell, exhausted.into())),
    };
    let binding = home
        .registrar()
        .bind_send_with_control(identity, prepared, cell.control())
        .expect("the identity was issued by this registrar for the prepared operation's kind");
    let (half, submission) = binding.split();
    let registered = with_current_waits(|waits| waits.register_migratable(half));
    let key = match registered {
        Ok(Ok(key)) => key,
        // The submission was never armed: dropping it delivers nothing.
        Ok(Err(_)) | Err(_) => return Err(refuse(cell, BlockingError::Closed)),
    };
    match home.lease().submit(submission) {
        Ok(()) => Ok(key),
        Err(rejected) => {
            let reason = rejected.reason.clone();
            // Refused because the runtime is shutting down (its pool closed, or its lease on a
            // shared one detached): the shutdown gave the job up, as for one still queued.
            let closing = handle.is_shutting_down()
                && matches!(reason, RejectReason::ShuttingDown | RejectReason::Detached);
            let failure = if closing {
                BlockingError::Closed
            } else {
                BlockingError::Rejected { reason }
            };
            // Decided before the discard, whose cancel would otherwise look like the user's.
            let decided = refuse(cell, failure);
            let _ = with_current_waits(|waits| waits.discard(key));
            let _ = rejected.rollback();
            Err(decided)
        }
    }
}

/// Gives up a job that could not be submitted, before it was queued: withdrawn (job-cell rule
/// J1), and marked as failed to start first unless the runtime closed (J6), so a `cancel` that
/// finds the cell withdrawn reads the mark. A cancel of the user's that won the cell first
/// makes the job resolve `Cancelled`, as that cancel said.
fn refuse<T>(cell: &JobCell<T>, failure: BlockingError) -> BlockingError {
    if failure != BlockingError::Closed {
        cell.fail_start();
    }
    match cell.withdraw() {
        WithdrawBeforeStart::AlreadyCancelled => BlockingError::Cancelled,
        WithdrawBeforeStart::Withdrawn
        | WithdrawBeforeStart::AlreadyWithdrawn
        | WithdrawBeforeStart::AlreadyRunning => failure,
    }
}
