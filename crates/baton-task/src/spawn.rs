//! The spawn path: how a new task is made and accepted, on the claim holder's thread or through
//! the injection queue (T1, T2, T7 and T8).

use std::future::Future;
use std::sync::Arc;

use crate::injector::Injected;
use crate::join::{CancelReason, Join, JoinHandle};
use crate::raw::TaskRef;
use crate::run_queues::RunQueues;
use crate::scheduler_state::SchedulerState;
use crate::sync;
use crate::task::Task;

/// A task made and not yet placed: on the thread holding the claim, or to go through the
/// injection queue. Either way it holds its first queue entry's reference and its handle's;
/// it enters the registry only if it parks (rule T1).
pub(crate) enum NewTask<T> {
    Here {
        task: TaskRef<SchedulerState>,
        join: Join<T, SchedulerState>,
    },
    Injected {
        task: TaskRef<SchedulerState>,
        join: Join<T, SchedulerState>,
    },
}

/// Makes a `Send` task of `state`. Runs no user code, so a caller may lend `state` from
/// wherever it keeps it for this call alone.
pub(crate) fn new_send<F>(state: &Arc<SchedulerState>, future: F) -> NewTask<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let here = state.claim().here().is_some();
    let (task, join) = Task::spawn(future, None, state);
    if here {
        NewTask::Here { task, join }
    } else {
        NewTask::Injected { task, join }
    }
}

/// Makes a local task owned by the current thread, which holds `state`'s claim (T9). Runs no
/// user code, as [`new_send`].
pub(crate) fn new_local<F>(state: &Arc<SchedulerState>, future: F) -> NewTask<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    debug_assert!(
        state.claim().here().is_some(),
        "rule T9: the claim holder spawns locally"
    );
    let (task, join) = Task::spawn(future, Some(sync::thread_id()), state);
    NewTask::Here { task, join }
}

/// Places a new task: straight onto the run queues when it was made on the claim holder's
/// thread, through the injection queue otherwise; a refused one resolves cancelled. Reaches
/// the scheduler through the task's own unit (T1).
pub(crate) fn place<T>(new: NewTask<T>) -> (JoinHandle<T>, Injected) {
    let (join, accepted) = match new {
        NewTask::Here { task, join } => {
            let state = join.scheduler();
            let queues = state
                .claim()
                .here()
                .expect("rule T9: nothing released the claim since the task was made");
            let accepted = accept_here(state, queues, task);
            (join, accepted)
        }
        NewTask::Injected { task, join } => {
            let state = join.scheduler();
            let accepted = state.injector().push_spawn(task, state.counters());
            (join, accepted)
        }
    };
    let handle = JoinHandle::new(join);
    match accepted {
        Injected::Queued => {}
        // Rule T7: a local task is refused on its owner thread, so dropping its future here
        // is allowed.
        Injected::Closed => handle.refuse(CancelReason::SpawnAfterShutdown),
    }
    (handle, accepted)
}

/// Spawns a `Send` task from any thread (see [`new_send`] and [`place`]).
pub(crate) fn spawn_send<F>(
    state: &Arc<SchedulerState>,
    future: F,
) -> (JoinHandle<F::Output>, Injected)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    place(new_send(state, future))
}

/// Rules T1 and T8 on the claim holder's thread: a task is accepted (counted and queued, and
/// a local one counted live) unless spawns are refused.
fn accept_here(
    state: &SchedulerState,
    queues: &RunQueues,
    task: TaskRef<SchedulerState>,
) -> Injected {
    if state.injector().refuses_spawns() {
        return Injected::Closed;
    }
    state.counters().count_spawn_here(queues);
    queues.push_spawned(task);
    Injected::Queued
}

/// A `Send` task that is never accepted: its future is dropped here, unpolled, and its handle
/// resolves to a cancelled `JoinError` carrying `reason`.
pub(crate) fn reject_send<F>(
    state: &Arc<SchedulerState>,
    future: F,
    reason: CancelReason,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (_task, join) = Task::spawn(future, None, state);
    let handle = JoinHandle::new(join);
    handle.refuse(reason);
    handle
}
