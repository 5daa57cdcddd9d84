//! Completion identities (crate rules E1–E2).
//!
//! * [`RuntimeId`]: process-wide, never reused.
//! * [`WaitId`] + [`WaitGeneration`]: a per-runtime wait slot and the generation it is on. A
//!   slot released and reused gets the next generation, so the pair never repeats and a stale
//!   completion can never match the slot's new occupant. A slot whose generation would
//!   overflow is retired instead of wrapping.
//! * [`OperationId`]: per runtime, strictly increasing, never reused.
//! * [`CompletionKind`]: a non-zero raw number naming what a completion carries.
//!
//! Internal waits and external operations draw from the same [`IdentityAllocator`], so they
//! never collide. Exhaustion is an [`IdentityError`], never a wrap-around.

// `StdArc` on purpose: it is the public ownership handle other crates pass around; the
// allocator's shared state goes through the shim's `Mutex` and atomics (see `crate::sync`).
use crate::sync::{AtomicU64, Mutex, Ordering, StaticCounter, StdArc};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::num::NonZeroU32;

/// Identifies one runtime for the whole life of the process (never reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuntimeId(u64);

/// A per-runtime wait slot. Together with [`WaitGeneration`] it names exactly one wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WaitId(u32);

/// The generation of a wait slot; bumped every time the slot is released.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WaitGeneration(u32);

/// A per-runtime operation number, strictly increasing, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperationId(u64);

/// What a completion carries, as a non-zero raw number chosen by the embedder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CompletionKind(NonZeroU32);

/// An identity allocator ran out of numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// No runtime id is left in this process.
    #[error("runtime ids are exhausted for this process; create fewer runtimes")]
    RuntimeIdsExhausted,
    /// Every wait slot of this runtime is in use or retired.
    #[error("wait slots of {runtime} are exhausted; release waits or create a new runtime")]
    WaitSlotsExhausted {
        /// The runtime whose slots ran out.
        runtime: RuntimeId,
    },
    /// Operation ids of this runtime are exhausted.
    #[error("operation ids of {runtime} are exhausted; create a new runtime")]
    OperationIdsExhausted {
        /// The runtime whose ids ran out.
        runtime: RuntimeId,
    },
}

/// A raw completion kind was invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KindError {
    /// Kind 0 is reserved.
    #[error("completion kind 0 is reserved; use a non-zero kind number")]
    Zero,
}

static NEXT_RUNTIME_ID: StaticCounter = StaticCounter::new(1);

impl RuntimeId {
    /// Allocates a fresh process-wide runtime id.
    pub fn allocate() -> Result<Self, IdentityError> {
        next_from(&NEXT_RUNTIME_ID)
            .map(Self)
            .ok_or(IdentityError::RuntimeIdsExhausted)
    }

    /// The raw number.
    pub fn get(self) -> u64 {
        self.0
    }
}

fn next_from(counter: &StaticCounter) -> Option<u64> {
    counter
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |current| {
            current.checked_add(1)
        })
        .ok()
}

impl fmt::Display for RuntimeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "runtime #{}", self.0)
    }
}

impl WaitId {
    /// The raw slot number.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl WaitGeneration {
    /// The raw generation number.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl OperationId {
    /// The raw number.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl CompletionKind {
    /// Validates a raw kind: 0 is refused with [`KindError::Zero`].
    pub fn try_from_raw(raw: u32) -> Result<Self, KindError> {
        NonZeroU32::new(raw).map(Self).ok_or(KindError::Zero)
    }

    /// The raw number.
    pub fn get(self) -> u32 {
        self.0.get()
    }
}

impl fmt::Display for CompletionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kind {}", self.0)
    }
}

/// Slot bookkeeping. Invariant: a slot index is either in `free` (with the generation it will
/// be handed out on in `generations`) or in use by exactly one [`WaitSlot`]; retired slots
/// (generation would overflow) are in neither.
///
/// The lowest free slot is handed out first, so the slot numbers in use stay below the number
/// of waits alive at once even after a burst: the wait tables index their entries by slot
/// number, and a table (one per thread that ran the worker) is then as long as the waits it
/// saw at once, not as the highest slot ever handed out.
#[derive(Debug)]
struct WaitSlots {
    generations: Vec<u32>,
    free: BinaryHeap<Reverse<u32>>,
}

