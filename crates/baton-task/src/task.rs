//! The task cell: header, future and output in one reference-counted allocation (rule 1).

use std::cell::UnsafeCell;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crate::containment::{drop_contained, wake_contained};
use crate::join::{CancelReason, JoinError};
use crate::shared::Shared;
use crate::state::{DetachOutcome, JoinWakerOutcome, StartOutcome, State, WakeOutcome};
use crate::sync::{self, AtomicUsize, Mutex, ThreadId};

/// A type-erased reference to a task, as held by run queues and the registry.
pub(crate) type TaskRef = Arc<dyn Runnable>;

/// The registry slot of a task that was injected but not yet drained by the scheduler.
pub(crate) const UNREGISTERED: usize = usize::MAX;

/// The type-independent part of a task.
#[derive(Debug)]
pub(crate) struct Header {
    pub(crate) state: State,
    /// `None` for a `Send` task; the owner thread of a local task (rule 7).
    pub(crate) owner: Option<ThreadId>,
    pub(crate) shared: Arc<Shared>,
    /// The registry slot; only the thread holding the core claim (rule 9) touches it.
    pub(crate) slot: AtomicUsize,
    /// The `JoinHandle`'s waker (rule 6). Released, contained, as soon as nobody can wake it
    /// any more: by the completer that wakes it, by the handle on detach or when its poll finds
    /// the task complete, and at the latest when the task is freed.
    join_waker: Mutex<Option<Waker>>,
}

impl Header {
    /// Rule 6: takes the stored join waker and drops it with a panicking destructor contained,
    /// outside the lock.
    fn release_join_waker(&self) {
        let waker = sync::lock(&self.join_waker).take();
        if let Some(waker) = waker {
            drop_contained(waker);
        }
    }
}

impl Drop for Header {
    fn drop(&mut self) {
        // A waker still stored here (a path that did not release it) must not panic out of
        // whichever thread frees the task.
        let waker = self
            .join_waker
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(waker) = waker {
            drop_contained(waker);
        }
    }
}

enum Stage<F: Future> {
    Running(F),
    Finished(Result<F::Output, JoinError>),
    Consumed,
}

/// One spawned task.
///
/// Invariants (the crate docs' rules):
/// * rule 3: `stage` holds the future while the task is unfinished; only the holder of the
///   `RUNNING` bit touches it then, and the scheduler only polls or drops a local task's future
///   on its owner thread (checked in [`Task::run`] and [`Task::drop_future`]);
/// * rule 5: after `COMPLETE`, `stage` is touched only by the `JoinHandle` (or, when the handle
///   was already gone, once by the completer);
/// * rule 7: a future that cannot be dropped (foreign owner thread, or the thread is unwinding)
///   is leaked together with its allocation, which is then never freed, so its pinned memory
///   stays valid forever.
pub(crate) struct Task<F: Future> {
    header: Header,
    stage: UnsafeCell<Stage<F>>,
}

// SAFETY: the header is `Send + Sync`. `stage` is only touched under the state protocol (rules 3,
// 5): the future by the `RUNNING` holder, which for a local task is always its owner thread
// (asserted in `run`, checked in `drop_future`), so a `!Send` future never leaves that thread.
// The output of a local task is stored on its owner thread and taken by the `JoinHandle`, which is
// only `Send` when the output is `Send`.
unsafe impl<F: Future> Send for Task<F> {}
// SAFETY: shared references only reach `stage` through the state protocol above, which gives
// one thread at a time exclusive access.
unsafe impl<F: Future> Sync for Task<F> {}

impl<F: Future> std::fmt::Debug for Task<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("header", &self.header)
            .finish()
    }
}

/// What `Runnable::run` did.
#[must_use]
pub(crate) enum RunOutcome {
    /// The entry was stale (the task had already finished).
    Stale,
    /// The task waits for a waker.
    Parked,
    /// Woken during its poll: push it back (rule 3).
    Requeue(TaskRef),
    /// The task finished and must leave the registry.
    Finished(TaskRef, Finish),
}

/// How a task finished, for the counters.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    Completed,
    Panicked,
    Cancelled,
}

/// What shutdown did to a task (rule 8).
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

