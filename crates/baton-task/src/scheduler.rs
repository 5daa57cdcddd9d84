//! The `Scheduler`: owned by the worker, it runs ready tasks fairly and shuts them down.

use std::cell::Cell;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::context::{self, ContextError, EnterGuard};
use crate::core::Core;
use crate::join::JoinHandle;
use crate::raw::{Finish, RunOutcome, ShutdownOutcome, TaskRef};
use crate::shared::{Claim, Injected, Shared, Tally, TaskCounts, Unpark};
use crate::spawner::Spawner;
use crate::sync;
use crate::task::Task;

/// How many polls `run_ready` makes between two looks at the injection queue, so remote work
/// progresses even while local tasks keep each other busy.
const REMOTE_INTERVAL: usize = 31;

/// What one `run_ready` call did.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunReport {
    /// Tasks polled (or cancelled) in this call.
    pub polled: usize,
    /// Whether more tasks are ready to run on this thread right now.
    pub more_ready: bool,
}

/// What `shutdown` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShutdownReport {
    /// Tasks whose future was dropped (their handles resolve cancelled).
    pub cancelled: usize,
    /// Local tasks owned by another thread (or met while unwinding) whose future was leaked on
    /// purpose rather than dropped on the wrong thread (their handles resolve cancelled).
    pub leaked: usize,
    /// Tasks being polled right now (shutdown was called from inside a task); they are cancelled
    /// as soon as their poll returns.
    pub still_running: usize,
}

/// Rule 9: holds the core claim for the current thread; releases it on drop (also on panic).
#[derive(Debug)]
pub(crate) struct ClaimGuard {
    shared: Arc<Shared>,
}

impl ClaimGuard {
    pub(crate) fn take(shared: &Arc<Shared>) -> Result<ClaimGuard, ContextError> {
        let outcome = shared.claim();
        let core = match outcome {
            Claim::Taken | Claim::Nested => shared
                .core_here()
                .expect("rule 9: the claim was just taken by this thread"),
            Claim::HeldElsewhere => return Err(ContextError::EnteredElsewhere),
        };
        core.depth.set(core.depth.get() + 1);
        Ok(ClaimGuard {
            shared: Arc::clone(shared),
        })
    }

    pub(crate) fn core(&self) -> &Core {
        self.shared
            .core_here()
            .expect("rule 9: a live ClaimGuard means this thread holds the claim")
    }
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        let core = self.core();
        let depth = core.depth.get() - 1;
        core.depth.set(depth);
        if depth == 0 {
            self.shared.release();
        }
    }
}

/// The task scheduler a worker owns.
///
/// `Send` (it moves with the worker between threads) but not `Sync`. All methods act for the
/// current thread: local tasks run only on the thread that spawned them (rule 7).
pub struct Scheduler {
    shared: Arc<Shared>,
    _not_sync: PhantomData<Cell<()>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("counts", &self.counts())
            .finish()
    }
}

impl Scheduler {
    /// A scheduler that calls `unpark` whenever work becomes runnable from another thread.
    pub fn new(unpark: Arc<dyn Unpark>) -> Scheduler {
        Scheduler {
            shared: Arc::new(Shared::new(unpark)),
            _not_sync: PhantomData,
        }
    }

    /// A `Clone + Send + Sync` handle that spawns from any thread.
    pub fn spawner(&self) -> Spawner {
        Spawner::new(Arc::clone(&self.shared))
    }

    /// Installs this scheduler as the current thread's (rule 9) until the guard drops, so the
    /// free functions [`spawn`](crate::spawn) and [`spawn_local`](crate::spawn_local) work.
    /// Nestable; each guard restores the previous context, also during a panic.
    ///
    /// # Panics
    ///
    /// If the scheduler is still entered on another thread, which only happens when an
    /// `EnterGuard` was leaked (`mem::forget`) there.
    pub fn enter(&self) -> EnterGuard {
        self.try_enter()
            .unwrap_or_else(|err| panic!("cannot enter the Baton scheduler: {err}"))
    }

    /// Like [`enter`](Scheduler::enter), but reports a scheduler entered elsewhere as an error.
    ///
    /// # Errors
    ///
    /// [`ContextError::EnteredElsewhere`] when another thread holds the scheduler.
    pub fn try_enter(&self) -> Result<EnterGuard, ContextError> {
        EnterGuard::new(&self.shared)
    }

