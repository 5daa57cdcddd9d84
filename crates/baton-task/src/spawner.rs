//! `Spawner`: spawn `Send` tasks from any thread through the injection queue (rules 2 and 8).

use std::future::Future;
use std::sync::Arc;

use crate::join::JoinHandle;
use crate::scheduler::spawn_send;
use crate::shared::{Injected, Shared, TaskCounts};

/// The error of [`Spawner::try_spawn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The scheduler was shut down; the future was dropped without being polled.
    #[error("the Baton runtime is shut down; the task was not spawned")]
    Shutdown,
}

/// Spawns `Send` tasks on one scheduler from any thread. `Clone + Send + Sync`.
#[derive(Debug, Clone)]
pub struct Spawner {
    shared: Arc<Shared>,
}

impl Spawner {
    pub(crate) fn new(shared: Arc<Shared>) -> Spawner {
        Spawner { shared }
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
        spawn_send(&self.shared, future).0
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
        match spawn_send(&self.shared, future) {
            (handle, Injected::Queued) => Ok(handle),
            (_, Injected::Closed) => Err(SpawnError::Shutdown),
        }
    }

    /// Whether the scheduler was shut down.
    pub fn is_shut_down(&self) -> bool {
        self.shared.is_closed()
    }

    /// The task counters.
    pub fn counts(&self) -> TaskCounts {
        self.shared.counts()
    }

    /// Whether two spawners feed the same scheduler.
    pub fn same_scheduler(&self, other: &Spawner) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}
