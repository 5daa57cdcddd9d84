//! Time: [`sleep`], [`sleep_until`], [`timeout`] and [`interval`], on the worker's userspace
//! timer heap.
//!
//! A sleep is a driver timer (`baton-uring`): it needs no ring slot, so it fires even while
//! every slot holds an untimed request. A sleep made inside a runtime belongs to it and may be
//! awaited on any thread; one made outside any runtime binds to the runtime where it is first
//! polled. [`timeout`] drops the inner future the moment the deadline passes, which cancels
//! the I/O request it was waiting on (a read is cancelled in the kernel; a write or sync still
//! finishes, because dropping never cancels durable work). After the runtime shut down a
//! timeout cannot wait: it fails with [`TimeoutError::Closed`] (a sleep just ends).

use std::fmt;
use std::future::{Future, IntoFuture};
use std::io;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use baton_uring::{Op, ops};

pub use web_time::Instant;

use crate::context;
use crate::error::{Error, convert_io};
use crate::handle::Handle;

mod interval;

pub use interval::{Interval, MissedTickBehavior, interval, interval_at};

/// Waits until `duration` has passed.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let start = baton::time::Instant::now();
///     baton::time::sleep(std::time::Duration::from_millis(5)).await;
///     assert!(start.elapsed() >= std::time::Duration::from_millis(5));
/// });
/// # Ok(())
/// # }
/// ```
///
/// # Panics
///
/// When first polled outside any runtime (with a message saying to call it inside
/// `Runtime::block_on` or a task).
///
/// # Cancel safety
///
/// Cancel-safe: dropping the sleep removes its timer; nothing else is lost.
pub fn sleep(duration: Duration) -> Sleep {
    sleep_until(deadline_after(duration))
}

/// About 30 years: what a duration too long for an [`Instant`] is clamped to.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `now + duration`, or a deadline far enough away to never pass when that sum overflows
/// (`sleep(Duration::MAX)` waits forever instead of panicking).
fn deadline_after(duration: Duration) -> Instant {
    later(Instant::now(), duration)
}

/// `from + duration`, clamped as in [`deadline_after`].
fn later(from: Instant, duration: Duration) -> Instant {
    from.checked_add(duration)
        .or_else(|| from.checked_add(FAR_FUTURE))
        .unwrap_or(from)
}

/// Waits until `deadline`. A deadline in the past completes at once.
///
/// # Panics
///
/// As [`sleep`].
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let deadline = baton::time::Instant::now() + std::time::Duration::from_millis(5);
///     baton::time::sleep_until(deadline).await;
///     assert!(baton::time::Instant::now() >= deadline);
/// });
/// # Ok(())
/// # }
/// ```
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep::named(deadline, "time::sleep")
}

/// The future of [`sleep`] and [`sleep_until`]. After the runtime shut down, a sleep completes
/// at once (there is no timer left to wait on). A sleep that completed stays complete: polled
/// again (say, as `&mut sleep` in a loop) it is ready at once, until [`reset`](Sleep::reset)
/// gives it a new deadline.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use std::time::Duration;
/// use baton::time::{Instant, sleep};
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let mut sleep = sleep(Duration::from_secs(60));
///     assert!(!sleep.is_elapsed());
///     sleep.reset(Instant::now() + Duration::from_millis(1));
///     (&mut sleep).await;
///     assert!(sleep.is_elapsed());
///     (&mut sleep).await; // complete: ready at once
/// });
/// # Ok(())
/// # }
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    handle: Option<Handle>,
    /// The timer. A driver operation is `Send` but not `Sync`; the `Mutex` makes `Sleep` `Sync`
    /// (hyper's `rt::Sleep` and boxed `Send + Sync` futures need it) at no cost: it is only
    /// reached through `&mut self` with [`Mutex::get_mut`], which never locks, so a shared
    /// `&Sleep` can never touch the operation.
    timer: Mutex<TimerState>,
    /// The function that made it (`time::sleep`, `time::timeout`, `time::interval`), named
    /// when it is polled outside any runtime.
    function: &'static str,
}

/// Where a [`Sleep`]'s timer is.
enum TimerState {
    /// Not registered yet: the first poll registers it with the deadline.
    Unregistered,
    /// Registered with the driver; dropping the operation removes the timer.
    Waiting(Op<io::Result<()>>),
    /// The operation completed (fired, found its deadline passed, or found the runtime shut
    /// down); an operation is polled to completion only once, so this answers later polls.
    Done,
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("deadline_passed", &self.is_elapsed())
            .finish()
    }
}

