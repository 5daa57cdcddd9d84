//! The runtime-side wait table (crate rules E10–E13): waits keyed by their full identity, settled
//! by completions, polled by tasks, cancelled through the cancel state machine.
//!
//! The table is single-threaded (`!Send`: decoders and hooks may hold `Rc`). It never wakes a
//! waker itself: [`WaitTable::settle`], [`WaitTable::cancel`] and [`WaitTable::check_bounds`]
//! hand the waker back so the caller wakes it outside its own borrows (E11).
//!
//! ```text
//!  register ──> Pending ──settle / cancel won / bound exceeded──> Ready ──poll──> removed
//!                  │                                                │
//!                  └──────────────────── discard ───────────────────┴──> removed
//!  a completion for a removed, settled or older-generation wait: Stale (counted)
//!  a completion for another runtime: Foreign (counted)
//! ```

use crate::completion::CompletionFailure;
use crate::identity::{
    CompletionKind, IdentityAllocator, OperationId, RuntimeId, WaitGeneration, WaitId, WaitSlot,
};
use crate::prepared::{DecodeError, ErasedDecoder};
use crate::registrar::RuntimeHalf;
use crate::sync::StdArc;
use baton_cancel::{
    CancelHandle, ContainedDrop, QuarantineBound, ResourceClass, TraceOutcome, TraceVisitor,
};
use std::any::Any;
use std::fmt;
use std::task::{Context, Poll, Waker};

mod bounds;
mod cancel;
mod entries;
mod internal;
mod routing;

pub use bounds::BoundCheck;
pub use cancel::{CancelOutcome, Discarded, InterruptedJob};
pub use routing::SettleOutcome;

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
struct WaitEntry {
    _slot: WaitSlot,
    generation: WaitGeneration,
    operation: Option<(OperationId, CompletionKind)>,
    decoder: Option<ErasedDecoder>,
    resource: Option<ResourceClass>,
    cancel: Option<CancelHandle>,
    state: WaitState,
    waker: Option<Waker>,
}

impl WaitEntry {
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
    allocator: StdArc<IdentityAllocator>,
    entries: entries::Entries,
    counters: WaitCounters,
}

impl WaitTable {
    /// A table for the runtime of `allocator`; internal waits draw from the same allocator as
    /// the registrar's external operations.
    pub fn new(allocator: StdArc<IdentityAllocator>) -> Self {
        Self {
            allocator,
            entries: entries::Entries::default(),
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
        if half_runtime != table_runtime || !StdArc::ptr_eq(half.slot.allocator(), &self.allocator)
        {
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
            WaitEntry {
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

    fn key_of(&self, slot: &WaitSlot) -> WaitKey {
        WaitKey {
            runtime_id: slot.runtime_id(),
            wait_id: slot.wait_id(),
            generation: slot.generation(),
        }
    }

    fn pending_entry(&mut self, key: WaitKey) -> Option<&mut WaitEntry> {
        if key.runtime_id != self.runtime_id() {
            return None;
        }
        self.entries
            .get_mut(key.wait_id)
            .filter(|entry| entry.generation == key.generation)
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
            .remove(key.wait_id)
            .expect("the entry was found just above");
        let state = std::mem::replace(&mut entry.state, WaitState::Pending);
        let _ = ContainedDrop::drop_value(entry);
        let WaitState::Ready(result) = state else {
            unreachable!("only a ready entry is removed by poll")
        };
        Poll::Ready(result.and_then(|value| {
            value.downcast::<T>().map(|value| *value).map_err(|value| {
                // Rule E7: the value is user data; destroy it contained.
                let _ = ContainedDrop::drop_value(value);
                WaitError::ValueType {
                    expected: std::any::type_name::<T>(),
                }
            })
        }))
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

#[cfg(test)]
impl WaitTable {
    /// Test hook: the queue state of an external wait's job; `None` for an internal or unknown
    /// wait.
    pub(crate) fn queue_state(&self, key: WaitKey) -> Option<baton_cancel::QueueState> {
        let entry = self.entries.get(key.wait_id)?;
        entry.cancel.as_ref().map(CancelHandle::state)
    }
}

impl Drop for WaitTable {
    fn drop(&mut self) {
        for entry in self.entries.drain() {
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
