//! The task counters: how many tasks were accepted, and how each one ended.

use crate::raw::Finish;
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

/// The live counters behind [`TaskCounts`], updated from any thread.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    live: AtomicU64,
    spawned: AtomicU64,
    completed: AtomicU64,
    panicked: AtomicU64,
    cancelled: AtomicU64,
}

impl Counters {
    /// One task accepted.
    pub(crate) fn count_spawn(&self) {
        self.spawned.fetch_add(1, Ordering::Relaxed);
        self.live.fetch_add(1, Ordering::Relaxed);
    }

    /// One task finished, as `finish` says.
    pub(crate) fn count_finish(&self, finish: Finish) {
        let counter = match finish {
            Finish::Completed => &self.completed,
            Finish::Panicked => &self.panicked,
            Finish::Cancelled => &self.cancelled,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.live.fetch_sub(1, Ordering::Release);
    }

    pub(crate) fn live(&self) -> u64 {
        self.live.load(Ordering::Acquire)
    }

    pub(crate) fn snapshot(&self) -> TaskCounts {
        TaskCounts {
            live: self.live.load(Ordering::Acquire),
            spawned: self.spawned.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            panicked: self.panicked.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
        }
    }
}