impl Sleep {
    /// A sleep until `deadline` that `function` made.
    pub(crate) fn named(deadline: Instant, function: &'static str) -> Sleep {
        Sleep {
            deadline,
            handle: context::current(),
            timer: Mutex::new(TimerState::Unregistered),
            function,
        }
    }

    /// When the sleep ends.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the deadline has passed.
    pub fn is_elapsed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Moves the sleep to `deadline`, earlier or later, whether it is waiting or already
    /// completed: the next poll waits for the new deadline (at once if it has passed). A
    /// registered timer is removed; the sleep stays with its runtime.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// use std::time::Duration;
    /// use baton::time::{Instant, sleep};
    /// let rt = baton::Runtime::new()?;
    /// rt.block_on(async {
    ///     let mut idle = sleep(Duration::from_secs(60));
    ///     let deadline = Instant::now() + Duration::from_millis(5);
    ///     idle.reset(deadline);
    ///     (&mut idle).await;
    ///     assert!(Instant::now() >= deadline);
    /// });
    /// # Ok(())
    /// # }
    /// ```
    pub fn reset(&mut self, deadline: Instant) {
        self.deadline = deadline;
        // Dropping a waiting operation removes its timer (cancel-safe, as dropping the sleep).
        *self.timer.get_mut().unwrap_or_else(PoisonError::into_inner) = TimerState::Unregistered;
    }
}

impl Sleep {
    /// Polls the timer: `Ok` when it fired, `Timeout` for a deadline already passed, `Closed`
    /// after shutdown (driver errors, not yet relabelled); a sleep that completed answers `Ok`
    /// again (its first answer was already reported).
    fn poll_timer(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let timer = self.timer.get_mut().unwrap_or_else(PoisonError::into_inner);
        if matches!(timer, TimerState::Unregistered) {
            let Some(handle) = self.handle.clone().or_else(context::current) else {
                panic!(
                    "{}",
                    Error::NotInRuntime {
                        function: self.function
                    }
                );
            };
            // Kept, so a sleep made outside any runtime stays with the one where it was first
            // polled when a `reset` registers it again.
            let handle = self.handle.insert(handle);
            *timer = TimerState::Waiting(ops::sleep_until(self.deadline).bind(handle.driver()));
        }
        let TimerState::Waiting(op) = timer else {
            return Poll::Ready(Ok(()));
        };
        let outcome = ready!(Pin::new(op).poll(cx));
        *timer = TimerState::Done;
        Poll::Ready(outcome)
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Fired, a deadline already passed, or shut down: in every case the sleep is over.
        self.poll_timer(cx).map(drop)
    }
}

/// Runs `future` for at most `duration`: `Ok(output)` if it finished in time, otherwise
/// `Err(TimeoutError::Elapsed(_))`, and the future is dropped right then (cancelling the I/O it
/// waited on). If the runtime shuts down first (or already has), there is no timer left to
/// wait on: `Err(TimeoutError::Closed)`, the future dropped the same way. Both convert into an
/// `io::Error` whose inner error is [`Error::Timeout`] or [`Error::Closed`], so `?` works in
/// functions returning `io::Result`.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use std::time::Duration;
/// let rt = baton::Runtime::new()?;
/// let handle = rt.handle();
/// rt.block_on(async {
///     let slow = baton::time::sleep(Duration::from_secs(60));
///     let res = baton::time::timeout(Duration::from_millis(10), slow).await;
///     assert!(res.is_err_and(|err| err.is_elapsed()));
///     let quick = async { 7 };
///     assert_eq!(baton::time::timeout(Duration::from_secs(5), quick).await, Ok(7));
/// });
/// let _report = rt.shutdown_timeout(Duration::from_secs(5));
/// let never = std::future::pending::<()>();
/// let res = handle.block_on(baton::time::timeout(Duration::from_secs(60), never));
/// assert_eq!(res, Err(baton::time::TimeoutError::Closed));
/// # Ok(())
/// # }
/// ```
///
/// # Panics
///
/// As [`sleep`], when polled outside any runtime.
///
/// # Cancel safety
///
/// As cancel-safe as `future`: on expiry (or when the `Timeout` itself is dropped) the inner
/// future is dropped, so what a drop of it loses is what this loses. Baton's socket reads and
/// accepts lose nothing (their late bytes or connection wait for the next call); writes and
/// syncs are retained and still happen.
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    timeout_at(deadline_after(duration), future)
}

