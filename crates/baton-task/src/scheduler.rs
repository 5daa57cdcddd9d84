//! The `Scheduler`: owned by the worker, it runs ready tasks fairly and shuts them down.

use std::cell::Cell;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::claim::ClaimGuard;
use crate::context::{self, ContextError, EnterGuard};
use crate::counts::TaskCounts;
use crate::injector::Unpark;
use crate::join::JoinHandle;
use crate::raw::{Finish, RunOutcome, ShutdownOutcome, TaskRef};
use crate::run_queues::RunQueues;
use crate::scheduler_state::SchedulerState;
use crate::spawn::{new_local, place, spawn_send};
use crate::spawner::Spawner;
use crate::state::ShutdownReach;
use crate::sync;

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

/// The task scheduler a worker owns.
///
/// `Send` (it moves with the worker between threads) but not `Sync`. All methods act for the
/// current thread: local tasks run only on the thread that spawned them (T7).
pub struct Scheduler {
    state: Arc<SchedulerState>,
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
            state: Arc::new(SchedulerState::new(unpark)),
            _not_sync: PhantomData,
        }
    }

    /// A `Clone + Send + Sync` handle that spawns from any thread.
    pub fn spawner(&self) -> Spawner {
        Spawner::new(Arc::clone(&self.state))
    }

    /// Installs this scheduler as the current thread's (T9) until the guard drops, so the
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
        EnterGuard::new(&self.state)
    }

    fn claim(&self) -> ClaimGuard {
        ClaimGuard::take(&self.state)
            .unwrap_or_else(|err| panic!("cannot use the Baton scheduler: {err}"))
    }

    /// Spawns a `Send` task; see [`Spawner::spawn`].
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let _claim = self.claim();
        spawn_send(&self.state, future).0
    }

    /// Spawns a local (`!Send`) task owned by the current thread (T7). After shutdown the
    /// handle resolves to a cancelled [`JoinError`](crate::JoinError).
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let _claim = self.claim();
        place(new_local(&self.state, future)).0
    }

    /// Polls up to `budget` tasks that may run on this thread, fairly (T10).
    pub fn run_ready(&self, budget: usize) -> RunReport {
        // A worker turn usually runs inside a guard of this scheduler already: re-entering costs
        // nothing then. Otherwise enter for the duration of the call.
        let entered;
        let queues = match self.queues_if_entered() {
            Some(queues) => queues,
            None => {
                entered = self.enter();
                entered.queues()
            }
        };
        let here = sync::thread_id();
        let injector = self.state.injector();
        let Some(_polling) = queues.start_polling() else {
            // Called from inside a task's poll: refuse to re-enter.
            return RunReport {
                polled: 0,
                more_ready: queues.has_ready_for(here) || injector.has_injected(),
            };
        };
        let mut turn = queues.turn();
        let mut polled = 0;
        drain_injected(&self.state, queues);
        while polled < budget {
            if polled % REMOTE_INTERVAL == REMOTE_INTERVAL - 1 {
                drain_injected(&self.state, queues);
            }
            let Some(task) = queues.pop_ready(here, &mut turn) else {
                if drain_injected(&self.state, queues) == 0 {
                    break;
                }
                continue;
            };
            // Rule T7: a local task runs here only if it is this thread's, so its owner is
            // `here`; read now, as a finished task may be gone once `run` returns.
            let local = task.header().owner.is_some();
            queues.set_polled(Some(task.as_raw()));
            let outcome = task.run();
            queues.set_polled(None);
            // Rule T9: a task's poll cannot release the claim this loop relies on (guards are
            // dropped in reverse order; the caller's outlives this call).
            debug_assert!(
                self.state.claim().here().is_some(),
                "rule T9: the core claim was released during a task poll"
            );
            match outcome {
                RunOutcome::Stale => continue,
                RunOutcome::Parked => {}
                RunOutcome::Register(task) => queues.register(task),
                RunOutcome::Requeue(task) => queues.push_ready(task),
                RunOutcome::Finished {
                    entry,
                    registered,
                    finish,
                } => {
                    self.state.counters().count_finish(finish, queues);
                    if local {
                        queues.local_finished(here);
                    }
                    if let Some(task) = entry {
                        release_retired(queues, task, registered);
                    }
                }
            }
            polled += 1;
        }
        queues.set_turn(turn);
        RunReport {
            polled,
            more_ready: queues.has_ready_for(here) || injector.has_injected(),
        }
    }

    /// The run queues, if this scheduler is installed on this thread and this thread holds its
    /// claim (T9): some live guard of ours keeps both in place until the caller returns, so
    /// no new guard is needed.
    fn queues_if_entered(&self) -> Option<&RunQueues> {
        if context::is_current(&self.state) {
            self.state.claim().here()
        } else {
            None
        }
    }

    /// Whether `run_ready` on this thread would find work now (local tasks of other threads do
    /// not count).
    pub fn has_ready_for_current_thread(&self) -> bool {
        let here = sync::thread_id();
        let injected = || self.state.injector().has_injected();
        if let Some(queues) = self.queues_if_entered() {
            return queues.has_ready_for(here) || injected();
        }
        let claim = self.claim();
        claim.queues().has_ready_for(here) || injected()
    }

    /// Live local tasks owned by the current thread: handing the worker to another thread would
    /// strand them until it comes back.
    pub fn live_local_tasks_on_current_thread(&self) -> usize {
        let here = sync::thread_id();
        if let Some(queues) = self.queues_if_entered() {
            return queues.live_local(here);
        }
        let claim = self.claim();
        claim.queues().live_local(here)
    }

    /// Whether any accepted task has not finished yet.
    pub fn has_live_tasks(&self) -> bool {
        self.state.counters().live() > 0
    }

    /// How many accepted tasks have not finished yet.
    pub fn live_tasks(&self) -> u64 {
        self.state.counters().live()
    }

    /// The task counters.
    pub fn counts(&self) -> TaskCounts {
        self.state.counters().snapshot()
    }

    /// Whether [`shutdown`](Scheduler::shutdown) ran, or a spawner
    /// [refuses spawns](crate::Spawner::refuse_spawns) already.
    pub fn is_shut_down(&self) -> bool {
        self.state.injector().refuses_spawns()
    }

    /// Rule T8: refuses further spawns and cancels every task it may drop here: `Send` tasks
    /// and the current thread's local tasks are dropped; local tasks owned by another thread
    /// are leaked on purpose (their future is never dropped on a foreign thread). Every
    /// outstanding `JoinHandle` resolves cancelled. Idempotent.
    pub fn shutdown(&self) -> ShutdownReport {
        let claim = self.claim();
        shut_down_tasks(&self.state, claim.queues())
    }
}

