//! The loan slot: where the worker is, and the hand-over between the background thread and
//! `block_on` callers (rules L1–L9 of the crate docs).
//!
//! All phase changes happen under one mutex; the condvar announces the changes someone waits
//! for (the background thread's wait is tracked, so a give-back nobody waits for wakes nobody);
//! the attention flag is a lock-free mirror that the running worker's predicate reads between
//! turns. The rest and what ends it (the rest waker, the grace period, the background thread
//! taking the worker back) live in the `rest` submodule.

mod rest;

use std::sync::Arc;

use crate::sync::{self, AtomicBool, Condvar, Mutex, Ordering};
use crate::worker::{LoanWorker, Pending, Unpark};
use rest::BackgroundWait;

pub(crate) use rest::RestWaker;

/// A request number. Tickets are issued in increasing order under the slot lock and identify the
/// requester an offer or a refusal belongs to (L4 and L5).
pub(crate) type Ticket = u64;

/// Where the worker is (L1). Invariant: the slot holds the worker exactly in `Offered`,
/// `Returned` and `Resting`; the background thread holds it in `Background`, `Requested` and
/// `Refused`; a borrower holds it in `Loaned`; in `Closed` it is held by whoever had it, who
/// drops it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Background,
    Requested(Ticket),
    Offered(Ticket),
    Refused(Ticket),
    Loaned(Ticket),
    /// Given back with work pending: the background thread takes it (L7).
    Returned,
    /// Given back with nothing pending: it stays in the slot for the next `block_on`, and the
    /// background thread takes it only when its rest waker fires or a grace period passes
    /// (L7).
    Resting,
    Closed,
}

#[derive(Debug)]
struct SlotState {
    phase: Phase,
    /// The worker while it sits in the slot (`Offered`, `Returned`, `Resting`).
    parked: Option<Box<dyn LoanWorker>>,
    next_ticket: Ticket,
    background_panicked: bool,
    background_wait: BackgroundWait,
    /// The rest waker fired since the background thread last took the worker, while the
    /// background thread was not driving it (`Requested`, `Offered`, `Loaned`, `Returned`): no
    /// give-back may rest until the background thread has taken the worker and turned it
    /// (L7). Cleared only when the background thread takes the worker back, so a rouse is
    /// remembered across any number of loans in between.
    roused_while_away: bool,
}

/// What a requester got (L2–L6).
#[must_use = "a borrowed worker must be returned"]
#[derive(Debug)]
pub(crate) enum Borrow {
    /// The worker is ours until we give it back.
    Loaned(Box<dyn LoanWorker>),
    /// Another caller's request or loan is in progress (L2).
    Contended,
    /// The background thread holds live local tasks (L5).
    Refused,
    /// The protocol is closed (L8).
    Closed,
}

/// What happened to a worker handed back (L7).
#[must_use = "a worker refused by a closed slot must be dropped outside the lock"]
#[derive(Debug)]
pub(crate) enum GiveBack {
    /// The worker is in the slot with work pending; the background thread (or a fast-path
    /// requester) takes it.
    Returned,
    /// The worker is in the slot with nothing pending; the next requester takes it, or the
    /// background thread when its rest waker fires or the grace period passes.
    Resting,
    /// The slot closed while the worker was on loan: drop it (L8).
    Closed(Box<dyn LoanWorker>),
}

/// The background thread's answer at a dispatch boundary (L3, L5, L7, L8).
#[must_use = "the background thread must keep running or drop the worker"]
#[derive(Debug)]
pub(crate) enum Answer {
    /// Keep running this worker.
    Run(Box<dyn LoanWorker>),
    /// The slot closed; drop the worker if we still hold it.
    Closed(Option<Box<dyn LoanWorker>>),
}

/// What the rest waker did (L7).
#[must_use = "a rouse reports whether it ended a rest"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rouse {
    /// The worker was resting: it is `Returned` now, and the background thread takes it.
    EndedRest,
    /// The worker is away from the background thread (requested, offered, on loan or returned
    /// but not yet taken back): no give-back rests until the background thread has taken it.
    MarkedAway,
    /// The background thread holds it (its own unpark reaches it; a refusal keeps it there), or
    /// the slot is closed: nothing to do.
    Nothing,
}

/// Whether a borrower that saw the slot closed must close the worker on loan (L8).
#[must_use = "a borrower told to close the worker on loan must do so"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseOnLoan {
    /// This borrower is the first to see the closure: it closes the worker now.
    Due,
    /// An earlier frame already closed this worker on loan.
    Done,
}