/// Like [`timeout`], with an absolute deadline.
///
/// # Panics
///
/// As [`sleep`], when polled outside any runtime.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let deadline = baton::time::Instant::now() + std::time::Duration::from_millis(5);
///     let never = std::future::pending::<()>();
///     let err = baton::time::timeout_at(deadline, never).await.unwrap_err();
///     assert_eq!(err.elapsed().map(|elapsed| elapsed.deadline()), Some(deadline));
/// });
/// # Ok(())
/// # }
/// ```
pub fn timeout_at<F: IntoFuture>(deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
    Timeout {
        future: Some(future.into_future()),
        sleep: Sleep::named(deadline, "time::timeout"),
    }
}

/// The future of [`timeout`].
///
/// Invariant: `future` is structurally pinned — never moved out, only dropped in place (when
/// the deadline passes, or with the `Timeout`).
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let out = rt.block_on(baton::time::timeout(std::time::Duration::from_secs(5), async { 3 }));
/// assert_eq!(out, Ok(3));
/// # Ok(())
/// # }
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Timeout<F> {
    future: Option<F>,
    sleep: Sleep,
}

impl<F> fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("deadline", &self.sleep.deadline)
            .field("running", &self.future.is_some())
            .finish()
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, TimeoutError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `future` is structurally pinned (type invariant): it is only reached through
        // the `Pin` below and dropped in place with `Pin::set`; `sleep` is `Unpin` and is not
        // pinned structurally, so handing out `&mut` to it moves nothing that is pinned.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: see above; `this.future` is not moved while pinned.
        let mut future = unsafe { Pin::new_unchecked(&mut this.future) };
        let Some(inner) = future.as_mut().as_pin_mut() else {
            panic!("a Timeout was polled after it completed");
        };
        if let Poll::Ready(output) = inner.poll(cx) {
            future.set(None);
            return Poll::Ready(Ok(output));
        }
        let Poll::Ready(timer) = this.sleep.poll_timer(cx) else {
            return Poll::Pending;
        };
        // Dropping the inner future cancels the request it was waiting on.
        future.set(None);
        // No timer could run: the runtime shut down before the deadline. Otherwise the timer
        // fired, or the deadline had passed already when it was first polled.
        let closed = timer.is_err_and(|err| Error::is_closed(&convert_io(err)));
        Poll::Ready(Err(if closed {
            TimeoutError::Closed
        } else {
            TimeoutError::Elapsed(Elapsed {
                deadline: this.sleep.deadline,
            })
        }))
    }
}

/// Why a [`timeout`] (or [`timeout_at`]) produced no output; the future was dropped either way.
///
/// Converts into an `io::Error` whose inner error is [`baton::Error::Timeout`](Error::Timeout)
/// (kind `TimedOut`) or [`baton::Error::Closed`](Error::Closed) (kind `NotConnected`), so `?`
/// works in functions returning `io::Result` and the runtime's shutdown reads as it does for
/// every other call.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let res: std::io::Result<()> = rt.block_on(async {
///     baton::time::timeout(std::time::Duration::from_millis(1), std::future::pending()).await?;
///     Ok(())
/// });
/// assert!(baton::Error::is_timeout(&res.unwrap_err()));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimeoutError {
    /// The deadline passed before the future completed.
    #[error(transparent)]
    Elapsed(#[from] Elapsed),
    /// The runtime shut down before the future completed, so no timer could wait for the
    /// deadline.
    #[error(
        "the Baton runtime shut down before the timeout's future completed, so its deadline \
         could not be waited for; run the timeout on a running runtime"
    )]
    Closed,
}

impl TimeoutError {
    /// Whether the deadline passed.
    pub fn is_elapsed(&self) -> bool {
        matches!(self, TimeoutError::Elapsed(_))
    }

    /// Whether the runtime shut down first.
    pub fn is_closed(&self) -> bool {
        matches!(self, TimeoutError::Closed)
    }

    /// The elapsed deadline, when that is why the timeout failed.
    pub fn elapsed(&self) -> Option<Elapsed> {
        match self {
            TimeoutError::Elapsed(elapsed) => Some(*elapsed),
            TimeoutError::Closed => None,
        }
    }
}

