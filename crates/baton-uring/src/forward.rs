//! The forwarding one-shot: how a result reaches a handle polled away from its driver, and how a
//! detached sync's receiver gets its result.
//!
//! Forwarding rules (also drawn in `docs/protocols/uring.md`, cited as "forward rule F1" ... F9):
//!
//! F1. A handle polled on a thread where its driver is not entered creates one cell, stores its
//!    waker there and sends `Forward { key, cell }` (or `Register { .., cell }` when it was never
//!    registered) to the driver's mailbox. The cell, once created, is where the handle looks for
//!    its result from then on, on any thread.
//!
//! F2. The driver, processing `Forward`, attaches the cell only if the key still names a live,
//!    attached slot; a stale key (the slot was retired by a local drop that overtook the message,
//!    rule F5) is ignored, so a reused slot never sees the old handle's cell.
//!
//! F3. Delivery moves the outcome and the request's buffers into the cell, retires the slot and
//!    wakes the stored waker after the cell's lock is released.
//!
//! F4. Dropping the handle marks the cell `abandoned` under its lock and reads the key under the
//!    same lock: if the key is known, a `Drop { key }` message (or a direct local drop) follows;
//!    if not, the driver sees `abandoned` when it processes the `Register` and treats the request
//!    as dropped at birth (retained writes still run).
//!
//! F5. A local drop acts on the slot at once, overtaking any queued `Forward`.
//!
//! F6. Closure settles every waiting cell with `Closed`; a handle whose mailbox refuses a message
//!    resolves to `Closed`.
//!
//! F7. A handle bound to a stash leaves its ticket in the cell when it abandons a cell still
//!    waiting (stash rule S2); whoever disposes of the result for the driver — the settle that
//!    finds the cell abandoned, or the detach that retires its slot — takes the ticket with it.
//!
//! F8. **Linger.** At an idle point after a turn that delivered a result into a cell or reaped a
//!    completion, the driver submits what the turn queued and then lingers — stays awake,
//!    yielding the CPU, for at most a short budget (never past its next timer or deadline) —
//!    with its unpark token marked *lingering*, so the poller's next message reaches it without
//!    an eventfd write or a wake-up. An unpark that finds the token lingering writes nothing.
//!    The linger ends on that unpark; or when the ring's shared memory shows a completion (or
//!    completion work held for the next enter), or at the budget, each by a compare-and-swap
//!    back to *clear* that fails if an unpark landed, so a blocking wait that follows always has
//!    either the token or the eventfd write to end it. A linger that expires unanswered stops
//!    the next ones until a wait after a delivery is ended by an unpark or a completion within
//!    the budget (`linger.rs`).
//!
//! F9. **Reply wait.** A handle whose message found the driver lingering, polled off any
//!    driver's thread, waits in that same poll (yielding, after its waker is stored) until its
//!    cell is settled, the driver passes its next idle point, or a short budget ends. It only
//!    reads the cell: the result is still taken by the poll, and a reply after the wait wakes
//!    the stored waker (F3).

use std::task::{Context, Poll, Waker};

use crate::error::Error;
use crate::key::RequestKey;
use crate::request::{Failure, Outcome, Request};
use crate::stash::StashTicket;
use crate::sync::{Mutex, MutexGuard, lock};

/// What the cell holds.
#[derive(Debug)]
pub(crate) enum CellSlot {
    /// No result yet; the waker of the last poll.
    Waiting(Option<Waker>),
    /// The result, with the request's buffers when the kernel is done with them.
    Ready(Outcome, Option<Request>),
    /// The result was taken.
    Taken,
}

/// State behind the cell's lock.
#[derive(Debug)]
pub(crate) struct CellState {
    /// The slot key, once the driver registered the request.
    pub(crate) key: Option<RequestKey>,
    /// The handle is gone (forward rule F4).
    pub(crate) abandoned: bool,
    pub(crate) slot: CellSlot,
    /// The abandoned handle's stash ticket, for whoever disposes of the result (F7).
    pub(crate) ticket: Option<StashTicket>,
}

