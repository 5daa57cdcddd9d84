//! The handle side of the request lifecycle: registration (U1, U2), local polls, detaching
//! (U5), explicit cancels, and settling a request with its final result (U4), including the
//! durability permit passed on when a sync settles.

use std::os::fd::OwnedFd;
use std::task::Waker;

use web_time::Instant;

use super::{DriverState, Install, Phase, PhaseKind, PollSlot, Refusal, Waiter};
use crate::durability::Grant;
use crate::error::Error;
use crate::key::RequestKey;
use crate::request::{Failure, Outcome, Request, close_orphan_fd};
use crate::stash::StashTicket;
use crate::state::slots::CancelState;

impl DriverState {
    /// U1, U2.
    pub(crate) fn register(
        &mut self,
        data: Request,
        deadline: Option<Instant>,
        waiter: Waiter,
    ) -> Result<RequestKey, Box<(Refusal, Waiter)>> {
        let now = deadline.map(|_| Instant::now());
        if let Some(error) = self.refusal(&data, deadline, now) {
            // Boxed: a refusal is rare, and a request is large.
            return Err(Box::new((Refusal { error, data }, waiter)));
        }
        let is_sleep = matches!(data, Request::Sleep);
        let fsync_fd = match &data {
            Request::Fsync { fd, .. } => Some(fd.clone()),
            _ => None,
        };
        let peer = data.waits_on_peer();
        // The common case (no sleep, no sync, no deadline) is queued as it is inserted: one
        // slab access instead of three.
        if !is_sleep && fsync_fd.is_none() && deadline.is_none() {
            let key = self.slots.insert(data, waiter, Phase::Queued);
            self.push_queued(key, peer);
            return Ok(key);
        }
        if is_sleep {
            let key = self.slots.insert(data, waiter, Phase::Sleeping);
            match deadline {
                Some(at) if Some(at) > now => self.arm_timer(key, at),
                // A sleep already due completes at once, like any completion.
                _ => self.settle(key, Ok(0)),
            }
            return Ok(key);
        }
        let key = self.slots.insert(data, waiter, Phase::Queued);
        if let Some(at) = deadline {
            self.arm_timer(key, at);
        }
        match fsync_fd {
            None => self.push_queued(key, peer),
            Some(fd) => match self.durability.acquire(&fd, key) {
                Grant::Dirty => self.push_queued(key, false),
                Grant::Clean => {
                    // D4: the permit passes on at once.
                    let next = self.durability.release(&fd, key, None);
                    self.settle(key, Ok(0));
                    self.pass_permit(&fd, next);
                }
                Grant::Wait => {
                    let _queued = self.slots.set_phase(key, Phase::AwaitingPermit);
                }
            },
        }
        Ok(key)
    }

    /// U2: a queued request that waits on a peer goes to the queue the in-flight limit does
    /// not hold back.
    pub(super) fn push_queued(&mut self, key: RequestKey, peer: bool) {
        if peer {
            self.peer_queue.push_back(key);
        } else {
            self.submit_queue.push_back(key);
        }
    }

    /// Polls `key` locally. `Err` means the key is stale (its result went elsewhere).
    pub(crate) fn poll(&mut self, key: RequestKey, waker: &Waker) -> Result<PollSlot, Error> {
        let closed = self.closed;
        let Some(slot) = self.slots.get(key) else {
            return Err(Error::Closed);
        };
        if slot.kind() == PhaseKind::Completed {
            let Some((outcome, data, waiter)) = self.slots.remove(key).into_completed() else {
                unreachable!("checked Completed just above")
            };
            let waker = match waiter {
                Waiter::Local(w) => Some(w),
                Waiter::None => None,
                other => {
                    self.deferred.drop_waiter(other);
                    None
                }
            };
            return Ok(PollSlot::Ready(outcome, Some(data), waker));
        }
        if closed {
            // U7: a pending poll after closure fails; the request detaches.
            self.detach(key, None);
            return Ok(PollSlot::Ready(
                Err(Failure::Runtime(Error::Closed)),
                None,
                None,
            ));
        }
        match &slot.waiter {
            Waiter::Local(w) if w.will_wake(waker) => Ok(PollSlot::Pending),
            _ => Ok(PollSlot::NeedWaker),
        }
    }

    /// Installs a waker cloned outside the borrow.
    pub(crate) fn install_waker(&mut self, key: RequestKey, waker: Waker) -> Install {
        let closed = self.closed;
        match self.slots.get_mut(key) {
            Some(slot) if !closed && slot.kind() != PhaseKind::Completed => {
                match std::mem::replace(&mut slot.waiter, Waiter::Local(waker)) {
                    Waiter::Local(old) => Install::Installed(Some(old)),
                    other => {
                        self.deferred.drop_waiter(other);
                        Install::Installed(None)
                    }
                }
            }
            _ => Install::Settled(waker),
        }
    }

