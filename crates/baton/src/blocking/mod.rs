//! Blocking jobs: [`spawn_blocking`] and [`spawn_quarantined`], run on the blocking pool and
//! awaited through a [`BlockingHandle`].
//!
//! Nothing here re-implements the machinery; it glues the lower crates in this order:
//!
//! 1. The runtime's `Registrar` (`baton-completion`) issues an identity and binds it to a
//!    prepared operation (the closure, an identity decoder, and its resource class).
//! 2. The binding splits: the runtime half is registered in the worker's wait table
//!    (`baton_uring::with_current_waits`), the submission goes to the executor lease
//!    (the `BlockingPool` by default).
//! 3. A pool thread runs the job and delivers its completion **exactly once** to the worker's
//!    inbox; the worker checks the full identity, decodes on its own thread and wakes the
//!    waiting task, which takes the value out of the wait table.
//!
//! Each job also has a facade-side cell (`job_cell.rs`, its rules numbered there) shared by the
//! handle, the body and the binding (whose cancel-before-start it decides), so [`BlockingHandle::cancel`] decides before-start cancels at once from
//! any thread and [`BlockingHandle::is_finished`] answers from any thread.
//!
//! The facade's decoders, hooks and values are all `Send`, so its waits go to the worker's
//! *migratable* wait table: they settle, and are taken, on whichever thread runs the worker
//! (the background thread, or a `block_on` caller that borrowed it). A handle started or
//! polled on a thread that is not running the worker (a `block_on` that polls its future in
//! place, or another thread holding a [`Handle`]) hands the wait to a small relay task on the
//! worker instead.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use baton_completion::WaitKey;
use baton_uring::with_current_waits;

mod job_cell;
mod submit;
mod wait;

use job_cell::JobCell;
use submit::start;
use wait::{WaitFor, cancel_outcome, flatten_relay, from_body, on_worker};

/// The bound a quarantined job declares ([`spawn_quarantined`]); from `baton-cancel`.
pub use baton_cancel::QuarantineBound;
/// Why the pool refused a job ([`BlockingError::Rejected`]); from `baton-completion`.
pub use baton_completion::RejectReason;

pub use crate::error::BlockingError;

use crate::context;
use crate::handle::Handle;
use crate::shared::lock;
use crate::task::JoinHandle;

/// Runs `f` on the runtime's blocking pool and returns a handle to await its result.
///
/// The job is queued at once. [`BlockingHandle::cancel`] (or dropping the handle) before a pool
/// thread picks it up cancels it: its body never runs. Once started it runs to completion (a
/// closure cannot be interrupted); for work that must be bounded, see [`spawn_quarantined`].
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let sum = rt.block_on(async {
///     baton::blocking::spawn_blocking(|| (1..=10u64).sum::<u64>()).await
/// });
/// assert_eq!(sum, Ok(55));
/// # Ok(())
/// # }
/// ```
///
/// Called outside a runtime (for example as the argument of `rt.block_on(...)`), the job is
/// queued when the handle is first polled, on the runtime polling it; polled outside any
/// runtime, the handle resolves to [`BlockingError::NotInRuntime`].
///
/// # Cancel safety
///
/// Dropping the handle before a pool thread started the job cancels it (the closure never
/// runs); once started, the job runs to completion and its result is dropped.
pub fn spawn_blocking<F, T>(f: F) -> BlockingHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match context::current() {
        Some(handle) => handle.spawn_blocking(f),
        None => BlockingHandle::deferred(Box::new(move |handle| start(handle, None, f))),
    }
}

/// Runs `f`, which cannot be interrupted once started, on the pool's separate quarantine lane,
/// declaring `bound` (a deadline, or a finite amount of named work). Quarantined jobs cannot
/// starve interruptible ones; one that outlives a deadline bound is reported as
/// [`BlockingError::BoundExceeded`].
///
/// Outside a runtime, the job is queued when the handle is first polled, as for
/// [`spawn_blocking`].
///
/// ```
/// use baton::blocking::QuarantineBound;
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let bound = QuarantineBound::FiniteWork { units: 4096, unit: "bytes" };
/// let out = rt.block_on(async {
///     baton::blocking::spawn_quarantined(bound, || vec![0u8; 4096].len()).await
/// });
/// assert_eq!(out, Ok(4096));
/// # Ok(())
/// # }
/// ```
pub fn spawn_quarantined<F, T>(bound: QuarantineBound, f: F) -> BlockingHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match context::current() {
        Some(handle) => handle.spawn_quarantined(bound, f),
        None => BlockingHandle::deferred(Box::new(move |handle| start(handle, Some(bound), f))),
    }
}