    fn claim(&self) -> ClaimGuard {
        ClaimGuard::take(&self.shared)
            .unwrap_or_else(|err| panic!("cannot use the Baton scheduler: {err}"))
    }

    /// Spawns a `Send` task; see [`Spawner::spawn`].
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let _claim = self.claim();
        spawn_send(&self.shared, future).0
    }

    /// Spawns a local (`!Send`) task owned by the current thread (rule 7). After shutdown the
    /// handle resolves to a cancelled [`JoinError`](crate::JoinError).
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let claim = self.claim();
        spawn_local_on(&self.shared, claim.core(), future)
    }

    /// Polls up to `budget` tasks that may run on this thread, fairly (rule 10).
    pub fn run_ready(&self, budget: usize) -> RunReport {
        // A worker turn usually runs inside a guard of this scheduler already: re-entering costs
        // nothing then. Otherwise enter for the duration of the call.
        let entered;
        let core = match self.core_if_entered() {
            Some(core) => core,
            None => {
                entered = self.enter();
                entered.core()
            }
        };
        let here = sync::thread_id();
        if core.polling.replace(true) {
            // Called from inside a task's poll: refuse to re-enter.
            return RunReport {
                polled: 0,
                more_ready: core.has_ready_for(here) || self.shared.has_remote(),
            };
        }
        let _polling = PollingFlag(core);
        let mut turn = core.turn.get();
        let mut polled = 0;
        drain_remote(&self.shared, core);
        while polled < budget {
            if polled % REMOTE_INTERVAL == REMOTE_INTERVAL - 1 {
                drain_remote(&self.shared, core);
            }
            let Some(task) = core.pop_ready(here, &mut turn) else {
                if drain_remote(&self.shared, core) == 0 {
                    break;
                }
                continue;
            };
            let outcome = task.run();
            // Rule 9: a task's poll cannot release the claim this loop relies on (guards are
            // dropped in reverse order; the caller's outlives this call).
            debug_assert!(
                self.shared.core_here().is_some(),
                "rule 9: the core claim was released during a task poll"
            );
            match outcome {
                RunOutcome::Stale => continue,
                RunOutcome::Parked => {}
                RunOutcome::Requeue(task) => core.push_ready(task),
                RunOutcome::Finished(task, finish) => {
                    let tally = match finish {
                        Finish::Completed => Tally::Completed,
                        Finish::Panicked => Tally::Panicked,
                        Finish::Cancelled => Tally::Aborted,
                    };
                    retire(&self.shared, core, task, tally);
                }
            }
            polled += 1;
        }
        core.turn.set(turn);
        RunReport {
            polled,
            more_ready: core.has_ready_for(here) || self.shared.has_remote(),
        }
    }

    /// The core, if this scheduler is installed on this thread and this thread holds its claim
    /// (rule 9): some live guard of ours keeps both in place until the caller returns, so no new
    /// guard is needed.
    fn core_if_entered(&self) -> Option<&Core> {
        if context::is_current(&self.shared) {
            self.shared.core_here()
        } else {
            None
        }
    }

    /// Whether `run_ready` on this thread would find work now (local tasks of other threads do
    /// not count).
    pub fn has_ready_for_current_thread(&self) -> bool {
        let here = sync::thread_id();
        if let Some(core) = self.core_if_entered() {
            return core.has_ready_for(here) || self.shared.has_remote();
        }
        let claim = self.claim();
        claim.core().has_ready_for(here) || self.shared.has_remote()
    }

    /// Live local tasks owned by the current thread: handing the worker to another thread would
    /// strand them until it comes back.
    pub fn live_local_tasks_on_current_thread(&self) -> usize {
        let here = sync::thread_id();
        if let Some(core) = self.core_if_entered() {
            return core.live_local(here);
        }
        let claim = self.claim();
        claim.core().live_local(here)
    }

    /// Whether any accepted task has not finished yet.
    pub fn has_live_tasks(&self) -> bool {
        self.shared.live() > 0
    }

    /// How many accepted tasks have not finished yet.
    pub fn live_tasks(&self) -> u64 {
        self.shared.live()
    }

    /// The task counters.
    pub fn counts(&self) -> TaskCounts {
        self.shared.counts()
    }

    /// Whether [`shutdown`](Scheduler::shutdown) ran, or a spawner
    /// [refuses spawns](crate::Spawner::refuse_spawns) already.
    pub fn is_shut_down(&self) -> bool {
        self.shared.refuses_spawns()
    }

    /// Rule 8: refuses further spawns and cancels every task it may drop here: `Send` tasks
    /// and the current thread's local tasks are dropped; local tasks owned by another thread
    /// are leaked on purpose (their future is never dropped on a foreign thread). Every
    /// outstanding `JoinHandle` resolves cancelled. Idempotent.
    pub fn shutdown(&self) -> ShutdownReport {
        let claim = self.claim();
        shutdown_core(&self.shared, claim.core())
    }
}

