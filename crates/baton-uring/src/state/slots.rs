//! The request slab: one [`Slot`] per registered request, named by a [`RequestKey`] (index +
//! generation), and the counters that follow from the slots' phases and deadlines.
//!
//! A slot's phase and deadline change only through [`Slots::set_phase`],
//! [`Slots::set_deadline`] and [`Slots::remove`], which keep [`SlotCounts`] in step, so no
//! other code edits a counter by hand.

use crate::trace::{self, RequestSpan};
use std::task::Waker;

use slab::Slab;
use web_time::Instant;

use crate::forward::ForwardCell;
use crate::key::{GENERATION_MASK, RequestKey};
use crate::request::{Outcome, Request};
use crate::stash::StashTicket;
use crate::sync::Arc;

/// Where a request is in its lifecycle (U1–U9).
#[derive(Debug)]
pub(crate) enum Phase {
    Queued,
    AwaitingPermit,
    InFlight,
    Sleeping,
    Completed(Outcome),
}

/// A copyable view of [`Phase`], to decide while the slot is not borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PhaseKind {
    Queued,
    AwaitingPermit,
    InFlight,
    Sleeping,
    Completed,
}

impl PhaseKind {
    fn of(phase: &Phase) -> PhaseKind {
        match phase {
            Phase::Queued => PhaseKind::Queued,
            Phase::AwaitingPermit => PhaseKind::AwaitingPermit,
            Phase::InFlight => PhaseKind::InFlight,
            Phase::Sleeping => PhaseKind::Sleeping,
            Phase::Completed(_) => PhaseKind::Completed,
        }
    }

    /// Waiting to reach the kernel (the `queued` counter).
    fn is_queued(self) -> bool {
        matches!(self, PhaseKind::Queued | PhaseKind::AwaitingPermit)
    }
}

/// Who wants the result.
#[derive(Debug)]
pub(crate) enum Waiter {
    None,
    Local(Waker),
    Forward(Arc<ForwardCell>),
}

/// Whether an async cancel was asked for, and whether it reached the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CancelState {
    None,
    Queued,
    Submitted,
}

/// One registered request. Its phase and deadline are private: they change only through
/// [`Slots`], which counts them.
#[derive(Debug)]
pub(crate) struct Slot {
    generation: u32,
    pub(crate) data: Request,
    phase: Phase,
    pub(crate) waiter: Waiter,
    /// A handle or forwarding cell still wants the result.
    pub(crate) attached: bool,
    pub(crate) cancel: CancelState,
    deadline: Option<Instant>,
    pub(crate) timed_out: bool,
    /// The detached handle's stash ticket: the final result goes to its stash (S2).
    pub(crate) late: Option<StashTicket>,
    /// The request's span (feature `tracing`; zero-sized otherwise), closed when the slot goes.
    pub(crate) span: RequestSpan,
}

impl Slot {
    pub(crate) fn kind(&self) -> PhaseKind {
        PhaseKind::of(&self.phase)
    }

    /// The result of a removed, completed slot.
    pub(crate) fn into_completed(self) -> Option<(Outcome, Request, Waiter)> {
        match self.phase {
            Phase::Completed(outcome) => Some((outcome, self.data, self.waiter)),
            _ => None,
        }
    }
}

/// What the slots' phases and deadlines add up to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotCounts {
    /// Queued or awaiting a durability permit.
    pub(crate) queued: usize,
    /// Owned by the kernel, of both kinds (U2).
    pub(crate) in_flight: usize,
    /// The part of `in_flight` that waits on a peer, so not under the in-flight limit.
    pub(crate) peer_in_flight: usize,
    /// Slots with a deadline (sleeps and timed requests).
    pub(crate) timed: usize,
}

impl SlotCounts {
    fn add(&mut self, kind: PhaseKind, peer: bool, timed: bool) {
        self.queued += usize::from(kind.is_queued());
        self.in_flight += usize::from(kind == PhaseKind::InFlight);
        self.peer_in_flight += usize::from(kind == PhaseKind::InFlight && peer);
        self.timed += usize::from(timed);
    }