#[cfg(test)]
impl Scheduler {
    /// How many references to the scheduler state exist: the scheduler's own, one for all task
    /// units while any is out (T1: a task allocation that was not freed, or spares of a claim
    /// still held), and one per spawner or guard alive.
    pub(crate) fn state_refs(&self) -> usize {
        Arc::strong_count(&self.state)
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        // A scheduler still entered elsewhere (leaked guard) cannot be touched from here: its
        // tasks stay alive forever rather than being dropped unsafely.
        if let Ok(claim) = ClaimGuard::take(&self.state) {
            let _ = shut_down_tasks(&self.state, claim.queues());
        }
    }
}

/// Moves injected tasks and remote wakes onto the run queues (a new task enters the registry
/// only if it parks, T1).
fn drain_injected(state: &SchedulerState, queues: &RunQueues) -> usize {
    let injector = state.injector();
    if !injector.has_injected() {
        // Rule T11: nothing injected since the last drain (a racing push unparks the worker).
        return 0;
    }
    let mut drained = queues.take_inbox();
    injector.drain_into(&mut drained);
    let count = drained.len();
    for task in drained.drain(..) {
        queues.push_ready(task);
    }
    queues.return_inbox(drained);
    count
}

/// Rule T1: a finished task leaves the registry and is counted.
fn retire(
    state: &SchedulerState,
    queues: &RunQueues,
    task: TaskRef<SchedulerState>,
    finish: Finish,
) {
    state.counters().count_finish(finish, queues);
    if let Some(owner) = task.header().owner {
        queues.local_finished(owner);
    }
    release_retired(queues, task, None);
}