impl Handle {
    /// [`spawn_blocking`] on this runtime, from any thread.
    pub fn spawn_blocking<F, T>(&self, f: F) -> BlockingHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        start(self, None, f)
    }

    /// [`spawn_quarantined`] on this runtime, from any thread.
    pub fn spawn_quarantined<F, T>(&self, bound: QuarantineBound, f: F) -> BlockingHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        start(self, Some(bound), f)
    }
}

/// What [`BlockingHandle::cancel`] achieved.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let job = rt.spawn_blocking(|| 1);
/// assert_eq!(rt.block_on(job), Ok(1));
/// let late = rt.spawn_blocking(|| 2);
/// # while !late.is_finished() { std::thread::sleep(std::time::Duration::from_millis(1)); }
/// assert_eq!(late.cancel(), baton::blocking::BlockingCancel::AlreadyFinished);
/// # Ok(())
/// # }
/// ```
#[must_use = "the outcome says whether the job's body will run"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockingCancel {
    /// The job had not started: it never will, and the handle resolves to
    /// [`BlockingError::Cancelled`].
    CancelledBeforeStart,
    /// An earlier cancel already won; the handle resolves to [`BlockingError::Cancelled`].
    AlreadyCancelled,
    /// A pool thread already runs the job; it finishes and the handle resolves to its result,
    /// unless the runtime shuts down before that result reaches the handle (then `Closed`).
    AlreadyStarted,
    /// The job already finished (or failed to start); the handle resolves to that result,
    /// unless the runtime shuts down before it reaches the handle (then `Closed`).
    AlreadyFinished,
    /// The runtime's shutdown got there first: it withdrew the job before it started (its body
    /// never runs), or its worker closed before the job's result reached the handle (a body
    /// still running finishes on its own and its result is dropped). The handle resolves to
    /// [`BlockingError::Closed`].
    Closed,
}

/// A blocking job's result, to await: `Ok(value)`, or a [`BlockingError`] saying why there is
/// none (cancelled before start, panicked, refused by the pool, given up by the runtime's
/// shutdown, ...).
///
/// Dropping the handle cancels a job that has not started; a started job runs to completion and
/// its result is dropped. A job the runtime's shutdown withdrew before it started, or whose
/// result had not reached the handle when the runtime's worker closed, resolves to
/// [`BlockingError::Closed`], whether it was started on the worker or relayed from another
/// thread. `Send` when the result is.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let handle = rt.spawn_blocking(|| std::fs::metadata("/").is_ok());
/// assert_eq!(rt.block_on(handle), Ok(true));
/// # Ok(())
/// # }
/// ```
#[must_use = "dropping the handle cancels a job that has not started"]
pub struct BlockingHandle<T> {
    state: State<T>,
    /// The job's cell (job-cell rules), shared with its body; `None` before the job exists
    /// (deferred) and for a job that could not start.
    cell: Option<Arc<JobCell<T>>>,
    _result: PhantomData<fn() -> T>,
}

/// Starts a job on the runtime first polling its handle.
type Deferred<T> = Box<dyn FnOnce(&Handle) -> BlockingHandle<T> + Send>;

enum State<T> {
    /// Made outside a runtime: the job starts at the first poll, on the runtime polling it;
    /// `None` once cancelled.
    Deferred(Mutex<Option<Deferred<T>>>),
    /// The wait is registered in the migratable wait table of `handle`'s worker.
    Waiting { key: WaitKey, handle: Handle },
    /// A relay task on `handle`'s home worker starts and awaits the job.
    Relayed {
        join: JoinHandle<Result<T, BlockingError>>,
        handle: Handle,
    },
    /// The job could not start (or the result was taken); `None` once reported.
    Failed(Option<BlockingError>),
    /// Resolved to [`BlockingError::Closed`]: the runtime's shutdown gave the job up, so a
    /// later `cancel` says `Closed` as one before the await does (job-cell rule J4).
    GivenUp,
}

impl<T> fmt::Debug for BlockingHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Deferred(_) => "deferred",
            State::Waiting { .. } => "waiting",
            State::Relayed { .. } => "relayed",
            State::Failed(_) | State::GivenUp => "finished",
        };
        f.debug_struct("BlockingHandle")
            .field("state", &state)
            .finish()
    }
}

