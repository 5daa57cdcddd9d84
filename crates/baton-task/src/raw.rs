//! Type-erased tasks: the header every task allocation starts with, the counted [`TaskRef`]
//! that run queues and the registry hold, and the task waker (rules T1–T3 of the crate docs).
//!
//! A task is one heap allocation (`task::Task<F, S>`, `#[repr(C)]` with the [`Header`] first), so
//! a pointer to the header is a pointer to the task. Its references are counted in the state
//! word beside the flags (T1), which lets a wake by value turn the waker's reference into the
//! queue entry's, and a task going idle drop its queue entry's reference, in the same atomic
//! instruction that changes the flags. The typed operations (poll, drop the future, hand over
//! the output, free) are reached through the header's [`Vtable`]. Only the future's type is
//! erased: the scheduler type `S` stays static, so a wake reaches [`Schedule::schedule`] without
//! an indirect call. The waker's vtable is one static per scheduler type
//! ([`Schedule::WAKER_VTABLE`]), shared by all its tasks, so `Waker::will_wake` recognises a
//! task's wakers.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{RawWaker, RawWakerVTable, Waker};

use crate::containment::drop_contained;
use crate::join::CancelReason;
use crate::schedule::Schedule;
use crate::state::{RefsLeft, ShutdownReach, State, WakeByValue, WakeOutcome};
use crate::sync::{self, AtomicUsize, thread::ThreadId};

/// The registry slot of a task that is not in the registry: it has not parked yet (T1), or
/// it finished.
pub(crate) const UNREGISTERED: usize = usize::MAX;

/// The typed operations of one task type.
///
/// Every function takes a live task of the type the vtable was made for (`run` as the counted
/// reference it consumes, the others as a header pointer whose reference the caller holds, or,
/// for `dealloc`, just released).
pub(crate) struct Vtable<S: Schedule> {
    /// Polls or cancels the task; consumes the queue entry's reference (T3).
    pub(crate) run: unsafe fn(TaskRef<S>) -> RunOutcome<S>,
    /// Rule T8: cancels the task for shutdown if it is not being polled, reached as the
    /// [`ShutdownReach`] says.
    pub(crate) shut_down: unsafe fn(NonNull<Header<S>>, ShutdownReach) -> ShutdownOutcome,
    /// Rule T8: cancels a task whose spawn was refused, before it was ever queued, for the
    /// reason given.
    pub(crate) refuse: unsafe fn(NonNull<Header<S>>, CancelReason),
    /// Rule T6: drops the output of a completed task whose detaching `JoinHandle` owns it.
    pub(crate) drop_output: unsafe fn(NonNull<Header<S>>),
    /// Frees the allocation; called once, by whoever released the last reference.
    pub(crate) dealloc: unsafe fn(NonNull<Header<S>>),
}

impl<S: Schedule> std::fmt::Debug for Vtable<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vtable").finish_non_exhaustive()
    }
}

/// The future-independent part of a task, at offset zero of its allocation.
#[derive(Debug)]
pub(crate) struct Header<S: Schedule> {
    /// Flags and reference count (T1–T6).
    pub(crate) state: State,
    pub(crate) vtable: &'static Vtable<S>,
    /// `None` for a `Send` task; the owner thread of a local task (T7).
    pub(crate) owner: Option<ThreadId>,
    /// The scheduler the task was spawned on; its wakes go there. Points into an `Arc<S>`
    /// that stays alive while this header lives: the task holds one of the scheduler's task
    /// units (rule T1, [`Schedule::acquire_unit`]), released when the header drops.
    scheduler: NonNull<S>,
    /// The registry slot; only the thread holding the core claim (T9) touches it.
    pub(crate) slot: AtomicUsize,
    /// The `JoinHandle`'s waker slot (T6). Who may touch it is decided by the state word, so
    /// no lock guards it:
    ///
    /// * `JOIN_WAKER` clear: the handle owns the slot (a completer that saw the bit clear never
    ///   touches it);
    /// * `JOIN_WAKER` set before `COMPLETE`: the slot is published and nobody touches it; the
    ///   handle may take it back only by clearing the bit before completion
    ///   (`State::reclaim_join_waker`, or detach);
    /// * `JOIN_WAKER` set when `COMPLETE` was set: the completer owns the slot, takes the waker
    ///   and wakes it; the handle never touches the slot again.
    ///
    /// Each hand-over is an acquire/release read-modify-write of the state word, so every
    /// owner sees the previous owner's writes; the task's free comes after every owner.
    join_waker: sync::UnsafeCell<Option<Waker>>,
}

