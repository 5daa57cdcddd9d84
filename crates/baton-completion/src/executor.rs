//! The executor traits: the glue between a runtime and whatever runs its external jobs
//! (crate rule E9). Both are used as trait objects.
//!
//! A runtime attaches once ([`IoExecutor::attach_runtime`]) and gets an [`ExecutorLease`]. Its
//! [`ExecutorLease::submit`] reserves capacity first, then arms and enqueues; a rejection
//! hands the (unarmed) submission back in [`Rejected`], so nothing is delivered and the caller
//! may [`Rejected::rollback`] it.

use crate::dispatch::Submission;
use crate::identity::RuntimeId;
use crate::sync::StdArc;
use baton_cancel::ContainedDrop;
use std::fmt;
use web_time::Instant;

/// An executor of external jobs that runtimes attach to.
pub trait IoExecutor: Send + Sync + fmt::Debug {
    /// Attaches a runtime. Refuses a runtime that is already attached and an executor that is
    /// shutting down.
    fn attach_runtime(
        &self,
        runtime_id: RuntimeId,
    ) -> Result<StdArc<dyn ExecutorLease>, AttachError>;

    /// The executor's counters right now.
    fn snapshot(&self) -> ExecutorSnapshot;

    /// Stops accepting work, cancels queued work, and waits for running work until `deadline`.
    fn shutdown(&self, deadline: Instant) -> ShutdownReport;
}

/// One runtime's handle on an executor.
pub trait ExecutorLease: Send + Sync + fmt::Debug {
    /// The runtime this lease belongs to.
    fn runtime_id(&self) -> RuntimeId;

    /// Reserves capacity, then arms and enqueues the submission. On rejection the submission
    /// comes back unarmed: nothing was or will be delivered for it.
    fn submit(&self, submission: Submission) -> Result<(), Rejected>;

    /// The executor's counters right now.
    fn snapshot(&self) -> ExecutorSnapshot;

    /// Detaches the runtime: later submissions are rejected with
    /// [`RejectReason::Detached`], and the runtime id may attach again. Work already accepted
    /// still runs and delivers.
    fn detach(&self);
}

/// Why attaching a runtime failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AttachError {
    /// The runtime already holds a lease on this executor.
    #[error("{runtime} is already attached to this executor; reuse its lease or detach it first")]
    DuplicateRuntime {
        /// The runtime.
        runtime: RuntimeId,
    },
    /// The executor is shutting down.
    #[error("the executor is shutting down and accepts no new runtimes")]
    ShuttingDown,
}

/// Why a submission was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RejectReason {
    /// The lane's queue is full; retry later or raise the capacity.
    #[error("the executor's queue is full ({capacity} jobs); retry later or raise the capacity")]
    Capacity {
        /// The lane's queue capacity.
        capacity: usize,
    },
    /// The executor is shutting down.
    #[error("the executor is shutting down and accepts no new work")]
    ShuttingDown,
    /// The runtime detached from the executor.
    #[error("the runtime detached from this executor; attach again to submit")]
    Detached,
    /// The submission's identity belongs to another runtime than the lease.
    #[error("the submission belongs to {submission_runtime}, not to this lease's {lease_runtime}")]
    ForeignRuntime {
        /// The runtime of the submission.
        submission_runtime: RuntimeId,
        /// The runtime of the lease.
        lease_runtime: RuntimeId,
    },
    /// The OS refused to create a worker thread for the submission.
    #[error("the OS refused to create a worker thread: {message}")]
    SpawnFailed {
        /// The OS error.
        message: String,
    },
}

/// A rejected submission, handed back unarmed.
#[derive(Debug, thiserror::Error)]
#[error("submission rejected: {reason}")]
pub struct Rejected {
    /// Why.
    pub reason: RejectReason,
    /// The submission, still unarmed (boxed: rejection is the cold path).
    pub submission: Box<Submission>,
}

impl Rejected {
    /// Takes the unarmed submission back, for example to retry it later.
    pub fn into_submission(self) -> Submission {
        *self.submission
    }

    /// Destroys the job without delivering anything.
    pub fn rollback(self) -> ContainedDrop {
        self.submission.rollback()
    }
}

/// An executor's counters.
///
/// They add up at every instant a snapshot is taken: `accepted = queued +
/// running_interruptible + running_quarantined + completed + cancelled + panicked`, and
/// `undeliverable <= completed + cancelled + panicked` (see [`ExecutorSnapshot::adds_up`]).
/// A job counts as `queued` from the moment it is accepted, not when a thread dequeues it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExecutorSnapshot {
    /// Jobs accepted since the executor started.
    pub accepted: u64,
    /// Accepted jobs not started yet.
    pub queued: u64,
    /// Interruptible jobs running now.
    pub running_interruptible: u64,
    /// Quarantined jobs running now.
    pub running_quarantined: u64,
    /// Jobs that finished with their result.
    pub completed: u64,
    /// Jobs that finished cancelled.
    pub cancelled: u64,
    /// Jobs whose body, construction or poll panicked.
    pub panicked: u64,
    /// Finished jobs whose completion found the runtime's inbox closed.
    pub undeliverable: u64,
    /// Submissions rejected (not part of `accepted`).
    pub rejected: u64,
}

impl ExecutorSnapshot {
    /// Jobs that finished, in any class.
    pub fn finished(&self) -> u64 {
        self.completed + self.cancelled + self.panicked
    }

    /// Jobs accepted and not finished yet.
    pub fn outstanding(&self) -> u64 {
        self.queued + self.running_interruptible + self.running_quarantined
    }

    /// Whether the counters add up (see the type's documentation).
    pub fn adds_up(&self) -> bool {
        self.accepted == self.outstanding() + self.finished()
            && self.undeliverable <= self.finished()
    }
}

/// What a shutdown achieved.
#[must_use = "a shutdown that exceeded its deadline left work running"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShutdownReport {
    /// No job is queued or running.
    Drained {
        /// The counters at that moment.
        snapshot: ExecutorSnapshot,
    },
    /// The deadline passed with jobs still running (they keep running and still deliver).
    DeadlineExceeded {
        /// The counters at that moment.
        snapshot: ExecutorSnapshot,
    },
}

impl ShutdownReport {
    /// The counters the report carries.
    pub fn snapshot(&self) -> ExecutorSnapshot {
        match self {
            Self::Drained { snapshot } | Self::DeadlineExceeded { snapshot } => *snapshot,
        }
    }
}
