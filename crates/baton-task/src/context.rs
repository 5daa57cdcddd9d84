//! The thread context: which scheduler the free functions use on this thread (T9).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::claim::ClaimGuard;
use crate::join::JoinHandle;
use crate::run_queues::RunQueues;
use crate::scheduler_state::SchedulerState;
use crate::spawn::{new_local, new_send, place};
use crate::spawner::Spawner;
use crate::sync::{self, thread_local};

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

/// The schedulers installed on this thread, innermost last, one place per guard that installed
/// its scheduler; a place is emptied when its guard drops, and empty places at the end are
/// removed at once.
///
/// Invariant: a full place holds the state of the live [`EnterGuard`] that filled it (a nested
/// enter of the innermost scheduler fills none), which the guard keeps alive through the `Arc`
/// of its claim (the pointer carries that `Arc`'s provenance). Places are only removed from the
/// end, and only when empty, so a live guard's place keeps its index; the last place is full
/// whenever there is one. A leaked guard leaks its `Arc` along with its place. So every full
/// place points to a live state, and no reference count is taken to install one.
struct Installed {
    places: Vec<Option<NonNull<SchedulerState>>>,
}

impl Installed {
    /// The innermost installed scheduler.
    fn current(&self) -> Option<NonNull<SchedulerState>> {
        self.places.last().copied().flatten()
    }
}

thread_local! {
    static CONTEXT: RefCell<Installed> = const { RefCell::new(Installed { places: Vec::new() }) };
}

/// Keeps a scheduler installed as the current thread's; dropping it restores the previous one.
///
/// Not `Send`: it must be dropped on the thread that created it. Guards should be dropped in
/// reverse order of creation (one dropped early uninstalls only its own scheduler); leaking one
/// (`mem::forget`) keeps the scheduler claimed by this thread, after which other threads cannot
/// enter it (they get [`ContextError::EnteredElsewhere`]) — never undefined behaviour.
#[derive(Debug)]
pub struct EnterGuard {
    /// The index of the place this guard filled in the context, if it filled one (not a
    /// nested enter of the innermost scheduler); it empties that place on drop.
    installed: Option<usize>,
    claim: ClaimGuard,
    _not_send: PhantomData<*const ()>,
}

impl EnterGuard {
    pub(crate) fn new(state: &Arc<SchedulerState>) -> Result<EnterGuard, ContextError> {
        let claim = ClaimGuard::take(state)?;
        // A nested enter of the current scheduler leaves the context as it is; the outer
        // guard's place stands for both.
        let installed = (!is_current(state)).then(|| {
            CONTEXT.with(|context| {
                let places = &mut context.borrow_mut().places;
                places.push(Some(sync::arc_address(claim.state())));
                places.len() - 1
            })
        });
        Ok(EnterGuard {
            installed,
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
        let Some(ours) = self.installed else {
            return;
        };
        // During thread-local destruction the context is gone already: nothing to empty.
        let _ = CONTEXT.try_with(|context| {
            let places = &mut context.borrow_mut().places;
            if let Some(place) = places.get_mut(ours) {
                *place = None;
            }
            while places.last().is_some_and(Option::is_none) {
                places.pop();
            }
        });
        // The claim (and its `Arc`) drops next, after the place is emptied.
    }
}

/// Whether `state`'s scheduler is the one installed on this thread (by a live guard).
pub(crate) fn is_current(state: &Arc<SchedulerState>) -> bool {
    let state = sync::arc_address(state);
    CONTEXT
        .try_with(|context| context.borrow().current() == Some(state))
        .unwrap_or(false)
}

/// Calls `make` with the current thread's scheduler, lent from the context for the call
/// (no count of it is taken), or returns `None` outside a context. `make` must run no user
/// code: the context is borrowed meanwhile.
fn with_current<R>(make: impl FnOnce(&Arc<SchedulerState>) -> R) -> Option<R> {
    CONTEXT
        .try_with(|context| {
            let context = context.borrow();
            let innermost = context.current()?;
            // SAFETY: context invariant — a full place holds the state of a live guard on this
            // thread, which owns an `Arc` of it, and carries that `Arc`'s provenance; the guard
            // cannot drop while `make` runs (it runs no user code, and the context stays
            // borrowed). `ManuallyDrop` keeps this view of that `Arc` from releasing a count it
            // never took.
            let state =
                ManuallyDrop::new(unsafe { Arc::from_raw(innermost.as_ptr().cast_const()) });
            Some(make(&state))
        })
        .ok()
        .flatten()
}

fn current_state() -> Option<Arc<SchedulerState>> {
    with_current(Arc::clone)
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
    // The future stays out here when it is not spawned, so it is dropped after the context's
    // borrow ends (its destructor is user code).
    let mut future = Some(future);
    let made = with_current(|state| {
        let here = state.claim().here().is_some();
        here.then(|| future.take().map(|future| new_local(state, future)))
            .flatten()
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
        .try_with(|context| context.borrow().current().is_some())
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

thread_local! {
    /// Rule T12: the scheduler whose tasks this thread holds back, if any (see [`TasksHeld`]).
    static HELD: Cell<Option<NonNull<SchedulerState>>> = const { Cell::new(None) };
}

/// Rule T12: while it lives, this thread holds one scheduler's worker without running its
/// tasks — a `block_on` inside a task poll, which drives only I/O and timers
/// ([`Spawner::hold_tasks`](crate::Spawner::hold_tasks) names the scheduler). A
/// [`JoinHandle`] of an unfinished task of that scheduler polled meanwhile panics instead of
/// waiting: the task cannot run before this guard drops, so the wait would never end.
///
/// Guards nest (each restores the one before it). Not `Send`: it marks this thread only.
#[derive(Debug)]
pub struct TasksHeld {
    previous: Option<NonNull<SchedulerState>>,
    _not_send: PhantomData<*const ()>,
}

/// Rule T12: marks this thread as holding back the tasks of `state`'s scheduler until the
/// guard drops ([`Spawner::hold_tasks`](crate::Spawner::hold_tasks)).
pub(crate) fn hold_tasks(state: &Arc<SchedulerState>) -> TasksHeld {
    let held = Some(sync::arc_address(state));
    TasksHeld {
        previous: HELD.with(|mark| mark.replace(held)),
        _not_send: PhantomData,
    }
}

impl Drop for TasksHeld {
    fn drop(&mut self) {
        // During thread-local destruction the mark is gone already: nothing to restore.
        let _ = HELD.try_with(|held| held.set(self.previous));
    }
}

/// Rule T12: whether this thread holds back the tasks of some scheduler (one load; a set of
/// handles checks its members only then).
pub fn holds_tasks() -> bool {
    HELD.try_with(Cell::get).ok().flatten().is_some()
}

/// Rule T12: whether this thread holds back the tasks of `state`.
pub(crate) fn tasks_held(state: &SchedulerState) -> bool {
    HELD.try_with(Cell::get).ok().flatten() == Some(NonNull::from(state))
}

/// Rule T12: panics when this thread holds back the tasks of `state`, whose unfinished task a
/// join handle is about to wait for: that wait could never end.
#[track_caller]
pub(crate) fn assert_tasks_can_run(state: &SchedulerState) {
    if tasks_held(state) {
        panic!(
            "a `block_on` inside a task waits for another task of the same worker, which cannot \
             run until that `block_on` returns (it drives only I/O and timers): `.await` the \
             task instead, or run the blocking code on a thread outside the runtime"
        );
    }
}
