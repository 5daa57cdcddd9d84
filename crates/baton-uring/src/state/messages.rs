//! Mailbox messages from other threads (F2, F4) and delivery into forwarding cells (F3).

use super::{DriverState, PhaseKind, Waiter};
use crate::forward::{Delivery, ForwardCell};
use crate::key::RequestKey;
use crate::mailbox::Msg;
use crate::request::{Failure, Outcome, Request};
use crate::sync::Arc;

impl DriverState {
    /// Applies one mailbox message (F2 and F4).
    pub(crate) fn apply(&mut self, msg: Msg) {
        match msg {
            Msg::Drop { key, ticket } => self.detach(key, ticket),
            Msg::Cancel { key } => self.cancel(key),
            Msg::Written { file } => {
                if let Some(file) = file.upgrade() {
                    self.note_write(&file);
                }
            }
            Msg::Forward { key, cell } => {
                if self.closed {
                    // U7, F6: closure retired or detached the slot.
                    let delivered = cell.close();
                    self.delivered(delivered);
                    self.detach(key, None);
                } else {
                    self.attach_forward(key, &cell);
                }
                self.deferred.drop_cells.push(cell);
            }
            Msg::Register {
                data,
                deadline,
                cell,
            } => {
                let abandoned = cell.lock().abandoned;
                if abandoned && !data.is_retained() {
                    // Dropped at birth: never submitted, so its ticket ends with nothing.
                    self.deferred.drop_ticket(cell.take_ticket());
                    self.deferred.drop_data.push(data);
                    self.deferred.drop_cells.push(cell);
                    return;
                }
                match self.register(data, deadline, Waiter::Forward(cell.clone())) {
                    Ok(key) => {
                        let abandoned = {
                            let mut state = cell.lock();
                            state.key = Some(key);
                            state.abandoned
                        };
                        if abandoned {
                            self.detach(key, None);
                        }
                    }
                    Err(refused) => {
                        let (refusal, waiter) = *refused;
                        self.deferred.drop_waiter(waiter);
                        let delivered =
                            cell.settle(Err(Failure::Runtime(refusal.error)), Some(refusal.data));
                        self.delivered(delivered);
                    }
                }
                self.deferred.drop_cells.push(cell);
            }
        }
    }

    /// Attaches a forwarding cell to a live slot (F2 and F3).
    pub(crate) fn attach_forward(&mut self, key: RequestKey, cell: &Arc<ForwardCell>) {
        let Some(slot) = self.slots.get_mut(key) else {
            self.counts.stale_messages += 1;
            return;
        };
        if !slot.attached {
            self.counts.stale_messages += 1;
            return;
        }
        if let Waiter::Forward(existing) = &slot.waiter
            && Arc::ptr_eq(existing, cell)
        {
            return;
        }
        let old = std::mem::replace(&mut slot.waiter, Waiter::Forward(cell.clone()));
        let completed = slot.kind() == PhaseKind::Completed;
        self.deferred.drop_waiter(old);
        if completed {
            let mut slot = self.slots.remove(key);
            let ticket = slot.late.take();
            let Some((outcome, data, waiter)) = slot.into_completed() else {
                unreachable!("checked Completed just above")
            };
            self.deliver_to_cell(cell, outcome, data);
            self.deferred.drop_waiter(waiter);
            self.deferred.drop_ticket(ticket);
        }
    }

    /// F3: moves the result into the cell.
    pub(super) fn deliver_to_cell(
        &mut self,
        cell: &Arc<ForwardCell>,
        outcome: Outcome,
        data: Request,
    ) {
        self.counts.forwarded += 1;
        let delivered = cell.settle(outcome, Some(data));
        self.delivered(delivered);
    }

    /// Acts on a cell's answer to a settle: wake its waker after the borrow, or dispose of a
    /// result its abandoned handle left behind (with the handle's stash ticket, F7).
    pub(crate) fn delivered(&mut self, delivered: Delivery) {
        match delivered {
            Delivery::Stored(Some(w)) => self.deferred.wake.push(w),
            Delivery::Stored(None) => {}
            Delivery::Abandoned(outcome, data, ticket) => self.dispose(outcome, data, ticket),
        }
    }
}
