//! The reference blocking pool, an [`IoExecutor`].
//!
//! # Rules
//!
//! P1. `submit` reserves capacity first (refusing another runtime's submission, a detached
//!    lease, a closed pool and a full lane), then arms the submission, then enqueues it. A refusal hands the submission back
//!    unarmed: nothing is delivered.
//!
//! P2. A job is counted as accepted and queued the moment it is accepted — when its
//!    reservation succeeds, or, for a job that needs a new thread, when that thread started —
//!    never when a thread dequeues it, so `queued` covers accepted jobs that are not in the
//!    queue yet and a shutdown cannot report *drained* while an accepted job is on its way.
//!
//! P3. Two lanes, each with its own bounded queue and threads: interruptible jobs (blocking and
//!    async) and quarantined jobs. Runaway quarantined work cannot starve interruptible work.
//!
//! P4. A lane starts a thread when its reserved jobs outnumber its free threads, up to its
//!    maximum; such a job is accepted only once its thread started. If the OS refuses the
//!    thread, the reservation is released and the submission is rejected with `SpawnFailed`.
//!    Other jobs accepted relying on that thread are never orphaned: the lane spawns a
//!    replacement, and if that fails too and the lane has no thread left, its queued jobs are
//!    cancelled (each delivers `Cancelled`, counted). A lane thread that dies unwinding is
//!    accounted the same way (its job counts as `WorkerPanic`). An idle elastic thread leaves
//!    after its keep-alive only if the remaining free threads cover every reserved job.
//!
//! P5. `shutdown` closes the pool (new submissions and attaches are refused), withdraws every
//!    queued job ([`Dispatch::withdraw`](crate::Dispatch::withdraw): its queue cell is marked
//!    withdrawn, `baton-cancel` rule C7, then it delivers `Cancelled`), then waits for running
//!    jobs until the deadline and reports `Drained` or `DeadlineExceeded`. A reservation that
//!    finds the pool closed at enqueue time is withdrawn by its submitter and counted the same
//!    way.
//!
//! P6. The counters add up at every instant ([`ExecutorSnapshot::adds_up`]) and never go
//!    down: `accepted` counts a job once, when it is accepted for good; every rejection
//!    (foreign runtime, detached lease, closed pool, full lane, refused thread) counts once in
//!    `rejected`.
//!
//! P7. Waking is lazy but never lost. A lane thread that finds its queue empty watches it
//!    briefly (one spinner per lane) before it sleeps; while jobs run, one sleeping thread is
//!    the lane's sentinel and looks at the queue every millisecond. A queued job wakes a
//!    sleeping thread only when no thread will look for it soon anyway — no spinner, no
//!    notification outstanding, and (while jobs count as short) no sentinel with a job
//!    running — and a thread that takes a job while more are queued hands the wake on the same
//!    way. Jobs are queued under the lock, and every thread re-checks the queue under the lock
//!    after it spins, wakes (a thread woken to stand by as the sentinel: at its first tick) or
//!    finishes a job, so a job always has a thread that will find it; a job queued behind long-running jobs
//!    waits at most about a sentinel tick, and a stream of short jobs costs no futex call per
//!    job. A sentinel's ticks count toward its keep-alive (P4). While a lane's jobs typically
//!    run shorter than a wake-up costs and `short_job_parallelism` threads are running or
//!    notified, a queued job wakes no further thread, only (if none exists) one to stand by as
//!    the sentinel; a tick that times out seeing jobs queued and none finished lifts that
//!    limit.
//!
mod builder;
mod lane;
mod lanes;
mod outcomes;
mod spin;
mod worker;

pub use builder::{BlockingPoolBuilder, BuildError, InterruptibleThreads};
pub(crate) use lane::LaneId;
#[cfg(test)]
pub(crate) use worker::LaneThread;

use self::lanes::Lanes;
use self::outcomes::{Attach, Enqueue, FailedSpawn, Recovery, SpawnConfirmed, Submitted};
use crate::dispatch::Submission;
use crate::executor::{
    AttachError, ExecutorLease, ExecutorSnapshot, IoExecutor, RejectReason, Rejected,
    ShutdownReport,
};
use crate::identity::RuntimeId;
use crate::prepared::WorkClass;
use crate::sync::{Arc, AtomicBool, Ordering, StdArc};
use std::fmt;
use web_time::Instant;

