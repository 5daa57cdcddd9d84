//! Closure, idleness and the bounded-shutdown leak (lifecycle rules 7 and 8 of `core`).

use super::{Core, Phase, PhaseKind, Waiter};
use crate::forward::Settle;
use crate::key::RequestKey;

impl Core {
    /// Lifecycle rule 7. Every slot the kernel does not own is retired now (its handle's next
    /// poll finds no slot and resolves to `Closed`); in-flight slots are detached, so they retire
    /// at their final CQE. Afterwards the driver holds nothing a handle gave it once drained.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        let keys: Vec<RequestKey> = self
            .slab
            .iter()
            .map(|(index, slot)| RequestKey {
                index: index as u32,
                generation: slot.generation,
            })
            .collect();
        for key in keys {
            let Some(slot) = self.slot_mut(key) else {
                continue;
            };
            let kind = PhaseKind::of(&slot.phase);
            let retained = slot.data.is_retained();
            let waiter = std::mem::replace(&mut slot.waiter, Waiter::None);
            slot.attached = false;
            match waiter {
                Waiter::Local(w) => self.deferred.wake.push(w),
                Waiter::Forward(cell) => {
                    if let Settle::Stored(Some(w)) = cell.close() {
                        self.deferred.wake.push(w);
                    }
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
                _ => {
                    if matches!(kind, PhaseKind::Queued | PhaseKind::AwaitingPermit) {
                        self.counts.queued -= 1;
                    }
                    let slot = self.slab.remove(key.index as usize);
                    if slot.deadline.is_some() {
                        self.counts.live_timers -= 1;
                    }
                    self.deferred.drop_data.push(slot.data);
                }
            }
        }
        self.submit_queue.clear();
        self.timers.clear();
    }

    /// Whether the kernel still owns anything of ours.
    pub(crate) fn kernel_busy(&self) -> bool {
        self.counts.in_flight > 0 || self.counts.cancels_in_flight > 0 || self.wake.armed
    }

    /// Nothing queued, in flight or timed.
    pub(crate) fn is_idle(&self) -> bool {
        self.counts.queued == 0
            && self.counts.in_flight == 0
            && self.counts.cancels_in_flight == 0
            && self.counts.live_timers == 0
            && self.cancel_queue.is_empty()
    }

    /// Lifecycle rule 8: leaks every slot the kernel may still write, and the wake-up buffer.
    pub(crate) fn leak_kernel_owned(&mut self) -> usize {
        let mut leaked = 0;
        let keys: Vec<usize> = self
            .slab
            .iter()
            .filter(|(_, s)| matches!(s.phase, Phase::InFlight))
            .map(|(i, _)| i)
            .collect();
        for index in keys {
            let slot = self.slab.remove(index);
            std::mem::forget(slot.data);
            self.deferred.drop_waiter(slot.waiter);
            leaked += 1;
        }
        if self.wake.armed {
            std::mem::forget(std::mem::replace(&mut self.wake.buf, Box::new(0)));
            self.wake.armed = false;
        }
        self.counts.in_flight = 0;
        leaked
    }

    /// The wake-up read's eventfd (for shutdown to complete the read).
    pub(crate) fn wake_armed(&self) -> bool {
        self.wake.armed
    }
}
