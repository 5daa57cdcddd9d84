//! The scheduling policy a task sees: [`Schedule`], what a task calls on the scheduler it was
//! spawned on.
//!
//! The raw task code (`raw.rs`, `task.rs`, `join.rs`) is generic over it, so the task state
//! machine can be tested alone against a recording scheduler (`tests/task.rs`), while the
//! shipped tasks are all `SchedulerState`'s. The policy is a static type, never a trait object:
//! a wake calls [`Schedule::schedule`] directly (no indirect call, no allocation), and a task is
//! still one allocation whose header holds an `Arc` of its scheduler.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::RawWakerVTable;

use crate::raw::TaskRef;

/// What a task needs from its scheduler.
pub(crate) trait Schedule: Send + Sync + Sized + 'static {
    /// The waker vtable of this scheduler's tasks: a reference to a `static` of this type's
    /// own, initialised with [`raw::waker_vtable::<Self>()`](crate::raw::waker_vtable).
    ///
    /// It must be a `static` (not a constant, which may be duplicated per codegen unit): all
    /// wakers of a scheduler's tasks then share one vtable address, so `Waker::will_wake`
    /// recognises a clone of a task's waker and the drivers that store wakers never clone one
    /// again for the same task.
    const WAKER_VTABLE: &'static RawWakerVTable;

    /// Rule T2: queues `task`, whose queue entry (this reference) the caller hands over: a wake
    /// or an abort that found the task idle. Reached through the task itself, so the
    /// implementation decides how to keep its state alive while the entry moves into a queue.
    fn schedule(task: TaskRef<Self>);

    /// Rule T1: whether the registry holds a reference to `task`, which the caller is polling
    /// on the thread holding the claim (T9). A task enters the registry when it parks for the
    /// first time, with its queue entry's reference ([`RunOutcome::Register`]).
    ///
    /// [`RunOutcome::Register`]: crate::raw::RunOutcome::Register
    fn is_registered(task: &TaskRef<Self>) -> bool;

    /// Rule T1: takes a task about to complete out of the registry, when this thread holds
    /// it (the claim, T9), and returns the registry's reference for the completer.
    fn unregister(_task: &TaskRef<Self>) -> Option<TaskRef<Self>> {
        None
    }

    /// Rule T8: whether shutdown closed the scheduler; a task cancelled after that reports
    /// [`CancelReason::RuntimeShutdown`](crate::CancelReason::RuntimeShutdown), before it
    /// [`CancelReason::Aborted`](crate::CancelReason::Aborted).
    fn is_closed(&self) -> bool;

    /// Rule T1: a new task takes one unit of its scheduler, which keeps the `Arc` that
    /// `this` is alive until the unit is released. By default a unit is one strong count.
    fn acquire_unit(this: &Arc<Self>) {
        // SAFETY: `this` is a live `Arc`, so its pointer may take one more strong count.
        unsafe { Arc::increment_strong_count(Arc::as_ptr(this)) };
    }

    /// Rule T1: releases a unit of `this` taken by [`Schedule::acquire_unit`]; the scheduler
    /// may be gone when this returns.
    ///
    /// # Safety
    ///
    /// `this` points into the `Arc` the unit was acquired on, and the caller owns that unit
    /// and gives it up.
    unsafe fn release_unit(this: NonNull<Self>) {
        // SAFETY: the caller's guarantee: a unit is one strong count of that `Arc`.
        unsafe { Arc::decrement_strong_count(this.as_ptr().cast_const()) };
    }

    /// A recycled block for a new task of `layout` from the calling thread, if the policy
    /// keeps any (see `blocks`). The block was allocated by the global allocator with `layout`
    /// and is the caller's now.
    fn reuse_block(&self, _layout: Layout) -> Option<NonNull<u8>> {
        None
    }

    /// Offers the block of a freed task of `layout` for reuse; `Err` hands it back for the
    /// caller to free.
    ///
    /// # Safety
    ///
    /// `block` was allocated by the global allocator with `layout` and no task lives in it
    /// any more; on `Ok` its ownership passes to the policy.
    unsafe fn recycle_block(&self, _layout: Layout, block: NonNull<u8>) -> Result<(), NonNull<u8>> {
        Err(block)
    }
}
