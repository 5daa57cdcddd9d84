//! [`Handle`]: a `Clone + Send + Sync` reference to a runtime, usable from any thread.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};

use baton_completion::{ExecutorLease, IoExecutor, Registrar, RuntimeId};
use baton_loan::{Loan, ThreadRole};
use baton_uring::{DriverHandle, WorkerHandle, WorkerShutdownReport};
use web_time::Instant;

use crate::context;
use crate::error::Error;
use crate::metrics::MetricsCell;
use crate::nested_drive;
use crate::task::JoinHandle;

/// The runtime's lifecycle, as its handles see it.
const RUNNING: u8 = 0;
const SHUTTING_DOWN: u8 = 1;

/// What every handle of one runtime shares.
///
/// Invariant: `loan` is set once, right after the worker was handed to the loan driver, before
/// any handle escapes `Builder::build`. The loan holds the worker, whose adapter holds a
/// `Handle`: that cycle is broken when the loan shuts down and drops the worker.
pub(crate) struct Shared {
    pub(crate) runtime_id: RuntimeId,
    pub(crate) worker: WorkerHandle,
    pub(crate) registrar: Registrar,
    pub(crate) lease: Arc<dyn ExecutorLease>,
    /// The blocking executor, and whether this runtime owns it (shuts it down).
    pub(crate) executor: Arc<dyn IoExecutor>,
    pub(crate) owns_executor: bool,
    pub(crate) loan: OnceLock<Loan>,
    state: AtomicU8,
    /// Until when the worker's shutdown may wait for the kernel; set before the loan closes.
    pub(crate) shutdown_deadline: Mutex<Option<Instant>>,
    /// What the worker's shutdown reported, stored by whoever dropped the worker (worker
    /// adapter rule 3).
    worker_report: Mutex<Option<WorkerShutdownReport>>,
    /// Notified when `worker_report` is stored: a shutdown whose worker is on loan waits for it.
    worker_reported: Condvar,
    /// The worker was closed where a `block_on` had it on loan (worker adapter rule 7).
    closed_on_loan: AtomicBool,
    /// The worker's counters, as last published by the worker adapter.
    pub(crate) metrics: MetricsCell,
    /// `block_on` roots being driven on the worker right now (worker adapter rule 5).
    pub(crate) roots_active: AtomicUsize,
}

impl Shared {
    pub(crate) fn new(
        runtime_id: RuntimeId,
        worker: WorkerHandle,
        lease: Arc<dyn ExecutorLease>,
        executor: Arc<dyn IoExecutor>,
        owns_executor: bool,
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
        }
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

    /// Worker adapter rule 3: stores the worker's shutdown report and wakes a shutdown waiting
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

    /// Worker adapter rule 7: the worker was closed where a `block_on` had it on loan.
    pub(crate) fn note_closed_on_loan(&self) {
        self.closed_on_loan.store(true, Ordering::Release);
    }

    /// Whether the worker was closed on loan (worker adapter rule 7).
    pub(crate) fn was_closed_on_loan(&self) -> bool {
        self.closed_on_loan.load(Ordering::Acquire)
    }
}

/// A handle to a runtime: spawns tasks and blocking jobs from any thread, and runs
/// [`block_on`](Handle::block_on). `Clone + Send + Sync`; cloning is cheap.
///
/// A handle does not keep the runtime running: once the [`Runtime`](crate::Runtime) shut down,
/// spawned tasks resolve to a cancelled [`JoinError`](crate::JoinError), and I/O resolves to
/// [`Error::Closed`].
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let handle = rt.handle();
/// let join = std::thread::spawn(move || handle.spawn(async { 6 * 7 }))
///     .join()
///     .expect("the spawning thread does not panic");
/// assert_eq!(rt.block_on(join).ok(), Some(42));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Handle {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("runtime", &self.shared.runtime_id)
            .field("shutting_down", &self.shared.is_shutting_down())
            .finish_non_exhaustive()
    }
}

impl Handle {
    /// The handle of the runtime running on this thread (inside `block_on` or a task).
    ///
    /// # Panics
    ///
    /// Outside a runtime, with a message saying where to call it instead; see
    /// [`try_current`](Handle::try_current).
    #[track_caller]
    pub fn current() -> Handle {
        match Handle::try_current() {
            Ok(handle) => handle,
            Err(err) => panic!("{err}"),
        }
    }

