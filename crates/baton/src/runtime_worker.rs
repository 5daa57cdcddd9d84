//! [`RuntimeWorker`]: one worker of a runtime as its handles see it — the worker's handle, the
//! registrar and executor lease of its blocking jobs, the loan that runs it, its published
//! counters and its shutdown report — and [`pin_to`], which pins a worker's thread to a CPU.
//!
//! # Rules (the workers protocol; `docs/protocols/workers.md` walks through them)
//!
//! Q1. Placement: a spawn from outside a worker (`Handle::spawn`, `Runtime::spawn`, a
//!    `block_on` that holds no worker, `JoinSet::spawn_on`) goes to the worker with the fewest
//!    live tasks — its scheduler's exact count of tasks spawned and not finished — scanning
//!    from a cursor that moves one worker per spawn, so ties go round-robin. The counts are
//!    read without a lock: two racing spawns may pick one worker, and the next ones even it out.
//!
//! Q2. Locality: `baton::spawn` and `spawn_local` inside a task, or in a root that borrowed
//!    worker 0, go to the scheduler entered on this thread: the caller's own worker.
//!    `spawn_on(i)` goes to worker `i`; an index the runtime does not have is rejected (the
//!    future dropped unpolled, `CancelReason::NoSuchWorker`).
//!
//! Q3. Tasks never migrate: one worker's scheduler accepts a task and only it polls the task. A
//!    spawn or wake from any other thread — another worker's included — takes that scheduler's
//!    injection queue and unparks its worker (baton-task rules T2, T3). Workers 1..n each run on
//!    one thread for the runtime's life, so their tasks never change threads; worker 0 moves
//!    between its background thread and `block_on` callers, as with one worker (loan rules).
//!
//! Q4. Home: a handle has a home worker — the one whose thread made it current (worker 0 for
//!    `Runtime::handle` and outside every worker). Files and timers made through it submit to
//!    the home worker's ring (a file's writes and syncs must meet in one driver's durability
//!    permits). Sockets submit each request to the ring of the runtime's worker whose thread
//!    makes it, and to the home worker's ring only off the runtime's workers, so a connection
//!    handed to another worker does its I/O there. An operation polled from another worker or
//!    thread than the one it is bound to is forwarded there (forwarding rules) and the result
//!    comes back through the poller's waker. A blocking job registers its wait on the home worker (its registrar, its
//!    lease), and the relay that takes a wait over runs there, never on a placed worker.
//!
//! Q5. Each worker has its own [`RuntimeId`]: its inbox counts another worker's completion as
//!    foreign instead of settling it, so a job's result can only reach the wait table that
//!    registered it. The runtime's own id is worker 0's.
//!
//! Q6. Shutdown order: (1) every worker refuses spawns (baton-task rule T8), so a cross-worker
//!    spawn racing shutdown is either accepted — and cancelled by step 3 — or refused, never
//!    lost; (2) the blocking executor refuses jobs and withdraws the queued ones; (3) each
//!    worker's loan closes, in index order, and each worker shuts down with the one deadline
//!    (writes and syncs finished, tasks cancelled, the kernel drained) wherever it is — on the
//!    calling thread, on its own thread, or in the `block_on` that has worker 0 on loan;
//!    (4) running blocking jobs get what is left of the deadline. Called from inside a worker,
//!    that worker only closes (it shuts down when the caller's turn returns) and a thread of
//!    their own shuts the others down, so the call never waits while it holds a worker.
//!
//! Q7. Metrics: each worker's adapter publishes its counters; `Runtime::metrics` asks every
//!    worker for a fresh copy and sums them, reading the worker the calling thread holds
//!    directly.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
    /// `block_on` roots being driven on this worker right now (worker adapter rule A5). Only
    /// the thread holding the worker writes it, and the worker changes hands with
    /// release/acquire ordering, so a load and a store update it.
    roots_active: AtomicUsize,
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
            roots_active: AtomicUsize::new(0),
        }
    }

    /// Worker adapter rule A5: a `block_on` root starts being driven on this worker. Called
    /// only by the thread holding the worker (type invariant).
    pub(crate) fn root_started(&self) {
        let roots = self.roots_active.load(Ordering::Relaxed);
        self.roots_active.store(roots + 1, Ordering::Release);
    }

    /// Worker adapter rule A5: that root was dropped.
    pub(crate) fn root_finished(&self) {
        let roots = self.roots_active.load(Ordering::Relaxed);
        self.roots_active.store(roots - 1, Ordering::Release);
    }

    /// `block_on` roots driven on this worker right now.
    pub(crate) fn roots_active(&self) -> usize {
        self.roots_active.load(Ordering::Acquire)
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
