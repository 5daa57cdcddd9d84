//! [`Runtime`]: owns the workers, their threads and the blocking pool; runs `block_on`, and
//! shuts everything down in order.

use std::fmt;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use baton_completion::{ExecutorSnapshot, ShutdownReport as ExecutorShutdown};
use baton_loan::WorkerDisposal;
use baton_task::RefuseSpawns;
use baton_uring::WorkerShutdownReport;
use web_time::Instant;

use crate::blocking::BlockingHandle;
use crate::builder::Builder;
use crate::context;
use crate::handle::Handle;
use crate::metrics::RuntimeMetrics;
use crate::shared::Shared;
use crate::task::JoinHandle;
use crate::worker_adapter::DROP_SHUTDOWN_TIMEOUT;

/// A Baton runtime: its io_uring workers (each a ring, a task scheduler and a completion inbox;
/// one by default, see [`Builder::workers`]), the background thread that runs worker 0 between
/// `block_on` calls and the threads of the others, and one blocking pool.
///
/// ```
/// fn main() -> std::io::Result<()> {
///     let rt = baton::Runtime::new()?;
///     let handle = rt.handle();
///     let background = handle.spawn(async { "ran without block_on" });
///     let local = 40;
///     let out = rt.block_on(async { local + 2 }); // borrows `local`: no 'static needed
///     assert_eq!(out, 42);
///     assert_eq!(rt.block_on(background).ok(), Some("ran without block_on"));
///     let report = rt.shutdown_timeout(std::time::Duration::from_secs(5));
///     assert!(report.io_drained);
///     Ok(())
/// }
/// ```
///
/// Dropping a runtime shuts it down as [`shutdown_timeout`](Runtime::shutdown_timeout) does,
/// waiting at most 10 seconds.
pub struct Runtime {
    handle: Handle,
    shut_down: bool,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

/// What [`Runtime::shutdown_timeout`] did: what was drained, cancelled, and still running.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let _task = rt.spawn(baton::time::sleep(std::time::Duration::from_secs(600)));
/// let report = rt.shutdown_timeout(std::time::Duration::from_secs(5));
/// assert!(report.io_drained && report.is_clean());
/// assert_eq!(report.blocking_still_running(), 0);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a shutdown report tells whether anything was left running"]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Tasks whose future was dropped (their `JoinHandle`s resolve cancelled), on every worker.
    pub tasks_cancelled: usize,
    /// Local tasks of other threads, leaked rather than dropped on the wrong thread.
    pub tasks_leaked: usize,
    /// On every worker, every I/O request the kernel owned completed before the deadline
    /// (writes and syncs in flight were finished, not cancelled).
    pub io_drained: bool,
    /// I/O requests whose memory was leaked on purpose because the kernel might still use it.
    pub io_leaked: usize,
    /// Final I/O completions reaped during shutdown.
    pub io_completed_during_shutdown: u64,
    /// Whether the blocking executor drained (no job queued or running) before the deadline;
    /// `None` for a shared executor (the runtime only detached from it).
    pub blocking_drained: Option<bool>,
    /// The blocking executor's counters at the end of its shutdown.
    pub blocking: Option<ExecutorSnapshot>,
    /// Worker 0's own report; `None` when a `block_on` on another thread still had the
    /// worker on loan at the deadline (it is shut down when that call gives it back).
    pub worker: Option<WorkerShutdownReport>,
    /// Every worker's own report, in worker order (the first is [`worker`](Self::worker)); an
    /// entry is `None` when that worker was not shut down within this call.
    pub workers: Vec<Option<WorkerShutdownReport>>,
    /// A `block_on` on another thread had the worker on loan when shutdown began: the worker
    /// was closed there (see [`closed_on_loan`](Self::closed_on_loan)), and shutdown waited,
    /// until its deadline, for that call to give it back.
    pub worker_on_loan: bool,
    /// The `block_on` that had the worker on loan closed it where it was before the deadline:
    /// its tasks were cancelled and its pending I/O failed with
    /// [`Error::Closed`](crate::Error::Closed), so the call could return.
    pub closed_on_loan: bool,
    /// Shutdown was called from inside the runtime — from one of its tasks, or from a
    /// `block_on` root polled with the worker — so it could not wait for the worker, which was
    /// busy running the caller: spawns were refused at once, and the worker shuts down when
    /// the caller's turn or root returns, after this call. `worker` is `None`, and the
    /// blocking counters are those taken when the queued jobs were cancelled.
    pub called_from_runtime: bool,
}

