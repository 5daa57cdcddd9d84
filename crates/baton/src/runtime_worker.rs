//! [`RuntimeWorker`]: one worker of a runtime as its handles see it — the worker's handle, the
//! registrar and executor lease of its blocking jobs, the loan that runs it, its published
//! counters and its shutdown report — and [`pin_to`], which pins a worker's thread to a CPU.
//!
//! Each worker has its own [`RuntimeId`], so a completion meant for one worker's inbox is
//! counted foreign (never settled) by another's; the runtime's own id is worker 0's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

use baton_completion::{ExecutorLease, Registrar, RuntimeId};
use baton_loan::Loan;
use baton_uring::{WorkerHandle, WorkerShutdownReport};
use web_time::Instant;

use crate::metrics::MetricsCell;
use crate::shared::lock;

/// One worker of a runtime, shared by every handle.
///
/// Invariant: `loan` is set once, right after the worker was handed to its loan, before any
/// handle escapes `Builder::build`. The loan holds the worker, whose adapter holds a `Handle`:
/// that cycle is broken when the loan shuts down and drops the worker.
pub(crate) struct RuntimeWorker {
    index: usize,
    handle: WorkerHandle,
    registrar: Registrar,
    lease: Arc<dyn ExecutorLease>,
    loan: OnceLock<Loan>,
    /// What the worker's shutdown reported, stored by whoever dropped the worker (worker
    /// adapter rule A3).
    report: Mutex<Option<WorkerShutdownReport>>,
    /// Notified when `report` is stored: a shutdown whose worker is on loan waits for it.
    reported: Condvar,
    /// The worker was closed where a `block_on` had it on loan (worker adapter rule A7).
    closed_on_loan: AtomicBool,
    /// The worker's counters, as last published by its adapter.
    metrics: MetricsCell,
    /// The CPU the worker's own thread was pinned to, once it pinned itself.
    pinned: OnceLock<usize>,
}

impl RuntimeWorker {
    pub(crate) fn new(
        index: usize,
        handle: WorkerHandle,
        lease: Arc<dyn ExecutorLease>,
    ) -> RuntimeWorker {
        RuntimeWorker {
            index,
            registrar: handle.registrar(),
            handle,
            lease,
            loan: OnceLock::new(),
            report: Mutex::new(None),
            reported: Condvar::new(),
            closed_on_loan: AtomicBool::new(false),
            metrics: MetricsCell::default(),
            pinned: OnceLock::new(),
        }
    }

    /// The worker's index in its runtime (0 is the one `block_on` borrows).
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// The worker's own id (its inbox accepts completions issued under it only).
    pub(crate) fn runtime_id(&self) -> RuntimeId {
        self.handle.runtime_id()
    }

    pub(crate) fn handle(&self) -> &WorkerHandle {
        &self.handle
    }

    pub(crate) fn registrar(&self) -> &Registrar {
        &self.registrar
    }

    pub(crate) fn lease(&self) -> &Arc<dyn ExecutorLease> {
        &self.lease
    }

    /// Tasks spawned on this worker and not finished yet: the load that placement compares.
    pub(crate) fn live_tasks(&self) -> u64 {
        self.handle.spawner().counts().live
    }

    /// Sets the loan, once, while `Builder::build` still holds the only handles (see the type's
    /// invariant).
    pub(crate) fn set_loan(&self, loan: Loan) -> Result<(), Loan> {
        self.loan.set(loan)
    }

    pub(crate) fn loan(&self) -> &Loan {
        self.loan
            .get()
            .expect("the loan is set before any handle escapes Builder::build")
    }

    /// The loan, when `Builder::build` got as far as setting it.
    pub(crate) fn try_loan(&self) -> Option<&Loan> {
        self.loan.get()
    }

    /// The worker's counters as its adapter publishes them.
    pub(crate) fn metrics_cell(&self) -> &MetricsCell {
        &self.metrics
    }

    /// Records the CPU the worker's thread pinned itself to.
    pub(crate) fn note_pinned(&self, cpu: usize) {
        let _first = self.pinned.set(cpu);
    }

    /// The CPU the worker's thread is pinned to, if it was.
    pub(crate) fn pinned_cpu(&self) -> Option<usize> {
        self.pinned.get().copied()
    }

    /// Worker adapter rule A3: stores the worker's shutdown report and wakes a shutdown waiting
    /// for it.
    pub(crate) fn publish_report(&self, report: WorkerShutdownReport) {
        *lock(&self.report) = Some(report);
        self.reported.notify_all();
    }

    /// Takes the worker's shutdown report, if it was published.
    pub(crate) fn take_report(&self) -> Option<WorkerShutdownReport> {
        lock(&self.report).take()
    }

    /// Waits until the worker's shutdown report is published or `deadline` passes, and takes
    /// it (`None` at the deadline).
    pub(crate) fn wait_report(&self, deadline: Instant) -> Option<WorkerShutdownReport> {
        let mut report = lock(&self.report);
        loop {
            if let Some(report) = report.take() {
                return Some(report);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            report = self
                .reported
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

/// The CPUs this process may run on, in order (`sched_getaffinity(2)` of the calling thread).
pub(crate) fn allowed_cpus() -> std::io::Result<Vec<usize>> {
    // SAFETY: `cpu_set_t` is a plain bit set, valid when zeroed.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable `cpu_set_t` of the size passed; pid 0 is this thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let cpus = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below `CPU_SETSIZE`, the set's capacity.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect();
    Ok(cpus)
}

/// Pins the calling thread to `cpu`.
pub(crate) fn pin_to(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is beyond the kernel's CPU set size"),
        ));
    }
    // SAFETY: `cpu_set_t` is a plain bit set, valid when zeroed.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` was checked against `CPU_SETSIZE` above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid `cpu_set_t` of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
