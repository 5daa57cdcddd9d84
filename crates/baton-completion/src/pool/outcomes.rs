//! What the pool's lane operations tell their callers (pool rules P1–P5 in `pool/mod.rs`):
//! each outcome names the one thing the caller must do next.

use crate::dispatch::{Dispatch, RunReport, Submission};
use crate::executor::RejectReason;
use std::time::Duration;

/// The outcome of [`Lanes::submit`](super::lanes::Lanes::submit).
#[must_use = "a submission handed back must be rejected, spawned for or cancelled"]
#[derive(Debug)]
pub(crate) enum Submitted {
    /// Reserved, accepted, armed and queued: a lane thread will run it.
    Queued,
    /// Capacity is held for a job that needs a new lane thread first: spawn it, then call
    /// [`Lanes::spawn_confirmed`](super::lanes::Lanes::spawn_confirmed) or, if the OS refused,
    /// [`Lanes::spawn_failed`](super::lanes::Lanes::spawn_failed). The job is not accepted (nor
    /// counted) until then, and it is still unarmed.
    SpawnFirst(Submission),
    /// Refused; nothing was counted; the submission is unarmed.
    Refused(RejectReason, Submission),
    /// Accepted and armed, but the lane lost its last thread and could not start another
    /// (P4): cancel it and report through
    /// [`Lanes::cancelled_queued`](super::lanes::Lanes::cancelled_queued).
    Stranded(Dispatch),
}

/// The outcome of [`Lanes::spawn_confirmed`](super::lanes::Lanes::spawn_confirmed).
#[must_use = "a refused reservation must be rejected"]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SpawnConfirmed {
    /// The job is accepted: arm and enqueue it.
    Accepted,
    /// The pool closed while the thread was spawned: the reservation is released and the
    /// submission must be rejected with this reason.
    Refused(RejectReason),
}

/// Which spawn failed, for [`Lanes::spawn_failed`](super::lanes::Lanes::spawn_failed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailedSpawn {
    /// The spawn a [`Submitted::SpawnFirst`] asked for: its reservation is released.
    ForReservation,
    /// A replacement spawn asked for by a [`Recovery::Respawn`].
    Replacement,
}

/// What to do after a lane lost a thread or a thread could not start (P4).
#[must_use = "queued work without a thread must get one or be cancelled"]
#[derive(Debug)]
pub(crate) enum Recovery {
    /// Every accepted job of the lane has a thread that will run it.
    Covered,
    /// Queued work lacks a thread and one more is counted: spawn it; if that fails report
    /// [`FailedSpawn::Replacement`].
    Respawn,
    /// The lane has no thread left and none could be started: cancel these dispatches and
    /// report each through [`Lanes::cancelled_queued`](super::lanes::Lanes::cancelled_queued).
    Stranded(Vec<Dispatch>),
}

/// The outcome of [`Lanes::enqueue`](super::lanes::Lanes::enqueue).
#[must_use = "a dispatch refused by a closed pool must be cancelled and counted"]
#[derive(Debug)]
pub(crate) enum Enqueue {
    /// In the queue; a lane thread will run it.
    Queued,
    /// The pool closed after the reservation: cancel it and report through
    /// [`Lanes::cancelled_queued`](super::lanes::Lanes::cancelled_queued).
    Closed(Dispatch),
    /// The lane lost its last thread and could not start another after the reservation
    /// (P4): cancel it and report through [`Lanes::cancelled_queued`](super::lanes::Lanes::cancelled_queued).
    Stranded(Dispatch),
}

/// A job a lane thread finished: how it ended and how long it ran (for the lane's estimate of
/// its jobs' length, rule P7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FinishedJob {
    pub(crate) report: RunReport,
    pub(crate) ran_for: Duration,
}

/// What a lane thread should do next.
#[must_use = "a worker must run the dispatch it was handed"]
#[derive(Debug)]
pub(crate) enum Next {
    Run(Dispatch),
    Exit,
}

/// The outcome of attaching a runtime.
#[must_use = "a refused attach must be reported"]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Attach {
    Attached,
    Duplicate,
    ShuttingDown,
}
