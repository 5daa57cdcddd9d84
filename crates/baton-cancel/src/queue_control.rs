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

/// The three-state cell itself. Invariant: `state` only ever holds `QUEUED`, `CANCELLED` or
/// `RUNNING`, and leaves `QUEUED` at most once (C1), always through a compare-exchange so the
/// cancel and the claim cannot both win.
///
/// [`queue_control`] puts one in its own allocation; a value that is shared anyway (a job's
/// state, say) can embed one instead and hand out both sides with [`hosted_queue_control`],
/// saving that allocation.
pub struct QueueCell {
    state: AtomicU8,
}

impl QueueCell {
    /// A fresh *queued* cell.
    pub fn new() -> QueueCell {
        QueueCell {
            state: AtomicU8::new(QUEUED),
        }
    }

    /// Tries to cancel the work before it starts (C2); what [`CancelHandle`] does.
    pub fn cancel_before_start(&self) -> CancelBeforeStart {
        // Rule C1: the only way out of QUEUED is a compare-exchange; AcqRel pairs with the
        // claim's exchange so both sides agree on the single winner.
        match self
            .state
            .compare_exchange(QUEUED, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => CancelBeforeStart::CancelledQueued,
            Err(CANCELLED) => CancelBeforeStart::AlreadyCancelled,
            Err(_) => CancelBeforeStart::AlreadyRunning,
        }
    }

    /// Claims the work for running (C3); what [`StartToken`] does. Claiming twice is `Run`
    /// both times.
    pub fn claim_for_run(&self) -> ClaimForRun {
        match self
            .state
            .compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) | Err(RUNNING) => ClaimForRun::Run,
            Err(_) => ClaimForRun::CompleteCancelled,
        }
    }

    /// The cell's current state (a snapshot; it may change right after).
    pub fn state(&self) -> QueueState {
        QueueState::from_raw(self.state.load(Ordering::Acquire))
    }
}

impl Default for QueueCell {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for QueueCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueCell")
            .field("state", &self.state())
            .finish()
    }
}

/// A shared value that embeds the [`QueueCell`] its two sides use
/// ([`hosted_queue_control`]).
pub trait QueueHost: Send + Sync + 'static {
    /// The embedded cell; the same one on every call.
    fn queue_cell(&self) -> &QueueCell;
}

/// Where a side's cell lives: its own allocation, or embedded in a host both sides share.
/// The host `Arc` is `std`'s also under loom: it is an ownership handle, and the cell's
/// atomic inside it is the shim's, so the models still check the protocol.
enum CellRef {
    Own(Arc<QueueCell>),
    Hosted(std::sync::Arc<dyn QueueHost>),
}

impl CellRef {
    fn cell(&self) -> &QueueCell {
        match self {
            CellRef::Own(cell) => cell,
            CellRef::Hosted(host) => host.queue_cell(),
        }
    }
}

/// Creates a fresh *queued* cell and returns its two sides.
pub fn queue_control() -> (CancelHandle, StartToken) {
    let cell = Arc::new(QueueCell::new());
    (
        CancelHandle {
            cell: CellRef::Own(Arc::clone(&cell)),
        },
        StartToken {
            cell: CellRef::Own(cell),
        },
    )
}

/// The two sides of the cell `host` embeds, without allocating; the cell keeps whatever
/// state it already has (a host cancelled before this call hands out sides that see the
/// cancel).
pub fn hosted_queue_control(host: std::sync::Arc<dyn QueueHost>) -> (CancelHandle, StartToken) {
    (
        CancelHandle {
            cell: CellRef::Hosted(std::sync::Arc::clone(&host)),
        },
        StartToken {
            cell: CellRef::Hosted(host),
        },
    )
}

/// The runtime's side of a queue cell: cancels queued work.
pub struct CancelHandle {
    cell: CellRef,
}

/// The executor's side of a queue cell: claims work before running its body.
pub struct StartToken {
    cell: CellRef,
}

impl CancelHandle {
    /// Tries to cancel the work before it starts (C2).
    pub fn cancel_before_start(&self) -> CancelBeforeStart {
        self.cell.cell().cancel_before_start()
    }

    /// The cell's current state (a snapshot; it may change right after).
    pub fn state(&self) -> QueueState {
        self.cell.cell().state()
    }
}

impl StartToken {
    /// Claims the work for running (C3). Claiming twice is `Run` both times.
    pub fn claim_for_run(&self) -> ClaimForRun {
        self.cell.cell().claim_for_run()
    }

    /// The cell's current state (a snapshot; it may change right after).
    pub fn state(&self) -> QueueState {
        self.cell.cell().state()
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