/// The per-runtime allocator of wait slots and operation ids, shared by the registrar (external
/// operations) and the wait table (internal waits).
#[derive(Debug)]
pub struct IdentityAllocator {
    runtime: RuntimeId,
    slots: Mutex<WaitSlots>,
    slot_limit: u32,
    next_operation: AtomicU64,
}

impl IdentityAllocator {
    /// An allocator for `runtime`.
    pub fn new(runtime: RuntimeId) -> StdArc<Self> {
        Self::with_limits(runtime, u32::MAX, 1)
    }

    /// An allocator with a slot limit and a first operation number, so tests can reach
    /// exhaustion quickly.
    pub(crate) fn with_limits(runtime: RuntimeId, slot_limit: u32, first_op: u64) -> StdArc<Self> {
        StdArc::new(Self {
            runtime,
            slots: Mutex::new(WaitSlots {
                generations: Vec::new(),
                free: BinaryHeap::new(),
            }),
            slot_limit,
            next_operation: AtomicU64::new(first_op),
        })
    }

    /// The runtime these identities belong to.
    pub fn runtime_id(&self) -> RuntimeId {
        self.runtime
    }

    /// Allocates a wait slot; it is released (generation bumped) when the returned guard drops.
    pub fn allocate_wait(self: &StdArc<Self>) -> Result<WaitSlot, IdentityError> {
        let mut slots = self.slots.lock().expect("identity lock is never poisoned");
        let index = match slots.free.pop() {
            Some(Reverse(index)) => index,
            None => {
                let next = u32::try_from(slots.generations.len())
                    .ok()
                    .filter(|next| *next < self.slot_limit)
                    .ok_or(IdentityError::WaitSlotsExhausted {
                        runtime: self.runtime,
                    })?;
                slots.generations.push(0);
                next
            }
        };
        let generation = slots.generations[index as usize];
        Ok(WaitSlot {
            allocator: StdArc::clone(self),
            wait_id: WaitId(index),
            generation: WaitGeneration(generation),
        })
    }

    /// Allocates the next operation id.
    pub fn allocate_operation(&self) -> Result<OperationId, IdentityError> {
        self.next_operation
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |current| {
                current.checked_add(1)
            })
            .map(OperationId)
            .map_err(|_| IdentityError::OperationIdsExhausted {
                runtime: self.runtime,
            })
    }

    fn release(&self, wait_id: WaitId) {
        let mut slots = self.slots.lock().expect("identity lock is never poisoned");
        let generation = &mut slots.generations[wait_id.0 as usize];
        // Rule: never wrap. A slot whose generation is exhausted is retired for good.
        if let Some(next) = generation.checked_add(1) {
            *generation = next;
            slots.free.push(Reverse(wait_id.0));
        }
    }
}

#[cfg(test)]
impl IdentityAllocator {
    /// Test hook: adds a slot already on `generation` (as if released that many times) and
    /// hands it out, ignoring the slot limit.
    pub(crate) fn allocate_wait_on(self: &StdArc<Self>, generation: u32) -> WaitSlot {
        let mut slots = self.slots.lock().expect("identity lock is never poisoned");
        let index = u32::try_from(slots.generations.len()).expect("a test allocates few slots");
        slots.generations.push(generation);
        WaitSlot {
            allocator: StdArc::clone(self),
            wait_id: WaitId(index),
            generation: WaitGeneration(generation),
        }
    }
}

/// An allocated wait slot. Dropping it releases the slot for reuse under the next generation.
#[derive(Debug)]
pub struct WaitSlot {
    allocator: StdArc<IdentityAllocator>,
    wait_id: WaitId,
    generation: WaitGeneration,
}

impl WaitSlot {
    /// The runtime the slot belongs to.
    pub fn runtime_id(&self) -> RuntimeId {
        self.allocator.runtime
    }

    /// The slot number.
    pub fn wait_id(&self) -> WaitId {
        self.wait_id
    }

    /// The slot's generation.
    pub fn generation(&self) -> WaitGeneration {
        self.generation
    }

    pub(crate) fn allocator(&self) -> &StdArc<IdentityAllocator> {
        &self.allocator
    }
}

impl Drop for WaitSlot {
    fn drop(&mut self) {
        self.allocator.release(self.wait_id);
    }
}