#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FutureDrop {
    Dropped,
    Leaked,
}

/// The scheduler's view of a task.
pub(crate) trait Runnable: Send + Sync + std::fmt::Debug + 'static {
    fn header(&self) -> &Header;
    /// Polls (or cancels) the task once. Called by the core-claim holder on a thread the task
    /// may run on, after popping its queue entry.
    fn run(self: Arc<Self>) -> RunOutcome;
    /// Rule 8: cancel the task for shutdown, from the core-claim holder's thread.
    fn shut_down(self: Arc<Self>) -> ShutdownOutcome;
}

/// The `JoinHandle`'s view of a task.
pub(crate) trait JoinTarget<T>: Send + Sync {
    fn poll_join(&self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>>;
    fn abort(self: Arc<Self>);
    fn is_finished(&self) -> bool;
    fn detach(&self);
}

impl<F> Task<F>
where
    F: Future + 'static,
    F::Output: 'static,
{
    /// A new task, notified once (its first poll) and with join interest.
    pub(crate) fn new(future: F, owner: Option<ThreadId>, shared: Arc<Shared>) -> Arc<Task<F>> {
        Arc::new(Task {
            header: Header {
                state: State::new(),
                owner,
                shared,
                slot: AtomicUsize::new(UNREGISTERED),
                join_waker: Mutex::new(None),
            },
            stage: UnsafeCell::new(Stage::Running(future)),
        })
    }

    fn may_touch_future_here(&self) -> bool {
        self.header
            .owner
            .is_none_or(|owner| owner == sync::thread_id())
    }

    fn cancel_reason(&self) -> CancelReason {
        if self.header.shared.is_closed() {
            CancelReason::RuntimeShutdown
        } else {
            CancelReason::Aborted
        }
    }

    /// Rule 7: drops the future in place, or leaks it with the allocation when it must not be
    /// dropped here. The caller holds `RUNNING`.
    fn drop_future(self: &Arc<Self>) -> FutureDrop {
        if !self.may_touch_future_here() || std::thread::panicking() {
            // Rule 7: one strong count that is never released keeps the allocation, and with it
            // the pinned future, alive forever.
            std::mem::forget(Arc::clone(self));
            return FutureDrop::Leaked;
        }
        let stage = self.stage.get();
        // SAFETY: rule 3, the caller holds `RUNNING` and we are on a thread that may touch the
        // future, so this is the only access to `stage`. Dropping in place honours the pin.
        let dropped = catch_unwind(AssertUnwindSafe(|| unsafe {
            std::ptr::drop_in_place(stage)
        }));
        // SAFETY: the old stage was dropped (even if its destructor panicked, drop glue finished
        // the remaining fields), so overwriting without dropping is correct.
        unsafe { std::ptr::write(stage, Stage::Consumed) };
        if let Err(payload) = dropped {
            std::mem::forget(payload);
        }
        FutureDrop::Dropped
    }

    /// Rule 5: publishes the result. The caller holds `RUNNING` and has dropped or leaked the
    /// future.
    fn finish(self: &Arc<Self>, result: Result<F::Output, JoinError>, future: FutureDrop) {
        let leaked = future == FutureDrop::Leaked;
        if leaked {
            drop_contained(result);
        } else {
            // SAFETY: rule 3, we hold `RUNNING` and the future is gone, so nobody else reads or
            // writes `stage`; the old `Consumed` value needs no drop.
            unsafe { std::ptr::write(self.stage.get(), Stage::Finished(result)) };
        }
        let completed = self.header.state.complete(leaked);
        if !completed.join_interest && !leaked {
            // SAFETY: rule 6, the handle is gone, so after `COMPLETE` the completer is the only
            // one left to touch `stage`.
            let stage = unsafe { std::ptr::replace(self.stage.get(), Stage::Consumed) };
            drop_contained(stage);
        }
        if completed.join_waker {
            let waker = sync::lock(&self.header.join_waker).take();
            if let Some(waker) = waker {
                wake_contained(waker);
            }
        }
    }

    fn cancel(self: &Arc<Self>, reason: CancelReason) -> FutureDrop {
        let dropped = self.drop_future();
        self.finish(Err(JoinError::cancelled(reason)), dropped);
        dropped
    }

    fn poll_future(&self, cx: &mut Context<'_>) -> std::thread::Result<Poll<F::Output>> {
        let stage = self.stage.get();
        catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: rule 3, the caller holds `RUNNING` on a thread that may touch the future,
            // so this is the only reference to `stage`.
            let stage = unsafe { &mut *stage };
            let future = match stage {
                // SAFETY: the future lives inside the `Arc` allocation, which never moves, and is
                // only ever dropped in place (or leaked with the allocation): pinning is sound.
                Stage::Running(future) => unsafe { Pin::new_unchecked(future) },
                Stage::Finished(_) | Stage::Consumed => {
                    unreachable!("rule 3: a RUNNING task that is not complete holds its future")
                }
            };
            future.poll(cx)
        }))
    }

    /// Takes the published result. The caller observed `COMPLETE` and is the `JoinHandle`.
    fn take_output(&self, leaked: bool) -> Result<F::Output, JoinError> {
        if leaked {
            return Err(JoinError::cancelled(CancelReason::RuntimeShutdown));
        }
        // SAFETY: rule 5, after `COMPLETE` with join interest only the handle touches `stage`.
        match unsafe { std::ptr::replace(self.stage.get(), Stage::Consumed) } {
            Stage::Finished(result) => result,
            Stage::Running(_) | Stage::Consumed => {
                panic!("a JoinHandle was polled again after it returned its output")
            }
        }
    }

    /// Rule 2: queues a task whose queue entry we own: onto the core's queues when this thread
    /// holds the claim, otherwise onto the injection queue.
    fn schedule(self: Arc<Self>) {
        let shared: *const Shared = Arc::as_ptr(&self.header.shared);
        // SAFETY: `core_here` answers only on the thread holding the core claim (rule 9), and a
        // claim is held only by a live `ClaimGuard`, which owns an `Arc<Shared>` until it
        // releases the claim (a leaked guard leaks its `Arc` too). Nothing here releases the
        // claim, so `Shared` outlives the push even though `self`, and with it the task's own
        // `Arc<Shared>`, moves into the queue. This saves a reference-count pair per wake.
        if let Some(core) = unsafe { &*shared }.core_here() {
            core.push_ready(self);
            return;
        }
        // Rule 2, remote: the injection queue (unparking the worker). Our own `Arc` keeps
        // `Shared` alive even if a closed queue drops the task.
        let shared = Arc::clone(&self.header.shared);
        let _ = shared.inject(self, false);
    }
}