/// Starts the pool's threads. Replace it in the builder to name, pin or limit threads, or to
/// inject a spawn failure in tests.
pub trait ThreadSpawner: Send + Sync + fmt::Debug {
    /// Starts a thread running `body`. An `Err` is reported to the submitter (P4).
    fn spawn(&self, name: String, body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()>;
}

/// The default spawner: a named OS thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsThreadSpawner;

impl ThreadSpawner for OsThreadSpawner {
    fn spawn(&self, name: String, body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        crate::sync::thread::Builder::new()
            .name(name)
            .spawn(body)
            .map(drop)
    }
}

/// What lane threads share.
#[derive(Debug)]
pub(crate) struct PoolShared {
    lanes: Lanes,
    spawner: StdArc<dyn ThreadSpawner>,
    name: String,
}

impl PoolShared {
    fn spawn_lane_thread(this: &Arc<Self>, lane: LaneId) -> std::io::Result<()> {
        let shared = Arc::clone(this);
        let suffix = match lane {
            LaneId::Interruptible => "blocking",
            LaneId::Quarantine => "quarantine",
        };
        this.spawner.spawn(
            format!("{}-{suffix}", this.name),
            Box::new(move || worker::run_lane(shared, lane)),
        )
    }

    /// Follows a [`Recovery`] until every accepted job of `lane` has a thread or was cancelled
    /// (P4): spawns a replacement thread when asked, and cancels stranded dispatches,
    /// each delivering `Cancelled` and counted.
    fn recover(this: &Arc<Self>, lane: LaneId, mut recovery: Recovery) {
        loop {
            match recovery {
                Recovery::Covered => return,
                Recovery::Respawn => match Self::spawn_lane_thread(this, lane) {
                    Ok(()) => return,
                    Err(_) => recovery = this.lanes.spawn_failed(lane, FailedSpawn::Replacement),
                },
                Recovery::Stranded(dispatches) => {
                    for dispatch in dispatches {
                        let report = dispatch.cancel();
                        this.lanes.cancelled_queued(lane, report);
                    }
                    return;
                }
            }
        }
    }
}

/// The reference blocking pool. Build it with [`BlockingPool::builder`].
#[derive(Debug)]
pub struct BlockingPool {
    shared: Arc<PoolShared>,
}

impl BlockingPool {
    /// A builder with the documented defaults.
    pub fn builder() -> BlockingPoolBuilder {
        BlockingPoolBuilder::new()
    }

    /// Live threads of the interruptible lane and of the quarantine lane.
    pub fn thread_counts(&self) -> (usize, usize) {
        (
            self.shared.lanes.threads(LaneId::Interruptible),
            self.shared.lanes.threads(LaneId::Quarantine),
        )
    }

    /// How many times the interruptible lane and the quarantine lane woke a sleeping thread
    /// for queued jobs (rule P7): a diagnostic of how lazily the pool wakes, each wake being a
    /// futex call for the submitter and a context switch for the woken thread.
    pub fn thread_wakes(&self) -> (u64, u64) {
        (
            self.shared.lanes.wakes(LaneId::Interruptible),
            self.shared.lanes.wakes(LaneId::Quarantine),
        )
    }
}

#[cfg(test)]
impl BlockingPool {
    /// Test hook: what the pool's lane threads share, so a test can play one of them.
    pub(crate) fn shared(&self) -> &Arc<PoolShared> {
        &self.shared
    }

    /// Test hook: whether every idle interruptible thread sleeps with no wake outstanding
    /// ([`Lanes::asleep`]).
    pub(crate) fn interruptible_threads_asleep(&self) -> bool {
        self.shared.lanes.asleep(LaneId::Interruptible)
    }
}

impl IoExecutor for BlockingPool {
    fn attach_runtime(
        &self,
        runtime_id: RuntimeId,
    ) -> Result<StdArc<dyn ExecutorLease>, AttachError> {
        match self.shared.lanes.attach(runtime_id) {
            Attach::Attached => Ok(StdArc::new(PoolLease {
                shared: Arc::clone(&self.shared),
                runtime: runtime_id,
                detached: AtomicBool::new(false),
            })),
            Attach::Duplicate => Err(AttachError::DuplicateRuntime {
                runtime: runtime_id,
            }),
            Attach::ShuttingDown => Err(AttachError::ShuttingDown),
        }
    }