impl<S: Schedule> Header<S> {
    pub(crate) fn new(
        vtable: &'static Vtable<S>,
        refs: usize,
        owner: Option<ThreadId>,
        scheduler: &Arc<S>,
    ) -> Header<S> {
        S::acquire_unit(scheduler);
        Header {
            state: State::new(refs),
            vtable,
            owner,
            scheduler: sync::arc_address(scheduler),
            slot: AtomicUsize::new(UNREGISTERED),
            join_waker: sync::UnsafeCell::new(None),
        }
    }

    /// The scheduler the task was spawned on.
    pub(crate) fn scheduler(&self) -> &S {
        // SAFETY: the field's invariant: our unit keeps the scheduler alive while we live.
        unsafe { self.scheduler.as_ref() }
    }

    /// A counted `Arc` of the scheduler, for a caller that must keep it alive after the task
    /// may be gone.
    pub(crate) fn scheduler_arc(&self) -> Arc<S> {
        let scheduler = self.scheduler.as_ptr().cast_const();
        // SAFETY: the pointer came from an `Arc<S>` (`Header::new`) that our unit keeps alive,
        // so one more strong count may be taken and owned by the returned `Arc`.
        unsafe {
            Arc::increment_strong_count(scheduler);
            Arc::from_raw(scheduler)
        }
    }

    /// Rule T6: stores `waker` in the join waker slot and returns the one it replaces.
    ///
    /// # Safety
    ///
    /// The caller owns the slot (see the field's ownership rules).
    pub(crate) unsafe fn store_join_waker(&self, waker: Waker) -> Option<Waker> {
        // SAFETY: the caller owns the slot, so this access is the only one.
        self.join_waker
            .with_mut(|slot| unsafe { std::ptr::replace(slot, Some(waker)) })
    }

    /// Rule T6: takes the waker out of the join waker slot.
    ///
    /// # Safety
    ///
    /// The caller owns the slot (see the field's ownership rules).
    pub(crate) unsafe fn take_join_waker(&self) -> Option<Waker> {
        // SAFETY: the caller owns the slot, so this access is the only one.
        self.join_waker
            .with_mut(|slot| unsafe { std::ptr::replace(slot, None) })
    }
}

impl<S: Schedule> Drop for Header<S> {
    fn drop(&mut self) {
        // A waker still stored here (a path that did not release it) must not panic out of
        // whichever thread frees the task.
        // SAFETY: `&mut self`: the task is being freed, nobody else reaches the slot.
        if let Some(waker) = unsafe { self.take_join_waker() } {
            drop_contained(waker);
        }
        // SAFETY: the unit `Header::new` acquired on this scheduler, released once, last: the
        // scheduler is not used after this.
        unsafe { S::release_unit(self.scheduler) };
    }
}

/// What running a task did.
#[must_use]
#[derive(Debug)]
pub(crate) enum RunOutcome<S: Schedule> {
    /// The entry was stale (the task had already finished); its reference was released.
    Stale,
    /// The task waits for a waker; its queue entry's reference was released (T3).
    Parked,
    /// The task parked for the first time: register it with this reference, its queue
    /// entry's, kept for the registry (T1).
    Register(TaskRef<S>),
    /// Woken during its poll: push it back, with the same reference (T3).
    Requeue(TaskRef<S>),
    /// The task finished and must leave the registry (T1). `entry` is the queue entry's
    /// reference, `None` when completion released it already, together with the registry's
    /// (the task left the registry just before); `registered` is the registry's reference when
    /// the task left the registry before completing but completion kept it.
    Finished {
        entry: Option<TaskRef<S>>,
        registered: Option<TaskRef<S>>,
        finish: Finish,
    },
}

/// How a task finished, for the counters. `Cancelled` is the end of an aborted task, of one
/// shut down and of a leaked one, as [`JoinError::Cancelled`](crate::JoinError::Cancelled)
/// names it for the handle.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    Completed,
    Panicked,
    Cancelled,
}

/// What shutdown did to a task (T8).
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShutdownOutcome {
    /// Its future was dropped here; its handle resolves cancelled.
    Cancelled,
    /// Its future was leaked (foreign owner thread or unwinding); its handle resolves cancelled.
    Leaked,
    /// It is being polled; its poller cancels it when the poll returns.
    Running,
    /// It had already finished.
    Complete,
}