impl ShutdownReport {
    /// Blocking jobs still running at the deadline (they finish on their own; their results
    /// are dropped).
    pub fn blocking_still_running(&self) -> u64 {
        self.blocking.map_or(0, |snapshot| {
            snapshot.running_interruptible + snapshot.running_quarantined
        })
    }

    /// Nothing was left behind: I/O drained, no task leaked, the blocking executor drained.
    pub fn is_clean(&self) -> bool {
        self.io_drained
            && self.tasks_leaked == 0
            && self.blocking_drained != Some(false)
            && self
                .workers
                .iter()
                .all(|worker| worker.is_some_and(|worker| worker.is_clean()))
    }
}

impl Runtime {
    /// A runtime with the default settings (see [`Builder`]).
    ///
    /// # Errors
    ///
    /// When the ring, the threads or the pool cannot be set up; the error names the cause.
    pub fn new() -> io::Result<Runtime> {
        Builder::new().build()
    }

    /// A [`Builder`] with the default settings.
    pub fn builder() -> Builder {
        Builder::new()
    }

    pub(crate) fn from_handle(handle: Handle) -> Runtime {
        Runtime {
            handle,
            shut_down: false,
        }
    }

    /// Runs `future` to completion on the calling thread and returns its output.
    ///
    /// The future needs neither `Send` nor `'static`: it is polled in place, on this thread,
    /// while this thread borrows the runtime's worker and runs spawned tasks, I/O completions
    /// and timers between its polls. Calls nest (a `block_on` inside the future drives the same
    /// worker). When another thread has the worker, the future is polled directly instead (its
    /// I/O is then forwarded to the worker). Spawned work keeps running on the background
    /// thread after `block_on` returns. A panic in the future is re-raised here, after the
    /// worker was given back.
    ///
    /// # From inside a task
    ///
    /// Called from a task poll, `block_on` does not wait for the worker it holds: it drives
    /// only the worker's driver
    /// (I/O completions, timers, blocking-job completions) between polls of `future`, and runs
    /// no other task meanwhile. So a future that waits for *another task of the same worker*
    /// cannot progress there: polling its `JoinHandle` (or a `JoinSet` holding it) while it is
    /// unfinished panics, saying so (also under a `timeout` or a `select!`, where the wait
    /// could otherwise end), and waiting on a channel that task feeds hangs — the same caveat
    /// as tokio's `block_in_place`. Prefer `.await` inside tasks.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Runtime::new()?;
    /// let join = rt.spawn(async {
    ///     // The nested future's timer fires although this task holds the worker.
    ///     let nested = baton::time::sleep(std::time::Duration::from_millis(1));
    ///     baton::Handle::current().block_on(nested);
    ///     "slept"
    /// });
    /// assert_eq!(rt.block_on(join).ok(), Some("slept"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.handle.block_on(future)
    }

    /// A handle to this runtime (`Clone + Send + Sync`), usable from any thread.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Spawns a `Send` task; see [`Handle::spawn`].
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future)
    }

    /// Runs one task per worker; see [`Handle::on_each_worker`].
    pub fn on_each_worker<M, F>(&self, make: M) -> Vec<JoinHandle<F::Output>>
    where
        M: FnMut(usize) -> F,
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.on_each_worker(make)
    }

    /// Runs a blocking job; see [`Handle::spawn_blocking`].
    pub fn spawn_blocking<F, T>(&self, f: F) -> BlockingHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.handle.spawn_blocking(f)
    }

    /// A snapshot of the runtime's counters (tasks, I/O queued and in flight, the inbox, the
    /// blocking pool).
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Runtime::new()?;
    /// let join = rt.spawn(async { 1 });
    /// assert_eq!(rt.block_on(join).ok(), Some(1));
    /// let metrics = rt.metrics();
    /// assert_eq!(metrics.tasks.spawned, 1);
    /// assert_eq!(metrics.blocking.accepted, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn metrics(&self) -> RuntimeMetrics {
        self.handle.shared.metrics()
    }

    /// Shuts the runtime down, waiting at most `timeout`:
    ///
    /// 1. the blocking executor stops accepting jobs and withdraws the queued ones: their
    ///    bodies never run (a shared executor is only detached from; a job queued there is
    ///    given up in step 2);
    /// 2. the worker's inbox closes, every task is cancelled (its future dropped), and
    ///    in-flight I/O is cancelled — except writes and syncs, which are finished. The worker
    ///    is first brought to the calling thread when it can be, so the local tasks this thread
    ///    spawned are dropped here (a local task of another thread is leaked, never dropped on
    ///    the wrong thread, and counted in [`ShutdownReport::tasks_leaked`]);
    /// 3. the worker waits for the kernel's last completions until the deadline;
    /// 4. running blocking jobs get what is left of the deadline (a job still running then
    ///    finishes on its own; its result is dropped, as is any result that arrives after the
    ///    worker closed).
    ///
    /// When a `block_on` on another thread has the worker on loan, step 2 happens there, at
    /// that call's next dispatch boundary: its tasks are cancelled and its pending I/O fails
    /// with [`Error::Closed`](crate::Error::Closed), so its future can finish; this call waits
    /// (until the deadline) for that `block_on` to give the worker back, which runs step 3.
    /// The report says so ([`ShutdownReport::worker_on_loan`],
    /// [`ShutdownReport::closed_on_loan`]).
    ///
    /// # From inside the runtime
    ///
    /// Called from one of this runtime's own tasks (the `Runtime` moved into it), or from a
    /// `block_on` root of it, this call cannot wait for the worker: that worker is running the
    /// caller. It refuses every spawn at once — nothing spawned afterwards runs, not even a
    /// local task of the caller — stops the blocking executor (step 1) and closes the loan, then
    /// returns without waiting ([`ShutdownReport::called_from_runtime`]). The caller's task (or
    /// root) keeps running until it returns or awaits; at that point whoever holds the worker
    /// cancels its tasks and drains it (steps 2 and 3). Running blocking jobs are not waited
    /// for.
    ///
    /// Handles used afterwards get clear errors: spawned tasks resolve cancelled, I/O fails
    /// with [`Error::Closed`](crate::Error::Closed), timeouts with
    /// [`TimeoutError::Closed`](crate::time::TimeoutError::Closed), blocking jobs with
    /// [`BlockingError::Closed`](crate::BlockingError::Closed): those withdrawn in step 1, and
    /// those whose result had not reached their handle when the worker closed, whether started
    /// on the worker or relayed from another thread. Their
    /// [`BlockingHandle::cancel`](crate::blocking::BlockingHandle::cancel) reports
    /// [`BlockingCancel::Closed`](crate::blocking::BlockingCancel::Closed) and
    /// [`is_finished`](crate::blocking::BlockingHandle::is_finished) turns true once nothing
    /// runs their body any more. A job cancelled through its handle before stays
    /// [`BlockingError::Cancelled`](crate::BlockingError::Cancelled), as does one started on
    /// the worker and still queued on a shared executor, which the worker's closure cancels.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Runtime::new()?;
    /// let report = rt.shutdown_timeout(std::time::Duration::from_secs(5));
    /// assert!(report.is_clean(), "{report:?}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn shutdown_timeout(mut self, timeout: Duration) -> ShutdownReport {
        self.shut_down = true;
        shutdown(&self.handle, timeout)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if !self.shut_down {
            let _report = shutdown(&self.handle, DROP_SHUTDOWN_TIMEOUT);
        }
    }
}

