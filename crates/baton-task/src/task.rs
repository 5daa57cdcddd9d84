//! The typed task cell: header, future and output in one allocation (T1), and the
//! vtable functions that reach them, for a task of any [`Schedule`] policy.

use std::alloc::Layout;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::containment::{drop_contained, wake_contained};
use crate::join::{CancelReason, Join, JoinError};
use crate::raw::{Finish, Header, RunOutcome, ShutdownOutcome, TaskRef, Vtable};
use crate::schedule::Schedule;
use crate::state::{
    CompleteReleasing, Completed, IdleOutcome, ParkEntry, RefsLeft, ShutdownClaim, ShutdownReach,
    StartOutcome,
};
use crate::sync::{self, thread::ThreadId};

enum Stage<F: Future> {
    Running(F),
    Finished(Result<F::Output, JoinError>),
    Consumed,
}

/// One spawned task: the allocation a [`TaskRef`] points to.
///
/// Invariants (the crate docs' rules):
/// * rule T1: `#[repr(C)]` with the header first, so a pointer to the header is a pointer to the
///   task; the allocation is a block of the global allocator with this type's layout (made by
///   `Box` or recycled by the scheduler), freed or recycled by `dealloc` when the last counted
///   reference goes;
/// * rule T3: `stage` holds the future while the task is unfinished; only the holder of the
///   `RUNNING` bit touches it then, and the scheduler only polls or drops a local task's future
///   on its owner thread (checked in `run` and `drop_future`);
/// * rule T5: after `COMPLETE`, `stage` is touched only by the `JoinHandle` (or, when the handle
///   was already gone, once by the completer);
/// * rule T7: a future that cannot be dropped (foreign owner thread, or the thread is unwinding)
///   is leaked together with its allocation, which is then never freed (one reference is
///   never released), so its pinned memory stays valid forever.
#[repr(C)]
pub(crate) struct Task<F: Future, S: Schedule> {
    header: Header<S>,
    /// Under loom, a loom cell: the models check that whoever touches the stage (poller,
    /// completer, handle, the thread that frees) is ordered after the previous toucher.
    stage: sync::UnsafeCell<Stage<F>>,
}

#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FutureDrop {
    Dropped,
    Leaked,
}