    /// U5: the handle of `key` is gone, leaving `ticket` if it was bound to a stash (S2); a
    /// forwarded handle left its ticket in its cell (F7).
    pub(crate) fn detach(&mut self, key: RequestKey, ticket: Option<StashTicket>) {
        let Some(slot) = self.slots.get_mut(key) else {
            self.deferred.drop_ticket(ticket);
            return;
        };
        slot.attached = false;
        let waiter = std::mem::replace(&mut slot.waiter, Waiter::None);
        let ticket = match (&waiter, ticket) {
            (Waiter::Forward(cell), None) => cell.take_ticket(),
            (_, ticket) => ticket,
        };
        let retained = slot.data.is_retained();
        let kind = slot.kind();
        self.deferred.drop_waiter(waiter);
        if retained {
            // A retained request runs to completion once detached: no deadline applies.
            let _deadline = self.slots.set_deadline(key, None);
        }
        match kind {
            PhaseKind::Completed => {
                let Some((outcome, data, _)) = self.slots.remove(key).into_completed() else {
                    unreachable!("matched Completed just above")
                };
                self.dispose(outcome, Some(data), ticket);
            }
            PhaseKind::Queued | PhaseKind::AwaitingPermit if retained => {
                // A retained send's ticket holds the socket's next send back until this one's
                // final completion (stash rule S5).
                if let Some(slot) = self.slots.get_mut(key) {
                    slot.late = ticket;
                }
            }
            PhaseKind::Queued | PhaseKind::Sleeping => {
                let slot = self.slots.remove(key);
                self.deferred.drop_data.push(slot.data);
                self.deferred.drop_ticket(ticket);
            }
            PhaseKind::AwaitingPermit => self.deferred.drop_ticket(ticket),
            PhaseKind::InFlight => {
                if let Some(slot) = self.slots.get_mut(key) {
                    slot.late = ticket;
                }
                if !retained {
                    self.request_cancel(key);
                }
            }
        }
    }

    /// An explicit cancel that keeps the handle attached: a queued request settles with
    /// `ECANCELED`, an in-flight one gets an async cancel, a settled one keeps its result.
    pub(crate) fn cancel(&mut self, key: RequestKey) {
        let Some(slot) = self.slots.get(key) else {
            return;
        };
        match slot.kind() {
            PhaseKind::Queued | PhaseKind::AwaitingPermit | PhaseKind::Sleeping => {
                self.settle(key, Err(Failure::Os(libc::ECANCELED)));
            }
            PhaseKind::InFlight => self.request_cancel(key),
            PhaseKind::Completed => {}
        }
    }

    /// U3, U5: asks for one async cancel of an in-flight request.
    pub(super) fn request_cancel(&mut self, key: RequestKey) {
        if let Some(slot) = self.slots.get_mut(key)
            && slot.cancel == CancelState::None
        {
            slot.cancel = CancelState::Queued;
            self.cancel_queue.push_back(key);
        }
    }

    /// Settles a live, unsettled request with `outcome`, releasing its durability permit first.
    pub(super) fn settle(&mut self, key: RequestKey, outcome: Outcome) {
        let fsync = match self.slots.get(key).map(|s| &s.data) {
            Some(Request::Fsync { fd, start, .. }) => Some((fd.clone(), *start)),
            Some(_) => None,
            None => return,
        };
        if let Some((fd, start)) = fsync {
            let synced = if outcome.is_ok() { start } else { None };
            let next = self.durability.release(&fd, key, synced);
            self.settle_slot(key, outcome);
            self.pass_permit(&fd, next);
        } else {
            self.settle_slot(key, outcome);
        }
    }

    /// Hands the permit to the next live waiting sync (D2 and D4).
    fn pass_permit(&mut self, fd: &std::sync::Arc<OwnedFd>, mut next: Option<(RequestKey, Grant)>) {
        while let Some((key, grant)) = next {
            let waiting = self
                .slots
                .get(key)
                .is_some_and(|s| s.kind() == PhaseKind::AwaitingPermit);
            if !waiting {
                next = self.durability.release(fd, key, None);
                continue;
            }
            // U9: after closure the waiting syncs still run, in permit order.
            if grant == Grant::Clean {
                next = self.durability.release(fd, key, None);
                self.settle_slot(key, Ok(0));
            } else {
                // A sync completes on its own: it goes under the in-flight limit.
                let _waited = self.slots.set_phase(key, Phase::Queued);
                self.push_queued(key, false);
                next = None;
            }
        }
    }

    /// U4.
    pub(super) fn settle_slot(&mut self, key: RequestKey, outcome: Outcome) {
        if self.slots.get(key).is_none() {
            return;
        }
        let _deadline = self.slots.set_deadline(key, None);
        let Some(slot) = self.slots.get_mut(key) else {
            return;
        };
        crate::trace::settled(&slot.span, &outcome);
        if !slot.attached {
            // U7: closure told this request's handle `Closed`; an error it hid is counted.
            if self.closed && outcome.is_err() && slot.data.outlives_closure() {
                self.counts.retained_failures += 1;
            }
            let mut slot = self.slots.remove(key);
            let ticket = slot.late.take();
            self.deferred.drop_waiter(slot.waiter);
            self.dispose(outcome, Some(slot.data), ticket);
            return;
        }
        match std::mem::replace(&mut slot.waiter, Waiter::None) {
            Waiter::Forward(cell) => {
                let slot = self.slots.remove(key);
                self.deliver_to_cell(&cell, outcome, slot.data);
                self.deferred.drop_cells.push(cell);
            }
            Waiter::Local(w) => {
                let _pending = self.slots.set_phase(key, Phase::Completed(outcome));
                self.deferred.wake.push(w);
            }
            Waiter::None => {
                let _pending = self.slots.set_phase(key, Phase::Completed(outcome));
            }
        }
    }

    /// Disposes of a result nobody will consume. With a stash ticket, the result goes to the
    /// stash after the borrow (S2, S3); otherwise a created fd is closed.
    pub(super) fn dispose(
        &mut self,
        outcome: Outcome,
        data: Option<Request>,
        ticket: Option<StashTicket>,
    ) {
        if let Some(ticket) = ticket {
            self.deferred.deposits.push((ticket, outcome, data));
            return;
        }
        if let Some(data) = data {
            if let Ok(fd) = outcome
                && data.creates_fd()
            {
                close_orphan_fd(fd);
            }
            self.deferred.drop_data.push(data);
        }
    }
}