impl<T: Send + 'static> BlockingHandle<T> {
    fn deferred(start: Deferred<T>) -> BlockingHandle<T> {
        BlockingHandle {
            state: State::Deferred(Mutex::new(Some(start))),
            cell: None,
            _result: PhantomData,
        }
    }
}

impl<T> BlockingHandle<T> {
    /// Cancels the job if it has not started yet (its body then never runs), from any thread.
    ///
    /// The outcome is decided at once through the job's own cell (job-cell rule J1), also off
    /// the worker: `CancelledBeforeStart` the first time it wins, `AlreadyCancelled` on every
    /// later call, `AlreadyStarted` / `AlreadyFinished` when the body got there first
    /// (`AlreadyFinished` also for a job the pool refused, which resolves to
    /// [`BlockingError::Rejected`], job-cell rule J6), and
    /// [`Closed`](BlockingCancel::Closed) once the runtime's shutdown gave the job up (it
    /// withdrew the job, refused it while shutting down, or its worker closed before the job's
    /// result reached this handle: job-cell rules J4 and J6) — each outcome saying what
    /// awaiting the handle then gives. After a
    /// winning cancel the worker is told too, so a waiting handle resolves to
    /// [`BlockingError::Cancelled`] without waiting for the pool to reach the job.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// use baton::blocking::BlockingCancel;
    /// let rt = baton::Builder::new().blocking_threads(1).build()?;
    /// let (release, gate) = std::sync::mpsc::channel::<()>();
    /// let busy = rt.spawn_blocking(move || gate.recv().ok());
    /// let queued = rt.spawn_blocking(|| unreachable!("cancelled before it starts"));
    /// # while rt.metrics().blocking.running_interruptible == 0 {
    /// #     std::thread::sleep(std::time::Duration::from_millis(1));
    /// # }
    /// assert_eq!(queued.cancel(), BlockingCancel::CancelledBeforeStart);
    /// assert_eq!(queued.cancel(), BlockingCancel::AlreadyCancelled);
    /// release.send(()).ok();
    /// assert!(rt.block_on(queued).is_err());
    /// assert_eq!(rt.block_on(busy), Ok(Some(())));
    /// # Ok(())
    /// # }
    /// ```
    pub fn cancel(&self) -> BlockingCancel {
        let decided = match (&self.state, &self.cell) {
            (State::GivenUp, _) => return BlockingCancel::Closed,
            // Never queued: the closure is dropped here and never runs.
            (State::Deferred(start), _) => {
                return match lock(start).take() {
                    Some(start) => {
                        drop(start);
                        BlockingCancel::CancelledBeforeStart
                    }
                    None => BlockingCancel::AlreadyCancelled,
                };
            }
            (_, Some(cell)) => cell.cancel(),
            (_, None) => BlockingCancel::AlreadyFinished,
        };
        match decided {
            BlockingCancel::CancelledBeforeStart => self.tell_worker_cancelled(),
            // Job-cell rule J4: started, but its result can no longer reach this handle.
            BlockingCancel::AlreadyStarted | BlockingCancel::AlreadyFinished
                if self.result_lost() =>
            {
                return BlockingCancel::Closed;
            }
            _ => {}
        }
        decided
    }

    /// Job-cell rules J4 and J5: whether the job's home worker closed before the handle or its
    /// relay took the job's wait. The inbox is read first: once it is closed, *taken* is final.
    /// A job refused before it was queued has no result to lose (J6).
    fn result_lost(&self) -> bool {
        let (State::Waiting { handle, .. } | State::Relayed { handle, .. }) = &self.state else {
            return false;
        };
        handle.home().handle().is_closed()
            && self
                .cell
                .as_ref()
                .is_some_and(|c| !c.is_taken() && !c.start_failed())
    }

    /// Settles the wait of a job whose cell was just cancelled, so the handle need not wait for
    /// the pool thread to reach it (job-cell rule J2 would settle it then).
    fn tell_worker_cancelled(&self) {
        match &self.state {
            // Aborting the relay discards its wait; the cell already says cancelled (job-cell
            // rule J1), so the relay's withdrawal on the way changes nothing.
            State::Relayed { join, .. } => join.abort(),
            State::Waiting { key, handle } => {
                let key = *key;
                if let Some(outcome) = on_worker(handle, |waits| waits.cancel(key)) {
                    let _settled = cancel_outcome(outcome);
                } else {
                    let _relay = handle.spawn_home(async move {
                        if let Ok(outcome) = with_current_waits(|waits| waits.cancel(key)) {
                            let _settled = cancel_outcome(outcome);
                        }
                    });
                }
            }
            State::Deferred(_) | State::Failed(_) | State::GivenUp => {}
        }
    }

