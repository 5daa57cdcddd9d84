//! [`Interval`]: ticks at a fixed period on one [`Sleep`] that is reset after each tick, so a
//! loop of ticks keeps its schedule (a loop of `sleep(period)` drifts by each body's run time).

use std::fmt;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::{Instant, Sleep, later};

/// Ticks every `period`, the first tick at once.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use std::time::Duration;
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let mut every = baton::time::interval(Duration::from_millis(2))?;
///     let first = every.tick().await;
///     let second = every.tick().await;
///     assert_eq!(second - first, Duration::from_millis(2));
///     std::io::Result::Ok(())
/// })?;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// A zero `period` is refused with [`io::ErrorKind::InvalidInput`] (as std refuses a zero
/// socket timeout): an interval that is always due would never let its task yield.
///
/// # Panics
///
/// A tick first polled outside any runtime panics, as [`sleep`](super::sleep) does.
pub fn interval(period: Duration) -> io::Result<Interval> {
    interval_at(Instant::now(), period)
}

/// Ticks every `period`, the first tick at `start`.
///
/// # Errors
///
/// As [`interval`]: a zero `period` is `InvalidInput`.
pub fn interval_at(start: Instant, period: Duration) -> io::Result<Interval> {
    if period.is_zero() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "baton::time::interval: the period must be longer than zero",
        ));
    }
    Ok(Interval {
        sleep: Sleep::named(start, "time::interval"),
        period,
        missed_tick_behavior: MissedTickBehavior::default(),
    })
}

/// What an [`Interval`] does when a tick is taken a whole period or more after it was due
/// (the task was busy, or the thread was descheduled).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MissedTickBehavior {
    /// The missed ticks are all delivered at once, then the schedule goes on from `start`: the
    /// number of ticks over a long run matches the time passed.
    #[default]
    Burst,
    /// The schedule restarts from the late tick: the next is one period after it was taken.
    Delay,
    /// The missed ticks are dropped and the schedule keeps its phase: the next tick is the
    /// first one of the original schedule still ahead.
    Skip,
}

impl MissedTickBehavior {
    /// The tick after the one that was due at `due` and is taken at `now`.
    pub(crate) fn next_tick(self, due: Instant, now: Instant, period: Duration) -> Instant {
        let on_schedule = later(due, period);
        if now < on_schedule {
            return on_schedule;
        }
        match self {
            MissedTickBehavior::Burst => on_schedule,
            MissedTickBehavior::Delay => later(now, period),
            MissedTickBehavior::Skip => {
                let late = now.saturating_duration_since(due);
                // `late >= period` here, so the remainder is below a period that fits in a
                // `Duration`; its nanoseconds fit in a u64 because `late` (real time) does.
                let into_period = late.as_nanos() % period.as_nanos();
                let into_period = Duration::from_nanos(u64::try_from(into_period).unwrap_or(0));
                later(now, period.saturating_sub(into_period))
            }
        }
    }
}

/// The ticker of [`interval`] and [`interval_at`]: [`tick`](Interval::tick) completes at each
/// deadline of the schedule and returns that deadline. `Send + Sync + Unpin`, like [`Sleep`].
///
/// After the runtime shut down, a tick completes at once (there is no timer left), as a sleep
/// does; stop a tick loop with the rest of the work, not by waiting for the timer.
pub struct Interval {
    /// Its deadline is the next tick's.
    sleep: Sleep,
    period: Duration,
    missed_tick_behavior: MissedTickBehavior,
}

impl fmt::Debug for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interval")
            .field("next_tick", &self.sleep.deadline())
            .field("period", &self.period)
            .field("missed_tick_behavior", &self.missed_tick_behavior)
            .finish()
    }
}

impl Interval {
    /// Waits for the next tick and returns when it was due.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a tick future dropped before it completed takes no tick, so the next call
    /// waits for the same one (in `select!` loops, for instance).
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick: `Ready(due)` once it is due (the schedule then moves on), or
    /// `Pending` with `cx`'s waker registered for it.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        let due = self.sleep.deadline();
        ready!(Pin::new(&mut self.sleep).poll(cx));
        let next = self
            .missed_tick_behavior
            .next_tick(due, Instant::now(), self.period);
        self.sleep.reset(next);
        Poll::Ready(due)
    }

    /// Moves the next tick to one period from now.
    pub fn reset(&mut self) {
        self.reset_at(later(Instant::now(), self.period));
    }

    /// Makes the next tick due at once.
    pub fn reset_immediately(&mut self) {
        self.reset_at(Instant::now());
    }

    /// Moves the next tick to `deadline`; the ticks after it follow every period from there.
    pub fn reset_at(&mut self, deadline: Instant) {
        self.sleep.reset(deadline);
    }

    /// When the next tick is due.
    pub fn next_tick(&self) -> Instant {
        self.sleep.deadline()
    }

    /// The period between ticks.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What a late tick does to the schedule.
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed_tick_behavior
    }

    /// Sets what a late tick does to the schedule.
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed_tick_behavior = behavior;
    }
}