    fn sub(&mut self, kind: PhaseKind, peer: bool, timed: bool) {
        self.queued -= usize::from(kind.is_queued());
        self.in_flight -= usize::from(kind == PhaseKind::InFlight);
        self.peer_in_flight -= usize::from(kind == PhaseKind::InFlight && peer);
        self.timed -= usize::from(timed);
    }
}

/// The slab of requests and its counters.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    slab: Slab<Slot>,
    generations: Vec<u32>,
    counts: SlotCounts,
}

impl Slots {
    /// U1: a new slot under a fresh generation, attached, in `phase`.
    pub(crate) fn insert(&mut self, data: Request, waiter: Waiter, phase: Phase) -> RequestKey {
        let index = self.slab.vacant_key();
        if self.generations.len() <= index {
            self.generations.resize(index + 1, 0);
        }
        let generation = (self.generations[index] + 1) & GENERATION_MASK;
        self.generations[index] = generation;
        let kind = PhaseKind::of(&phase);
        self.counts.add(kind, data.waits_on_peer(), false);
        self.slab.insert(Slot {
            // Before `data` moves in: fields are evaluated in the order written.
            span: trace::request_span(&data, index, generation),
            generation,
            data,
            phase,
            waiter,
            attached: true,
            cancel: CancelState::None,
            deadline: None,
            timed_out: false,
            late: None,
        });
        RequestKey {
            index: u32::try_from(index).expect("the slab never holds 2^32 requests"),
            generation,
        }
    }

    pub(crate) fn get(&self, key: RequestKey) -> Option<&Slot> {
        self.slab
            .get(key.index as usize)
            .filter(|s| s.generation == key.generation)
    }

    /// The slot of `key`, to change anything but its phase and deadline.
    pub(crate) fn get_mut(&mut self, key: RequestKey) -> Option<&mut Slot> {
        self.slab
            .get_mut(key.index as usize)
            .filter(|s| s.generation == key.generation)
    }

    /// The one phase transition: moves `key` to `phase` and keeps the counters, returning the
    /// old phase (`None` for a stale key).
    pub(crate) fn set_phase(&mut self, key: RequestKey, phase: Phase) -> Option<Phase> {
        let slot = self
            .slab
            .get_mut(key.index as usize)
            .filter(|s| s.generation == key.generation)?;
        let peer = slot.data.waits_on_peer();
        self.counts.sub(PhaseKind::of(&slot.phase), peer, false);
        self.counts.add(PhaseKind::of(&phase), peer, false);
        Some(std::mem::replace(&mut slot.phase, phase))
    }

    /// Sets (or clears) the deadline of `key` and keeps the counters; returns the old one.
    pub(crate) fn set_deadline(
        &mut self,
        key: RequestKey,
        deadline: Option<Instant>,
    ) -> Option<Instant> {
        let slot = self
            .slab
            .get_mut(key.index as usize)
            .filter(|s| s.generation == key.generation)?;
        let old = std::mem::replace(&mut slot.deadline, deadline);
        self.counts.timed -= usize::from(old.is_some());
        self.counts.timed += usize::from(deadline.is_some());
        old
    }

    /// Retires the slot of `key`, which must be live, releasing its counters.
    pub(crate) fn remove(&mut self, key: RequestKey) -> Slot {
        debug_assert!(self.get(key).is_some(), "removing a stale key");
        let slot = self.slab.remove(key.index as usize);
        self.counts.sub(
            PhaseKind::of(&slot.phase),
            slot.data.waits_on_peer(),
            slot.deadline.is_some(),
        );
        slot
    }

    /// Whether `index`/`generation` still names a live slot with deadline `at` (a timer heap
    /// entry is live).
    pub(crate) fn has_deadline(&self, index: u32, generation: u32, at: Instant) -> bool {
        self.slab
            .get(index as usize)
            .is_some_and(|s| s.generation == generation && s.deadline == Some(at))
    }

    /// The keys of every live slot.
    pub(crate) fn keys(&self) -> Vec<RequestKey> {
        self.slab
            .iter()
            .map(|(index, slot)| RequestKey {
                index: index as u32,
                generation: slot.generation,
            })
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.slab.len()
    }

    pub(crate) fn counts(&self) -> SlotCounts {
        self.counts
    }
}