/// Rule T1: releases a finished task's reference `task` and the registry's: `registered`
/// when the task already left the registry, else taken out of it here.
fn release_retired(
    queues: &RunQueues,
    task: TaskRef<SchedulerState>,
    registered: Option<TaskRef<SchedulerState>>,
) {
    match registered.or_else(|| queues.unregister(&task)) {
        Some(registered) => task.release_with(registered),
        None => drop(task),
    }
}

/// Rule T8, run by the claim holder: every queue entry is taken and its task claimed through
/// it (a fresh task's `RUNNING` is its first entry's, T3), then every task still registered,
/// which is idle or the one being polled, then the task being polled if it never parked (so
/// is not registered).
fn shut_down_tasks(state: &SchedulerState, queues: &RunQueues) -> ShutdownReport {
    let mut entries = queues.take_queues();
    entries.extend(state.injector().close());
    let mut report = ShutdownReport::default();
    for entry in entries {
        shut_down_one(state, queues, entry, ShutdownReach::QueueEntry, &mut report);
    }
    for task in queues.registered() {
        shut_down_one(state, queues, task, ShutdownReach::Registry, &mut report);
    }
    if let Some(header) = queues.polled() {
        // SAFETY: rule T8, `polled` is set only while `run_ready` polls that task on this
        // thread, holding its queue entry's reference: shutdown runs inside that poll, so the
        // task is alive. The value is never dropped, so it borrows that reference instead of
        // owning one.
        let polled = std::mem::ManuallyDrop::new(unsafe { TaskRef::from_raw(header) });
        if !RunQueues::is_registered(&polled) {
            shut_down_polled(&polled, &mut report);
        }
    }
    // Destructors run above may have woken tasks: those entries are stale now.
    drop(queues.take_queues());
    report
}

/// Rule T8 for the task being polled (shutdown runs inside its poll), which is in no queue and
/// not registered: `CANCELLED` is set and its poller cancels it when the poll returns pending.
fn shut_down_polled(task: &TaskRef<SchedulerState>, report: &mut ShutdownReport) {
    // Any other outcome is `Complete`: shutdown runs from the task's completion (a join waker,
    // or its output's destructor), after which nothing is left to cancel.
    if task.shut_down(ShutdownReach::Registry) == ShutdownOutcome::Running {
        report.still_running += 1;
    }
}

/// Rule T8 for one task reached through `reach`, counted in `report`.
fn shut_down_one(
    state: &SchedulerState,
    queues: &RunQueues,
    task: TaskRef<SchedulerState>,
    reach: ShutdownReach,
    report: &mut ShutdownReport,
) {
    match task.shut_down(reach) {
        ShutdownOutcome::Cancelled => {
            report.cancelled += 1;
            retire(state, queues, task, Finish::Cancelled);
        }
        ShutdownOutcome::Leaked => {
            report.leaked += 1;
            retire(state, queues, task, Finish::Cancelled);
        }
        // Rules T2 and T3: a task being polled has no queue entry, so only the registry
        // reaches it; it is cancelled when its poll returns.
        ShutdownOutcome::Running => {
            debug_assert_eq!(
                reach,
                ShutdownReach::Registry,
                "T3: a queued task is not running"
            );
            report.still_running += 1;
        }
        ShutdownOutcome::Complete => match reach {
            ShutdownReach::QueueEntry => drop(task),
            ShutdownReach::Registry => drop(queues.unregister(&task)),
        },
    }
}
