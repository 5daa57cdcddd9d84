//! The runtime-side wait table (crate rules 10–13): waits keyed by their full identity, settled
//! by completions, polled by tasks, cancelled through the cancel state machine.
//!
//! The table is single-threaded (`!Send`: decoders and hooks may hold `Rc`). It never wakes a
//! waker itself: [`WaitTable::settle`], [`WaitTable::cancel`] and [`WaitTable::check_bounds`]
//! hand the waker back so the caller wakes it outside its own borrows (rule 11).
//!
//! ```text
//!  register ──> Pending ──settle / cancel won / bound exceeded──> Ready ──poll──> removed
//!                  │                                                │
//!                  └──────────────────── discard ───────────────────┴──> removed
//!  a completion for a removed, settled or older-generation wait: Stale (counted)
//!  a completion for another runtime: Foreign (counted)
//! ```

use crate::completion::{CompletionFailure, ExternalCompletion};
use crate::identity::{
    CompletionKind, IdentityAllocator, IdentityError, OperationId, RuntimeId, WaitGeneration,
    WaitId, WaitSlot,
};
use crate::prepared::{DecodeError, ErasedDecoder};
use crate::registrar::RuntimeHalf;
use baton_cancel::{
    CancelBeforeStart, CancelHandle, ContainedDrop, HookResult, QuarantineBound, ResourceClass,
    TraceOutcome, TraceVisitor,
};
use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use web_time::Instant;

/// The full identity of a registered wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WaitKey {
    /// The runtime owning the table.
    pub runtime_id: RuntimeId,
    /// The wait slot.
    pub wait_id: WaitId,
    /// The slot's generation.
    pub generation: WaitGeneration,
}

/// Why a wait resolved without a value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WaitError {
    /// The operation was cancelled.
    #[error("the operation was cancelled")]
    Cancelled,
    /// The operation's worker panicked.
    #[error("the operation's worker panicked: {message}")]
    WorkerPanic {
        /// The panic message.
        message: String,
    },
    /// A quarantined operation outlived its bound.
    #[error("the quarantined operation outlived its bound ({bound})")]
    BoundExceeded {
        /// The declared bound.
        bound: QuarantineBound,
    },
    /// The decoder failed.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The decoded value is not of the type the poller asked for.
    #[error("the wait's value is not a {expected}; poll it with the type its decoder produces")]
    ValueType {
        /// The type asked for.
        expected: &'static str,
    },
    /// No such wait: it was never registered, already consumed, or discarded.
    #[error("no wait {key:?} in this table: it was consumed, discarded or never registered")]
    UnknownWait {
        /// The key polled.
        key: WaitKey,
    },
}

impl From<CompletionFailure> for WaitError {
    fn from(failure: CompletionFailure) -> Self {
        match failure {
            CompletionFailure::Cancelled => Self::Cancelled,
            CompletionFailure::WorkerPanic { message } => Self::WorkerPanic { message },
            CompletionFailure::BoundExceeded { bound } => Self::BoundExceeded { bound },
        }
    }
}

/// A runtime half could not be registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// The half was bound by another runtime's registrar.
    #[error(
        "the wait belongs to {half_runtime}; register it in that runtime's table, not {table_runtime}'s"
    )]
    ForeignRuntime {
        /// The runtime of the half.
        half_runtime: RuntimeId,
        /// The runtime of the table.
        table_runtime: RuntimeId,
    },
}

/// What [`WaitTable::settle`] did with a completion (rule 10).
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

/// What [`WaitTable::cancel`] did (rule 12).
#[must_use = "a cancelled wait's waker must be woken"]
#[derive(Debug)]
pub enum CancelOutcome {
    /// The cancel won before start: the wait settled as cancelled; wake `waker`.
    CancelledQueued {
        /// The waiting task's waker.
        waker: Option<Waker>,
    },
    /// An earlier cancel already won.
    AlreadyCancelled,
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
        /// The job was already running and interruptible: its hook was called (rule 12) and
        /// this holds the result and the resource to reap until `Reaped`.
        interrupted: Option<InterruptedJob>,
    },
    /// No such wait.
    Unknown,
}

/// A running interruptible job whose wait was discarded: its hook was called once, and it
/// stays reapable here (rule 12: cancel once, reap as often as needed). Dropping it drops
/// the hook contained (rule 7 of the crate).
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

