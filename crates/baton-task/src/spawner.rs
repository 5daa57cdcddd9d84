//! `Spawner`: spawn `Send` tasks from any thread through the injection queue (T2 and T8).

use std::future::Future;
use std::sync::Arc;

use crate::context::TasksHeld;

use crate::counts::TaskCounts;
use crate::injector::Injected;
use crate::join::{CancelReason, JoinHandle};
use crate::scheduler_state::SchedulerState;
use crate::spawn::{reject_send, spawn_send};

/// The error of [`Spawner::try_spawn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The scheduler was shut down; the future was dropped without being polled.
    #[error("the Baton runtime is shut down; the task was not spawned")]
    Shutdown,
}

/// What [`Spawner::refuse_spawns`] did.
#[must_use = "a refusal reports whether this call began refusing spawns"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefuseSpawns {
    /// Spawns were accepted until this call; every later one is refused.
    Refused,
    /// Spawns were refused already (an earlier call, or the scheduler's shutdown).
    AlreadyRefused,
}

/// Spawns `Send` tasks on one scheduler from any thread. `Clone + Send + Sync`.
#[derive(Debug, Clone)]
pub struct Spawner {
    state: Arc<SchedulerState>,
}

impl Spawner {
    pub(crate) fn new(state: Arc<SchedulerState>) -> Spawner {
        Spawner { state }
    }

    /// Spawns a task. On the thread running the worker it is queued directly; elsewhere it goes
    /// through the injection queue and the worker is unparked.
    ///
    /// After shutdown nothing is queued: the future is dropped here, unpolled, and the handle
    /// resolves to [`JoinError::Cancelled`](crate::JoinError::Cancelled) with
    /// [`CancelReason::SpawnAfterShutdown`](crate::CancelReason::SpawnAfterShutdown).
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_send(&self.state, future).0
    }

    /// Refuses `future` without queueing it: it is dropped here, unpolled, and the handle
    /// resolves to [`JoinError::Cancelled`](crate::JoinError::Cancelled) with `reason` (a
    /// runtime uses it for a spawn it cannot place, e.g. on a worker it does not have). Nothing
    /// is counted as spawned.
    pub fn reject<F>(&self, future: F, reason: CancelReason) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        reject_send(&self.state, future, reason)
    }

    /// Like [`spawn`](Spawner::spawn), but reports a shut-down runtime as an error.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Shutdown`] when the scheduler was shut down (checked again, atomically,
    /// when queueing: a spawn racing shutdown either runs or is refused).
    pub fn try_spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, SpawnError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match spawn_send(&self.state, future) {
            (handle, Injected::Queued) => Ok(handle),
            (_, Injected::Closed) => Err(SpawnError::Shutdown),
        }
    }

    /// Rule T8: from now on every spawn is refused — from any thread, `Send` and local ones
    /// alike — as after [`Scheduler::shutdown`](crate::Scheduler::shutdown): the future is
    /// dropped unpolled and the handle resolves to
    /// [`CancelReason::SpawnAfterShutdown`](crate::CancelReason::SpawnAfterShutdown). Tasks
    /// accepted before keep running (their wakes still reach the scheduler) until its
    /// [`shutdown`](crate::Scheduler::shutdown) cancels them; nothing is taken from the
    /// injection queue, so this never needs the scheduler's thread (a task may call it to stop
    /// its runtime from inside). A spawn racing it is either accepted or refused, never lost.
    /// Idempotent.
    pub fn refuse_spawns(&self) -> RefuseSpawns {
        self.state.injector().refuse_spawns()
    }

    /// Whether the scheduler refuses spawns: it was shut down, or
    /// [`refuse_spawns`](Self::refuse_spawns) was called.
    pub fn is_shut_down(&self) -> bool {
        self.state.injector().refuses_spawns()
    }

    /// The task counters.
    pub fn counts(&self) -> TaskCounts {
        self.state.counters().snapshot()
    }

    /// Whether two spawners feed the same scheduler.
    pub fn same_scheduler(&self, other: &Spawner) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }

    /// Rule T12: marks the calling thread as holding this scheduler's worker without running
    /// its tasks (a `block_on` inside a task poll) until the guard drops; see [`TasksHeld`].
    pub fn hold_tasks(&self) -> TasksHeld {
        crate::context::hold_tasks(&self.state)
    }
}