/// A one-shot shared between a driver slot and a handle or sync receiver.
#[derive(Debug)]
pub(crate) struct ForwardCell {
    state: Mutex<CellState>,
}

/// The outcome of settling a cell from the driver side.
#[must_use]
#[derive(Debug)]
pub(crate) enum Delivery {
    /// Stored; wake this waker (if any) after releasing every internal borrow.
    Stored(Option<Waker>),
    /// The handle is gone; the outcome and data come back to be disposed of, with the
    /// handle's stash ticket if it left one (F7).
    Abandoned(Outcome, Option<Request>, Option<StashTicket>),
}

impl ForwardCell {
    pub(crate) fn new(key: Option<RequestKey>) -> ForwardCell {
        ForwardCell {
            state: Mutex::new(CellState {
                key,
                abandoned: false,
                slot: CellSlot::Waiting(None),
                ticket: None,
            }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, CellState> {
        lock(&self.state)
    }

    /// Stores a result (forward rule F3). The caller wakes the returned waker later.
    pub(crate) fn settle(&self, outcome: Outcome, data: Option<Request>) -> Delivery {
        let mut state = self.lock();
        if state.abandoned {
            return Delivery::Abandoned(outcome, data, state.ticket.take());
        }
        match &mut state.slot {
            CellSlot::Waiting(waker) => {
                let waker = waker.take();
                state.slot = CellSlot::Ready(outcome, data);
                Delivery::Stored(waker)
            }
            // Already settled or taken: the first result stands.
            CellSlot::Ready(..) | CellSlot::Taken => Delivery::Abandoned(outcome, data, None),
        }
    }

    /// Settles with `Closed` (forward rule F6).
    pub(crate) fn close(&self) -> Delivery {
        self.settle(Err(Failure::Runtime(Error::Closed)), None)
    }

    /// Marks the handle gone and returns the key, if known, plus any unconsumed result to drop
    /// outside the lock (forward rule F4). A `ticket` stays in the cell while the result is
    /// still to come (F7); it comes back when the result is already here, for the handle
    /// to deposit.
    pub(crate) fn abandon(
        &self,
        ticket: Option<StashTicket>,
    ) -> (Option<RequestKey>, CellSlot, Option<StashTicket>) {
        let mut state = self.lock();
        state.abandoned = true;
        let slot = std::mem::replace(&mut state.slot, CellSlot::Taken);
        let ticket = match slot {
            CellSlot::Waiting(_) => {
                state.ticket = ticket;
                None
            }
            CellSlot::Ready(..) | CellSlot::Taken => ticket,
        };
        (state.key, slot, ticket)
    }

    /// The abandoned handle's ticket, for the detach that retires its slot (F7).
    pub(crate) fn take_ticket(&self) -> Option<StashTicket> {
        self.lock().ticket.take()
    }

    /// Whether the cell holds a result or was emptied: a poll now returns `Ready` (F9).
    pub(crate) fn is_settled(&self) -> bool {
        !matches!(self.lock().slot, CellSlot::Waiting(_))
    }

    /// Polls for the result. The waker is cloned only when the stored one is not equivalent,
    /// and never while the lock is held.
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<(Outcome, Option<Request>)> {
        loop {
            let mut state = self.lock();
            match &mut state.slot {
                CellSlot::Ready(..) => {
                    let CellSlot::Ready(outcome, data) =
                        std::mem::replace(&mut state.slot, CellSlot::Taken)
                    else {
                        unreachable!("matched Ready just above")
                    };
                    return Poll::Ready((outcome, data));
                }
                CellSlot::Taken => {
                    return Poll::Ready((Err(Failure::Runtime(Error::Closed)), None));
                }
                CellSlot::Waiting(Some(w)) if w.will_wake(cx.waker()) => return Poll::Pending,
                CellSlot::Waiting(_) => {}
            }
            drop(state);
            let fresh = cx.waker().clone();
            let mut state = self.lock();
            if let CellSlot::Waiting(stored) = &mut state.slot {
                let old = stored.replace(fresh);
                drop(state);
                drop(old);
                return Poll::Pending;
            }
            drop(state);
            drop(fresh);
        }
    }
}
