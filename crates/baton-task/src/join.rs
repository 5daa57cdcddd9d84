//! `JoinHandle` and `JoinError` (rules T5 and T6 of the crate docs), and [`Join`], the handle's
//! machinery for a task of any [`Schedule`] policy.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};

use crate::containment::drop_contained;
use crate::raw::{Header, TaskRef};
use crate::schedule::Schedule;
use crate::scheduler_state::SchedulerState;
use crate::state::{DetachOutcome, JoinWakerOutcome, ReclaimOutcome, WakeOutcome};

/// Why a task was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CancelReason {
    /// [`JoinHandle::abort`] was called before the task finished.
    #[error("it was aborted through its JoinHandle")]
    Aborted,
    /// The runtime shut down before the task finished.
    #[error("the runtime shut down before it finished")]
    RuntimeShutdown,
    /// The runtime was already shut down when the task was spawned; it never ran.
    #[error("the runtime was already shut down when it was spawned, so it never ran")]
    SpawnAfterShutdown,
    /// It was spawned on a worker the runtime does not have; it never ran.
    #[error(
        "it was spawned on worker {index}, but the runtime has {workers} worker(s) \
         (indices 0..{workers}), so it never ran"
    )]
    NoSuchWorker {
        /// The index asked for.
        index: usize,
        /// How many workers the runtime has.
        workers: usize,
    },
}

/// The payload of a task's panic. Only reachable by value (through
/// [`JoinError::into_panic`]), never through `&self`.
pub struct PanicPayload(Box<dyn Any + Send + 'static>);

// SAFETY: the boxed payload is `Send`, and no `&PanicPayload` method touches it: it can only be
// moved out by value, so sharing a `&PanicPayload` between threads shares nothing.
unsafe impl Sync for PanicPayload {}

impl fmt::Debug for PanicPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PanicPayload(..)")
    }
}

/// Why a task did not produce its output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// The task was cancelled; it will never produce its output.
    #[error("task was cancelled: {0}")]
    Cancelled(CancelReason),
    /// The task panicked while being polled; the panic was caught and did not affect the
    /// runtime. Use [`JoinError::into_panic`] to re-raise it with `std::panic::resume_unwind`.
    #[error("task panicked: {message}")]
    Panicked {
        /// The panic message when the payload was a string, otherwise a placeholder.
        message: String,
        /// The original payload.
        payload: PanicPayload,
    },
}

/// A task that produced no output is an I/O failure to code that returns `io::Result` (as
/// tokio's `JoinError` is), so `handle.await?` works there. The error is kept whole as the
/// `io::Error`'s payload ([`ErrorKind::Other`](std::io::ErrorKind::Other)): downcast it to
/// tell a cancellation from a panic, or to re-raise the panic.
impl From<JoinError> for std::io::Error {
    fn from(err: JoinError) -> std::io::Error {
        std::io::Error::other(err)
    }
}

impl JoinError {
    pub(crate) fn cancelled(reason: CancelReason) -> JoinError {
        JoinError::Cancelled(reason)
    }

    pub(crate) fn panic(payload: Box<dyn Any + Send + 'static>) -> JoinError {
        let message = if let Some(text) = payload.downcast_ref::<&'static str>() {
            (*text).to_owned()
        } else if let Some(text) = payload.downcast_ref::<String>() {
            text.clone()
        } else {
            "non-string panic payload (use JoinError::into_panic to inspect it)".to_owned()
        };
        JoinError::Panicked {
            message,
            payload: PanicPayload(payload),
        }
    }

    /// Whether the task was cancelled (aborted, or the runtime shut down).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, JoinError::Cancelled(_))
    }

    /// Whether the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, JoinError::Panicked { .. })
    }

    /// Why the task was cancelled, if it was.
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        match self {
            JoinError::Cancelled(reason) => Some(*reason),
            JoinError::Panicked { .. } => None,
        }
    }

    /// The panic payload, to re-raise with `std::panic::resume_unwind`.
    ///
    /// # Errors
    ///
    /// Returns the error itself when it is a cancellation, not a panic.
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self {
            JoinError::Panicked { payload, .. } => Ok(payload.0),
            cancelled @ JoinError::Cancelled(_) => Err(cancelled),
        }
    }

    /// The panic payload.
    ///
    /// # Panics
    ///
    /// When the error is a cancellation; check [`JoinError::is_panic`] or use
    /// [`JoinError::try_into_panic`].
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic()
            .unwrap_or_else(|err| panic!("JoinError::into_panic called on a non-panic: {err}"))
    }
}

