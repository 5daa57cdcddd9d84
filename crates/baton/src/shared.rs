//! [`Shared`]: what every handle of one runtime shares, behind methods — the worker's handle,
//! the registrar and executor lease of blocking jobs, the loan of the worker, the lifecycle
//! flag, and the shutdown hand-offs (deadline, the worker's report) — and [`lock`], the
//! poison-ignoring lock its plain data uses.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

use baton_completion::{
    ExecutorLease, IoExecutor, Registrar, RuntimeId, ShutdownReport as ExecutorShutdown,
};
use baton_loan::Loan;
use baton_uring::{WorkerHandle, WorkerShutdownReport};
use web_time::Instant;

use crate::metrics::MetricsCell;
use crate::net::Resolver;
use crate::signal::Hub;

/// The runtime's lifecycle, as its handles see it.
const RUNNING: u8 = 0;
const SHUTTING_DOWN: u8 = 1;

/// What every handle of one runtime shares.
///
/// Invariant: `loan` is set once, right after the worker was handed to the loan driver, before
/// any handle escapes `Builder::build`. The loan holds the worker, whose adapter holds a
/// `Handle`: that cycle is broken when the loan shuts down and drops the worker.
pub(crate) struct Shared {
    runtime_id: RuntimeId,
    worker: WorkerHandle,
    registrar: Registrar,
    lease: Arc<dyn ExecutorLease>,
    /// The blocking executor, and whether this runtime owns it (shuts it down).
    executor: Arc<dyn IoExecutor>,
    owns_executor: bool,
    loan: OnceLock<Loan>,
    state: AtomicU8,
    /// Until when the worker's shutdown may wait for the kernel; set before the loan closes.
    shutdown_deadline: Mutex<Option<Instant>>,
    /// What the worker's shutdown reported, stored by whoever dropped the worker (worker
    /// adapter rule A3).
    worker_report: Mutex<Option<WorkerShutdownReport>>,
    /// Notified when `worker_report` is stored: a shutdown whose worker is on loan waits for it.
    worker_reported: Condvar,
    /// The worker was closed where a `block_on` had it on loan (worker adapter rule A7).
    closed_on_loan: AtomicBool,
    /// The worker's counters, as last published by the worker adapter.
    metrics: MetricsCell,
    /// `block_on` roots being driven on the worker right now (worker adapter rule A5).
    roots_active: AtomicUsize,
    /// Resolves host names for `net` (on the blocking pool).
    resolver: Resolver,
    /// Where this runtime's signal listeners are woken, made by the first one.
    signal_hub: Mutex<Option<Arc<Hub>>>,
}

impl Shared {
    pub(crate) fn new(
        runtime_id: RuntimeId,
        worker: WorkerHandle,
        lease: Arc<dyn ExecutorLease>,
        executor: Arc<dyn IoExecutor>,
        owns_executor: bool,
        resolver: Resolver,
    ) -> Shared {
        Shared {
            runtime_id,
            registrar: worker.registrar(),
            worker,
            lease,
            executor,
            owns_executor,
            loan: OnceLock::new(),
            state: AtomicU8::new(RUNNING),
            shutdown_deadline: Mutex::new(None),
            worker_report: Mutex::new(None),
            worker_reported: Condvar::new(),
            closed_on_loan: AtomicBool::new(false),
            metrics: MetricsCell::default(),
            roots_active: AtomicUsize::new(0),
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

    /// Sets the loan, once, while `Builder::build` still holds the only handles (see the type's
    /// invariant).
    pub(crate) fn set_loan(&self, loan: Loan) -> Result<(), Loan> {
        self.loan.set(loan)
    }

    pub(crate) fn runtime_id(&self) -> RuntimeId {
        self.runtime_id
    }

    pub(crate) fn worker(&self) -> &WorkerHandle {
        &self.worker
    }

    pub(crate) fn registrar(&self) -> &Registrar {
        &self.registrar
    }

    pub(crate) fn lease(&self) -> &Arc<dyn ExecutorLease> {
        &self.lease
    }

    /// The worker's counters as the worker adapter publishes them.
    pub(crate) fn metrics_cell(&self) -> &MetricsCell {
        &self.metrics
    }

    /// Worker adapter rule A5: a `block_on` root starts being driven on the worker.
    pub(crate) fn root_started(&self) {
        self.roots_active.fetch_add(1, Ordering::AcqRel);
    }

    /// Worker adapter rule A5: that root was dropped.
    pub(crate) fn root_finished(&self) {
        self.roots_active.fetch_sub(1, Ordering::AcqRel);
    }

    /// `block_on` roots driven on the worker right now.
    pub(crate) fn roots_active(&self) -> usize {
        self.roots_active.load(Ordering::Acquire)
    }

    /// Shutdown step 1: the executor refuses new jobs and cancels the queued ones at once (a
    /// shared executor is only detached from); `None` for a shared one.
    pub(crate) fn stop_executor(&self) -> Option<ExecutorShutdown> {
        if self.owns_executor {
            Some(self.executor.shutdown(Instant::now()))
        } else {
            self.lease.detach();
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

    pub(crate) fn loan(&self) -> &Loan {
        self.loan
            .get()
            .expect("the loan is set before any handle escapes Builder::build")
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.state.load(Ordering::Acquire) != RUNNING
    }

    /// Marks the runtime as shutting down; `false` if it already was.
    pub(crate) fn begin_shutdown(&self) -> bool {
        self.state.swap(SHUTTING_DOWN, Ordering::AcqRel) == RUNNING
    }

    /// Worker adapter rule A3: stores the worker's shutdown report and wakes a shutdown waiting
    /// for it.
    pub(crate) fn publish_worker_report(&self, report: WorkerShutdownReport) {
        *lock(&self.worker_report) = Some(report);
        self.worker_reported.notify_all();
    }

    /// Takes the worker's shutdown report, if it was published.
    pub(crate) fn take_worker_report(&self) -> Option<WorkerShutdownReport> {
        lock(&self.worker_report).take()
    }

    /// Waits until the worker's shutdown report is published or `deadline` passes, and takes
    /// it (`None` at the deadline).
    pub(crate) fn wait_worker_report(&self, deadline: Instant) -> Option<WorkerShutdownReport> {
        let mut report = lock(&self.worker_report);
        loop {
            if let Some(report) = report.take() {
                return Some(report);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            report = self
                .worker_reported
                .wait_timeout(report, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Worker adapter rule A7: the worker was closed where a `block_on` had it on loan.
    pub(crate) fn note_closed_on_loan(&self) {
        self.closed_on_loan.store(true, Ordering::Release);
    }

    /// Whether the worker was closed on loan (worker adapter rule A7).
    pub(crate) fn was_closed_on_loan(&self) -> bool {
        self.closed_on_loan.load(Ordering::Acquire)
    }
}

/// Locks `mutex`, recovering the data if a panicking thread poisoned it: every value kept
/// behind these locks is a plain report or deadline that stays consistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
