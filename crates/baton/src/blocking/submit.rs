//! The submitting side of a blocking job (steps 1 and 2 of the module docs): a prepared
//! operation bound to an identity, its runtime half in the worker's wait table, its submission
//! on the executor lease.

use std::marker::PhantomData;
use std::sync::Arc;

use baton_cancel::{CancelHandle, HookOutcome, QuarantineBound, StartToken};
use baton_completion::{
    CompletionKind, SendDecoder, SendInterruptible, SendPreparedOperation, WaitKey, from_fn,
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
        return BlockingHandle::failed(BlockingError::Closed);
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
    let submitted = submit(handle, prepare(bound, body), cell.control());
    match &submitted {
        Ok(_) => {}
        // Job-cell rule J1: the worker closed before the job could be registered.
        Err(BlockingError::Closed) => {
            let _withdrawn = cell.withdraw();
        }
        // Job-cell rule J6: refused (or no identity left); the handle resolves to that.
        Err(_) => cell.fail_start(),
    }
    submitted
}

/// Steps 1 and 2 of the module docs, on the thread running the worker; `control` is the job
/// cell's queue cell (job-cell rule J1).
fn submit(
    handle: &Handle,
    prepared: SendPreparedOperation,
    control: (CancelHandle, StartToken),
) -> Result<WaitKey, BlockingError> {
    let home = handle.home();
    let identity = home.registrar().issue(prepared.kind())?;
    let binding = home
        .registrar()
        .bind_send_with_control(identity, prepared, control)
        .expect("the identity was issued by this registrar for the prepared operation's kind");
    let (half, submission) = binding.split();
    let registered = with_current_waits(|waits| waits.register_migratable(half));
    let key = match registered {
        Ok(Ok(key)) => key,
        // The submission was never armed: dropping it delivers nothing.
        Ok(Err(_)) | Err(_) => return Err(BlockingError::Closed),
    };
    match home.lease().submit(submission) {
        Ok(()) => Ok(key),
        Err(rejected) => {
            let _ = with_current_waits(|waits| waits.discard(key));
            let reason = rejected.reason.clone();
            let _ = rejected.rollback();
            Err(BlockingError::Rejected { reason })
        }
    }
}