impl From<TimeoutError> for io::Error {
    fn from(err: TimeoutError) -> io::Error {
        match err {
            TimeoutError::Elapsed(elapsed) => elapsed.into(),
            TimeoutError::Closed => Error::Closed.into_io(),
        }
    }
}

/// A [`timeout`]'s deadline passed first ([`TimeoutError::Elapsed`]). Converts into an
/// `io::Error` of kind `TimedOut` whose inner error is
/// [`baton::Error::Timeout`](crate::Error::Timeout), so `?` works in functions returning
/// `io::Result`.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let elapsed = rt.block_on(async {
///     let never = std::future::pending::<()>();
///     baton::time::timeout(std::time::Duration::from_millis(1), never).await
/// });
/// let elapsed = elapsed.unwrap_err().elapsed().expect("the deadline passed");
/// let err = std::io::Error::from(elapsed);
/// assert!(baton::Error::is_timeout(&err));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("deadline has elapsed")]
pub struct Elapsed {
    deadline: Instant,
}

impl Elapsed {
    /// The deadline that passed.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl From<Elapsed> for io::Error {
    fn from(_: Elapsed) -> io::Error {
        Error::Timeout.into_io()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Sleep, Timeout, TimeoutError, sleep, timeout};

    /// Polled outside any runtime, each timer panics naming the function the caller used.
    #[test]
    fn a_timer_polled_outside_a_runtime_names_the_function_that_made_it() {
        fn message_of(poll: impl FnOnce() + std::panic::UnwindSafe) -> String {
            let payload = std::panic::catch_unwind(poll).expect_err("no runtime: it panics");
            payload
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_default()
        }
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let timed = message_of(move || {
            let mut fut = std::pin::pin!(timeout(
                Duration::from_secs(1),
                std::future::pending::<()>()
            ));
            let _ = std::future::Future::poll(fut.as_mut(), &mut cx);
        });
        assert!(timed.contains("time::timeout"), "{timed}");
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let slept = message_of(move || {
            let mut fut = std::pin::pin!(sleep(Duration::from_secs(1)));
            let _ = std::future::Future::poll(fut.as_mut(), &mut cx);
        });
        assert!(slept.contains("time::sleep"), "{slept}");
    }

    /// hyper's `rt::Sleep` (and any `Pin<Box<dyn Future + Send + Sync>>`) needs a sleep that
    /// is `Send + Sync`; a timeout is as `Sync` as the future it wraps.
    #[test]
    fn sleep_and_timeout_are_send_and_sync() {
        fn check<T: Send + Sync + Unpin>() {}
        check::<Sleep>();
        check::<Timeout<std::future::Ready<()>>>();
    }

    #[test]
    fn sleep_duration_max_stays_pending_instead_of_overflowing() {
        let rt = crate::Runtime::new().expect("a runtime with default settings builds");
        let out = rt.block_on(timeout(Duration::from_millis(10), sleep(Duration::MAX)));
        assert!(out.is_err(), "a sleep of Duration::MAX never ends");
    }

    /// After shutdown there is no timer to wait on: a timeout must say the runtime closed, as
    /// every other call does, instead of claiming its deadline passed.
    #[test]
    fn timeout_after_shutdown_reports_closed_instead_of_elapsed() {
        let rt = crate::Runtime::new().expect("a runtime with default settings builds");
        let handle = rt.handle();
        let _report = rt.shutdown_timeout(Duration::from_secs(5));
        let out = handle.block_on(timeout(
            Duration::from_secs(600),
            std::future::pending::<()>(),
        ));
        let err = out.expect_err("the inner future never completes");
        assert_eq!(err, TimeoutError::Closed);
        assert!(err.is_closed() && !err.is_elapsed() && err.elapsed().is_none());
        let err = std::io::Error::from(err);
        assert!(crate::Error::is_closed(&err), "{err}");
        assert_eq!(err.kind(), std::io::ErrorKind::NotConnected);
    }

    #[test]
    fn timeout_duration_max_returns_the_inner_output() {
        let rt = crate::Runtime::new().expect("a runtime with default settings builds");
        let out = rt.block_on(timeout(Duration::MAX, async { 7 }));
        assert_eq!(out, Ok(7));
    }
}