impl<F, S> Task<F, S>
where
    F: Future + 'static,
    F::Output: 'static,
    S: Schedule,
{
    const VTABLE: Vtable<S> = Vtable {
        run: Self::run,
        shut_down: Self::shut_down,
        refuse: Self::refuse,
        drop_output: Self::drop_output,
        dealloc: Self::dealloc,
    };

    /// A new task of `scheduler`, notified once (its first poll) and with join interest. It
    /// starts with two references (T1): the returned queue entry's and the handle's.
    pub(crate) fn spawn(
        future: F,
        owner: Option<ThreadId>,
        scheduler: &Arc<S>,
    ) -> (TaskRef<S>, Join<F::Output, S>) {
        let header = Self::allocate(future, owner, scheduler, 2);
        // SAFETY: the allocation was just made with two references, one for each value here.
        let (queued, handle) = unsafe { (TaskRef::from_raw(header), TaskRef::from_raw(header)) };
        (queued, Join::new(handle, Self::take_output))
    }

    /// Rule T1: one allocation, in a block the scheduler recycled when it has one.
    fn allocate(
        future: F,
        owner: Option<ThreadId>,
        scheduler: &Arc<S>,
        refs: usize,
    ) -> NonNull<Header<S>> {
        let recycled = scheduler.reuse_block(Layout::new::<Task<F, S>>());
        let task = Task {
            header: Header::new(&Self::VTABLE, refs, owner, scheduler),
            stage: sync::UnsafeCell::new(Stage::Running(future)),
        };
        let task = match recycled {
            Some(block) => {
                let block = block.cast::<Task<F, S>>();
                // SAFETY: the block is ours, from the global allocator with this type's layout
                // (`reuse_block`'s contract), so it is valid for a write of one `Task<F, S>`.
                unsafe { block.as_ptr().write(task) };
                block
            }
            None => NonNull::from(Box::leak(Box::new(task))),
        };
        task.cast::<Header<S>>()
    }

    /// # Safety
    ///
    /// `header` is the header of a live `Task<F, S>` (a reference to it is held for `'a`).
    unsafe fn from_header<'a>(header: NonNull<Header<S>>) -> &'a Task<F, S> {
        // SAFETY: rule T1, the header is the first field of a `#[repr(C)]` `Task<F, S>`, which
        // the caller keeps alive.
        unsafe { header.cast::<Task<F, S>>().as_ref() }
    }

    fn may_touch_future_here(&self) -> bool {
        self.header
            .owner
            .is_none_or(|owner| owner == sync::thread_id())
    }

    fn cancel_reason(&self) -> CancelReason {
        if self.header.scheduler().is_closed() {
            CancelReason::RuntimeShutdown
        } else {
            CancelReason::Aborted
        }
    }

    /// Rule T7: drops the future in place, or leaks it with the allocation when it must not be
    /// dropped here. The caller holds `RUNNING`.
    fn drop_future(&self) -> FutureDrop {
        if !self.may_touch_future_here() || std::thread::panicking() {
            // Rule T7: one reference that is never released keeps the allocation, and with it the
            // pinned future, alive forever.
            self.header.state.ref_inc();
            return FutureDrop::Leaked;
        }
        self.stage.with_mut(|stage| {
            // SAFETY: rule T3, the caller holds `RUNNING` and we are on a thread that may touch
            // the future, so this is the only access to `stage`. Dropping in place honours the
            // pin.
            let dropped = catch_unwind(AssertUnwindSafe(|| unsafe {
                std::ptr::drop_in_place(stage)
            }));
            // SAFETY: the old stage was dropped (even if its destructor panicked, drop glue
            // finished the remaining fields), so overwriting without dropping is correct.
            unsafe { std::ptr::write(stage, Stage::Consumed) };
            if let Err(payload) = dropped {
                std::mem::forget(payload);
            }
        });
        FutureDrop::Dropped
    }

    /// Rule T5: publishes the result. The caller holds `RUNNING` and has dropped or leaked the
    /// future.
    fn finish(&self, result: Result<F::Output, JoinError>, future: FutureDrop) {
        let leaked = future == FutureDrop::Leaked;
        if leaked {
            drop_contained(result);
        } else {
            // SAFETY: rule T3, we hold `RUNNING` and the future is gone, so this `with_mut` access
            // is the only one to `stage`; the old `Consumed` value needs no drop.
            let publish = |stage| unsafe { std::ptr::write(stage, Stage::Finished(result)) };
            self.stage.with_mut(publish);
        }
        let completed = self.header.state.complete(leaked);
        self.after_completion(completed, leaked);
    }

    /// Rules T5 and T6: what the completer still owes after publishing completion: the output
    /// when the handle is gone, the wake of a published join waker.
    fn after_completion(&self, completed: Completed, leaked: bool) {
        if !completed.join_interest && !leaked {
            // SAFETY: rule T6, the handle is gone, so after `COMPLETE` this `with_mut` access by
            // the completer is the only one left to `stage`.
            let take = |stage| unsafe { std::ptr::replace(stage, Stage::Consumed) };
            drop_contained(self.stage.with_mut(take));
        }
        if completed.join_waker {
            // SAFETY: rule T6, `complete` saw `JOIN_WAKER` as it set `COMPLETE`, so the slot is
            // ours now and the handle never touches it again.
            if let Some(waker) = unsafe { self.header.take_join_waker() } {
                wake_contained(waker);
            }
        }
    }

    /// Rules T5 and T1 for a poll that returned `output`: the task leaves the registry (if it
    /// parked), then completes; when nothing is left for the completer (the handle is alive and
    /// published no waker) the same transition releases the queue entry's reference `entry`
    /// and the registry's, if any. Consumes `entry`; the caller must not touch the task afterwards unless the
    /// outcome hands a reference back.
    fn complete_run(&self, entry: TaskRef<S>, output: F::Output) -> RunOutcome<S> {
        let dropped = self.drop_future();
        if dropped == FutureDrop::Leaked {
            self.finish(Ok(output), dropped);
            return RunOutcome::Finished {
                entry: Some(entry),
                registered: None,
                finish: Finish::Completed,
            };
        }
        // SAFETY: rule T3, we hold `RUNNING` and the future is gone, so this `with_mut` access
        // is the only one to `stage`; the old `Consumed` value needs no drop.
        let publish = |stage| unsafe { std::ptr::write(stage, Stage::Finished(Ok(output))) };
        self.stage.with_mut(publish);
        let registered = S::unregister(&entry);
        let refs = 1 + usize::from(registered.is_some());
        match self.header.state.complete_releasing(refs) {
            CompleteReleasing::Released => {
                // The transition released both references: give the values up uncounted.
                let _ = entry.into_raw();
                let _ = registered.map(TaskRef::into_raw);
                RunOutcome::Finished {
                    entry: None,
                    registered: None,
                    finish: Finish::Completed,
                }
            }
            CompleteReleasing::Kept(completed) => {
                self.after_completion(completed, false);
                RunOutcome::Finished {
                    entry: Some(entry),
                    registered,
                    finish: Finish::Completed,
                }
            }
        }
    }

    /// Rules T3, T4 and T1 for a poll that returned `Pending`: the task parks (handing its queue
    /// entry's reference `task` to the registry or releasing it, as `entry` says), is requeued
    /// or, aborted during the poll, cancelled. The caller must not touch the task afterwards
    /// unless the outcome hands a reference back.
    fn after_pending(&self, task: TaskRef<S>, entry: ParkEntry) -> RunOutcome<S> {
        match self.header.state.idle(entry) {
            IdleOutcome::Parked(_) if entry == ParkEntry::Keep => RunOutcome::Register(task),
            IdleOutcome::Parked(left) => {
                // Rule T3: `idle` released the queue entry's reference already.
                let header = task.into_raw();
                if left == RefsLeft::Zero {
                    // SAFETY: that was the last reference (only possible if the registry's is
                    // gone too): nobody else can reach the task.
                    unsafe { Self::dealloc(header) };
                }
                RunOutcome::Parked
            }
            IdleOutcome::Requeue => RunOutcome::Requeue(task),
            IdleOutcome::Cancel => {
                let _ = self.cancel(self.cancel_reason());
                RunOutcome::Finished {
                    entry: Some(task),
                    registered: None,
                    finish: Finish::Cancelled,
                }
            }
        }
    }

    fn cancel(&self, reason: CancelReason) -> FutureDrop {
        let dropped = self.drop_future();
        self.finish(Err(JoinError::cancelled(reason)), dropped);
        dropped
    }

    fn poll_future(&self, cx: &mut Context<'_>) -> std::thread::Result<Poll<F::Output>> {
        self.stage.with_mut(|stage| {
            catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: rule T3, the caller holds `RUNNING` on a thread that may touch the
                // future, so this is the only reference to `stage`.
                let stage = unsafe { &mut *stage };
                let future = match stage {
                    // SAFETY: the future lives inside the task allocation, which never moves,
                    // and is only ever dropped in place (or leaked with the allocation): pinning
                    // is sound.
                    Stage::Running(future) => unsafe { Pin::new_unchecked(future) },
                    Stage::Finished(_) | Stage::Consumed => {
                        unreachable!("T3: a RUNNING task that is not complete holds its future")
                    }
                };
                future.poll(cx)
            }))
        })
    }

    /// The `JoinHandle`'s output read (T5, T6).
    ///
    /// # Safety
    ///
    /// `header` is the header of a live `Task<F, S>`, the caller is its `JoinHandle` and saw
    /// `COMPLETE`, with `leaked` read from the same state word.
    unsafe fn take_output(
        header: NonNull<Header<S>>,
        leaked: bool,
    ) -> Result<F::Output, JoinError> {
        if leaked {
            return Err(JoinError::cancelled(CancelReason::RuntimeShutdown));
        }
        // SAFETY: the caller's guarantee.
        let this = unsafe { Self::from_header(header) };
        // SAFETY: rule T5, after `COMPLETE` with join interest only the handle touches `stage`,
        // and this `with_mut` access is the handle's.
        let take = |stage| unsafe { std::ptr::replace(stage, Stage::Consumed) };
        match this.stage.with_mut(take) {
            Stage::Finished(result) => result,
            Stage::Running(_) | Stage::Consumed => {
                panic!("a JoinHandle was polled again after it returned its output")
            }
        }
    }

    /// Vtable `run`: consumes the queue entry's reference `task`.
    ///
    /// # Safety
    ///
    /// `task` refers to a `Task<F, S>`.
    unsafe fn run(task: TaskRef<S>) -> RunOutcome<S> {
        // SAFETY: the caller's guarantee; `task` keeps the allocation alive while `this` is used
        // (every path below stops using `this` before it gives `task` away).
        let this = unsafe { Self::from_header(task.as_raw()) };
        assert!(
            this.may_touch_future_here(),
            "rule T7: a local task only runs on its owner thread"
        );
        match this.header.state.start() {
            StartOutcome::Stale => RunOutcome::Stale,
            StartOutcome::Cancelled => {
                let _ = this.cancel(this.cancel_reason());
                RunOutcome::Finished {
                    entry: Some(task),
                    registered: None,
                    finish: Finish::Cancelled,
                }
            }
            StartOutcome::Poll => {
                let waker = task.borrowed_waker();
                let mut cx = Context::from_waker(&waker);
                match this.poll_future(&mut cx) {
                    // `this` is not used after this: `complete_run` may release the last
                    // references but the handle's.
                    Ok(Poll::Ready(output)) => this.complete_run(task, output),
                    Ok(Poll::Pending) => {
                        // Rule T1: a task parking for the first time keeps its queue entry's
                        // reference for the registry; one in it releases that reference.
                        let registered = S::is_registered(&task);
                        let entry = if registered {
                            ParkEntry::Release
                        } else {
                            ParkEntry::Keep
                        };
                        this.after_pending(task, entry)
                    }
                    Err(payload) => {
                        let dropped = this.drop_future();
                        this.finish(Err(JoinError::panic(payload)), dropped);
                        RunOutcome::Finished {
                            entry: Some(task),
                            registered: None,
                            finish: Finish::Panicked,
                        }
                    }
                }
            }
        }
    }

    /// Vtable `shut_down` (T8).
    ///
    /// # Safety
    ///
    /// `header` is the header of a live `Task<F, S>` whose reference the caller holds.
    unsafe fn shut_down(header: NonNull<Header<S>>, reach: ShutdownReach) -> ShutdownOutcome {
        // SAFETY: the caller's guarantee.
        let this = unsafe { Self::from_header(header) };
        match this.header.state.claim_for_shutdown(reach) {
            ShutdownClaim::Claimed => match this.cancel(CancelReason::RuntimeShutdown) {
                FutureDrop::Dropped => ShutdownOutcome::Cancelled,
                FutureDrop::Leaked => ShutdownOutcome::Leaked,
            },
            ShutdownClaim::Running => ShutdownOutcome::Running,
            ShutdownClaim::Complete => ShutdownOutcome::Complete,
        }
    }

    /// Vtable `refuse`: rule T8 for a spawn refused after shutdown. The task is cancelled where
    /// it was created and never enters a queue; only a `Send` future, or a local one on its
    /// owner thread, gets here, so dropping it here is allowed.
    ///
    /// # Safety
    ///
    /// `header` is the header of a live `Task<F, S>` whose reference the caller holds.
    unsafe fn refuse(header: NonNull<Header<S>>, reason: CancelReason) {
        // SAFETY: the caller's guarantee.
        let this = unsafe { Self::from_header(header) };
        match this.header.state.start() {
            StartOutcome::Poll | StartOutcome::Cancelled => {
                let _ = this.cancel(reason);
            }
            StartOutcome::Stale => {}
        }
    }

    /// Vtable `drop_output`: a detaching `JoinHandle` drops the output it owns (T6).
    ///
    /// # Safety
    ///
    /// `header` is the header of a live `Task<F, S>`, and the caller is its `JoinHandle`, which
    /// saw `COMPLETE` while it still had join interest and did not take the output.
    unsafe fn drop_output(header: NonNull<Header<S>>) {
        // SAFETY: the caller's guarantee.
        let this = unsafe { Self::from_header(header) };
        if !this.header.state.load().is_leaked() {
            // SAFETY: rule T6, the task completed while the handle held join interest, so the
            // stored output is the handle's alone: this `with_mut` access is the only one.
            let take = |stage| unsafe { std::ptr::replace(stage, Stage::Consumed) };
            drop_contained(this.stage.with_mut(take));
        }
    }

    /// Vtable `dealloc`: frees the allocation.
    ///
    /// # Safety
    ///
    /// `header` is the header of a `Task<F, S>` whose last reference the caller released.
    unsafe fn dealloc(header: NonNull<Header<S>>) {
        let block = header.cast::<Task<F, S>>();
        // SAFETY: rule T1, the allocation holds a `Task<F, S>` and nobody else can reach it any
        // more: we move it out, after which the block is plain memory of this type's layout.
        let Task { header, stage } = unsafe { block.as_ptr().read() };
        // Rules T5–T7: the last reference only goes after the task finished (the scheduler holds
        // one until then, T1, and a leaked task keeps one forever) and after the completer or the
        // handle took the result, so the stage is empty and no `!Send` value is dropped on this
        // thread, whichever it is. It goes through `drop_contained` all the same; the header
        // (its scheduler unit, a join waker contained by its own `Drop`) is freed normally, also
        // while this thread unwinds.
        let stage = stage.into_inner();
        debug_assert!(
            matches!(stage, Stage::Consumed),
            "rules T5-T7: a task is freed only after its result was taken"
        );
        drop_contained(stage);
        let layout = Layout::new::<Task<F, S>>();
        // SAFETY: the block came from the global allocator with this layout (a `Box` or a
        // recycled block, `allocate`) and no task lives in it any more. The header's unit
        // keeps the scheduler alive during the call.
        let kept = unsafe { header.scheduler().recycle_block(layout, block.cast()) };
        if let Err(block) = kept {
            // SAFETY: as above; the scheduler handed the block back, so it is ours to free.
            unsafe { std::alloc::dealloc(block.as_ptr(), layout) };
        }
        drop(header);
    }
}
