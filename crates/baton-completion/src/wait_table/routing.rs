//! Routing a completion to its wait by the full identity (E10), without waking (E11).

use super::{WaitError, WaitState, WaitTable};
use crate::completion::ExternalCompletion;
use baton_cancel::ContainedDrop;
use std::task::Waker;

/// What [`WaitTable::settle`] did with a completion (E10).
#[must_use = "a settled wait's waker must be woken"]
#[derive(Debug)]
pub enum SettleOutcome {
    /// The wait is ready; wake `waker` (if the wait was polled) outside your borrows.
    Settled {
        /// The waiting task's waker.
        waker: Option<Waker>,
    },
    /// The wait was cancelled, already settled, discarded or is of another generation: the
    /// completion was counted and dropped.
    Stale,
    /// The completion belongs to another runtime: counted and dropped, never misrouted.
    Foreign,
}

impl WaitTable {
    /// Settles the wait a completion addresses (E10): checks the full identity, runs the
    /// decoder on this thread and returns the waker to wake instead of waking it (E11).
    pub fn settle(&mut self, completion: ExternalCompletion) -> SettleOutcome {
        if completion.runtime_id != self.runtime_id() {
            self.counters.foreign += 1;
            let _ = ContainedDrop::drop_value(completion);
            return SettleOutcome::Foreign;
        }
        let identity = completion.identity();
        let entry = self.entries.get_mut(identity.wait_id).filter(|entry| {
            entry.generation == identity.generation
                && entry.operation == Some((identity.operation_id, identity.kind))
                && matches!(entry.state, WaitState::Pending)
        });
        let Some(entry) = entry else {
            self.counters.stale += 1;
            let _ = ContainedDrop::drop_value(completion);
            return SettleOutcome::Stale;
        };
        let value = match completion.result {
            Ok(payload) => entry
                .decoder
                .as_mut()
                .expect("a pending external wait holds its decoder")
                .decode(payload)
                .map_err(WaitError::from),
            Err(failure) => Err(WaitError::from(failure)),
        };
        self.counters.settled += 1;
        SettleOutcome::Settled {
            waker: entry.settle(value),
        }
    }
}
