//! [`WorkerHandle`]: the worker as other threads see it.

use std::future::Future;
use std::sync::Arc;

use baton_completion::{CompletionSender, IdentityAllocator, Registrar, RuntimeId};
use baton_task::{JoinHandle, SpawnError, Spawner};

use super::listener::ListenerCell;
use crate::handle::DriverHandle;
use crate::inbox::InboxSender;

/// A `Clone + Send + Sync` handle on a worker: spawns, unparks, delivers completions.
#[derive(Debug, Clone)]
pub struct WorkerHandle {
    pub(super) runtime_id: RuntimeId,
    pub(super) spawner: Spawner,
    pub(super) driver: DriverHandle,
    pub(super) sender: Arc<InboxSender>,
    pub(super) allocator: Arc<IdentityAllocator>,
    pub(super) listener: Arc<ListenerCell>,
}

impl WorkerHandle {
    /// Spawns a `Send` task from any thread; after shutdown the handle resolves cancelled.
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.spawner.spawn(future)
    }

    /// Like [`spawn`](Self::spawn), but reports a shut-down worker as an error.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Shutdown`] once the worker shut down.
    pub fn try_spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, SpawnError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.spawner.try_spawn(future)
    }

    /// Ends the worker's current or next park (a token: never lost), then tells the wake
    /// listener (worker rule W11), so a dormant worker nobody drives is driven again.
    pub fn unpark(&self) {
        self.driver.unparker().unpark();
        self.listener.notify();
    }

    /// The worker's inbox, for executors (`ExecutorLease`s deliver through it).
    pub fn completion_sender(&self) -> Arc<dyn CompletionSender> {
        Arc::clone(&self.sender) as Arc<dyn CompletionSender>
    }

    /// A registrar issuing this worker's identities and delivering to its inbox.
    pub fn registrar(&self) -> Registrar {
        Registrar::new(Arc::clone(&self.allocator), self.completion_sender())
    }

    /// The identity allocator the worker's waits draw from.
    pub fn allocator(&self) -> &Arc<IdentityAllocator> {
        &self.allocator
    }

    /// The driver's handle (builds operations bound to this worker from any thread).
    pub fn driver(&self) -> &DriverHandle {
        &self.driver
    }

    /// The task spawner.
    pub fn spawner(&self) -> &Spawner {
        &self.spawner
    }

    /// The worker's runtime.
    pub fn runtime_id(&self) -> RuntimeId {
        self.runtime_id
    }

    /// Whether the worker has closed (its inbox refuses completions).
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}
