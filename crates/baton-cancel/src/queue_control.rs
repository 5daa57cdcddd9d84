//! Queue control: the shared cell that decides whether queued work is cancelled or started
//! (crate rules C1–C3 and C7).
//!
//! ```text
//!            cancel_before_start                claim_for_run
//!  CANCELLED <------------------- QUEUED -------------------> RUNNING
//!     |  cancel:   AlreadyCancelled  |              cancel:   AlreadyRunning |
//!     |  claim:    CompleteCancelled |              claim:    Run            |
//!     |  withdraw: AlreadyCancelled  |              withdraw: AlreadyRunning |
//!                                    | withdraw_before_start (the executor)
//!                                    v
//!                    CANCELLED, withdrawn (was_withdrawn): cancel: AlreadyCancelled,
//!                    claim: CompleteCancelled, withdraw: AlreadyWithdrawn
//! ```
//!
//! Three states are observable ([`QueueState`]); a withdrawal is a cancel by the executor that
//! remembers who made it, so the requester can tell a shutdown from its own cancel.

use crate::sync::{Arc, AtomicU8, Ordering};
use std::fmt;

const QUEUED: u8 = 0;
const CANCELLED: u8 = 1;
const RUNNING: u8 = 2;
const WITHDRAWN: u8 = 3;

/// The observable state of a queue cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueState {
    /// Neither cancelled nor claimed yet.
    Queued,
    /// The cancel (or the executor's withdrawal, C7) won; the body never runs (C1).
    Cancelled,
    /// The executor claimed the work; cancelling now depends on the resource class.
    Running,
}

impl QueueState {
    fn from_raw(raw: u8) -> Self {
        match raw {
            QUEUED => Self::Queued,
            CANCELLED | WITHDRAWN => Self::Cancelled,
            RUNNING => Self::Running,
            other => unreachable!("queue cell holds only the four raw states, found {other}"),
        }
    }
}

/// What [`CancelHandle::cancel_before_start`] achieved (C2).
#[must_use = "the outcome says whether the cancel won or the work already started"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CancelBeforeStart {
    /// The cancel won: queued → cancelled. The body will never run.
    CancelledQueued,
    /// An earlier cancel, or the executor's withdrawal ([`CancelHandle::was_withdrawn`]
    /// says which, C7), already won.
    AlreadyCancelled,
    /// The executor claimed the work first; cancel it through its resource class instead.
    AlreadyRunning,
}

/// What [`StartToken::withdraw_before_start`] achieved (C7).
#[must_use = "the outcome says whether the withdrawal won or a cancel or claim came first"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WithdrawBeforeStart {
    /// The withdrawal won: queued → withdrawn. The body will never run.
    Withdrawn,
    /// A cancel won first: the work stays cancelled.
    AlreadyCancelled,
    /// An earlier withdrawal already won.
    AlreadyWithdrawn,
    /// The work was claimed first; it runs (or ran) to its end.
    AlreadyRunning,
}

/// What [`StartToken::claim_for_run`] decided (C3).
#[must_use = "running a body after `CompleteCancelled` breaks the cancel contract"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClaimForRun {
    /// Run the body (queued → running, or it was already running).
    Run,
    /// The cancel or a withdrawal won: complete the operation as cancelled without running the
    /// body.
    CompleteCancelled,
}

/// The cell itself. Invariant: `state` only ever holds `QUEUED`, `CANCELLED`, `RUNNING` or
/// `WITHDRAWN` (a cancel by the executor, observed as cancelled), and leaves `QUEUED` at most
/// once (C1), always through a compare-exchange so no two of the cancel, the claim and the
/// withdrawal can both win.
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

    /// Moves the cell out of *queued* to `to`; on failure, the terminal state it already holds.
    fn leave_queued(&self, to: u8) -> Result<(), u8> {
        // Rule C1: the only way out of QUEUED is a compare-exchange; AcqRel pairs the exchanges
        // of the cancel, the claim and the withdrawal so every side agrees on the one winner.
        self.state
            .compare_exchange(QUEUED, to, Ordering::AcqRel, Ordering::Acquire)
            .map(drop)
    }

    /// Tries to cancel the work before it starts (C2); what [`CancelHandle`] does.
    pub fn cancel_before_start(&self) -> CancelBeforeStart {
        match self.leave_queued(CANCELLED) {
            Ok(()) => CancelBeforeStart::CancelledQueued,
            Err(CANCELLED | WITHDRAWN) => CancelBeforeStart::AlreadyCancelled,
            Err(_) => CancelBeforeStart::AlreadyRunning,
        }
    }

    /// Claims the work for running (C3); what [`StartToken`] does. Claiming twice is `Run`
    /// both times.
    pub fn claim_for_run(&self) -> ClaimForRun {
        match self.leave_queued(RUNNING) {
            Ok(()) | Err(RUNNING) => ClaimForRun::Run,
            Err(_) => ClaimForRun::CompleteCancelled,
        }
    }

    /// Gives the work up before it starts, without anyone having cancelled it (C7); what
    /// [`StartToken::withdraw_before_start`] does, and what a host does for a runtime that is
    /// shutting down.
    pub fn withdraw_before_start(&self) -> WithdrawBeforeStart {
        match self.leave_queued(WITHDRAWN) {
            Ok(()) => WithdrawBeforeStart::Withdrawn,
            Err(CANCELLED) => WithdrawBeforeStart::AlreadyCancelled,
            Err(WITHDRAWN) => WithdrawBeforeStart::AlreadyWithdrawn,
            Err(_) => WithdrawBeforeStart::AlreadyRunning,
        }
    }

    /// The cell's current state (a snapshot; it may change right after).
    pub fn state(&self) -> QueueState {
        QueueState::from_raw(self.state.load(Ordering::Acquire))
    }

    /// Whether the executor withdrew the work (C7): a cell that reads
    /// [`Cancelled`](QueueState::Cancelled) because of a withdrawal, not a cancel. Final once
    /// true; `false` while the cell is queued.
    pub fn was_withdrawn(&self) -> bool {
        self.state.load(Ordering::Acquire) == WITHDRAWN
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

/// The executor's side of a queue cell: claims work before running its body, or withdraws
/// work it gives up without running (its shutdown).
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

    /// Whether the executor withdrew the work rather than anyone cancelling it (C7).
    pub fn was_withdrawn(&self) -> bool {
        self.cell.cell().was_withdrawn()
    }
}

impl StartToken {
    /// Claims the work for running (C3). Claiming twice is `Run` both times.
    pub fn claim_for_run(&self) -> ClaimForRun {
        self.cell.cell().claim_for_run()
    }

    /// Cancels work the executor discards unstarted (C2), the same transition as the
    /// requester's [`CancelHandle::cancel_before_start`]: the cell then says cancelled, as the
    /// `Cancelled` the executor delivers for it does.
    pub fn cancel_before_start(&self) -> CancelBeforeStart {
        self.cell.cell().cancel_before_start()
    }

    /// Gives queued work up without running it (C7): what an executor's shutdown does with
    /// the work it still holds, so the requester can tell that from a cancel of its own.
    pub fn withdraw_before_start(&self) -> WithdrawBeforeStart {
        self.cell.cell().withdraw_before_start()
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