/// An owned permission to await a task's output.
///
/// Resolves to `Ok(output)`, or to a [`JoinError`] when the task panicked or was cancelled.
/// Dropping the handle detaches the task: it keeps running and its output is dropped.
///
/// * [`abort`](JoinHandle::abort) asks the scheduler to drop the task's future at its next
///   opportunity, on the task's owner thread. A task aborted before its first poll is never
///   polled. A task that already finished is unaffected: its output is still returned (the abort
///   came too late to cancel anything).
/// * Polling the handle again after it returned its result panics.
///
/// `Send` exactly when the output is `Send`.
pub struct JoinHandle<T> {
    join: Join<T, SchedulerState>,
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(join: Join<T, SchedulerState>) -> JoinHandle<T> {
        JoinHandle { join }
    }

    /// Requests cancellation; see the type docs for the exact semantics.
    pub fn abort(&self) {
        self.join.abort();
    }

    /// Whether the task finished (completed, panicked or was cancelled).
    pub fn is_finished(&self) -> bool {
        self.join.is_finished()
    }

    /// Rule T12: whether the task can still finish while the caller waits: it finished, or
    /// this thread does not hold back the tasks of its scheduler.
    pub fn can_finish(&self) -> bool {
        self.is_finished() || !crate::context::tasks_held(self.join.scheduler())
    }

    /// Rule T12 for code that waits on this handle without polling it (a set of handles woken
    /// by their own wakers): panics, as a poll would, when the task [cannot
    /// finish](JoinHandle::can_finish), so that wait could never end.
    #[track_caller]
    pub fn assert_can_finish(&self) {
        if !self.is_finished() {
            crate::context::assert_tasks_can_run(self.join.scheduler());
        }
    }

    /// Polls as [`Future::poll`] does, without rule T12's check: for a set of handles that
    /// registers its waker with each member now and checks, when it waits, that some member
    /// [can finish](JoinHandle::can_finish).
    pub fn poll_unchecked(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        self.join.poll(cx)
    }

    /// Rule T8: cancels the task of a spawn that was refused, for `reason`.
    pub(crate) fn refuse(&self, reason: CancelReason) {
        self.join.refuse(reason);
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let polled = self.join.poll(cx);
        if polled.is_pending() {
            crate::context::assert_tasks_can_run(self.join.scheduler());
        }
        polled
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl<T> Unpin for JoinHandle<T> {}

/// The join side of a task of scheduler `S` (T6): what a [`JoinHandle`] is for the real
/// scheduler, and what the task tests hold for their recording one.
///
/// Invariant: `waiting` says whether the handle owns the task's join waker slot (rule T6, see
/// `Header::join_waker`): it does in [`Waiting::Idle`], it does not in [`Waiting::Published`],
/// and in [`Waiting::Taken`] the slot is empty or the completer's.
pub(crate) struct Join<T, S: Schedule> {
    /// The handle's counted reference (T1).
    task: TaskRef<S>,
    /// The task type's output read (T5, T6).
    take_output: TakeOutput<T, S>,
    /// Rule T6: where the handle stands in the join handshake.
    waiting: Waiting,
    /// Makes the handle `Send` only when `T` is (and `Sync` only when `T` is): `TaskRef` is
    /// both, and the fn pointer carries no auto traits of `T`.
    _output: PhantomData<T>,
}

/// Rule T6: the handle's side of the join handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    /// No waker is published: the slot is the handle's.
    Idle,
    /// `JOIN_WAKER` is set for a waker with this identity: the slot is not the handle's.
    Published(WakerId),
    /// The output was taken: the task is complete, and the handle only holds its reference.
    Taken,
}

/// What `Waker::will_wake` compares (the data and vtable addresses), kept by the handle so it
/// recognises its published waker without reading the slot, which the completer may be
/// taking at that moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WakerId {
    data: usize,
    vtable: usize,
}

impl WakerId {
    fn of(waker: &Waker) -> WakerId {
        WakerId {
            data: waker.data().addr(),
            vtable: std::ptr::from_ref(waker.vtable()).addr(),
        }
    }
}

/// A task type's output read; the pointer is the header of a live, complete task of that type
/// (leaked when the flag says so), whose `JoinHandle` is the caller.
type TakeOutput<T, S> = unsafe fn(NonNull<Header<S>>, bool) -> Result<T, JoinError>;

impl<T, S: Schedule> Join<T, S> {
    /// A handle from its task reference and the output read of the task's type, whose output
    /// is `T`.
    pub(crate) fn new(task: TaskRef<S>, take_output: TakeOutput<T, S>) -> Join<T, S> {
        Join {
            task,
            take_output,
            waiting: Waiting::Idle,
            _output: PhantomData,
        }
    }

