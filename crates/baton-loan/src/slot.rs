//! The loan slot: where the worker is, and the hand-over between the background thread and
//! `block_on` callers (rules 1–9 of the crate docs).
//!
//! All phase changes happen under one mutex; the condvar announces every change; the attention
//! flag is a lock-free mirror that the running worker's predicate reads between turns.

use std::sync::Arc;

use crate::sync::{self, AtomicBool, Condvar, Mutex, Ordering};
use crate::worker::{LoanWorker, Unpark};

/// A request number. Tickets are issued in increasing order under the slot lock and identify the
/// requester an offer or a refusal belongs to (rules 4 and 5).
pub(crate) type Ticket = u64;

/// Where the worker is (rule 1). Invariant: the slot holds the worker exactly in `Offered` and
/// `Returned`; the background thread holds it in `Background`, `Requested` and `Refused`; a
/// borrower holds it in `Loaned`; in `Closed` it is held by whoever had it, who drops it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Background,
    Requested(Ticket),
    Offered(Ticket),
    Refused(Ticket),
    Loaned(Ticket),
    Returned,
    Closed,
}

#[derive(Debug)]
struct SlotState {
    phase: Phase,
    /// The worker while it sits in the slot (`Offered`, `Returned`).
    parked: Option<Box<dyn LoanWorker>>,
    next_ticket: Ticket,
    background_panicked: bool,
}

/// What a requester got (rules 2–6).
#[must_use = "a borrowed worker must be returned"]
#[derive(Debug)]
pub(crate) enum Acquire {
    /// The worker is ours until we give it back.
    Loaned(Box<dyn LoanWorker>),
    /// Another caller's request or loan is in progress (rule 2).
    Contended,
    /// The background thread holds live local tasks (rule 5).
    Refused,
    /// The protocol is closed (rule 8).
    Closed,
}

/// What happened to a worker handed back (rule 7).
#[must_use = "a worker refused by a closed slot must be dropped outside the lock"]
#[derive(Debug)]
pub(crate) enum GiveBack {
    /// The worker is in the slot; the background thread (or a fast-path requester) takes it.
    Returned,
    /// The slot closed while the worker was on loan: drop it (rule 8).
    Closed(Box<dyn LoanWorker>),
}

/// The background thread's answer at a dispatch boundary (rules 3, 5, 7, 8).
#[must_use = "the background thread must keep running or drop the worker"]
#[derive(Debug)]
pub(crate) enum Settle {
    /// Keep running this worker.
    Run(Box<dyn LoanWorker>),
    /// The slot closed; drop the worker if we still hold it.
    Closed(Option<Box<dyn LoanWorker>>),
}

/// Where the worker was when the slot closed (rule 8).
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

