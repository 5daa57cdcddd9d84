//! `JoinHandle` and `JoinError` (rules T5 and T6 of the crate docs), and [`Join`], the handle's
//! machinery for a task of any [`Schedule`] policy.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use crate::raw::{Header, TaskRef};
use crate::schedule::Schedule;
use crate::scheduler_state::SchedulerState;
use crate::state::WakeOutcome;

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

    /// Rule T8: cancels the task of a spawn that was refused, for `reason`.
    pub(crate) fn refuse(&self, reason: CancelReason) {
        self.join.refuse(reason);
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.join.poll(cx)
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
pub(crate) struct Join<T, S: Schedule> {
    /// The handle's counted reference (T1).
    task: TaskRef<S>,
    /// The task type's join poll: reads the output as a `T` (T6).
    poll_join: PollJoin<T, S>,
    /// Makes the handle `Send` only when `T` is (and `Sync` only when `T` is): `TaskRef` is
    /// both, and the fn pointer carries no auto traits of `T`.
    _output: PhantomData<T>,
}

/// A task type's join poll; the pointer is the header of a live task of that type, whose
/// `JoinHandle` is the caller.
type PollJoin<T, S> = unsafe fn(NonNull<Header<S>>, &mut Context<'_>) -> Poll<Result<T, JoinError>>;

impl<T, S: Schedule> Join<T, S> {
    /// A handle from its task reference and the join poll of the task's type, whose output is
    /// `T`.
    pub(crate) fn new(task: TaskRef<S>, poll_join: PollJoin<T, S>) -> Join<T, S> {
        Join {
            task,
            poll_join,
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

    /// Rule T8: cancels the task of a spawn that was refused, for `reason`.
    pub(crate) fn refuse(&self, reason: CancelReason) {
        // SAFETY: the vtable belongs to this task's type and our reference keeps it alive.
        unsafe { (self.task.header().vtable.refuse)(self.task.as_raw(), reason) }
    }

    /// Rule T6: the handle's poll.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        // SAFETY: `poll_join` came with the task when it was spawned (its output is `T`), our
        // reference keeps the task alive, and we are its handle.
        unsafe { (self.poll_join)(self.task.as_raw(), cx) }
    }
}

impl<T, S: Schedule> Drop for Join<T, S> {
    fn drop(&mut self) {
        // SAFETY: as in `poll`; our reference is released after this, when `task` drops.
        unsafe { (self.task.header().vtable.detach)(self.task.as_raw()) }
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