    fn snapshot(&self) -> ExecutorSnapshot {
        self.shared.lanes.snapshot()
    }

    fn shutdown(&self, deadline: Instant) -> ShutdownReport {
        // Rule P5: close, withdraw what is queued, then wait for what runs.
        for (lane, dispatch) in self.shared.lanes.close() {
            let report = dispatch.withdraw();
            self.shared.lanes.cancelled_queued(lane, report);
        }
        self.shared.lanes.wait_drained(deadline)
    }
}

impl Drop for BlockingPool {
    /// Dropping the pool without a shutdown still closes it: queued jobs deliver `Cancelled`,
    /// running jobs finish and deliver, and every lane thread then exits instead of idling
    /// forever. It does not wait.
    fn drop(&mut self) {
        let _ = self.shutdown(Instant::now());
    }
}

/// One runtime's lease on a [`BlockingPool`]. Dropping it detaches the runtime.
#[derive(Debug)]
struct PoolLease {
    shared: Arc<PoolShared>,
    runtime: RuntimeId,
    detached: AtomicBool,
}

impl ExecutorLease for PoolLease {
    fn runtime_id(&self) -> RuntimeId {
        self.runtime
    }

    fn submit(&self, submission: Submission) -> Result<(), Rejected> {
        // Rule P1: every refusal hands the submission back unarmed, and is counted here once.
        let reject = |reason, submission| {
            self.shared.lanes.rejected();
            Err(Rejected {
                reason,
                submission: Box::new(submission),
            })
        };
        let submission_runtime = submission.identity().runtime_id;
        if submission_runtime != self.runtime {
            return reject(
                RejectReason::ForeignRuntime {
                    submission_runtime,
                    lease_runtime: self.runtime,
                },
                submission,
            );
        }
        if self.detached.load(Ordering::Acquire) {
            return reject(RejectReason::Detached, submission);
        }
        let lane = match submission.work_class() {
            WorkClass::Interruptible => LaneId::Interruptible,
            WorkClass::Quarantined(_) => LaneId::Quarantine,
        };
        let lanes = &self.shared.lanes;
        // Rule P1: reserve first, then arm and enqueue (one lock unless a thread must start).
        let submission = match lanes.submit(lane, self.runtime, submission) {
            Submitted::Queued => return Ok(()),
            Submitted::Refused(reason, submission) => return reject(reason, submission),
            Submitted::Stranded(dispatch) => {
                // Rule P4: a lane left without threads cancels it rather than orphaning it.
                let report = dispatch.cancel();
                lanes.cancelled_queued(lane, report);
                return Ok(());
            }
            Submitted::SpawnFirst(submission) => submission,
        };
        match PoolShared::spawn_lane_thread(&self.shared, lane) {
            Ok(()) => match lanes.spawn_confirmed(lane) {
                SpawnConfirmed::Accepted => {}
                SpawnConfirmed::Refused(reason) => return reject(reason, submission),
            },
            Err(error) => {
                // Rule P4: this submission comes back unarmed; jobs accepted relying on the
                // thread get another one or are cancelled, never orphaned.
                let recovery = lanes.spawn_failed(lane, FailedSpawn::ForReservation);
                PoolShared::recover(&self.shared, lane, recovery);
                let message = error.to_string();
                return reject(RejectReason::SpawnFailed { message }, submission);
            }
        }
        let report = match lanes.enqueue(lane, submission.arm()) {
            Enqueue::Queued => return Ok(()),
            // Rule P5: accepted before the close, so it is withdrawn like the queued jobs.
            Enqueue::Closed(dispatch) => dispatch.withdraw(),
            // Rule P4: a lane left without threads cancels it rather than orphaning it.
            Enqueue::Stranded(dispatch) => dispatch.cancel(),
        };
        lanes.cancelled_queued(lane, report);
        Ok(())
    }

    fn snapshot(&self) -> ExecutorSnapshot {
        self.shared.lanes.snapshot()
    }

    fn detach(&self) {
        if !self.detached.swap(true, Ordering::AcqRel) {
            self.shared.lanes.detach(self.runtime);
        }
    }
}

impl Drop for PoolLease {
    fn drop(&mut self) {
        self.detach();
    }
}
