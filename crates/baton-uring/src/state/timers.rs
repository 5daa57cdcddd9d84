//! Deadlines and sleeps on a userspace timer heap (U6): they need no ring slot, so they fire
//! even while every slot holds an untimed request.

use std::cmp::Reverse;

use web_time::Instant;

use super::{DriverState, PhaseKind};
use crate::error::Error;
use crate::key::RequestKey;
use crate::request::Failure;

impl DriverState {
    /// Gives `key` the deadline `at`.
    pub(super) fn arm_timer(&mut self, key: RequestKey, at: Instant) {
        if self.slots.get(key).is_some() {
            let _untimed = self.slots.set_deadline(key, Some(at));
            self.prune_stale_timers();
            self.timers.push(Reverse((at, key.index, key.generation)));
        }
    }

    /// U6: fires due timers; returns how many fired.
    pub(crate) fn fire_timers(&mut self) -> usize {
        if self.timers.is_empty() {
            return 0;
        }
        let now = Instant::now();
        let mut fired = 0;
        while let Some(&Reverse((at, index, generation))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            if !self.slots.has_deadline(index, generation, at) {
                continue;
            }
            let key = RequestKey { index, generation };
            let _fired = self.slots.set_deadline(key, None);
            self.counts.timers_fired += 1;
            fired += 1;
            let Some(slot) = self.slots.get_mut(key) else {
                continue;
            };
            match slot.kind() {
                PhaseKind::Sleeping => self.settle(key, Ok(0)),
                PhaseKind::Queued | PhaseKind::AwaitingPermit => {
                    self.settle(key, Err(Failure::Runtime(Error::Timeout)));
                }
                PhaseKind::InFlight => {
                    slot.timed_out = true;
                    self.request_cancel(key);
                }
                PhaseKind::Completed => {}
            }
        }
        fired
    }

    /// Entries in the timer heap, live and stale.
    pub(crate) fn timer_entries(&self) -> usize {
        self.timers.len()
    }

    /// Drops stale heap entries (deadlines cleared before they fired) once they outnumber the
    /// live ones by more than 64, so the heap stays within about twice the live timers plus 64;
    /// each prune is paid for by the pushes that made the entries stale.
    fn prune_stale_timers(&mut self) {
        let live = self.slots.counts().timed;
        let stale = self.timers.len().saturating_sub(live);
        if stale > live + 64 {
            let slots = &self.slots;
            self.timers.retain(|&Reverse((at, index, generation))| {
                slots.has_deadline(index, generation, at)
            });
        }
    }

    /// The earliest live timer.
    pub(crate) fn next_timer(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, index, generation))) = self.timers.peek() {
            if self.slots.has_deadline(index, generation, at) {
                return Some(at);
            }
            self.timers.pop();
        }
        None
    }
}