fn shutdown(handle: &Handle, timeout: Duration) -> ShutdownReport {
    let shared = &handle.shared;
    let deadline = Instant::now() + timeout;
    // This thread runs a worker further up its stack (a task, or a root with worker 0
    // borrowed): it must not wait for that worker, which is busy running this very call.
    let inside = context::runs_worker(shared.runtime_id());
    // Workers rule Q6: from here on no worker accepts a spawn (baton-task rule T8: refused from
    // any thread, without the scheduler), so a task on one worker cannot start work on another
    // that shutdown is about to stop, and a caller inside gets nothing new run.
    for worker in shared.workers() {
        let _refused: RefuseSpawns = worker.handle().spawner().refuse_spawns();
    }
    // Step 1: the executor refuses new jobs and withdraws the queued ones at once (pool rule
    // P5); their `Cancelled` completions reach the still-open inboxes. Running jobs are waited
    // for in step 4, so a long job cannot eat the time the kernel needs to finish writes.
    let cancelled_queued = shared.stop_executor();
    // Steps 2 and 3 run where each worker is dropped (the worker adapter's `Drop`); from inside,
    // when the caller's turn or root returns (loan rule L8: the background thread or the
    // borrower sees the slot closed there).
    shared.set_shutdown_deadline(deadline);
    let _first = shared.begin_shutdown();
    let (worker_on_loan, workers) = if inside {
        close_from_inside(shared);
        (false, vec![None; shared.workers().len()])
    } else {
        close_from_outside(shared, deadline)
    };
    // Step 4: running blocking jobs get what is left of the deadline — except from inside,
    // where waiting would hold up the worker this thread runs.
    let blocking = if inside {
        cancelled_queued
    } else {
        shared.finish_executor(deadline)
    };
    let reported = || workers.iter().flatten();
    let report = ShutdownReport {
        tasks_cancelled: reported().map(|w| w.tasks.cancelled).sum(),
        tasks_leaked: reported().map(|w| w.tasks.leaked).sum(),
        io_drained: workers.iter().all(|w| w.is_some_and(|w| w.driver.drained)),
        io_leaked: reported().map(|w| w.driver.leaked).sum(),
        io_completed_during_shutdown: reported().map(|w| w.driver.completed_during_shutdown).sum(),
        blocking_drained: blocking.map(|report| matches!(report, ExecutorShutdown::Drained { .. })),
        blocking: blocking.map(|report| report.snapshot()),
        worker: workers[0],
        workers,
        worker_on_loan,
        closed_on_loan: shared.primary().was_closed_on_loan(),
        called_from_runtime: inside,
    };
    crate::trace::runtime_shut_down(&report);
    report
}

