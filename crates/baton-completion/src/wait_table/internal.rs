//! Internal waits (a timer, a wake-up): registered and settled by the runtime itself, drawing
//! their identities from the same allocator as external operations (E10).

use super::{SettleOutcome, WaitEntry, WaitKey, WaitState, WaitTable};
use crate::identity::IdentityError;
use baton_cancel::ContainedDrop;
use std::any::Any;

impl WaitTable {
    /// Registers an internal wait (a timer, a wake-up) settled with
    /// [`WaitTable::complete_internal`].
    pub fn register_internal(&mut self) -> Result<WaitKey, IdentityError> {
        let slot = self.allocator.allocate_wait()?;
        let key = self.key_of(&slot);
        self.entries.insert(
            slot.wait_id(),
            WaitEntry {
                generation: slot.generation(),
                _slot: slot,
                operation: None,
                decoder: None,
                resource: None,
                cancel: None,
                state: WaitState::Pending,
                waker: None,
            },
        );
        Ok(key)
    }

    /// Settles an internal wait with `value` (E10).
    pub fn complete_internal(&mut self, key: WaitKey, value: Box<dyn Any>) -> SettleOutcome {
        match self.pending_entry(key) {
            Some(entry)
                if entry.operation.is_none() && matches!(entry.state, WaitState::Pending) =>
            {
                self.counters.settled += 1;
                let entry = self.pending_entry(key).expect("checked just above");
                SettleOutcome::Settled {
                    waker: entry.settle(Ok(value)),
                }
            }
            _ => {
                self.counters.stale += 1;
                let _ = ContainedDrop::drop_value(value);
                SettleOutcome::Stale
            }
        }
    }
}