    /// The handle of the runtime running on this thread, if any.
    ///
    /// # Errors
    ///
    /// [`Error::NotInRuntime`] outside a runtime.
    pub fn try_current() -> Result<Handle, Error> {
        context::current().ok_or(Error::NotInRuntime {
            function: "Handle::current",
        })
    }

    /// Spawns a `Send` task; it runs on the runtime's worker whether or not anyone is in
    /// `block_on` (between calls a background thread runs it). After shutdown the returned
    /// handle resolves to a cancelled [`JoinError`](crate::JoinError) and the future is dropped
    /// unpolled.
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared.worker.spawn(future)
    }

    /// Like [`spawn`](Handle::spawn), but reports a runtime that is shutting down.
    ///
    /// # Errors
    ///
    /// [`Error::ShuttingDown`] once shutdown began; the future is dropped unpolled.
    pub fn try_spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, Error>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if self.shared.is_shutting_down() {
            return Err(Error::ShuttingDown);
        }
        self.shared
            .worker
            .try_spawn(future)
            .map_err(|_| Error::ShuttingDown)
    }

    /// Runs `future` to completion on the calling thread, borrowing the runtime's worker when
    /// it can (see [`Runtime::block_on`](crate::Runtime::block_on), including its caveat for
    /// calls from inside a task: only I/O and timers progress there, never other tasks). After
    /// shutdown the future is still polled to completion, but its I/O fails with
    /// [`Error::Closed`].
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let future = InContext {
            handle: self,
            future,
        };
        let loan = self.shared.loan();
        match loan.thread_role() {
            // Inside a task poll (or the background thread's turn) the loan driver cannot lend
            // the worker; drive its driver from here (`nested_drive` rules) instead of polling
            // a future whose timers and I/O nobody would complete.
            ThreadRole::TaskPoll | ThreadRole::Background
                if context::runs_worker(self.shared.runtime_id) =>
            {
                let mut future = Some(future);
                context::with_worker(self.shared.runtime_id, |worker| {
                    let future = future.take().expect("taken once, here");
                    nested_drive::block_on_driver_only(worker, future)
                })
                .unwrap_or_else(|| {
                    loan.block_on(future.take().expect("not taken when no worker was found"))
                })
            }
            _ => loan.block_on(future),
        }
    }

    /// Whether shutdown began.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.is_shutting_down()
    }

    /// The runtime's process-unique id.
    pub fn runtime_id(&self) -> RuntimeId {
        self.shared.runtime_id
    }

    /// The driver that I/O of this runtime binds to.
    pub(crate) fn driver(&self) -> &DriverHandle {
        self.shared.worker.driver()
    }

    /// Whether two handles refer to the same runtime.
    pub fn same_runtime(&self, other: &Handle) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

/// Polls a `block_on` root with its runtime installed as the thread's current one, also when
/// the loan driver could not lend the worker (another thread has it, or the runtime shut
/// down): `Handle::current`, the file and socket constructors and `spawn_blocking` then reach
/// this runtime, and report `Closed` after shutdown instead of "not in a runtime".
///
/// Invariant: `future` is structurally pinned (never moved out, dropped in place).
struct InContext<'h, F> {
    handle: &'h Handle,
    future: F,
}

impl<F: Future> Future for InContext<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `future` is structurally pinned (type invariant): it is only reached through
        // this pinned projection and never moved; `handle` is a plain reference.
        let this = unsafe { self.get_unchecked_mut() };
        context::enter(this.handle.clone());
        let _leave = Leave;
        // SAFETY: see above; `this.future` stays where it is.
        unsafe { Pin::new_unchecked(&mut this.future) }.poll(cx)
    }
}

/// Pops the context pushed by [`InContext::poll`], also when the poll unwinds.
struct Leave;

impl Drop for Leave {
    fn drop(&mut self) {
        context::leave();
    }
}

/// Locks `mutex`, recovering the data if a panicking thread poisoned it: every value kept
/// behind these locks is a plain report or deadline that stays consistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
