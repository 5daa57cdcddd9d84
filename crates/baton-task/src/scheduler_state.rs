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
use crate::schedule::Schedule;

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
}

impl SchedulerState {
    pub(crate) fn new(unpark: Arc<dyn Unpark>) -> SchedulerState {
        SchedulerState {
            claim: ClaimCell::new(),
            injector: Injector::new(unpark),
            counters: Counters::default(),
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
        let state: *const SchedulerState = Arc::as_ptr(task.scheduler());
        // SAFETY: `here` answers only on the thread holding the core claim (T9), and a claim
        // is held only by a live `ClaimGuard`, which owns an `Arc<SchedulerState>` until it
        // releases the claim (a leaked guard leaks its `Arc` too). Nothing here releases the
        // claim, so the state outlives the push even though `task`, and with it the task's own
        // `Arc<SchedulerState>`, moves into the queue. This saves a reference-count pair per
        // wake.
        if let Some(queues) = unsafe { &*state }.claim.here() {
            queues.push_ready(task);
            return;
        }
        // Rule T2, remote: the injection queue (unparking the worker). Our own `Arc` keeps the
        // state alive even if a closed queue drops the task.
        let state = Arc::clone(task.scheduler());
        let _ = state.injector.push_wake(task);
    }

    fn is_closed(&self) -> bool {
        self.injector.is_closed()
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