/// One counted reference to a task (T1), as held by run queues, the registry, wakers and
/// the `JoinHandle`.
///
/// Invariant: `header` points to the header of a live task allocation, and this value owns one
/// of the references counted in its state word; the allocation is freed only when the last
/// counted reference is released.
pub(crate) struct TaskRef<S: Schedule> {
    header: NonNull<Header<S>>,
}

// SAFETY: a `TaskRef` only reaches the task through its header (whose fields are `Send + Sync`,
// except the join waker slot, whose owner the state word names at every moment, rule T6) and
// the vtable, whose functions follow the state protocol: the future and output are touched
// only by the `RUNNING` holder on a thread allowed to touch them (T7) or by the handle, which
// is `Send` only when the output is. The count is atomic, so a reference may be released on any
// thread, and so may the last one: until the task finished, the scheduler holds a reference
// (a queue entry's, the poller's or, once the task parked, the registry's, T1), a leaked task
// (T7) keeps one forever, and the completer or the handle takes the result
// (T5, T6), so the allocation is freed with an empty stage and no `!Send` future or output
// is ever dropped by the thread that frees it. The header's `Arc<S>` is `Send + Sync` because
// `S: Schedule` is.
unsafe impl<S: Schedule> Send for TaskRef<S> {}
// SAFETY: as for `Send`; `&TaskRef` only gives access to the header.
unsafe impl<S: Schedule> Sync for TaskRef<S> {}

impl<S: Schedule> TaskRef<S> {
    /// Takes ownership of one counted reference.
    ///
    /// # Safety
    ///
    /// `header` points to a live task's header and the caller transfers one reference that it
    /// owns (and will not release itself).
    pub(crate) unsafe fn from_raw(header: NonNull<Header<S>>) -> TaskRef<S> {
        TaskRef { header }
    }

    pub(crate) fn as_raw(&self) -> NonNull<Header<S>> {
        self.header
    }

    /// Gives up this value without releasing its reference (the caller accounts for it).
    pub(crate) fn into_raw(self) -> NonNull<Header<S>> {
        ManuallyDrop::new(self).header
    }

    pub(crate) fn header(&self) -> &Header<S> {
        // SAFETY: the type's invariant: we own a reference, so the allocation is alive.
        unsafe { self.header.as_ref() }
    }

    /// The scheduler the task was spawned on.
    pub(crate) fn scheduler(&self) -> &S {
        self.header().scheduler()
    }

    /// Polls (or cancels) the task once. Called by the core-claim holder on a thread the task
    /// may run on, after popping its queue entry, whose reference this consumes.
    pub(crate) fn run(self) -> RunOutcome<S> {
        let run = self.header().vtable.run;
        // SAFETY: the vtable belongs to this task's type; `self` is the reference it consumes.
        unsafe { run(self) }
    }

    /// Rule T8: cancels the task for shutdown, from the core-claim holder's thread; `reach`
    /// says whether this reference is a queue entry taken out of its queue or the registry's.
    pub(crate) fn shut_down(&self, reach: ShutdownReach) -> ShutdownOutcome {
        // SAFETY: the vtable belongs to this task's type and our reference keeps it alive.
        unsafe { (self.header().vtable.shut_down)(self.header, reach) }
    }

    /// Rule T1: releases this reference and `other`, another reference to the same task, in
    /// one instruction (a finished task's queue entry and registry entry).
    pub(crate) fn release_with(self, other: TaskRef<S>) {
        debug_assert_eq!(self.header, other.header, "two references to one task");
        let header = self.into_raw();
        let _ = other.into_raw();
        // SAFETY: both references were ours and are given up here; the task is alive until the
        // transition below releases them.
        if unsafe { header.as_ref() }.state.ref_dec_twice() == RefsLeft::Zero {
            // SAFETY: those were the last references: nobody else can reach the task any more.
            unsafe { dealloc(header) }
        }
    }

    /// Rule T2: queues a task whose queue entry (this reference) we own, on its scheduler.
    pub(crate) fn schedule(self) {
        S::schedule(self);
    }

    /// A waker for the duration of one poll that borrows this reference instead of counting
    /// one; clones made from it count normally.
    pub(crate) fn borrowed_waker(&self) -> ManuallyDrop<Waker> {
        let data = self.header.as_ptr().cast();
        // SAFETY: the waker's data is a live task header of a `Header<S>`, as the functions of
        // `S`'s waker vtable require. Wrapped in `ManuallyDrop`, it never releases the reference
        // it did not take.
        ManuallyDrop::new(unsafe { Waker::new(data, S::WAKER_VTABLE) })
    }
}