/// Workers rule Q6 from outside: each worker's loan closes in worker order and the worker is
/// shut down (here, by its thread, or by the `block_on` that has worker 0 on loan, waited for
/// until `deadline`). Returns whether worker 0 was on loan, and every worker's report.
fn close_from_outside(
    shared: &Shared,
    deadline: Instant,
) -> (bool, Vec<Option<WorkerShutdownReport>>) {
    let mut worker_on_loan = false;
    let reports = shared
        .workers()
        .iter()
        .map(|worker| {
            let loan = worker.loan().shutdown();
            if loan.worker == WorkerDisposal::DroppedOnReturn {
                // The borrower closes the worker at its next dispatch boundary (worker adapter
                // rule A7) and drops it when its `block_on` returns, which publishes the report.
                worker_on_loan = true;
                worker.wait_report(deadline)
            } else {
                worker.take_report()
            }
        })
        .collect();
    (worker_on_loan, reports)
}

/// Shuts down the loans of the workers at `indices`.
fn close_workers(shared: &Shared, indices: &[usize]) {
    for &index in indices {
        let _closed = shared.workers()[index].loan().shutdown();
    }
}

/// Workers rule Q6 from inside: this thread's own worker only closes (it is dropped when the
/// caller's turn or root returns); the others are shut down by a thread of their own, so this
/// call never waits for a worker while it holds one.
fn close_from_inside(shared: &Arc<Shared>) {
    let here = context::current_worker(shared.runtime_id());
    let mut others = Vec::new();
    for worker in shared.workers() {
        if Some(worker.index()) == here {
            let _closed = worker.loan().shutdown();
        } else {
            others.push(worker.index());
        }
    }
    if others.is_empty() {
        return;
    }
    let closer = Arc::clone(shared);
    let closing = others.clone();
    let spawned = std::thread::Builder::new()
        .name("baton-shutdown".to_owned())
        .spawn(move || close_workers(&closer, &closing));
    if spawned.is_err() {
        // Without a thread of their own they are closed here: each waits at most for its own
        // kernel completions, never for this thread's worker.
        close_workers(shared, &others);
    }
}
