//! The worker as the loan driver sees it: the [`LoanWorker`] trait object and its [`Unpark`]
//! handle.
//!
//! The driver never knows what the worker is (the io_uring worker, a test run queue, a language
//! VM's scheduler). It moves the worker between threads as a `Box<dyn LoanWorker>` and calls its
//! methods only from the thread that currently holds it, which is why the trait takes
//! `&mut self` and only requires `Send`.

use std::fmt;
use std::sync::Arc;
use web_time::Instant;

/// What one non-blocking dispatch turn did.
#[must_use = "a turn reports whether it made progress"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnOutcome {
    /// At least one task was polled or one completion reaped.
    Progressed,
    /// Nothing was runnable; the turn returned without doing anything.
    Idle,
}

impl TurnOutcome {
    /// [`Progressed`](Self::Progressed) if the turn `progressed`, else [`Idle`](Self::Idle).
    pub fn progressed_if(progressed: bool) -> TurnOutcome {
        if progressed {
            TurnOutcome::Progressed
        } else {
            TurnOutcome::Idle
        }
    }
}

/// Why [`LoanWorker::run_until`] returned.
#[must_use = "the caller must react to why the worker stopped"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// The predicate held.
    Satisfied,
    /// The deadline passed before the predicate held.
    DeadlineReached,
    /// The worker is shutting down; it will not run tasks any more.
    ShuttingDown,
}

/// Whether a worker given back needs a thread to drive it (rule L7 of the crate docs).
#[must_use = "a worker with pending work must go back to the background thread"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    /// Something may progress without an outside event (runnable or live tasks, I/O in flight,
    /// timers, external completions awaited or queued): the background thread takes the worker
    /// back now.
    Work,
    /// Nothing: only an outside event can give the worker work, and such an event triggers the
    /// rest waker given to [`LoanWorker::install_rest_waker`]. The worker rests in the slot for
    /// the next `block_on`, without waking the background thread.
    Nothing,
}

/// A worker that the loan driver can run on a background thread and lend to `block_on` callers.
///
/// The value is `Send` but need not be `Sync`: it is moved into the background thread and lent
/// to callers, and each method is called only by the thread that holds it at that moment.
///
/// Contract the driver relies on:
/// * [`turn`](Self::turn) never blocks.
/// * [`run_until`](Self::run_until) checks `until` before every park and after every turn, and
///   its park ends when the [`Unpark`] handle supplied with the worker is triggered from any
///   thread, including when the trigger happened *before* the park began (a token, as with
///   `std::thread::park`).
/// * [`enter`](Self::enter) and [`leave`](Self::leave) come in pairs that nest like a stack on
///   one thread, possibly several times on the same worker (nested `block_on`), interleaved with
///   the pairs of other workers (distinct runtimes nested on one thread).
pub trait LoanWorker: Send {
    /// Runs one dispatch turn without blocking: polls runnable tasks up to the worker's budget
    /// and reaps completed I/O.
    fn turn(&mut self) -> TurnOutcome;

    /// Runs turns until `until()` holds, `deadline` passes, or the worker is shutting down,
    /// parking (for example in a ring wait) whenever nothing is runnable.
    fn run_until(
        &mut self,
        until: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> RunOutcome;

    /// Whether a turn would find runnable work right now (tasks or reaped completions).
    fn has_runnable(&self) -> bool;

    /// Whether the *current thread* owns live `!Send` local tasks of this worker. Those tasks
    /// can only be polled on their thread, so the worker must not leave it.
    fn holds_local_tasks(&self) -> bool;

    /// Installs the worker as the current thread's runtime context.
    fn enter(&mut self);

    /// Removes the context installed by the matching [`enter`](Self::enter), restoring whatever
    /// was current before it.
    fn leave(&mut self);

    /// Whether the worker is shutting down.
    fn is_shutting_down(&self) -> bool;

    /// A `block_on` root starts being driven on this worker (L15): from now until the
    /// matching [`root_finished`](Self::root_finished) the runtime is not quiescent. Called on
    /// the borrowing thread with the context entered, once per root (nested roots nest).
    /// The default does nothing.
    fn root_started(&mut self) {}

    /// The root announced by the matching [`root_started`](Self::root_started) was dropped
    /// (completed, panicked, or abandoned by an unwinding turn). Called on every exit path,
    /// before the context is left. The default does nothing.
    fn root_finished(&mut self) {}

    /// The slot closed while this worker is on loan (L8): stop it where it is, without
    /// waiting for anything, so the borrower's root and whoever waits on the worker see the
    /// runtime closed (cancel tasks, fail pending operations). Called at most once per worker,
    /// on the borrowing thread with the context entered, at the borrower's first dispatch
    /// boundary after the closure (which unparks the worker). The borrower keeps driving the
    /// worker afterwards — its root is polled once more and may need turns to observe the
    /// closure — until the root completes; then the worker is dropped there. The default does
    /// nothing: such a worker stops only when it is dropped.
    fn close_on_loan(&mut self) {}

    /// Whether the worker has work that no outside event will announce (L7), asked on the
    /// borrowing thread when a `block_on` gives it back: after its root was dropped, with the
    /// context still entered (before the drain, L12) or already left (after drain turns).
    /// [`Pending::Nothing`] is a promise: nothing is queued, runnable (so
    /// [`has_runnable`](Self::has_runnable) is false: the drain trusts it and runs no turn) or
    /// in flight (an event the rest waker already announced must be reported as
    /// [`Pending::Work`]), and from now on every event that gives the worker work (a spawn or a
    /// task wake from another thread, an explicit unpark) triggers the rest waker. The grace period after which the background
    /// thread reclaims an untouched resting worker is only a backstop: every borrow postpones
    /// it. The default, [`Pending::Work`], always hands the worker back to the background
    /// thread.
    fn pending(&self) -> Pending {
        Pending::Work
    }

    /// Called once, before the background thread starts: `rest_waker` ends the worker's rest
    /// in the slot (L7). Trigger it, from any thread, whenever work becomes runnable from
    /// outside the thread driving the worker, once that work is visible (queued) — for example
    /// right after the worker's own unpark. It never blocks for long (one short lock of the
    /// slot, which is never held while worker code runs). The default drops it, which is only
    /// correct together with the default [`pending`](Self::pending).
    fn install_rest_waker(&mut self, rest_waker: Arc<dyn Unpark>) {
        drop(rest_waker);
    }
}

impl fmt::Debug for dyn LoanWorker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoanWorker")
            .field("shutting_down", &self.is_shutting_down())
            .finish_non_exhaustive()
    }
}

/// Wakes a parked worker from any thread.
///
/// Triggering it while the worker is not parked must make the worker's next park return at once
/// (a stored token), so a wake can never be lost between "checked the predicate" and "parked".
pub trait Unpark: Send + Sync {
    /// Ends the worker's current or next park.
    fn unpark(&self);
}

impl fmt::Debug for dyn Unpark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unpark").finish_non_exhaustive()
    }
}