/// Where the worker was when the slot closed (L8).
#[must_use = "the closer must drop the worker it took"]
#[derive(Debug)]
pub(crate) enum Close {
    /// It sat in the slot; the closer took it and drops it outside the lock.
    Taken(Box<dyn LoanWorker>),
    /// The background thread holds it and drops it when it sees `Closed`.
    WithBackground,
    /// A borrower holds it and drops it when it gives it back.
    OnLoan,
    /// The slot was already closed.
    AlreadyClosed,
}

/// The loan slot. Invariants: `attention` is set whenever the phase is `Requested` or `Closed`;
/// only the background thread clears it, under the lock, when it answers a request (L3).
/// `closed` is set, under the lock, exactly when the phase becomes `Closed`, and never cleared.
pub(crate) struct Slot {
    state: Mutex<SlotState>,
    changed: Condvar,
    attention: AtomicBool,
    /// Rule L8: a lock-free mirror of "the phase is `Closed`", which a borrower's run predicate
    /// reads between turns.
    closed: AtomicBool,
    /// Rule L8: the worker was closed on loan already (set once, by the first borrower frame
    /// that saw the closure).
    closed_on_loan: AtomicBool,
    unpark: Arc<dyn Unpark>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("phase", &self.phase())
            .field("attention", &self.attention.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Slot {
    /// A slot whose worker starts with the background thread.
    pub(crate) fn new(unpark: Arc<dyn Unpark>) -> Self {
        Self {
            state: Mutex::new(SlotState {
                phase: Phase::Background,
                parked: None,
                next_ticket: 0,
                background_panicked: false,
                background_wait: BackgroundWait::No,
                roused_while_away: false,
            }),
            changed: Condvar::new(),
            attention: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            closed_on_loan: AtomicBool::new(false),
            unpark,
        }
    }

    /// The current phase (for diagnostics and tests).
    pub(crate) fn phase(&self) -> Phase {
        sync::lock(&self.state).phase
    }

    /// Whether the background thread must stop at its next dispatch boundary (L3). Read by
    /// the running worker's predicate.
    pub(crate) fn needs_attention(&self) -> bool {
        self.attention.load(Ordering::Acquire)
    }

    /// Whether the protocol is closed (L8), without taking the lock. Read by a borrower's
    /// run predicate: the closure unparks the worker, so a parked borrower looks again.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Rule L8, borrower side: the slot closed while we hold the worker. The first frame to ask
    /// (of any borrower, nested or not) closes the worker on loan; the worker never leaves a
    /// borrower once the slot closed, so "once per slot" is "once per worker".
    pub(crate) fn claim_close_on_loan(&self) -> CloseOnLoan {
        debug_assert!(
            self.is_closed(),
            "rule L8: only a closed slot closes its worker"
        );
        if self.closed_on_loan.swap(true, Ordering::AcqRel) {
            CloseOnLoan::Done
        } else {
            CloseOnLoan::Due
        }
    }

    /// Whether the background thread died by panicking (L9).
    pub(crate) fn background_panicked(&self) -> bool {
        sync::lock(&self.state).background_panicked
    }

    /// Requester side: borrow the worker or learn why not. Waits only for our own request.
    pub(crate) fn borrow(&self) -> Borrow {
        let mut state = sync::lock(&self.state);
        let ticket = state.next_ticket;
        match state.phase {
            Phase::Returned | Phase::Resting => {
                // Rule L6: a returned or resting worker is taken without waking the background
                // thread.
                state.next_ticket += 1;
                state.phase = Phase::Loaned(ticket);
                let worker = state
                    .parked
                    .take()
                    .expect("rule L1: Returned and Resting keep the worker");
                return Borrow::Loaned(worker);
            }
            Phase::Background => {
                // Rule L2: ask, raise attention, then unpark outside the lock.
                state.next_ticket += 1;
                state.phase = Phase::Requested(ticket);
                self.attention.store(true, Ordering::Release);
            }
            Phase::Closed => return Borrow::Closed,
            Phase::Requested(_) | Phase::Offered(_) | Phase::Refused(_) | Phase::Loaned(_) => {
                return Borrow::Contended;
            }
        }
        drop(state);
        self.unpark.unpark();
        let mut state = sync::lock(&self.state);
        loop {
            match state.phase {
                Phase::Requested(t) if t == ticket => {
                    debug_assert!(
                        self.attention.load(Ordering::Acquire),
                        "rule L3: a pending request's attention flag was cleared"
                    );
                    state = sync::wait(&self.changed, state);
                }
                Phase::Offered(t) if t == ticket => {
                    // Rule L4: the offer is ours.
                    state.phase = Phase::Loaned(ticket);
                    let worker = state
                        .parked
                        .take()
                        .expect("rule L1: Offered keeps the worker");
                    return Borrow::Loaned(worker);
                }
                Phase::Refused(t) if t == ticket => {
                    // Rule L5: only the refused requester acknowledges its refusal.
                    state.phase = Phase::Background;
                    return Borrow::Refused;
                }
                Phase::Closed => return Borrow::Closed,
                other => {
                    debug_assert!(
                        false,
                        "rules L4-L5: request {ticket} was answered for someone else ({other:?})"
                    );
                    return Borrow::Contended;
                }
            }
        }
    }

    /// Borrower side: hand the worker back (L7), or learn that the slot closed (L8).
    /// `pending` is the worker's own answer, asked before locking so no worker code runs under
    /// the slot lock. Only a waiting background thread is notified, and for a rest only if its
    /// wait has no timer.
    pub(crate) fn give_back(&self, worker: Box<dyn LoanWorker>, pending: Pending) -> GiveBack {
        let mut state = sync::lock(&self.state);
        match state.phase {
            Phase::Loaned(_) => {
                state.parked = Some(worker);
                let rests = pending == Pending::Nothing && !state.roused_while_away;
                let (given, notify) = if rests {
                    // Rule L7: nothing to do; the next `block_on` takes it from here.
                    state.phase = Phase::Resting;
                    let untimed = state.background_wait == BackgroundWait::Untimed;
                    (GiveBack::Resting, untimed)
                } else {
                    state.phase = Phase::Returned;
                    let waits = state.background_wait != BackgroundWait::No;
                    (GiveBack::Returned, waits)
                };
                drop(state);
                if notify {
                    self.changed.notify_all();
                }
                given
            }
            Phase::Closed => GiveBack::Closed(worker),
            other => {
                debug_assert!(false, "rule L1: a worker came back in phase {other:?}");
                GiveBack::Closed(worker)
            }
        }
    }

    /// Background side, at a dispatch boundary: answer a request, then wait for the lent worker
    /// to come back (returned, or rested a grace period). `holds_local` is the worker's
    /// `holds_local_tasks()` on the background thread, computed before locking so no worker
    /// code runs under the slot lock.
    pub(crate) fn answer(&self, worker: Box<dyn LoanWorker>, holds_local: bool) -> Answer {
        let mut state = sync::lock(&self.state);
        match state.phase {
            Phase::Closed => return Answer::Closed(Some(worker)),
            Phase::Background | Phase::Refused(_) => return Answer::Run(worker),
            Phase::Requested(ticket) => {
                self.attention.store(false, Ordering::Release);
                if holds_local {
                    // Rule L5: local tasks pin the worker to this thread.
                    state.phase = Phase::Refused(ticket);
                    drop(state);
                    self.changed.notify_all();
                    return Answer::Run(worker);
                }
                state.phase = Phase::Offered(ticket);
                state.parked = Some(worker);
                self.changed.notify_all();
            }
            Phase::Offered(_) | Phase::Loaned(_) | Phase::Returned | Phase::Resting => {
                debug_assert!(false, "rule L1: the background thread holds a lent worker");
                return Answer::Run(worker);
            }
        }
        self.reclaim(state)
    }

    /// Test hook: the background thread's offer to request `ticket` ([`answer`](Self::answer)'s
    /// `Requested` arm, offering `worker`), with `between` run once the lock is released and
    /// before the requester is notified, so a test can land an event in that window.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn offer_then(
        &self,
        ticket: Ticket,
        worker: Box<dyn LoanWorker>,
        between: impl FnOnce(),
    ) {
        {
            let mut state = sync::lock(&self.state);
            self.attention.store(false, Ordering::Release);
            state.phase = Phase::Offered(ticket);
            state.parked = Some(worker);
        }
        between();
        self.changed.notify_all();
    }

    /// Closes the protocol (L8): publish `Closed` first, wake every waiter and the worker,
    /// and hand a worker sitting in the slot to the caller to drop outside the lock.
    pub(crate) fn close(&self) -> Close {
        self.close_inner(false)
    }

    /// Rule L9: the background thread is unwinding; close so nobody waits for it.
    pub(crate) fn close_after_panic(&self) -> Close {
        self.close_inner(true)
    }

    fn close_inner(&self, panicked: bool) -> Close {
        let mut state = sync::lock(&self.state);
        state.background_panicked |= panicked;
        let was = state.phase;
        if was == Phase::Closed {
            return Close::AlreadyClosed;
        }
        state.phase = Phase::Closed;
        self.closed.store(true, Ordering::Release);
        self.attention.store(true, Ordering::Release);
        let parked = state.parked.take();
        drop(state);
        self.changed.notify_all();
        self.unpark.unpark();
        match (parked, was) {
            (Some(worker), _) => Close::Taken(worker),
            (None, Phase::Loaned(_)) => Close::OnLoan,
            (None, _) => Close::WithBackground,
        }
    }
}