impl<F> Runnable for Task<F>
where
    F: Future + 'static,
    F::Output: 'static,
{
    fn header(&self) -> &Header {
        &self.header
    }

    fn run(self: Arc<Self>) -> RunOutcome {
        assert!(
            self.may_touch_future_here(),
            "rule 7: a local task only runs on its owner thread"
        );
        match self.header.state.start() {
            StartOutcome::Stale => RunOutcome::Stale,
            StartOutcome::Cancelled => {
                let _ = self.cancel(self.cancel_reason());
                RunOutcome::Finished(self, Finish::Cancelled)
            }
            StartOutcome::Poll => {
                // SAFETY: the pointer comes from a live `Arc` we hold for the whole poll; the
                // `Waker` built from it is never dropped (`ManuallyDrop`), so the strong count it
                // did not take is never released. Clones made by the future count normally.
                let waker =
                    ManuallyDrop::new(Waker::from(unsafe { Arc::from_raw(Arc::as_ptr(&self)) }));
                let mut cx = Context::from_waker(&waker);
                match self.poll_future(&mut cx) {
                    Ok(Poll::Ready(output)) => {
                        let dropped = self.drop_future();
                        self.finish(Ok(output), dropped);
                        RunOutcome::Finished(self, Finish::Completed)
                    }
                    Ok(Poll::Pending) => match self.header.state.idle() {
                        crate::state::IdleOutcome::Parked => RunOutcome::Parked,
                        crate::state::IdleOutcome::Requeue => RunOutcome::Requeue(self),
                        crate::state::IdleOutcome::Cancel => {
                            let _ = self.cancel(self.cancel_reason());
                            RunOutcome::Finished(self, Finish::Cancelled)
                        }
                    },
                    Err(payload) => {
                        let dropped = self.drop_future();
                        self.finish(Err(JoinError::panic(payload)), dropped);
                        RunOutcome::Finished(self, Finish::Panicked)
                    }
                }
            }
        }
    }

    fn shut_down(self: Arc<Self>) -> ShutdownOutcome {
        match self.header.state.claim_for_shutdown() {
            crate::state::ClaimOutcome::Claimed => {
                match self.cancel(CancelReason::RuntimeShutdown) {
                    FutureDrop::Dropped => ShutdownOutcome::Cancelled,
                    FutureDrop::Leaked => ShutdownOutcome::Leaked,
                }
            }
            crate::state::ClaimOutcome::Running => ShutdownOutcome::Running,
            crate::state::ClaimOutcome::Complete => ShutdownOutcome::Complete,
        }
    }
}