    /// Rule T4: an abort is a wake; an idle task is queued with a new reference.
    pub(crate) fn abort(&self) {
        match self.task.header().state.abort() {
            // SAFETY: the transition took a reference for the queue entry, which we now own.
            WakeOutcome::Submit => unsafe { TaskRef::from_raw(self.task.as_raw()) }.schedule(),
            WakeOutcome::Coalesced | WakeOutcome::DuringPoll | WakeOutcome::Complete => {}
        }
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.task.header().state.load().is_complete()
    }

    /// The scheduler the task was spawned on (kept alive by the task's unit).
    pub(crate) fn scheduler(&self) -> &S {
        self.task.scheduler()
    }

    /// Rule T8: cancels the task of a spawn that was refused, for `reason`.
    pub(crate) fn refuse(&self, reason: CancelReason) {
        // SAFETY: the vtable belongs to this task's type and our reference keeps it alive.
        unsafe { (self.task.header().vtable.refuse)(self.task.as_raw(), reason) }
    }

    /// Rule T6: the handle's poll.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        let header = self.task.header();
        let snapshot = header.state.load();
        if snapshot.is_complete() {
            return Poll::Ready(self.take(snapshot.is_leaked()));
        }
        let id = WakerId::of(cx.waker());
        match self.waiting {
            Waiting::Published(published) if published == id => return Poll::Pending,
            Waiting::Published(_) => match header.state.reclaim_join_waker() {
                ReclaimOutcome::Reclaimed => self.waiting = Waiting::Idle,
                ReclaimOutcome::Complete => {
                    let leaked = header.state.load().is_leaked();
                    return Poll::Ready(self.take(leaked));
                }
            },
            Waiting::Idle | Waiting::Taken => {}
        }
        let fresh = cx.waker().clone();
        // SAFETY: rule T6, `waiting` is `Idle` here (a taken output returned above, as the task
        // is complete), so the slot is ours.
        let replaced = unsafe { header.store_join_waker(fresh) };
        drop(replaced);
        match header.state.set_join_waker() {
            JoinWakerOutcome::Registered => {
                self.waiting = Waiting::Published(id);
                Poll::Pending
            }
            JoinWakerOutcome::Complete => {
                // Rule T6: the completer did not see the bit, so the slot is still ours, and a
                // finished handle keeps no waker alive.
                // SAFETY: as above; the slot stays ours while `JOIN_WAKER` was set only after
                // `COMPLETE`.
                if let Some(waker) = unsafe { header.take_join_waker() } {
                    drop_contained(waker);
                }
                let leaked = header.state.load().is_leaked();
                Poll::Ready(self.take(leaked))
            }
        }
    }

    /// Rule T6: reads the output of the complete task (an error for a leaked one).
    fn take(&mut self, leaked: bool) -> Result<T, JoinError> {
        self.waiting = Waiting::Taken;
        // SAFETY: `take_output` came with the task when it was spawned (its output is `T`), our
        // reference keeps the task alive, the caller saw `COMPLETE` (with `leaked` read from
        // the same word), and we are its handle.
        unsafe { (self.take_output)(self.task.as_raw(), leaked) }
    }
}

impl<T, S: Schedule> Drop for Join<T, S> {
    fn drop(&mut self) {
        // Rule T6: once the output was taken the task is complete and the handle owes it
        // nothing but its reference, which `task` releases after this.
        if self.waiting == Waiting::Taken {
            return;
        }
        let header = self.task.header();
        let outcome = header.state.detach();
        let owns_slot = match outcome {
            // `detach` cleared `JOIN_WAKER` before completion: no completer will touch it.
            DetachOutcome::Detached => true,
            // Completion saw the bit only if we had published a waker.
            DetachOutcome::OutputIsOurs => self.waiting == Waiting::Idle,
        };
        if owns_slot {
            // SAFETY: rule T6, as just established the slot is ours.
            if let Some(waker) = unsafe { header.take_join_waker() } {
                drop_contained(waker);
            }
        }
        if outcome == DetachOutcome::OutputIsOurs {
            // SAFETY: the vtable belongs to this task's type, our reference keeps it alive, and
            // rule T6 gives a handle that saw `COMPLETE` with its interest the stored output.
            unsafe { (header.vtable.drop_output)(self.task.as_raw()) }
        }
    }
}

impl<T, S: Schedule> fmt::Debug for Join<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Join")
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl<T, S: Schedule> Unpin for Join<T, S> {}