impl<S: Schedule> Clone for TaskRef<S> {
    fn clone(&self) -> TaskRef<S> {
        self.header().state.ref_inc();
        TaskRef {
            header: self.header,
        }
    }
}

impl<S: Schedule> Drop for TaskRef<S> {
    fn drop(&mut self) {
        if self.header().state.ref_dec() == RefsLeft::Zero {
            // SAFETY: that was the last reference: nobody else can reach the task any more.
            unsafe { dealloc(self.header) }
        }
    }
}

impl<S: Schedule> std::fmt::Debug for TaskRef<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRef")
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

/// Frees a task.
///
/// # Safety
///
/// The caller released the task's last reference.
unsafe fn dealloc<S: Schedule>(header: NonNull<Header<S>>) {
    // SAFETY: the last reference was ours, so the header is still valid to read here, and the
    // vtable's `dealloc` belongs to this task's type.
    unsafe { (header.as_ref().vtable.dealloc)(header) }
}

/// The vtable of the wakers of `S`'s tasks, for [`Schedule::WAKER_VTABLE`]'s `static`. A
/// waker's data pointer is the task's header, and a waker that is not borrowed (see
/// [`TaskRef::borrowed_waker`]) owns one counted reference.
pub(crate) const fn waker_vtable<S: Schedule>() -> RawWakerVTable {
    RawWakerVTable::new(
        clone_waker::<S>,
        wake_by_value::<S>,
        wake_by_ref::<S>,
        drop_waker::<S>,
    )
}

/// The header a task waker's data points to.
///
/// # Safety
///
/// `data` comes from a waker made with `S::WAKER_VTABLE`, whose data is always the header of
/// one of `S`'s tasks.
unsafe fn header_of<S: Schedule>(data: *const ()) -> NonNull<Header<S>> {
    // SAFETY: the caller's guarantee: the data of our wakers is a non-null header pointer.
    unsafe { NonNull::new_unchecked(data.cast_mut().cast()) }
}

/// Rule T1: a clone counts one more reference.
unsafe fn clone_waker<S: Schedule>(data: *const ()) -> RawWaker {
    // SAFETY: called through `S::WAKER_VTABLE`; `data` is the header of a task that the cloned
    // waker keeps alive.
    unsafe { header_of::<S>(data).as_ref() }.state.ref_inc();
    RawWaker::new(data, S::WAKER_VTABLE)
}

/// Rule T2: consumes the waker's reference: it becomes the queue entry's when the task was idle,
/// and is released otherwise.
unsafe fn wake_by_value<S: Schedule>(data: *const ()) {
    // SAFETY: called through `S::WAKER_VTABLE`.
    let header = unsafe { header_of::<S>(data) };
    // SAFETY: the waker owns a reference, so the task is alive.
    match unsafe { header.as_ref() }.state.wake_by_value() {
        // SAFETY: the transition moved the waker's reference to the queue entry we now own.
        WakeByValue::Submit => unsafe { TaskRef::from_raw(header) }.schedule(),
        WakeByValue::Released(RefsLeft::Others) => {}
        // SAFETY: the transition released the task's last reference.
        WakeByValue::Released(RefsLeft::Zero) => unsafe { dealloc(header) },
    }
}

/// Rule T2: the waker keeps its reference; an idle task gets a new one for its queue entry.
unsafe fn wake_by_ref<S: Schedule>(data: *const ()) {
    // SAFETY: called through `S::WAKER_VTABLE`.
    let header = unsafe { header_of::<S>(data) };
    // SAFETY: the waker (owned or borrowed) holds a reference, so the task is alive.
    match unsafe { header.as_ref() }.state.wake() {
        // SAFETY: the transition took a reference for the queue entry, which we now own.
        WakeOutcome::Submit => unsafe { TaskRef::from_raw(header) }.schedule(),
        WakeOutcome::Coalesced | WakeOutcome::DuringPoll | WakeOutcome::Complete => {}
    }
}

/// Rule T1: a dropped waker releases its reference.
unsafe fn drop_waker<S: Schedule>(data: *const ()) {
    // SAFETY: called through `S::WAKER_VTABLE`; an owned waker holds one reference, which it
    // gives up here.
    drop(unsafe { TaskRef::from_raw(header_of::<S>(data)) });
}
