//! [`RuntimeMetrics`]: a snapshot of a runtime's counters, from any thread.
//!
//! Task and blocking-pool counters are read directly (they are atomic). The driver's and the
//! inbox's counters belong to each worker, which only the thread running it may read, so the
//! worker adapter publishes them: every [`PUBLISH_EVERY`] turns (a `block_on` giving the worker
//! back counts as one), at shutdown, and on request — [`Runtime::metrics`](crate::Runtime::metrics)
//! asks every worker for a fresh copy, unparks them and waits briefly for their next turns to
//! publish it. The worker the calling thread runs (inside `block_on` or a task) is read directly
//! instead (worker adapter rule A4), without waiting. The runtime's counters are the sums over
//! its workers; [`RuntimeMetrics::workers`] has each worker's own.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use baton_completion::ExecutorSnapshot;
use baton_task::TaskCounts;
use baton_uring::{InboxMetrics, Worker};

use crate::context;
use crate::shared::{Shared, lock};

/// The worker publishes its counters at least once per this many turns.
pub(crate) const PUBLISH_EVERY: u64 = 64;

/// How long [`Runtime::metrics`](crate::Runtime::metrics) waits for a fresh copy of the
/// worker's counters before it settles for the last one.
const FRESH_WAIT: Duration = Duration::from_millis(20);

/// A snapshot of a runtime's counters.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let metrics: baton::RuntimeMetrics = rt.block_on(async {
///     let _timer = baton::spawn(baton::time::sleep(std::time::Duration::from_secs(60)));
///     baton::task::yield_now().await;
///     baton::Handle::current().block_on(async {}); // nested roots count too
///     rt.metrics()
/// });
/// assert_eq!(metrics.roots_active, 1);
/// assert!(metrics.tasks.live >= 1);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuntimeMetrics {
    /// Tasks: live, spawned, completed, panicked, cancelled (exact; summed over the workers).
    pub tasks: TaskCounts,
    /// I/O requests waiting for ring space or a durability permit.
    pub ops_queued: usize,
    /// I/O requests the kernel owns.
    pub ops_in_flight: usize,
    /// I/O requests completed since the runtime started.
    pub ops_completed: u64,
    /// Armed timers (sleeps and deadlines).
    pub timers: usize,
    /// The completion inbox: external completions accepted, settled, stale, foreign, held.
    pub inbox: InboxMetrics,
    /// External waits (blocking jobs) registered and not consumed yet.
    pub waits: usize,
    /// The blocking executor's counters (exact): accepted, queued, running, completed,
    /// cancelled, panicked, rejected.
    pub blocking: ExecutorSnapshot,
    /// `block_on` calls running right now (on any thread, with or without the worker).
    pub active_block_ons: usize,
    /// `block_on` roots driven on the worker right now: each counts as a live task,
    /// so a runtime with one is not [quiescent](RuntimeMetrics::is_quiescent).
    pub roots_active: usize,
    /// Wakers that panicked when the worker woke or dropped them (a foreign executor's waker
    /// of a forwarded operation, say): each was contained, the operation retired as usual, and
    /// the runtime kept running; the first one was reported on stderr.
    pub waker_panics: u64,
    /// Whether every worker's counters above are a copy taken for this call (`false`: a worker
    /// was busy on another thread, and its last published copy is shown).
    pub worker_counters_fresh: bool,
    /// Each worker's own counters, in worker order.
    pub workers: Vec<WorkerMetrics>,
}

/// One worker's counters, in [`RuntimeMetrics::workers`].
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Builder::new().workers(2).build()?;
/// let on_one = rt.handle().spawn_on(1, async { 7 });
/// assert_eq!(rt.block_on(on_one).ok(), Some(7));
/// let metrics = rt.metrics();
/// assert_eq!(metrics.workers.len(), 2);
/// assert_eq!(metrics.workers[1].tasks.spawned, 1);
/// // A worker too busy to publish within the call shows its last copy, and says so.
/// assert!(metrics.workers[1].turns > 0 || !metrics.workers[1].fresh);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerMetrics {
    /// Tasks spawned on this worker: live, spawned, completed, panicked, cancelled (exact).
    pub tasks: TaskCounts,
    /// I/O requests waiting for ring space or a durability permit.
    pub ops_queued: usize,
    /// I/O requests the kernel owns.
    pub ops_in_flight: usize,
    /// I/O requests completed since the runtime started.
    pub ops_completed: u64,
    /// Armed timers.
    pub timers: usize,
    /// Driver turns run (looks at the ring, the timers and messages from other threads).
    pub turns: u64,
    /// Turns that waited in the ring because nothing was ready.
    pub parks: u64,
    /// The CPU the worker's own thread is pinned to ([`Builder::pin_workers`](crate::Builder::pin_workers)).
    pub cpu: Option<usize>,
    /// Whether the counters above were published for this call.
    pub fresh: bool,
}

impl RuntimeMetrics {
    /// No live task or root, no I/O queued or in flight, no timer, no external wait, and the
    /// blocking executor has nothing queued or running.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Runtime::new()?;
    /// assert!(!rt.block_on(async { rt.metrics() }).is_quiescent()); // the root is live work
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_quiescent(&self) -> bool {
        self.tasks.live == 0
            && self.roots_active == 0
            && self.ops_queued == 0
            && self.ops_in_flight == 0
            && self.timers == 0
            && self.waits == 0
            && self.blocking.queued == 0
            && self.blocking.running_interruptible == 0
            && self.blocking.running_quarantined == 0
    }
}

