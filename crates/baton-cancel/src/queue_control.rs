//! Queue control: the shared three-state cell that decides whether queued work is cancelled or
//! started (crate rules C1–C3).
//!
//! ```text
//!            cancel_before_start                claim_for_run
//!  CANCELLED <------------------- QUEUED -------------------> RUNNING
//!     |  cancel: AlreadyCancelled                  cancel: AlreadyRunning |
//!     |  claim:  CompleteCancelled                 claim:  Run            |
//! ```

use crate::sync::{Arc, AtomicU8, Ordering};
use std::fmt;

const QUEUED: u8 = 0;
const CANCELLED: u8 = 1;
const RUNNING: u8 = 2;

/// The observable state of a queue cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueState {
    /// Neither cancelled nor claimed yet.
    Queued,
    /// The cancel won; the body never runs (C1).
    Cancelled,
    /// The executor claimed the work; cancelling now depends on the resource class.
    Running,
}

impl QueueState {
    fn from_raw(raw: u8) -> Self {
        match raw {
            QUEUED => Self::Queued,
            CANCELLED => Self::Cancelled,
            RUNNING => Self::Running,
            other => unreachable!("queue cell holds only the three states, found {other}"),
        }
    }
}

/// What [`CancelHandle::cancel_before_start`] achieved (C2).
#[must_use = "the outcome says whether the cancel won or the work already started"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CancelBeforeStart {
    /// The cancel won: queued → cancelled. The body will never run.
    CancelledQueued,
    /// An earlier cancel already won.
    AlreadyCancelled,
    /// The executor claimed the work first; cancel it through its resource class instead.
    AlreadyRunning,
}

/// What [`StartToken::claim_for_run`] decided (C3).
#[must_use = "running a body after `CompleteCancelled` breaks the cancel contract"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClaimForRun {
    /// Run the body (queued → running, or it was already running).
    Run,
    /// The cancel won: complete the operation as cancelled without running the body.
    CompleteCancelled,
}

/// The shared cell. Invariant: `state` only ever holds `QUEUED`, `CANCELLED` or `RUNNING`, and
/// leaves `QUEUED` at most once (C1), always through a compare-exchange so the cancel and
/// the claim cannot both win.
struct QueueCell {
    state: AtomicU8,
}

/// Creates a fresh *queued* cell and returns its two sides.
pub fn queue_control() -> (CancelHandle, StartToken) {
    let cell = Arc::new(QueueCell {
        state: AtomicU8::new(QUEUED),
    });
    (
        CancelHandle {
            cell: Arc::clone(&cell),
        },
        StartToken { cell },
    )
}

/// The runtime's side of a queue cell: cancels queued work.
pub struct CancelHandle {
    cell: Arc<QueueCell>,
}

/// The executor's side of a queue cell: claims work before running its body.
pub struct StartToken {
    cell: Arc<QueueCell>,
}

impl CancelHandle {
    /// Tries to cancel the work before it starts (C2).
    pub fn cancel_before_start(&self) -> CancelBeforeStart {
        // Rule C1: the only way out of QUEUED is a compare-exchange; AcqRel pairs with the
        // claim's exchange so both sides agree on the single winner.
        match self.cell.state.compare_exchange(
            QUEUED,
            CANCELLED,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => CancelBeforeStart::CancelledQueued,
            Err(CANCELLED) => CancelBeforeStart::AlreadyCancelled,
            Err(_) => CancelBeforeStart::AlreadyRunning,
        }
    }

    /// The cell's current state (a snapshot; it may change right after).
    pub fn state(&self) -> QueueState {
        QueueState::from_raw(self.cell.state.load(Ordering::Acquire))
    }
}

impl StartToken {
    /// Claims the work for running (C3). Claiming twice is `Run` both times.
    pub fn claim_for_run(&self) -> ClaimForRun {
        match self
            .cell
            .state
            .compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) | Err(RUNNING) => ClaimForRun::Run,
            Err(_) => ClaimForRun::CompleteCancelled,
        }
    }

    /// The cell's current state (a snapshot; it may change right after).
    pub fn state(&self) -> QueueState {
        QueueState::from_raw(self.cell.state.load(Ordering::Acquire))
    }
}

impl fmt::Debug for CancelHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelHandle")
            .field("state", &self.state())
            .finish()
    }
}

impl fmt::Debug for StartToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StartToken")
            .field("state", &self.state())
            .finish()
    }
}