/// The loan slot. Invariant: `attention` is set whenever the phase is `Requested` or `Closed`;
/// only the background thread clears it, under the lock, when it answers a request (rule 3).
pub(crate) struct Slot {
    state: Mutex<SlotState>,
    changed: Condvar,
    attention: AtomicBool,
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
            }),
            changed: Condvar::new(),
            attention: AtomicBool::new(false),
            unpark,
        }
    }

    /// The current phase (for diagnostics and tests).
    pub(crate) fn phase(&self) -> Phase {
        sync::lock(&self.state).phase
    }

    /// Whether the background thread must stop at its next dispatch boundary (rule 3). Read by
    /// the running worker's predicate.
    pub(crate) fn needs_attention(&self) -> bool {
        self.attention.load(Ordering::Acquire)
    }

    /// Whether the background thread died by panicking (rule 9).
    pub(crate) fn background_panicked(&self) -> bool {
        sync::lock(&self.state).background_panicked
    }

    /// Requester side: borrow the worker or learn why not. Waits only for our own request.
    pub(crate) fn acquire(&self) -> Acquire {
        let mut state = sync::lock(&self.state);
        let ticket = state.next_ticket;
        match state.phase {
            Phase::Returned => {
                // Rule 6: a just-returned worker is taken without waking the background thread.
                state.next_ticket += 1;
                state.phase = Phase::Loaned(ticket);
                let worker = state
                    .parked
                    .take()
                    .expect("rule 1: Returned keeps the worker");
                return Acquire::Loaned(worker);
            }
            Phase::Background => {
                // Rule 2: ask, raise attention, then unpark outside the lock.
                state.next_ticket += 1;
                state.phase = Phase::Requested(ticket);
                self.attention.store(true, Ordering::Release);
            }
            Phase::Closed => return Acquire::Closed,
            Phase::Requested(_) | Phase::Offered(_) | Phase::Refused(_) | Phase::Loaned(_) => {
                return Acquire::Contended;
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
                        "rule 3: a pending request's attention flag was cleared"
                    );
                    state = sync::wait(&self.changed, state);
                }
                Phase::Offered(t) if t == ticket => {
                    // Rule 4: the offer is ours.
                    state.phase = Phase::Loaned(ticket);
                    let worker = state
                        .parked
                        .take()
                        .expect("rule 1: Offered keeps the worker");
                    return Acquire::Loaned(worker);
                }
                Phase::Refused(t) if t == ticket => {
                    // Rule 5: only the refused requester acknowledges its refusal.
                    state.phase = Phase::Background;
                    return Acquire::Refused;
                }
                Phase::Closed => return Acquire::Closed,
                other => {
                    debug_assert!(
                        false,
                        "rules 4-5: request {ticket} was answered for someone else ({other:?})"
                    );
                    return Acquire::Contended;
                }
            }
        }
    }

    /// Borrower side: hand the worker back (rule 7), or learn that the slot closed (rule 8).
    pub(crate) fn give_back(&self, worker: Box<dyn LoanWorker>) -> GiveBack {
        let mut state = sync::lock(&self.state);
        match state.phase {
            Phase::Loaned(_) => {
                state.phase = Phase::Returned;
                state.parked = Some(worker);
                drop(state);
                self.changed.notify_all();
                GiveBack::Returned
            }
            Phase::Closed => GiveBack::Closed(worker),
            other => {
                debug_assert!(false, "rule 1: a worker came back in phase {other:?}");
                GiveBack::Closed(worker)
            }
        }
    }

    /// Background side, at a dispatch boundary: answer a request, or wait for a lent worker to
    /// come back. `holds_local` is the worker's `holds_local_tasks()` on the background thread,
    /// computed before locking so no worker code runs under the slot lock.
    pub(crate) fn settle(&self, worker: Box<dyn LoanWorker>, holds_local: bool) -> Settle {
        let mut state = sync::lock(&self.state);
        match state.phase {
            Phase::Closed => return Settle::Closed(Some(worker)),
            Phase::Background | Phase::Refused(_) => return Settle::Run(worker),
            Phase::Requested(ticket) => {
                self.attention.store(false, Ordering::Release);
                if holds_local {
                    // Rule 5: local tasks pin the worker to this thread.
                    state.phase = Phase::Refused(ticket);
                    drop(state);
                    self.changed.notify_all();
                    return Settle::Run(worker);
                }
                state.phase = Phase::Offered(ticket);
                state.parked = Some(worker);
                self.changed.notify_all();
            }
            Phase::Offered(_) | Phase::Loaned(_) | Phase::Returned => {
                debug_assert!(false, "rule 1: the background thread holds a lent worker");
                return Settle::Run(worker);
            }
        }
        loop {
            match state.phase {
                Phase::Returned => {
                    // Rule 7: take it back and resume.
                    state.phase = Phase::Background;
                    let worker = state
                        .parked
                        .take()
                        .expect("rule 1: Returned keeps the worker");
                    return Settle::Run(worker);
                }
                Phase::Closed => return Settle::Closed(None),
                _ => state = sync::wait(&self.changed, state),
            }
        }
    }

    /// Closes the protocol (rule 8): publish `Closed` first, wake every waiter and the worker,
    /// and hand a worker sitting in the slot to the caller to drop outside the lock.
    pub(crate) fn close(&self) -> Close {
        self.close_inner(false)
    }

    /// Rule 9: the background thread is unwinding; close so nobody waits for it.
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
