//! [`RuntimeMetrics`]: a snapshot of a runtime's counters, from any thread.
//!
//! Task and blocking-pool counters are read directly (they are atomic). The driver's and the
//! inbox's counters belong to the worker, which only the thread running it may read, so the
//! worker adapter publishes them: every [`PUBLISH_EVERY`] turns (a `block_on` giving the worker
//! back counts as one), at shutdown, and on request — [`Runtime::metrics`](crate::Runtime::metrics)
//! asks for a fresh copy, unparks the worker and waits briefly for the next turn to publish it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use baton_completion::ExecutorSnapshot;
use baton_task::TaskCounts;
use baton_uring::{InboxMetrics, Worker, WorkerMetrics};

use crate::handle::{Shared, lock};

/// The worker publishes its counters at least once per this many turns.
pub(crate) const PUBLISH_EVERY: u64 = 64;

/// How long [`Runtime::metrics`](crate::Runtime::metrics) waits for a fresh copy of the
/// worker's counters before it settles for the last one.
const FRESH_WAIT: Duration = Duration::from_millis(20);

/// A snapshot of a runtime's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuntimeMetrics {
    /// Tasks: live, spawned, completed, panicked, aborted (exact).
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
    /// `block_on` calls running right now.
    pub active_block_ons: usize,
    /// Whether the worker's counters above are a copy taken for this call (`false`: the worker
    /// was busy or on loan to this very thread, and the last published copy is shown).
    pub worker_counters_fresh: bool,
}

/// Where the worker adapter publishes the worker's counters.
#[derive(Debug, Default)]
pub(crate) struct MetricsCell {
    requested: AtomicBool,
    version: AtomicU64,
    turns: AtomicU64,
    latest: Mutex<Option<WorkerMetrics>>,
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
        let turns = self.turns.fetch_add(1, Ordering::Relaxed);
        if self.requested.load(Ordering::Acquire) || turns.is_multiple_of(PUBLISH_EVERY) {
            self.publish(worker);
        }
    }
}

impl Shared {
    /// Builds a snapshot, asking the worker for a fresh copy of its counters first.
    pub(crate) fn metrics(&self) -> RuntimeMetrics {
        let cell = &self.metrics;
        let before = cell.version.load(Ordering::Acquire);
        cell.requested.store(true, Ordering::Release);
        self.worker.unpark();
        let asked = Instant::now();
        let mut fresh = false;
        while !self.worker.is_closed() && asked.elapsed() < FRESH_WAIT {
            if cell.version.load(Ordering::Acquire) != before {
                fresh = true;
                break;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        let worker = *lock(&cell.latest);
        RuntimeMetrics {
            tasks: self.worker.spawner().counts(),
            ops_queued: worker.map_or(0, |w| w.driver.queued),
            ops_in_flight: worker.map_or(0, |w| w.driver.in_flight),
            ops_completed: worker.map_or(0, |w| w.driver.completed),
            timers: worker.map_or(0, |w| w.driver.timers),
            inbox: worker.map_or_else(InboxMetrics::default, |w| w.inbox),
            waits: worker.map_or(0, |w| w.waits),
            blocking: self.lease.snapshot(),
            active_block_ons: self.loan().active_roots(),
            worker_counters_fresh: fresh,
        }
    }
}
