//! The spawn path: how a new task is made and accepted, on the claim holder's thread or through
//! the injection queue (T1, T2, T7 and T8).

use std::future::Future;
use std::sync::Arc;

use crate::injector::Injected;
use crate::join::{CancelReason, JoinHandle};
use crate::raw::TaskRef;
use crate::run_queues::RunQueues;
use crate::scheduler_state::SchedulerState;
use crate::sync;
use crate::task::Task;

/// Spawns a `Send` task from any thread: straight onto the run queues when this thread holds
/// the claim, through the injection queue otherwise.
pub(crate) fn spawn_send<F>(
    state: &Arc<SchedulerState>,
    future: F,
) -> (JoinHandle<F::Output>, Injected)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (task, join) = Task::spawn(future, None, Arc::clone(state));
    let handle = JoinHandle::new(join);
    let accepted = match state.claim().here() {
        Some(queues) => accept_here(state, queues, task),
        None => state.injector().push_spawn(task, state.counters()),
    };
    match accepted {
        Injected::Queued => {}
        Injected::Closed => handle.refuse(CancelReason::SpawnAfterShutdown),
    }
    (handle, accepted)
}

/// Spawns a local task owned by the current thread; the caller holds the claim.
pub(crate) fn spawn_local_on<F>(
    state: &Arc<SchedulerState>,
    queues: &RunQueues,
    future: F,
) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let (task, join) = Task::spawn(future, Some(sync::thread_id()), Arc::clone(state));
    let handle = JoinHandle::new(join);
    match accept_here(state, queues, task) {
        Injected::Queued => {}
        Injected::Closed => {
            // Rule T7: we are on the owner thread, so dropping the future here is allowed.
            handle.refuse(CancelReason::SpawnAfterShutdown);
        }
    }
    handle
}

/// Rules T1 and T8 on the claim holder's thread: a task is accepted (counted, registered and
/// queued) unless spawns are refused.
fn accept_here(
    state: &SchedulerState,
    queues: &RunQueues,
    task: TaskRef<SchedulerState>,
) -> Injected {
    if state.injector().refuses_spawns() {
        return Injected::Closed;
    }
    state.counters().count_spawn();
    queues.register(task.clone());
    queues.push_ready(task);
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
    let (_task, join) = Task::spawn(future, None, Arc::clone(state));
    let handle = JoinHandle::new(join);
    handle.refuse(reason);
    handle
}