/// The result of [`WaitTable::check_bounds`].
#[must_use = "waits that exceeded their bound must be woken"]
#[derive(Debug, Default)]
pub struct BoundCheck {
    /// Waits that were settled with `BoundExceeded`.
    pub exceeded: usize,
    /// Their wakers, to wake outside your borrows.
    pub wakers: Vec<Waker>,
}

/// Counters of a wait table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitCounters {
    /// Completions settled into a wait.
    pub settled: u64,
    /// Stale completions dropped (cancelled, settled, discarded or older generation).
    pub stale: u64,
    /// Completions of another runtime dropped.
    pub foreign: u64,
    /// Quarantined waits settled with `BoundExceeded`.
    pub bound_exceeded: u64,
}

enum WaitState {
    Pending,
    Ready(Result<Box<dyn Any>, WaitError>),
}

/// One wait. `operation` and `kind` are `None` for internal waits; `cancel` likewise.
struct Entry {
    _slot: WaitSlot,
    generation: WaitGeneration,
    operation: Option<(OperationId, CompletionKind)>,
    decoder: Option<ErasedDecoder>,
    resource: Option<ResourceClass>,
    cancel: Option<CancelHandle>,
    state: WaitState,
    waker: Option<Waker>,
}

impl Entry {
    fn settle(&mut self, result: Result<Box<dyn Any>, WaitError>) -> Option<Waker> {
        self.state = WaitState::Ready(result);
        if let Some(decoder) = self.decoder.take() {
            let _ = ContainedDrop::drop_value(decoder);
        }
        self.waker.take()
    }
}

/// The runtime-side table of waits (see the module documentation).
pub struct WaitTable {
    allocator: Arc<IdentityAllocator>,
    entries: HashMap<WaitId, Entry>,
    counters: WaitCounters,
}

impl WaitTable {
    /// A table for the runtime of `allocator`; internal waits draw from the same allocator as
    /// the registrar's external operations.
    pub fn new(allocator: Arc<IdentityAllocator>) -> Self {
        Self {
            allocator,
            entries: HashMap::new(),
            counters: WaitCounters::default(),
        }
    }

    /// The table's runtime.
    pub fn runtime_id(&self) -> RuntimeId {
        self.allocator.runtime_id()
    }

    /// Registers the runtime half of a binding.
    pub fn register(&mut self, half: RuntimeHalf) -> Result<WaitKey, RegisterError> {
        let table_runtime = self.runtime_id();
        let half_runtime = half.identity.runtime_id;
        if half_runtime != table_runtime || !Arc::ptr_eq(half.slot.allocator(), &self.allocator) {
            let _ = ContainedDrop::drop_value(half);
            return Err(RegisterError::ForeignRuntime {
                half_runtime,
                table_runtime,
            });
        }
        let RuntimeHalf {
            slot,
            identity,
            decoder,
            resource,
            cancel,
        } = half;
        let key = self.key_of(&slot);
        self.entries.insert(
            slot.wait_id(),
            Entry {
                _slot: slot,
                generation: identity.generation,
                operation: Some((identity.operation_id, identity.kind)),
                decoder: Some(decoder),
                resource: Some(resource),
                cancel: Some(cancel),
                state: WaitState::Pending,
                waker: None,
            },
        );
        Ok(key)
    }

