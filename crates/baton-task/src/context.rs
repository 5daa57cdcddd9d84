//! The thread context: which scheduler the free functions use on this thread (T9).

use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::claim::ClaimGuard;
use crate::join::JoinHandle;
use crate::run_queues::RunQueues;
use crate::scheduler_state::SchedulerState;
use crate::spawn::{new_local, new_send, place};
use crate::spawner::Spawner;
use crate::sync::thread_local;

/// Why a runtime-only function could not run here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// No scheduler is entered on this thread.
    #[error(
        "must be called from a Baton runtime context: inside `Runtime::block_on` or a spawned \
         task; use `Handle::spawn` from other threads"
    )]
    NoRuntime,
    /// A scheduler is entered on this thread, but another thread currently runs its worker, so
    /// a local task could not be polled here.
    #[error(
        "`spawn_local` must be called on the thread currently running the Baton worker: inside \
         `Runtime::block_on` or a local task; use `spawn` for `Send` futures"
    )]
    NotOnWorkerThread,
    /// The scheduler is still entered on another thread (an `EnterGuard` was leaked there).
    #[error(
        "the scheduler is entered on another thread; an `EnterGuard` was probably leaked \
         (`mem::forget`) there"
    )]
    EnteredElsewhere,
}

thread_local! {
    static CONTEXT: RefCell<Option<Arc<SchedulerState>>> = const { RefCell::new(None) };
}

/// Keeps a scheduler installed as the current thread's; dropping it restores the previous one.
///
/// Not `Send`: it must be dropped on the thread that created it. Guards should be dropped in
/// reverse order of creation; leaking one (`mem::forget`) keeps the scheduler claimed by this
/// thread, after which other threads cannot enter it (they get
/// [`ContextError::EnteredElsewhere`]) — never undefined behaviour.
#[derive(Debug)]
pub struct EnterGuard {
    restore: Restore,
    claim: ClaimGuard,
    _not_send: PhantomData<*const ()>,
}

/// What dropping an [`EnterGuard`] puts back into the thread's context.
#[derive(Debug)]
enum Restore {
    /// The guard installed its scheduler over this previous context (maybe none).
    Previous(Option<Arc<SchedulerState>>),
    /// The scheduler was the current context already (a nested enter): nothing to put back.
    Unchanged,
}

impl EnterGuard {
    pub(crate) fn new(state: &Arc<SchedulerState>) -> Result<EnterGuard, ContextError> {
        let claim = ClaimGuard::take(state)?;
        // A nested enter of the current scheduler leaves the context as it is: no reference
        // count traffic, and the outer guard restores it.
        let restore = if is_current(state) {
            Restore::Unchanged
        } else {
            Restore::Previous(CONTEXT.with(|context| context.replace(Some(Arc::clone(state)))))
        };
        Ok(EnterGuard {
            restore,
            claim,
            _not_send: PhantomData,
        })
    }

    pub(crate) fn queues(&self) -> &RunQueues {
        self.claim.queues()
    }
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let Restore::Previous(previous) = std::mem::replace(&mut self.restore, Restore::Unchanged)
        else {
            return;
        };
        // During thread-local destruction the context is gone already: nothing to restore.
        let ours = CONTEXT.try_with(|context| context.replace(previous));
        drop(ours);
    }
}

/// Whether `state`'s scheduler is the one installed on this thread (by a live guard).
pub(crate) fn is_current(state: &Arc<SchedulerState>) -> bool {
    CONTEXT
        .try_with(|context| {
            context
                .borrow()
                .as_ref()
                .is_some_and(|current| Arc::ptr_eq(current, state))
        })
        .unwrap_or(false)
}

/// Calls `make` with the current thread's scheduler, lent from the context for the call
/// (no count of it is taken), or returns `None` outside a context. `make` must run no user
/// code: the context is borrowed meanwhile.
fn with_current<R>(make: impl FnOnce(&Arc<SchedulerState>) -> R) -> Option<R> {
    CONTEXT
        .try_with(|context| context.borrow().as_ref().map(make))
        .ok()
        .flatten()
}

fn current_state() -> Option<Arc<SchedulerState>> {
    CONTEXT
        .try_with(|context| context.borrow().clone())
        .ok()
        .flatten()
}

/// Spawns a `Send` task on the current thread's scheduler.
///
/// # Panics
///
/// Outside a Baton runtime context, with a message saying what to do instead. Use
/// [`try_current`] to check first.
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match with_current(|state| new_send(state, future)) {
        Some(new) => place(new).0,
        None => panic!("{}", ContextError::NoRuntime),
    }
}

/// Spawns a local (`!Send`) task owned by the current thread, which must be running the
/// worker. It is only ever polled, and dropped, on this thread.
///
/// # Panics
///
/// Outside a Baton runtime context, or on a thread that does not run the worker right now.
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    match try_spawn_local(future) {
        Ok(handle) => handle,
        Err(err) => panic!("{err}"),
    }
}

/// Like [`spawn_local`], but reports a missing context as an error.
///
/// # Errors
///
/// [`ContextError::NoRuntime`] outside a runtime, [`ContextError::NotOnWorkerThread`] when this
/// thread does not run the worker right now.
pub fn try_spawn_local<F>(future: F) -> Result<JoinHandle<F::Output>, ContextError>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let made = with_current(|state| {
        let here = state.claim().here().is_some();
        here.then(|| new_local(state, future))
    });
    match made {
        Some(Some(new)) => Ok(place(new).0),
        Some(None) => Err(ContextError::NotOnWorkerThread),
        None => Err(ContextError::NoRuntime),
    }
}

/// Whether a scheduler is entered on this thread, so that [`spawn`] does not panic here. Never
/// panics. Cheaper than [`try_current`] when the caller spawns right after: no spawner (and
/// no count of the scheduler's state) is made.
pub fn is_entered() -> bool {
    CONTEXT
        .try_with(|context| context.borrow().is_some())
        .unwrap_or(false)
}

/// A spawner for the current thread's scheduler. Never panics.
///
/// # Errors
///
/// [`ContextError::NoRuntime`] outside a Baton runtime context.
pub fn try_current() -> Result<Spawner, ContextError> {
    current_state()
        .map(Spawner::new)
        .ok_or(ContextError::NoRuntime)
}
