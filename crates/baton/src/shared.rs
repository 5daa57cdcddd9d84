//! [`Shared`]: what every handle of one runtime shares, behind methods — its workers (each a
//! [`RuntimeWorker`]), where outside spawns go, the blocking executor, the lifecycle flag and
//! the shutdown deadline — and [`lock`], the poison-ignoring lock its plain data uses.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use baton_completion::{IoExecutor, RuntimeId, ShutdownReport as ExecutorShutdown};
use web_time::Instant;

use crate::net::Resolver;
use crate::runtime_worker::RuntimeWorker;
use crate::signal::Hub;

/// The runtime's lifecycle, as its handles see it.
const RUNNING: u8 = 0;
const SHUTTING_DOWN: u8 = 1;

/// What every handle of one runtime shares.
///
/// Invariant: `workers` is never empty; worker 0 is the one `block_on` borrows, and the
/// runtime's id is its id.
pub(crate) struct Shared {
    runtime_id: RuntimeId,
    workers: Box<[RuntimeWorker]>,
    /// Where the next outside spawn starts looking, so ties between equally loaded workers go
    /// round-robin (workers rule Q1).
    next_placement: AtomicUsize,
    /// The blocking executor, and whether this runtime owns it (shuts it down).
    executor: Arc<dyn IoExecutor>,
    owns_executor: bool,
    state: AtomicU8,
    /// Until when the workers' shutdown may wait for the kernel; set before the loans close.
    shutdown_deadline: Mutex<Option<Instant>>,
    /// Resolves host names for `net` (on the blocking pool).
    resolver: Resolver,
    /// Where this runtime's signal listeners are woken, made by the first one.
    signal_hub: Mutex<Option<Arc<Hub>>>,
}

impl Shared {
    /// # Panics
    ///
    /// If `workers` is empty (the builder refuses `workers(0)` before it gets here).
    pub(crate) fn new(
        workers: Vec<RuntimeWorker>,
        executor: Arc<dyn IoExecutor>,
        owns_executor: bool,
        resolver: Resolver,
    ) -> Shared {
        let runtime_id = workers
            .first()
            .expect("a runtime has at least one worker")
            .runtime_id();
        Shared {
            runtime_id,
            workers: workers.into_boxed_slice(),
            next_placement: AtomicUsize::new(0),
            executor,
            owns_executor,
            state: AtomicU8::new(RUNNING),
            shutdown_deadline: Mutex::new(None),
            resolver,
            signal_hub: Mutex::new(None),
        }
    }

    /// The runtime's signal hub, made with `make` by the first listener (or after the last
    /// one closed at shutdown, when `make` then fails to spawn its reader).
    pub(crate) fn signal_hub(
        &self,
        make: impl FnOnce() -> std::io::Result<Arc<Hub>>,
    ) -> std::io::Result<Arc<Hub>> {
        let mut hub = self
            .signal_hub
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(live) = hub.as_ref().filter(|h| !h.is_closed()) {
            return Ok(Arc::clone(live));
        }
        let made = make()?;
        *hub = Some(Arc::clone(&made));
        Ok(made)
    }

    pub(crate) fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    pub(crate) fn runtime_id(&self) -> RuntimeId {
        self.runtime_id
    }

    /// Every worker, in index order.
    pub(crate) fn workers(&self) -> &[RuntimeWorker] {
        &self.workers
    }

    /// Worker `index`, if the runtime has it.
    pub(crate) fn worker(&self, index: usize) -> Option<&RuntimeWorker> {
        self.workers.get(index)
    }

    /// Worker 0: the one `block_on` borrows.
    pub(crate) fn primary(&self) -> &RuntimeWorker {
        &self.workers[0]
    }

    /// Workers rule Q1: where an outside spawn goes — the worker with the fewest live tasks,
    /// ties broken round-robin.
    pub(crate) fn place(&self) -> &RuntimeWorker {
        if let [only] = &*self.workers {
            return only;
        }
        let start = self.next_placement.fetch_add(1, Ordering::Relaxed);
        let count = self.workers.len();
        (0..count)
            .map(|offset| &self.workers[start.wrapping_add(offset) % count])
            .min_by_key(|worker| worker.live_tasks())
            .expect("a runtime has at least one worker")
    }

    /// `block_on` roots driven on the workers right now (worker adapter rule A5).
    pub(crate) fn roots_active(&self) -> usize {
        self.workers.iter().map(RuntimeWorker::roots_active).sum()
    }

    /// Shutdown step 1: the executor refuses new jobs and withdraws the queued ones at once
    /// (pool rule P5; a shared executor is only detached from); `None` for a shared one.
    pub(crate) fn stop_executor(&self) -> Option<ExecutorShutdown> {
        if self.owns_executor {
            Some(self.executor.shutdown(Instant::now()))
        } else {
            for worker in self.workers() {
                worker.lease().detach();
            }
            None
        }
    }

    /// Shutdown step 4: running blocking jobs get until `deadline`; `None` for a shared
    /// executor.
    pub(crate) fn finish_executor(&self, deadline: Instant) -> Option<ExecutorShutdown> {
        self.owns_executor.then(|| self.executor.shutdown(deadline))
    }

    /// Publishes until when the worker's shutdown may wait for the kernel.
    pub(crate) fn set_shutdown_deadline(&self, deadline: Instant) {
        *lock(&self.shutdown_deadline) = Some(deadline);
    }

    /// Until when the worker's shutdown may wait for the kernel, once published.
    pub(crate) fn shutdown_deadline(&self) -> Option<Instant> {
        *lock(&self.shutdown_deadline)
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.state.load(Ordering::Acquire) != RUNNING
    }

    /// Marks the runtime as shutting down; `false` if it already was.
    pub(crate) fn begin_shutdown(&self) -> bool {
        self.state.swap(SHUTTING_DOWN, Ordering::AcqRel) == RUNNING
    }
}

/// Locks `mutex`, recovering the data if a panicking thread poisoned it: every value kept
/// behind these locks is a plain report or deadline that stays consistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