#[cfg(test)]
impl Scheduler {
    /// How many references to the shared state exist: the scheduler's own plus one per task
    /// allocation that was not freed (rule 1), and one per spawner or guard alive.
    pub(crate) fn shared_refs(&self) -> usize {
        Arc::strong_count(&self.shared)
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        // A scheduler still entered elsewhere (leaked guard) cannot be touched from here: its
        // tasks stay alive forever rather than being dropped unsafely.
        if let Ok(claim) = ClaimGuard::take(&self.shared) {
            let _ = shutdown_core(&self.shared, claim.core());
        }
    }
}

struct PollingFlag<'a>(&'a Core);

impl Drop for PollingFlag<'_> {
    fn drop(&mut self) {
        self.0.polling.set(false);
    }
}

/// Moves injected tasks and remote wakes onto the core's queues; registers new tasks.
fn drain_remote(shared: &Shared, core: &Core) -> usize {
    if !shared.has_remote() {
        // Rule 11: nothing injected since the last drain (a racing push unparks the worker).
        return 0;
    }
    let mut drained = std::mem::take(&mut *core.inbox.borrow_mut());
    shared.drain_remote(&mut drained);
    let count = drained.len();
    for task in drained.drain(..) {
        if !Core::is_registered(&task) {
            core.register(task.clone());
        }
        core.push_ready(task);
    }
    *core.inbox.borrow_mut() = drained;
    count
}

/// Rule 1: a finished task leaves the registry and is counted.
fn retire(shared: &Shared, core: &Core, task: TaskRef, tally: Tally) {
    let removed = core.unregister(&task);
    shared.count_finish(tally);
    drop(removed);
    drop(task);
}

/// Spawns a `Send` task from any thread: straight onto the core's queue when this thread holds
/// the claim, through the injection queue otherwise.
pub(crate) fn spawn_send<F>(shared: &Arc<Shared>, future: F) -> (JoinHandle<F::Output>, Injected)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (task, handle) = Task::spawn(future, None, Arc::clone(shared));
    let accepted = match shared.core_here() {
        Some(core) => accept_here(shared, core, task),
        None => shared.inject(task, true),
    };
    match accepted {
        Injected::Queued => {}
        Injected::Closed => handle.refuse(),
    }
    (handle, accepted)
}

/// Spawns a local task owned by the current thread; the caller holds the claim.
pub(crate) fn spawn_local_on<F>(
    shared: &Arc<Shared>,
    core: &Core,
    future: F,
) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let (task, handle) = Task::spawn(future, Some(sync::thread_id()), Arc::clone(shared));
    match accept_here(shared, core, task) {
        Injected::Queued => {}
        Injected::Closed => {
            // Rule 7: we are on the owner thread, so dropping the future here is allowed.
            handle.refuse();
        }
    }
    handle
}

fn accept_here(shared: &Shared, core: &Core, task: TaskRef) -> Injected {
    if shared.refuses_spawns() {
        return Injected::Closed;
    }
    shared.count_spawn();
    core.register(task.clone());
    core.push_ready(task);
    Injected::Queued
}

/// Rule 8, run by the claim holder.
fn shutdown_core(shared: &Shared, core: &Core) -> ShutdownReport {
    let injected = shared.close();
    for task in &injected {
        if !Core::is_registered(task) {
            core.register(task.clone());
        }
    }
    drop(injected);
    let queued = core.take_queues();
    drop(queued);
    let mut report = ShutdownReport::default();
    for task in core.registered() {
        match task.shut_down() {
            ShutdownOutcome::Cancelled => {
                report.cancelled += 1;
                retire(shared, core, task, Tally::Aborted);
            }
            ShutdownOutcome::Leaked => {
                report.leaked += 1;
                retire(shared, core, task, Tally::Aborted);
            }
            ShutdownOutcome::Running => report.still_running += 1,
            ShutdownOutcome::Complete => drop(core.unregister(&task)),
        }
    }
    // Destructors run above may have woken tasks: those entries are stale now.
    drop(core.take_queues());
    report
}