impl<F> JoinTarget<F::Output> for Task<F>
where
    F: Future + 'static,
    F::Output: 'static,
{
    fn poll_join(&self, cx: &mut Context<'_>) -> Poll<Result<F::Output, JoinError>> {
        let snapshot = self.header.state.load();
        if snapshot.is_complete() {
            return Poll::Ready(self.take_output(snapshot.is_leaked()));
        }
        let same = sync::lock(&self.header.join_waker)
            .as_ref()
            .is_some_and(|stored| stored.will_wake(cx.waker()));
        if !same {
            // Clone and drop user wakers outside the lock.
            let fresh = cx.waker().clone();
            let old = sync::lock(&self.header.join_waker).replace(fresh);
            drop(old);
        }
        match self.header.state.set_join_waker() {
            JoinWakerOutcome::Registered => Poll::Pending,
            JoinWakerOutcome::Complete => {
                // Rule 6: the completer did not see our registration, so the waker is ours to
                // release; a finished handle keeps no waker alive.
                self.header.release_join_waker();
                Poll::Ready(self.take_output(self.header.state.load().is_leaked()))
            }
        }
    }

    fn abort(self: Arc<Self>) {
        match self.header.state.abort() {
            WakeOutcome::Submit => self.schedule(),
            WakeOutcome::Coalesced | WakeOutcome::DuringPoll | WakeOutcome::Complete => {}
        }
    }

    fn is_finished(&self) -> bool {
        self.header.state.load().is_complete()
    }

    fn detach(&self) {
        let outcome = self.header.state.detach();
        // Rule 6: `detach` cleared `JOIN_WAKER`, so no completer takes the waker after this; it
        // is ours to release (a completer that saw the bit first may have taken it already).
        self.header.release_join_waker();
        match outcome {
            DetachOutcome::Detached => {}
            DetachOutcome::OutputIsOurs => {
                if !self.header.state.load().is_leaked() {
                    // SAFETY: rule 6, the task completed while we held join interest, so the
                    // stored output is ours alone.
                    let stage = unsafe { std::ptr::replace(self.stage.get(), Stage::Consumed) };
                    drop_contained(stage);
                }
            }
        }
    }
}

impl<F> Wake for Task<F>
where
    F: Future + 'static,
    F::Output: 'static,
{
    fn wake(self: Arc<Self>) {
        match self.header.state.wake() {
            WakeOutcome::Submit => self.schedule(),
            WakeOutcome::Coalesced | WakeOutcome::DuringPoll | WakeOutcome::Complete => {}
        }
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match self.header.state.wake() {
            WakeOutcome::Submit => Arc::clone(self).schedule(),
            WakeOutcome::Coalesced | WakeOutcome::DuringPoll | WakeOutcome::Complete => {}
        }
    }
}

/// Rule 8 for a spawn refused after shutdown: the task is cancelled where it was created (a
/// `Send` future, so any thread may drop it) and never enters a queue.
pub(crate) fn refuse<F>(task: &Arc<Task<F>>)
where
    F: Future + 'static,
    F::Output: 'static,
{
    match task.header.state.start() {
        StartOutcome::Poll | StartOutcome::Cancelled => {
            let _ = task.cancel(CancelReason::SpawnAfterShutdown);
        }
        StartOutcome::Stale => {}
    }
}
