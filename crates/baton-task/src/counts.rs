//! The task counters: how many tasks were accepted, and how each one ended.

use crate::raw::Finish;
use crate::run_queues::RunQueues;
use crate::sync::{AtomicU64, Ordering};

/// Task counts, for metrics and quiescence checks.
///
/// `spawned == live + completed + panicked + cancelled` whenever the scheduler is idle. Spawns
/// refused after shutdown are not counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskCounts {
    /// Tasks accepted and not yet finished (queued, idle or running).
    pub live: u64,
    /// Tasks accepted since the scheduler was created.
    pub spawned: u64,
    /// Tasks that returned their output.
    pub completed: u64,
    /// Tasks whose poll panicked.
    pub panicked: u64,
    /// Tasks cancelled by an abort or by shutdown (including leaked local tasks).
    pub cancelled: u64,
}

/// The counts of two schedulers together (a runtime with several workers sums theirs).
impl std::ops::Add for TaskCounts {
    type Output = TaskCounts;

    fn add(self, other: TaskCounts) -> TaskCounts {
        TaskCounts {
            live: self.live + other.live,
            spawned: self.spawned + other.spawned,
            completed: self.completed + other.completed,
            panicked: self.panicked + other.panicked,
            cancelled: self.cancelled + other.cancelled,
        }
    }
}

/// The live counters behind [`TaskCounts`], read from any thread.
///
/// Invariant: every counter but `spawned_remote` has one writer at a time, the holder of the
/// core claim (T9; the `&RunQueues` argument is the witness), so it is bumped with a load and a
/// store instead of a read-modify-write; the claim's release/acquire hand-over orders one
/// holder's writes before the next one's. `spawned_remote` is bumped under the injection
/// queue's lock by whichever thread pushes. `live` is derived: every finished task was counted
/// as spawned before its finish was, so reading the finishes first (acquire) and the spawns
/// after never sees more finishes than spawns.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    spawned_here: AtomicU64,
    spawned_remote: AtomicU64,
    completed: AtomicU64,
    panicked: AtomicU64,
    cancelled: AtomicU64,
}

/// One more on a counter that only the core claim holder writes (see [`Counters`]).
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Release);
}

impl Counters {
    /// One task accepted by the core claim holder.
    pub(crate) fn count_spawn_here(&self, _claim_held: &RunQueues) {
        bump(&self.spawned_here);
    }

    /// One task accepted through the injection queue; the caller holds its lock.
    pub(crate) fn count_spawn_injected(&self) {
        self.spawned_remote.fetch_add(1, Ordering::Release);
    }

    /// One task finished, as `finish` says; counted by the core claim holder.
    pub(crate) fn count_finish(&self, finish: Finish, _claim_held: &RunQueues) {
        let counter = match finish {
            Finish::Completed => &self.completed,
            Finish::Panicked => &self.panicked,
            Finish::Cancelled => &self.cancelled,
        };
        bump(counter);
    }

    pub(crate) fn live(&self) -> u64 {
        self.snapshot().live
    }

    pub(crate) fn snapshot(&self) -> TaskCounts {
        let completed = self.completed.load(Ordering::Acquire);
        let panicked = self.panicked.load(Ordering::Acquire);
        let cancelled = self.cancelled.load(Ordering::Acquire);
        let spawned =
            self.spawned_here.load(Ordering::Acquire) + self.spawned_remote.load(Ordering::Acquire);
        TaskCounts {
            live: spawned.saturating_sub(completed + panicked + cancelled),
            spawned,
            completed,
            panicked,
            cancelled,
        }
    }
}
