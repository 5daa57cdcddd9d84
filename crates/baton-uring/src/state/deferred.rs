//! [`Deferred`]: what the driver state hands back to be released after its borrow ends —
//! wakes, waker and cell drops, buffers, stash deposits — because each may run user code
//! (waker hygiene, S3).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::task::Waker;

use super::Waiter;
use crate::forward::ForwardCell;
use crate::request::{Outcome, Request};
use crate::stash::StashTicket;
use crate::sync::Arc;

/// A caught panic's payload.
pub(crate) type Payload = Box<dyn Any + Send>;

/// Values whose release may run user code, released after the state's borrow ends.
#[derive(Debug, Default)]
pub(crate) struct Deferred {
    pub(crate) wake: Vec<Waker>,
    pub(crate) drop_wakers: Vec<Waker>,
    pub(crate) drop_cells: Vec<Arc<ForwardCell>>,
    pub(crate) drop_data: Vec<Request>,
    /// Late results for their stashes, and tickets ending with nothing (S3).
    pub(crate) deposits: Vec<(StashTicket, Outcome, Option<Request>)>,
    pub(crate) drop_tickets: Vec<StashTicket>,
}

impl Deferred {
    pub(crate) fn is_empty(&self) -> bool {
        self.wake.is_empty()
            && self.drop_wakers.is_empty()
            && self.drop_cells.is_empty()
            && self.drop_data.is_empty()
            && self.deposits.is_empty()
            && self.drop_tickets.is_empty()
    }

    /// Ends `ticket` with nothing, after the borrow (S3).
    pub(crate) fn drop_ticket(&mut self, ticket: Option<StashTicket>) {
        self.drop_tickets.extend(ticket);
    }

    pub(crate) fn drop_waiter(&mut self, waiter: Waiter) {
        match waiter {
            Waiter::None => {}
            Waiter::Local(w) => self.drop_wakers.push(w),
            Waiter::Forward(c) => self.drop_cells.push(c),
        }
    }

    /// Deposits, wakes and drops everything, catching panics, and returns the first payload.
    /// Drains in place, so the buffers keep their capacity for the next borrow.
    pub(crate) fn release(&mut self) -> Option<Payload> {
        if self.is_empty() {
            return None;
        }
        let mut first = None;
        let mut record = |r: Result<(), Payload>| {
            if let Err(payload) = r {
                first.get_or_insert(payload);
            }
        };
        // S3: late results reach their stashes (whose waiters may wake) here, before the wakes
        // of the operations that completed.
        drain_each(&mut self.deposits, |(ticket, outcome, data)| {
            record(catch_unwind(AssertUnwindSafe(|| {
                ticket.deposit(outcome, data)
            })));
        });
        drain_each(&mut self.drop_tickets, |ticket| {
            record(catch_unwind(AssertUnwindSafe(|| drop(ticket))));
        });
        drain_each(&mut self.wake, |waker| {
            record(catch_unwind(AssertUnwindSafe(|| waker.wake())));
        });
        drain_each(&mut self.drop_wakers, |waker| {
            record(catch_unwind(AssertUnwindSafe(|| drop(waker))));
        });
        drain_each(&mut self.drop_cells, |cell| {
            record(catch_unwind(AssertUnwindSafe(|| drop(cell))));
        });
        self.drop_data.clear();
        first
    }
}

/// Hands every item of `items` to `f`, in order, keeping the vector's capacity. An empty one
/// costs a length check and no drain: most turns defer one kind of value, if any.
fn drain_each<T>(items: &mut Vec<T>, f: impl FnMut(T)) {
    if !items.is_empty() {
        items.drain(..).for_each(f);
    }
}

/// Re-raises a caught panic, unless the thread is already unwinding: a second panic there would
/// abort the process, so the first one keeps propagating instead.
pub(crate) fn reraise(payload: Payload) {
    if !std::thread::panicking() {
        resume_unwind(payload);
    }
}
