//! The loan slot: where the worker is, and the hand-over between the background thread and
//! `block_on` callers (rules 1–9 of the crate docs).
//!
//! All phase changes happen under one mutex; the condvar announces the changes someone waits
//! for (the background thread's wait is tracked, so a give-back nobody waits for wakes nobody);
//! the attention flag is a lock-free mirror that the running worker's predicate reads between
//! turns.

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::sync::{self, AtomicBool, Condvar, Mutex, Ordering};
use crate::worker::{LoanWorker, Pending, Unpark};

/// How long the background thread waits before it looks at a lent or resting worker again
/// (rule 7). A worker found resting at two looks in a row with no borrow in between goes back to
/// the background thread. This is a backstop, not a bound: a stream of borrows postpones the
/// second look, so the worker's `pending` must report every event its rest waker announces.
pub(crate) const REST_GRACE: Duration = Duration::from_millis(1);

/// A request number. Tickets are issued in increasing order under the slot lock and identify the
/// requester an offer or a refusal belongs to (rules 4 and 5).
pub(crate) type Ticket = u64;

/// Where the worker is (rule 1). Invariant: the slot holds the worker exactly in `Offered`,
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
    /// Given back with work pending: the background thread takes it (rule 7).
    Returned,
    /// Given back with nothing pending: it stays in the slot for the next `block_on`, and the
    /// background thread takes it only when its rest waker fires or a grace period passes
    /// (rule 7).
    Resting,
    Closed,
}

/// Whether, and how, the background thread waits on the condvar (it is the only thread that
/// waits while the worker is away from it, so give-backs notify only when this says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BackgroundWait {
    /// Not waiting: running the worker, or woken and about to look at the phase.
    No,
    /// Waiting with a timer ([`REST_GRACE`]): it looks at the slot again on its own.
    Timed,
    /// Waiting without a timer (a long loan): a rest must wake it to start the timer.
    Untimed,
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
    /// (rule 7). Cleared only when the background thread takes the worker back, so a rouse is
    /// remembered across any number of loans in between.
    roused_while_away: bool,
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
    /// The worker is in the slot with work pending; the background thread (or a fast-path
    /// requester) takes it.
    Returned,
    /// The worker is in the slot with nothing pending; the next requester takes it, or the
    /// background thread when its rest waker fires or the grace period passes.
    Resting,
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

/// What the rest waker did (rule 7).
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

/// Whether a borrower that saw the slot closed must close the worker on loan (rule 8).
#[must_use = "a borrower told to close the worker on loan must do so"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseOnLoan {
    /// This borrower is the first to see the closure: it closes the worker now.
    Due,
    /// An earlier frame already closed this worker on loan.
    Done,
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

/// The loan slot. Invariants: `attention` is set whenever the phase is `Requested` or `Closed`;
/// only the background thread clears it, under the lock, when it answers a request (rule 3).
/// `closed` is set, under the lock, exactly when the phase becomes `Closed`, and never cleared.
pub(crate) struct Slot {
    state: Mutex<SlotState>,
    changed: Condvar,
    attention: AtomicBool,
    /// Rule 8: a lock-free mirror of "the phase is `Closed`", which a borrower's run predicate
    /// reads between turns.
    closed: AtomicBool,
    /// Rule 8: the worker was closed on loan already (set once, by the first borrower frame
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

    /// Whether the background thread must stop at its next dispatch boundary (rule 3). Read by
    /// the running worker's predicate.
    pub(crate) fn needs_attention(&self) -> bool {
        self.attention.load(Ordering::Acquire)
    }

