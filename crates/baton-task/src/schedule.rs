//! The scheduling policy a task sees: [`Schedule`], what a task calls on the scheduler it was
//! spawned on.
//!
//! The raw task code (`raw.rs`, `task.rs`, `join.rs`) is generic over it, so the task state
//! machine can be tested alone against a recording scheduler (`tests/task.rs`), while the
//! shipped tasks are all `SchedulerState`'s. The policy is a static type, never a trait object:
//! a wake calls [`Schedule::schedule`] directly (no indirect call, no allocation), and a task is
//! still one allocation whose header holds an `Arc` of its scheduler.

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

    /// Rule T8: whether shutdown closed the scheduler; a task cancelled after that reports
    /// [`CancelReason::RuntimeShutdown`](crate::CancelReason::RuntimeShutdown), before it
    /// [`CancelReason::Aborted`](crate::CancelReason::Aborted).
    fn is_closed(&self) -> bool;
}
