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
/// the claim, through the injection queue otherwise. `state` becomes the task's own reference
/// to its scheduler (callers that own one hand it over instead of cloning another).
pub(crate) fn spawn_send<F>(
    state: Arc<SchedulerState>,
    future: F,
) -> (JoinHandle<F::Output>, Injected)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let accepted;
    let join = if state.claim().here().is_some() {
        let (task, registered, join) = Task::spawn_registered(future, None, state);
        let state = join.scheduler();
        let queues = state
            .claim()
            .here()
            .expect("rule T9: nothing released the claim since it was checked");
        accepted = accept_here(state, queues, task, registered);
        join
    } else {
        let (task, join) = Task::spawn(future, None, state);
        let state = join.scheduler();
        accepted = state.injector().push_spawn(task, state.counters());
        join
    };
    let handle = JoinHandle::new(join);
    match accepted {
        Injected::Queued => {}
        Injected::Closed => handle.refuse(CancelReason::SpawnAfterShutdown),
    }
    (handle, accepted)
}

/// Spawns a local task owned by the current thread, which holds the claim (T9). `state`
/// becomes the task's own reference to its scheduler.
pub(crate) fn spawn_local_on<F>(state: Arc<SchedulerState>, future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let (task, registered, join) = Task::spawn_registered(future, Some(sync::thread_id()), state);
    let state = join.scheduler();
    let queues = state
        .claim()
        .here()
        .expect("rule T9: spawn_local_on is called by the claim holder");
    let accepted = accept_here(state, queues, task, registered);
    let handle = JoinHandle::new(join);
    match accepted {
        Injected::Queued => {}
        Injected::Closed => {
            // Rule T7: we are on the owner thread, so dropping the future here is allowed.
            handle.refuse(CancelReason::SpawnAfterShutdown);
        }
    }
    handle
}

/// Rules T1 and T8 on the claim holder's thread: a task is accepted (counted, registered with
/// the reference `registered` made for it, and queued) unless spawns are refused.
fn accept_here(
    state: &SchedulerState,
    queues: &RunQueues,
    task: TaskRef<SchedulerState>,
    registered: TaskRef<SchedulerState>,
) -> Injected {
    if state.injector().refuses_spawns() {
        drop(registered);
        return Injected::Closed;
    }
    state.counters().count_spawn_here(queues);
    queues.register(registered);
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
