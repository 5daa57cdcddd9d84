//! Cancelling a wait through the cancel state machine (E12): cancel before start, interrupt
//! a started interruptible job once and reap it as often as needed, report a quarantined job's
//! bound; and discarding a wait whatever its state.

use super::{WaitError, WaitKey, WaitState, WaitTable};
use baton_cancel::{CancelBeforeStart, ContainedDrop, HookResult, QuarantineBound, ResourceClass};
use std::fmt;
use std::task::Waker;

/// What [`WaitTable::cancel`] did (E12).
#[must_use = "a cancelled wait's waker must be woken"]
#[derive(Debug)]
pub enum CancelOutcome {
    /// The cancel won before start: the wait settled as cancelled; wake `waker`.
    CancelledQueued {
        /// The waiting task's waker.
        waker: Option<Waker>,
    },
    /// An earlier cancel already won: through another side of a shared queue cell
    /// (`Registrar::bind_with_control`), since a cancel through this table settles the wait;
    /// or the executor withdrew the job on its shutdown (`baton-cancel` rule C7). The job will
    /// never run, so a wait still pending is settled as cancelled now and its waker handed
    /// back to wake (E11).
    AlreadyCancelled {
        /// The waiting task's waker, if a task waits.
        waker: Option<Waker>,
    },
    /// The job was running and interruptible: the hook was called (once).
    Interrupted(HookResult),
    /// The hook was already called by an earlier cancel; use `reap` to call it again.
    AlreadyInterrupted,
    /// The job was running and cannot be interrupted; it runs on under this bound.
    Quarantined {
        /// The declared bound.
        bound: QuarantineBound,
    },
    /// The wait already has its result.
    AlreadySettled,
    /// No such wait.
    Unknown,
}

/// What [`WaitTable::discard`] did.
#[must_use = "a discarded running job may still need reaping"]
#[derive(Debug)]
pub enum Discarded {
    /// The wait was removed; `cancel` is the cancel-before-start outcome (`None` for internal
    /// waits and settled ones). A late completion will be counted as stale.
    Removed {
        /// The attempt to cancel the job before it starts.
        cancel: Option<CancelBeforeStart>,
        /// The job was already running and interruptible: its hook was called (E12) and
        /// this holds the result and the resource to reap until `Reaped`.
        interrupted: Option<InterruptedJob>,
    },
    /// No such wait.
    Unknown,
}

/// A running interruptible job whose wait was discarded: its hook was called once, and it
/// stays reapable here (rule E12: cancel once, reap as often as needed). Dropping it drops
/// the hook contained (rule E7 of the crate).
///
/// Invariant: `resource` is `Some` until the drop.
pub struct InterruptedJob {
    first: HookResult,
    resource: Option<ResourceClass>,
}

impl InterruptedJob {
    /// What the hook returned when the discard called it.
    pub fn first(&self) -> &HookResult {
        &self.first
    }

    /// Calls the hook again; reap until it reports `Reaped`.
    pub fn reap(&mut self) -> HookResult {
        self.resource
            .as_mut()
            .and_then(ResourceClass::reap)
            .expect("an interrupted job holds its interruptible resource until dropped")
    }

    /// The resource kind (`"socket"`, ...).
    pub fn kind(&self) -> &'static str {
        match &self.resource {
            Some(ResourceClass::Interruptible(resource)) => resource.kind(),
            _ => unreachable!("an interrupted job holds its interruptible resource"),
        }
    }
}

impl Drop for InterruptedJob {
    fn drop(&mut self) {
        if let Some(resource) = self.resource.take() {
            let _ = ContainedDrop::drop_value(resource);
        }
    }
}

impl fmt::Debug for InterruptedJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterruptedJob")
            .field("kind", &self.kind())
            .field("first", &self.first)
            .finish()
    }
}

impl WaitTable {
    /// Cancels a wait through the cancel state machine (E12).
    pub fn cancel(&mut self, key: WaitKey) -> CancelOutcome {
        let Some(entry) = self.pending_entry(key) else {
            return CancelOutcome::Unknown;
        };
        if let WaitState::Ready(_) = entry.state {
            return CancelOutcome::AlreadySettled;
        }
        let outcome = match &entry.cancel {
            None => CancelBeforeStart::CancelledQueued,
            Some(cancel) => cancel.cancel_before_start(),
        };
        match outcome {
            CancelBeforeStart::CancelledQueued => CancelOutcome::CancelledQueued {
                waker: entry.settle(Err(WaitError::Cancelled)),
            },
            CancelBeforeStart::AlreadyCancelled => CancelOutcome::AlreadyCancelled {
                waker: entry.settle(Err(WaitError::Cancelled)),
            },
            CancelBeforeStart::AlreadyRunning => match entry.resource.as_mut() {
                Some(ResourceClass::Quarantined(bound)) => {
                    CancelOutcome::Quarantined { bound: *bound }
                }
                Some(resource) => match resource.cancel() {
                    Some(result) => CancelOutcome::Interrupted(result),
                    None => CancelOutcome::AlreadyInterrupted,
                },
                None => unreachable!("external waits hold their resource class"),
            },
        }
    }

    /// Calls an interruptible wait's hook again (reap until `Reaped`); `None` for quarantined,
    /// internal or unknown waits.
    pub fn reap(&mut self, key: WaitKey) -> Option<HookResult> {
        self.pending_entry(key)?.resource.as_mut()?.reap()
    }

    /// Removes a wait whatever its state, trying to cancel its job before it starts; a job
    /// already running and interruptible gets its hook called (E12) and comes back in
    /// `Discarded::Removed { interrupted }` for reaping. A completion arriving later is counted
    /// as stale.
    pub fn discard(&mut self, key: WaitKey) -> Discarded {
        if self.pending_entry(key).is_none() {
            return Discarded::Unknown;
        }
        let mut entry = self
            .entries
            .remove(key.wait_id)
            .expect("the entry was found just above");
        let cancel = match (&entry.state, &entry.cancel) {
            (WaitState::Pending, Some(cancel)) => Some(cancel.cancel_before_start()),
            _ => None,
        };
        let mut interrupted = None;
        if cancel == Some(CancelBeforeStart::AlreadyRunning)
            && let Some(mut resource) = entry.resource.take()
        {
            // Rule E12: a started interruptible job is interrupted once, then reapable.
            match resource.cancel() {
                Some(first) => {
                    interrupted = Some(InterruptedJob {
                        first,
                        resource: Some(resource),
                    });
                }
                None => entry.resource = Some(resource),
            }
        }
        let _ = ContainedDrop::drop_value(entry);
        Discarded::Removed {
            cancel,
            interrupted,
        }
    }
}