    /// Whether the protocol is closed (rule 8), without taking the lock. Read by a borrower's
    /// run predicate: the closure unparks the worker, so a parked borrower looks again.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Rule 8, borrower side: the slot closed while we hold the worker. The first frame to ask
    /// (of any borrower, nested or not) closes the worker on loan; the worker never leaves a
    /// borrower once the slot closed, so "once per slot" is "once per worker".
    pub(crate) fn claim_close_on_loan(&self) -> CloseOnLoan {
        debug_assert!(
            self.is_closed(),
            "rule 8: only a closed slot closes its worker"
        );
        if self.closed_on_loan.swap(true, Ordering::AcqRel) {
            CloseOnLoan::Done
        } else {
            CloseOnLoan::Due
        }
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
            Phase::Returned | Phase::Resting => {
                // Rule 6: a returned or resting worker is taken without waking the background
                // thread.
                state.next_ticket += 1;
                state.phase = Phase::Loaned(ticket);
                let worker = state
                    .parked
                    .take()
                    .expect("rule 1: Returned and Resting keep the worker");
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
                    // Rule 7: nothing to do; the next `block_on` takes it from here.
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
                debug_assert!(false, "rule 1: a worker came back in phase {other:?}");
                GiveBack::Closed(worker)
            }
        }
    }

    /// The rest waker (rule 7): work became runnable from another thread. A resting worker is
    /// handed to the background thread; a worker away from it otherwise (requested, offered,
    /// lent, returned) is marked so that no give-back rests before the background thread has
    /// taken it back.
    pub(crate) fn rouse(&self) -> Rouse {
        let mut state = sync::lock(&self.state);
        match state.phase {
            Phase::Resting => {
                state.phase = Phase::Returned;
                let waits = state.background_wait != BackgroundWait::No;
                drop(state);
                if waits {
                    self.changed.notify_all();
                }
                Rouse::EndedRest
            }
            Phase::Requested(_) | Phase::Offered(_) | Phase::Loaned(_) | Phase::Returned => {
                // The background thread may hand the worker on (or a borrower may take it)
                // without a turn in between: remember the rouse until it takes the worker.
                state.roused_while_away = true;
                Rouse::MarkedAway
            }
            Phase::Background | Phase::Refused(_) | Phase::Closed => Rouse::Nothing,
        }
    }

    /// Background side, at a dispatch boundary: answer a request, then wait for the lent worker
    /// to come back (returned, or rested a grace period). `holds_local` is the worker's
    /// `holds_local_tasks()` on the background thread, computed before locking so no worker
    /// code runs under the slot lock.
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
            Phase::Offered(_) | Phase::Loaned(_) | Phase::Returned | Phase::Resting => {
                debug_assert!(false, "rule 1: the background thread holds a lent worker");
                return Settle::Run(worker);
            }
        }
        // Rule 7: wait for the worker to come back. `seen` is the ticket count at the previous
        // look (unchanged: nobody borrowed the worker since); `rested_at` the ticket count at
        // the previous look if that look found the worker resting.
        let mut seen: Option<Ticket> = None;
        let mut rested_at: Option<Ticket> = None;
        loop {
            let now = Some(state.next_ticket);
            let unchanged = seen == now;
            seen = now;
            let wait = match state.phase {
                Phase::Returned => BackgroundWait::No,
                // Resting at two looks in a row, one grace period apart, with no borrow between.
                Phase::Resting if rested_at == now => BackgroundWait::No,
                Phase::Closed => return Settle::Closed(None),
                Phase::Resting => {
                    rested_at = now;
                    BackgroundWait::Timed
                }
                // A fresh loan gets a timer; one that outlived it waits untimed (its give-back
                // notifies).
                Phase::Offered(_) | Phase::Loaned(_) => {
                    rested_at = None;
                    if unchanged {
                        BackgroundWait::Untimed
                    } else {
                        BackgroundWait::Timed
                    }
                }
                Phase::Background | Phase::Requested(_) | Phase::Refused(_) => {
                    debug_assert!(false, "rule 1: the background thread lent the worker");
                    BackgroundWait::Untimed
                }
            };
            if wait == BackgroundWait::No {
                // Rule 7: returned, or rested a whole grace period untouched: take it back and
                // resume. Its turns see whatever a rouse announced, so the mark is spent.
                state.phase = Phase::Background;
                state.roused_while_away = false;
                let worker = state
                    .parked
                    .take()
                    .expect("rule 1: Returned and Resting keep the worker");
                return Settle::Run(worker);
            }
            state.background_wait = wait;
            state = match wait {
                BackgroundWait::Timed => sync::wait_timeout(&self.changed, state, REST_GRACE),
                BackgroundWait::Untimed | BackgroundWait::No => sync::wait(&self.changed, state),
            };
            state.background_wait = BackgroundWait::No;
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

/// The worker's rest waker (rule 7): handed to the worker once, at start, and triggered by it
/// whenever work becomes runnable from another thread. It holds the slot weakly: the worker
/// holds it, and the slot holds the worker's unpark handle, so a strong reference would make a
/// cycle that keeps both alive.
#[derive(Debug)]
pub(crate) struct RestWaker {
    slot: Weak<Slot>,
}

impl RestWaker {
    pub(crate) fn new(slot: &Arc<Slot>) -> Self {
        Self {
            slot: Arc::downgrade(slot),
        }
    }
}

impl Unpark for RestWaker {
    fn unpark(&self) {
        if let Some(slot) = self.slot.upgrade() {
            let _rouse: Rouse = slot.rouse();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod rouse_tests {
    use super::*;
    use crate::test_worker::test_worker;

    /// An outside event announced while the worker is `Offered` must keep its give-back from
    /// resting (rule 7: "during Offered/Loaned it marks the loan").
    #[test]
    fn rouse_during_the_offer_is_not_forgotten() {
        let (worker, unpark, _handle) = test_worker();
        let slot = Arc::new(Slot::new(unpark));
        let requester = {
            let slot = Arc::clone(&slot);
            std::thread::spawn(move || match slot.acquire() {
                Acquire::Loaned(worker) => worker,
                _ => panic!("the requester did not borrow"),
            })
        };
        while slot.phase() != Phase::Requested(0) {
            std::thread::yield_now();
        }
        // The background thread's answer (settle's Requested arm), before its notify.
        {
            let mut state = sync::lock(&slot.state);
            slot.attention.store(false, Ordering::Release);
            state.phase = Phase::Offered(0);
            state.parked = Some(worker);
        }
        // An outside event (e.g. a mailbox message from a foreign thread) arrives now.
        assert_eq!(slot.rouse(), Rouse::MarkedAway);
        slot.changed.notify_all();
        let worker = requester.join().expect("requester");
        // The worker cannot see the event itself (an unapplied mailbox message).
        let given = slot.give_back(worker, Pending::Nothing);
        assert!(
            matches!(given, GiveBack::Returned),
            "the rouse during the offer was forgotten: {given:?}"
        );
        let _ = slot.close();
    }
}