    /// Registers an internal wait (a timer, a wake-up) settled with
    /// [`WaitTable::complete_internal`].
    pub fn register_internal(&mut self) -> Result<WaitKey, IdentityError> {
        let slot = self.allocator.allocate_wait()?;
        let key = self.key_of(&slot);
        self.entries.insert(
            slot.wait_id(),
            Entry {
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

    fn key_of(&self, slot: &WaitSlot) -> WaitKey {
        WaitKey {
            runtime_id: slot.runtime_id(),
            wait_id: slot.wait_id(),
            generation: slot.generation(),
        }
    }

    fn pending_entry(&mut self, key: WaitKey) -> Option<&mut Entry> {
        if key.runtime_id != self.runtime_id() {
            return None;
        }
        self.entries
            .get_mut(&key.wait_id)
            .filter(|entry| entry.generation == key.generation)
    }

    /// Settles an internal wait with `value` (rule 10).
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

    /// Settles the wait a completion addresses (rule 10): checks the full identity, runs the
    /// decoder on this thread and returns the waker to wake instead of waking it (rule 11).
    pub fn settle(&mut self, completion: ExternalCompletion) -> SettleOutcome {
        if completion.runtime_id != self.runtime_id() {
            self.counters.foreign += 1;
            let _ = ContainedDrop::drop_value(completion);
            return SettleOutcome::Foreign;
        }
        let identity = completion.identity();
        let entry = self.entries.get_mut(&identity.wait_id).filter(|entry| {
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

    /// Polls a wait for a value of type `T` (what its decoder produces). A ready wait is
    /// consumed and removed. A pending poll installs the waker, replacing it only when the
    /// new one would not wake the same task.
    pub fn poll_wait<T: 'static>(
        &mut self,
        key: WaitKey,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, WaitError>> {
        let Some(entry) = self.pending_entry(key) else {
            return Poll::Ready(Err(WaitError::UnknownWait { key }));
        };
        if let WaitState::Pending = entry.state {
            match &entry.waker {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                _ => entry.waker = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        }
        let mut entry = self
            .entries
            .remove(&key.wait_id)
            .expect("the entry was found just above");
        let state = std::mem::replace(&mut entry.state, WaitState::Pending);
        let _ = ContainedDrop::drop_value(entry);
        let WaitState::Ready(result) = state else {
            unreachable!("only a ready entry is removed by poll")
        };
        Poll::Ready(result.and_then(|value| {
            value.downcast::<T>().map(|value| *value).map_err(|value| {
                // Rule 7: the value is user data; destroy it contained.
                let _ = ContainedDrop::drop_value(value);
                WaitError::ValueType {
                    expected: std::any::type_name::<T>(),
                }
            })
        }))
    }

    /// Cancels a wait through the cancel state machine (rule 12).
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
            CancelBeforeStart::AlreadyCancelled => CancelOutcome::AlreadyCancelled,
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
    /// already running and interruptible gets its hook called (rule 12) and comes back in
    /// `Discarded::Removed { interrupted }` for reaping. A completion arriving later is counted
    /// as stale.
    pub fn discard(&mut self, key: WaitKey) -> Discarded {
        if self.pending_entry(key).is_none() {
            return Discarded::Unknown;
        }
        let mut entry = self
            .entries
            .remove(&key.wait_id)
            .expect("the entry was found just above");
        let cancel = match (&entry.state, &entry.cancel) {
            (WaitState::Pending, Some(cancel)) => Some(cancel.cancel_before_start()),
            _ => None,
        };
        let mut interrupted = None;
        if cancel == Some(CancelBeforeStart::AlreadyRunning)
            && let Some(mut resource) = entry.resource.take()
        {
            // Rule 12: a started interruptible job is interrupted once, then reapable.
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

    /// Settles every pending quarantined wait whose bound has passed at `now` with
    /// `BoundExceeded` and counts it (rule 13). Tests pass an injected clock.
    pub fn check_bounds(&mut self, now: Instant) -> BoundCheck {
        let mut check = BoundCheck::default();
        for entry in self.entries.values_mut() {
            let Some(bound) = entry.resource.as_ref().and_then(ResourceClass::bound) else {
                continue;
            };
            if matches!(entry.state, WaitState::Pending) && bound.is_exceeded_at(now) {
                check.exceeded += 1;
                if let Some(waker) = entry.settle(Err(WaitError::BoundExceeded { bound })) {
                    check.wakers.push(waker);
                }
            }
        }
        self.counters.bound_exceeded += check.exceeded as u64;
        check
    }

    /// Visits every reference the table's decoders and hooks own.
    pub fn trace(&self, visitor: &mut dyn TraceVisitor) -> TraceOutcome {
        for entry in self.entries.values() {
            let decoder = entry.decoder.as_ref().map(|decoder| decoder.trace(visitor));
            if let Some(incomplete @ TraceOutcome::Incomplete { .. }) = decoder {
                return incomplete;
            }
            let resource = entry
                .resource
                .as_ref()
                .map(|resource| resource.trace(visitor));
            if let Some(incomplete @ TraceOutcome::Incomplete { .. }) = resource {
                return incomplete;
            }
        }
        TraceOutcome::Complete
    }

    /// The table's counters.
    pub fn counters(&self) -> WaitCounters {
        self.counters
    }

    /// How many waits are registered (pending or ready, not yet consumed).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no wait is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Drop for WaitTable {
    fn drop(&mut self) {
        for (_, entry) in self.entries.drain() {
            let _ = ContainedDrop::drop_value(entry);
        }
    }
}

impl fmt::Debug for WaitTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitTable")
            .field("runtime", &self.runtime_id())
            .field("waits", &self.entries.len())
            .field("counters", &self.counters)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
