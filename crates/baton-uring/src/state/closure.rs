//! Closure, idleness and the bounded-shutdown leak (U7, U8, U9).

use super::{DriverState, PhaseKind, Waiter};
use crate::key::RequestKey;

/// What a shutdown that ran out of time left undone (U8).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Undrained {
    /// Requests the kernel may still write, leaked on purpose.
    pub(crate) leaked: usize,
    /// Retained requests that never reached the kernel, released unsubmitted.
    pub(crate) unsubmitted: usize,
}

impl DriverState {
    /// U7: every slot the kernel does not own is retired now (its handle's next poll finds no
    /// slot and resolves to `Closed`) — except retained requests (writes, syncs, close,
    /// shutdown) still queued or awaiting their durability permit: those stay queued,
    /// detached, and are submitted as slots free (U9). In-flight slots are detached, so they
    /// retire at their final CQE. Afterwards the driver holds nothing a handle gave it once
    /// drained.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        for key in self.slots.keys() {
            let Some(slot) = self.slots.get_mut(key) else {
                continue;
            };
            let kind = slot.kind();
            let retained = slot.data.outlives_closure();
            let waiter = std::mem::replace(&mut slot.waiter, Waiter::None);
            slot.attached = false;
            match waiter {
                Waiter::Local(w) => self.deferred.wake.push(w),
                Waiter::Forward(cell) => {
                    let delivered = cell.close();
                    self.delivered(delivered);
                    self.deferred.drop_cells.push(cell);
                }
                Waiter::None => {}
            }
            match kind {
                PhaseKind::InFlight => {
                    if !retained {
                        self.request_cancel(key);
                    }
                }
                PhaseKind::Queued | PhaseKind::AwaitingPermit if retained => {
                    // U9: durability outlives closure; no deadline may retire it now.
                    let _deadline = self.slots.set_deadline(key, None);
                }
                _ => {
                    let mut slot = self.slots.remove(key);
                    let ticket = slot.late.take();
                    if slot.kind() == PhaseKind::Completed {
                        // U4: an unconsumed result is disposed of (a created fd is closed, or
                        // the result goes to its stash).
                        if let Some((outcome, data, _)) = slot.into_completed() {
                            self.dispose(outcome, Some(data), ticket);
                        }
                    } else {
                        self.deferred.drop_data.push(slot.data);
                        self.deferred.drop_ticket(ticket);
                    }
                }
            }
        }
        let slots = &self.slots;
        let still_queued = |key: &RequestKey| {
            slots
                .get(*key)
                .is_some_and(|s| s.kind() == PhaseKind::Queued)
        };
        self.submit_queue.retain(still_queued);
        self.peer_queue.retain(still_queued);
        self.timers.clear();
    }

    /// Whether shutdown still has something to wait for: the kernel owns a request, a cancel
    /// or the wake-up read, or a retained request waits for a slot or its permit (U9).
    pub(crate) fn draining(&self) -> bool {
        self.kernel_busy() || self.slots.counts().queued > 0
    }

    /// Whether the kernel still owns anything of ours.
    pub(crate) fn kernel_busy(&self) -> bool {
        self.slots.counts().in_flight > 0 || self.counts.cancels_in_flight > 0 || self.wake.armed
    }

    /// Nothing queued, in flight or timed.
    pub(crate) fn is_idle(&self) -> bool {
        let slots = self.slots.counts();
        slots.queued == 0
            && slots.in_flight == 0
            && self.counts.cancels_in_flight == 0
            && slots.timed == 0
            && self.cancel_queue.is_empty()
    }

    /// U8: leaks every slot the kernel may still write, and the wake-up buffer. Retained
    /// requests the kernel never saw are released (their memory is safe to free) and counted as
    /// `unsubmitted`: their writes or syncs did not happen.
    pub(crate) fn abandon_undrained(&mut self) -> Undrained {
        let mut undrained = Undrained::default();
        for key in self.slots.keys() {
            let Some(kind) = self.slots.get(key).map(|s| s.kind()) else {
                continue;
            };
            if kind == PhaseKind::Completed {
                continue;
            }
            let in_flight = kind == PhaseKind::InFlight;
            let mut slot = self.slots.remove(key);
            self.deferred.drop_waiter(slot.waiter);
            // Its result will never be read: the stash stops waiting for it.
            self.deferred.drop_ticket(slot.late.take());
            if in_flight {
                std::mem::forget(slot.data);
                undrained.leaked += 1;
            } else {
                self.deferred.drop_data.push(slot.data);
                undrained.unsubmitted += 1;
            }
        }
        if self.wake.armed {
            std::mem::forget(std::mem::replace(&mut self.wake.buf, Box::new(0)));
            self.wake.armed = false;
        }
        self.submit_queue.clear();
        self.peer_queue.clear();
        undrained
    }

    /// U8, last resort: leaks what the kernel may still write when the core is
    /// dropped without a completed shutdown (one that unwound part-way).
    fn leak_if_kernel_busy(&mut self) {
        if self.kernel_busy() {
            let _ = self.abandon_undrained();
        }
    }

    /// The wake-up read's eventfd (for shutdown to complete the read).
    pub(crate) fn wake_armed(&self) -> bool {
        self.wake.armed
    }
}

impl Drop for DriverState {
    /// The ring closes only after the fields drop, and the kernel may write a request's buffers
    /// until its final CQE: U8 holds even if shutdown never ran its leak step.
    fn drop(&mut self) {
        self.leak_if_kernel_busy();
    }
}