    /// Whether the job is over: its body returned or panicked (the result is on its way to the
    /// worker; awaiting takes it promptly, or resolves to [`BlockingError::Closed`] if the
    /// runtime shut down first), a cancel won before it started (awaiting resolves to
    /// [`BlockingError::Cancelled`]), the runtime's shutdown withdrew it before it started
    /// (awaiting resolves to [`BlockingError::Closed`]), or it could not start. Answers from
    /// any thread, and once true stays true.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Runtime::new()?;
    /// let job = rt.spawn_blocking(|| 5);
    /// while !job.is_finished() {
    ///     std::thread::sleep(std::time::Duration::from_millis(1));
    /// }
    /// assert_eq!(rt.block_on(job), Ok(5));
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_finished(&self) -> bool {
        match (&self.state, &self.cell) {
            (State::Failed(_) | State::GivenUp, _) => true,
            (State::Deferred(start), _) => lock(start).is_none(),
            (_, Some(cell)) => cell.is_finished(),
            (_, None) => false,
        }
    }
}

impl<T: Send + 'static> Future for BlockingHandle<T> {
    type Output = Result<T, BlockingError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let State::Deferred(start) = &self.state {
            let Some(start) = lock(start).take() else {
                self.state = State::Failed(None);
                return Poll::Ready(Err(BlockingError::Cancelled));
            };
            let Some(handle) = context::current() else {
                self.state = State::Failed(None);
                return Poll::Ready(Err(BlockingError::NotInRuntime));
            };
            // The started handle's state moves into this one; what is left behind is inert.
            let mut started = start(&handle);
            self.state = std::mem::replace(&mut started.state, State::Failed(None));
            self.cell = started.cell.take();
        }
        let this = &mut *self;
        let polled = match &mut this.state {
            State::Deferred(_) => unreachable!("a deferred job was started just above"),
            State::Failed(err) => Poll::Ready(Err(err
                .take()
                .expect("a BlockingHandle was polled after it completed"))),
            State::GivenUp => panic!("a BlockingHandle was polled after it completed"),
            State::Relayed { join, .. } => {
                let cell = this
                    .cell
                    .as_ref()
                    .expect("a relayed handle holds its job's cell");
                Pin::new(join)
                    .poll(cx)
                    .map(|joined| flatten_relay(joined, cell))
            }
            State::Waiting { key, handle } => {
                let key = *key;
                let cell = this
                    .cell
                    .as_ref()
                    .expect("a waiting handle holds its job's cell");
                match on_worker(handle, |waits| waits.poll_wait::<()>(key, cx)) {
                    Some(polled) => polled.map(|result| from_body(result, cell)),
                    None => {
                        // Not on the worker: a relay task there takes the wait over.
                        let handle = handle.clone();
                        let mut join = handle.spawn_home(WaitFor::new(key, Arc::clone(cell)));
                        let polled = Pin::new(&mut join)
                            .poll(cx)
                            .map(|joined| flatten_relay(joined, cell));
                        self.state = State::Relayed { join, handle };
                        polled
                    }
                }
            }
        };
        match &polled {
            Poll::Ready(Err(BlockingError::Closed)) => self.state = State::GivenUp,
            Poll::Ready(_) => self.state = State::Failed(None),
            Poll::Pending => {}
        }
        polled
    }
}

impl<T> Drop for BlockingHandle<T> {
    fn drop(&mut self) {
        // Job-cell rule J1: a job not started yet never will, whichever thread drops this.
        if let Some(cell) = &self.cell {
            let _cancelled = cell.cancel();
        }
        match &self.state {
            State::Waiting { key, handle } => {
                // A job that has not started is cancelled; a late completion is counted stale.
                let key = *key;
                if on_worker(handle, |waits| waits.discard(key)).is_none() {
                    let _relay = handle.spawn_home(async move {
                        let _ = with_current_waits(|waits| waits.discard(key));
                    });
                }
            }
            State::Deferred(_) | State::Failed(_) | State::GivenUp => {}
            State::Relayed { join, .. } => join.abort(),
        }
    }
}