/// Where the worker adapter publishes the worker's counters.
#[derive(Debug, Default)]
pub(crate) struct MetricsCell {
    requested: AtomicBool,
    version: AtomicU64,
    turns: AtomicU64,
    latest: Mutex<Option<baton_uring::WorkerMetrics>>,
}

impl MetricsCell {
    /// Publishes `worker`'s counters now.
    pub(crate) fn publish(&self, worker: &Worker) {
        let metrics = worker.metrics();
        *lock(&self.latest) = Some(metrics);
        self.requested.store(false, Ordering::Release);
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// Publishes when asked to, or every [`PUBLISH_EVERY`] calls.
    pub(crate) fn publish_if_due(&self, worker: &Worker) {
        // Only the thread driving the worker counts turns, and the worker changes hands with
        // release/acquire ordering, so a load and a store suffice (no read-modify-write).
        let turns = self.turns.load(Ordering::Relaxed);
        self.turns.store(turns.wrapping_add(1), Ordering::Relaxed);
        if self.requested.load(Ordering::Acquire) || turns.is_multiple_of(PUBLISH_EVERY) {
            self.publish(worker);
        }
    }
}

impl Shared {
    /// Builds a snapshot, asking every worker for a fresh copy of its counters first (workers
    /// rule Q7).
    pub(crate) fn metrics(&self) -> RuntimeMetrics {
        let runtime = self.runtime_id();
        // This thread runs one worker further up its stack (a root, a task): read it here,
        // since no other thread could publish while this one holds it.
        let here = context::current_worker(runtime);
        let mut fresh: Vec<bool> = self.workers().iter().map(|_| false).collect();
        if let Some(index) = here {
            let cell = self.workers()[index].metrics_cell();
            fresh[index] = context::with_worker(runtime, |worker| cell.publish(worker)).is_some();
        }
        let before: Vec<u64> = self
            .workers()
            .iter()
            .map(|worker| worker.metrics_cell().version.load(Ordering::Acquire))
            .collect();
        for (worker, fresh) in self.workers().iter().zip(&fresh) {
            if !fresh {
                worker
                    .metrics_cell()
                    .requested
                    .store(true, Ordering::Release);
                worker.handle().unpark();
            }
        }
        let asked = Instant::now();
        loop {
            for ((worker, fresh), before) in self.workers().iter().zip(&mut fresh).zip(&before) {
                *fresh = *fresh || worker.metrics_cell().version.load(Ordering::Acquire) != *before;
            }
            let waiting = self
                .workers()
                .iter()
                .zip(&fresh)
                .any(|(worker, fresh)| !fresh && !worker.handle().is_closed());
            if !waiting || asked.elapsed() >= FRESH_WAIT {
                break;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        let published: Vec<Option<baton_uring::WorkerMetrics>> = self
            .workers()
            .iter()
            .map(|worker| *lock(&worker.metrics_cell().latest))
            .collect();
        let workers: Vec<WorkerMetrics> = self
            .workers()
            .iter()
            .zip(&published)
            .zip(&fresh)
            .map(|((worker, counters), &fresh)| WorkerMetrics {
                tasks: worker.handle().spawner().counts(),
                ops_queued: counters.map_or(0, |c| c.driver.queued),
                ops_in_flight: counters.map_or(0, |c| c.driver.in_flight),
                ops_completed: counters.map_or(0, |c| c.driver.completed),
                timers: counters.map_or(0, |c| c.driver.timers),
                turns: counters.map_or(0, |c| c.driver.turns),
                parks: counters.map_or(0, |c| c.driver.parks),
                cpu: worker.pinned_cpu(),
                fresh,
            })
            .collect();
        let published = || published.iter().flatten();
        RuntimeMetrics {
            tasks: workers
                .iter()
                .fold(TaskCounts::default(), |sum, worker| sum + worker.tasks),
            ops_queued: workers.iter().map(|w| w.ops_queued).sum(),
            ops_in_flight: workers.iter().map(|w| w.ops_in_flight).sum(),
            ops_completed: workers.iter().map(|w| w.ops_completed).sum(),
            timers: workers.iter().map(|w| w.timers).sum(),
            inbox: published().fold(InboxMetrics::default(), |sum, c| sum + c.inbox),
            waits: published().map(|c| c.waits).sum(),
            blocking: self.primary().lease().snapshot(),
            active_block_ons: self.primary().loan().active_roots(),
            roots_active: self.roots_active(),
            waker_panics: published().map(|c| c.driver.waker_panics).sum(),
            worker_counters_fresh: fresh.iter().all(|&fresh| fresh),
            workers,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn metrics_inside_block_on_read_the_worker_this_thread_holds() {
        let rt = crate::Runtime::new().expect("a runtime with default settings builds");
        let inside = rt.block_on(async { crate::Handle::current().shared.metrics() });
        assert!(inside.worker_counters_fresh, "{inside:?}");
    }

    #[test]
    fn metrics_inside_a_task_read_the_worker_this_thread_holds() {
        let rt = crate::Runtime::new().expect("a runtime with default settings builds");
        let join = rt.spawn(async { crate::Handle::current().shared.metrics() });
        let inside = rt.block_on(join).expect("the task does not panic");
        assert!(inside.worker_counters_fresh, "{inside:?}");
    }

    #[test]
    fn a_running_root_counts_as_live_work() {
        let rt = crate::Runtime::new().expect("a runtime with default settings builds");
        let inside = rt.block_on(async { crate::Handle::current().shared.metrics() });
        assert_eq!(inside.roots_active, 1, "{inside:?}");
        assert!(!inside.is_quiescent(), "{inside:?}");
        let after = rt.metrics();
        assert_eq!(after.roots_active, 0, "{after:?}");
    }
}
