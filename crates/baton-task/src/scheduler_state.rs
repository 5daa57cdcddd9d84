//! [`SchedulerState`]: everything a scheduler shares with its spawners, its tasks and other
//! threads, behind one `Arc`.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::RawWakerVTable;

use crate::claim::ClaimCell;
use crate::counts::Counters;
use crate::injector::{Injector, Unpark};
use crate::raw::{self, TaskRef};
use crate::run_queues::RunQueues;
use crate::schedule::Schedule;
use crate::sync::{AtomicUsize, Ordering};

/// The state of one scheduler that every thread may reach: the core claim and the run queues
/// behind it (T9), the injection queue (T2, T8, T11) and the task counters.
///
/// Named for whose state it is, beside the scheduler's one-thread part ([`RunQueues`], behind
/// the claim) and a task's own state word (`state::State`). The [`Scheduler`], its
/// [`Spawner`]s, the thread context, every claim guard and every task's header hold it; its
/// parts are rooms with their own methods, reached through the accessors below.
///
/// [`RunQueues`]: crate::run_queues::RunQueues
/// [`Scheduler`]: crate::Scheduler
/// [`Spawner`]: crate::Spawner
#[derive(Debug)]
pub(crate) struct SchedulerState {
    claim: ClaimCell,
    injector: Injector,
    counters: Counters,
    /// Rule T1 (units): the task units outstanding, held by task allocations and, as spares,
    /// by the claim holder. Invariant: while it is non-zero the units together own one strong
    /// count of the `Arc` this state lives in, so every task can reach its scheduler without
    /// an `Arc` count of its own.
    units: AtomicUsize,
}

/// How many task units the claim holder counts at once for its spares (and gives back at once
/// when it holds twice as many).
const UNIT_BATCH: usize = 64;

impl SchedulerState {
    pub(crate) fn new(unpark: Arc<dyn Unpark>) -> SchedulerState {
        SchedulerState {
            claim: ClaimCell::new(),
            injector: Injector::new(unpark),
            counters: Counters::default(),
            units: AtomicUsize::new(0),
        }
    }

    /// Rule T1 (units): counts `count` more units; the first one of a period with none takes
    /// the units' strong count of `this`.
    fn add_units(&self, this: &Arc<SchedulerState>, count: usize) {
        if self.units.fetch_add(count, Ordering::Relaxed) == 0 {
            // SAFETY: `this` is a live `Arc`, so it may take one more strong count, which the
            // units own until their count returns to zero.
            unsafe { Arc::increment_strong_count(Arc::as_ptr(this)) };
        }
    }

    /// Rule T1 (units): uncounts `count` units; the one that brings the count to zero gives up
    /// the units' strong count, which may free the state.
    ///
    /// # Safety
    ///
    /// `this` points into the `Arc` the units were counted on, and the caller owns `count`
    /// counted units, which it gives up.
    pub(crate) unsafe fn sub_units(this: NonNull<SchedulerState>, count: usize) {
        // SAFETY: the caller's units keep the state alive until this subtraction.
        let previous = unsafe { this.as_ref() }
            .units
            .fetch_sub(count, Ordering::AcqRel);
        debug_assert!(
            previous >= count,
            "rule T1: released more units than counted"
        );
        if previous == count {
            // SAFETY: the units' strong count, taken when the count left zero (`add_units`);
            // acquire above orders every unit holder's use of the state before this release.
            unsafe { Arc::decrement_strong_count(this.as_ptr().cast_const()) };
        }
    }

    /// Rule T9: the claim word and the run queues only its holder reaches.
    pub(crate) fn claim(&self) -> &ClaimCell {
        &self.claim
    }

    /// Rules T2, T8, T11: the injection queue.
    pub(crate) fn injector(&self) -> &Injector {
        &self.injector
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }
}

/// The vtable of every waker of a `SchedulerState` task (see [`Schedule::WAKER_VTABLE`]).
static WAKER_VTABLE: RawWakerVTable = raw::waker_vtable::<SchedulerState>();

impl Schedule for SchedulerState {
    const WAKER_VTABLE: &'static RawWakerVTable = &WAKER_VTABLE;

    /// Rule T2: onto the run queues when this thread holds the claim, otherwise onto the
    /// injection queue.
    fn schedule(task: TaskRef<SchedulerState>) {
        let state: *const SchedulerState = task.scheduler();
        // SAFETY: `here` answers only on the thread holding the core claim (T9), and a claim
        // is held only by a live `ClaimGuard`, which owns an `Arc<SchedulerState>` until it
        // releases the claim (a leaked guard leaks its `Arc` too). Nothing here releases the
        // claim, so the state outlives the push even though `task`, and with it the task's own
        // unit of the state, moves into the queue. This saves a reference-count pair per wake.
        if let Some(queues) = unsafe { &*state }.claim.here() {
            queues.push_ready(task);
            return;
        }
        // Rule T2, remote: the injection queue (unparking the worker). Our own `Arc` keeps the
        // state alive even if a closed queue drops the task.
        let state = task.header().scheduler_arc();
        let _ = state.injector.push_wake(task);
    }

    fn is_closed(&self) -> bool {
        self.injector.is_closed()
    }

    fn is_registered(task: &TaskRef<SchedulerState>) -> bool {
        RunQueues::is_registered(task)
    }

    fn unregister(task: &TaskRef<SchedulerState>) -> Option<TaskRef<SchedulerState>> {
        task.scheduler().claim.here()?.unregister(task)
    }

    /// Rule T1 (units): the claim holder takes a unit from its spares, which it refills in
    /// batches; any other thread counts one.
    fn acquire_unit(this: &Arc<SchedulerState>) {
        if let Some(queues) = this.claim.here() {
            if !queues.take_spare_unit() {
                this.add_units(this, UNIT_BATCH);
                queues.add_spare_units(UNIT_BATCH - 1);
            }
            return;
        }
        this.add_units(this, 1);
    }

    /// Rule T1 (units): a unit released on the claim holder's thread becomes a spare (the
    /// surplus goes back in a batch); elsewhere it is uncounted, and the last one gives up the
    /// units' strong count.
    unsafe fn release_unit(this: NonNull<SchedulerState>) {
        // SAFETY: the caller's unit keeps the state alive until it is released below.
        let state = unsafe { this.as_ref() };
        if let Some(queues) = state.claim.here() {
            if queues.add_spare_units(1) > 2 * UNIT_BATCH {
                queues.take_spare_units(UNIT_BATCH);
                // Spares remain counted, so this never releases the last unit.
                let previous = state.units.fetch_sub(UNIT_BATCH, Ordering::AcqRel);
                debug_assert!(previous > UNIT_BATCH, "rule T1: spares are counted units");
            }
            return;
        }
        // SAFETY: the caller's guarantee: `this` points into the units' `Arc`.
        unsafe { Self::sub_units(this, 1) };
    }

    /// From the claim holder's cache only: other threads allocate.
    fn reuse_block(&self, layout: Layout) -> Option<NonNull<u8>> {
        self.claim.here()?.blocks().take(layout)
    }

    /// Into the claim holder's cache only: a task freed on another thread (or while this
    /// thread's locals are being destroyed) goes back to the allocator.
    unsafe fn recycle_block(&self, layout: Layout, block: NonNull<u8>) -> Result<(), NonNull<u8>> {
        match self.claim.here() {
            // SAFETY: the caller's guarantee, passed on.
            Some(queues) => unsafe { queues.blocks().keep(layout, block) },
            None => Err(block),
        }
    }
}
