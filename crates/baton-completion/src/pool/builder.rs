//! Configuration of a [`BlockingPool`]: queue capacity, interruptible threads (fixed or
//! elastic), quarantine lane threads and the thread spawner hook.

use super::lane::{LaneId, LaneLimits, SENTINEL_TICK};
use super::lanes::Lanes;
use super::{BlockingPool, OsThreadSpawner, PoolShared, ThreadSpawner, spin};
use crate::sync::{Arc, StdArc};
use std::time::Duration;

/// How many interruptible threads the pool runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterruptibleThreads {
    /// Exactly this many, started by `build`.
    Fixed(usize),
    /// Started on demand up to `max`; an idle one leaves after `keep_alive`.
    Elastic {
        /// The most threads at once.
        max: usize,
        /// How long an idle thread waits for work before leaving.
        keep_alive: Duration,
    },
}

/// A pool configuration was invalid or its threads could not start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// A queue of capacity 0 could never accept a job.
    #[error("queue capacity must be at least 1")]
    ZeroCapacity,
    /// A lane with no threads could never run its jobs.
    #[error("the {lane} lane needs at least 1 thread")]
    ZeroThreads {
        /// `"interruptible"` or `"quarantine"`.
        lane: &'static str,
    },
    /// With no thread allowed to run short jobs, none would ever run.
    #[error("short-job parallelism must be at least 1")]
    ZeroParallelism,
    /// The OS refused to start a fixed thread.
    #[error("the OS refused to create a pool thread: {message}")]
    Spawn {
        /// The OS error.
        message: String,
    },
}

/// Builds a [`BlockingPool`].
///
/// Defaults: queue capacity 1024 per lane, elastic interruptible threads up to 64 with a 10 s
/// keep-alive, 4 quarantine threads (elastic, same keep-alive), short jobs spread over as many
/// threads as the process has CPUs, OS threads named `baton-pool-*`.
#[derive(Debug)]
pub struct BlockingPoolBuilder {
    capacity: usize,
    interruptible: InterruptibleThreads,
    quarantine_threads: usize,
    quarantine_keep_alive: Duration,
    short_job_parallelism: usize,
    sentinel_tick: Duration,
    spawner: StdArc<dyn ThreadSpawner>,
    name: String,
}

impl Default for BlockingPoolBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockingPoolBuilder {
    /// The defaults (see the type's documentation).
    pub fn new() -> Self {
        Self {
            capacity: 1024,
            interruptible: InterruptibleThreads::Elastic {
                max: 64,
                keep_alive: Duration::from_secs(10),
            },
            quarantine_threads: 4,
            quarantine_keep_alive: Duration::from_secs(10),
            short_job_parallelism: spin::cpus(),
            sentinel_tick: SENTINEL_TICK,
            spawner: StdArc::new(OsThreadSpawner),
            name: "baton-pool".to_owned(),
        }
    }

    /// How many accepted-but-not-started jobs each lane holds before rejecting with
    /// `Capacity`.
    pub fn queue_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// The interruptible lane's threads.
    pub fn interruptible_threads(mut self, threads: InterruptibleThreads) -> Self {
        self.interruptible = threads;
        self
    }

    /// The most quarantine-lane threads (started on demand).
    pub fn quarantine_threads(mut self, threads: usize) -> Self {
        self.quarantine_threads = threads;
        self
    }

    /// How long an idle quarantine thread waits for work before leaving.
    pub fn quarantine_keep_alive(mut self, keep_alive: Duration) -> Self {
        self.quarantine_keep_alive = keep_alive;
        self
    }

    /// How many threads of a lane run short jobs at once (pool rule P7). While a lane's jobs
    /// typically run for less than a thread takes to wake up (tens of microseconds), a job
    /// queued while this many threads are running or woken wakes no further thread: those
    /// threads take it as they finish, which costs no futex call and no context switch. Jobs
    /// that run longer are spread over every thread the lane may run, and a job queued behind
    /// jobs that block is found by the lane's sentinel within about a millisecond either way.
    /// Default: the CPUs this process may run on.
    pub fn short_job_parallelism(mut self, threads: usize) -> Self {
        self.short_job_parallelism = threads;
        self
    }

    /// How often a lane's sentinel looks at the queue (P7). Tests that count wakes lengthen it,
    /// so no tick falls inside the window they count.
    #[cfg(test)]
    pub(crate) fn sentinel_tick(mut self, tick: Duration) -> Self {
        self.sentinel_tick = tick;
        self
    }

    /// The hook that starts threads (inject failures in tests, pin threads, ...).
    pub fn thread_spawner(mut self, spawner: StdArc<dyn ThreadSpawner>) -> Self {
        self.spawner = spawner;
        self
    }

    /// The prefix of thread names.
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Validates the configuration and starts the fixed threads.
    pub fn build(self) -> Result<BlockingPool, BuildError> {
        if self.capacity == 0 {
            return Err(BuildError::ZeroCapacity);
        }
        if self.short_job_parallelism == 0 {
            return Err(BuildError::ZeroParallelism);
        }
        let (min, max, keep_alive) = match self.interruptible {
            InterruptibleThreads::Fixed(n) => (n, n, Duration::MAX),
            InterruptibleThreads::Elastic { max, keep_alive } => (0, max, keep_alive),
        };
        if max == 0 {
            return Err(BuildError::ZeroThreads {
                lane: "interruptible",
            });
        }
        if self.quarantine_threads == 0 {
            return Err(BuildError::ZeroThreads { lane: "quarantine" });
        }
        let lanes = Lanes::new(
            LaneLimits {
                capacity: self.capacity,
                min_threads: min,
                max_threads: max,
                keep_alive,
                short_job_parallelism: self.short_job_parallelism,
                sentinel_tick: self.sentinel_tick,
            },
            LaneLimits {
                capacity: self.capacity,
                min_threads: 0,
                max_threads: self.quarantine_threads,
                keep_alive: self.quarantine_keep_alive,
                short_job_parallelism: self.short_job_parallelism,
                sentinel_tick: self.sentinel_tick,
            },
        );
        let pool = BlockingPool {
            shared: Arc::new(PoolShared {
                lanes,
                spawner: self.spawner,
                name: self.name,
            }),
        };
        for _ in 0..min {
            pool.shared.lanes.add_thread(LaneId::Interruptible);
            if let Err(error) = PoolShared::spawn_lane_thread(&pool.shared, LaneId::Interruptible) {
                pool.shared.lanes.remove_thread(LaneId::Interruptible);
                // The threads already started see the closed pool and leave.
                let _ = pool.shared.lanes.close();
                return Err(BuildError::Spawn {
                    message: error.to_string(),
                });
            }
        }
        Ok(pool)
    }
}
