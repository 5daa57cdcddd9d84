//! Lingering (forward rules F8 and F9): the driver's unpark token, the short awake wait a driver
//! makes after a turn that forwarded a result or completed I/O, and the matching wait of the
//! foreign poller for its reply.
//!
//! Why: a handle polled on a foreign thread costs two thread hand-offs per operation (its
//! message wakes the driver, the driver's delivery wakes the poller). When the two threads run
//! on different CPUs each hand-off is a cross-CPU wake-up, which on a virtual machine costs tens
//! of microseconds of CPU and latency, far more than the operation itself. A driver that just
//! delivered a result and stays awake a few microseconds sees the poller's next message without
//! being woken; a poller whose message found the driver awake waits a few microseconds for the
//! reply instead of parking. Both waits yield the CPU at every step, so threads sharing one CPU
//! hand it over instead of spinning against each other.
//!
//! The same holds for a driver's own I/O under load: a server that answered a batch of
//! requests blocks in the ring, and the next requests, moments away, arrive as a cross-CPU
//! wake-up of an idle core. So the linger also watches the ring's shared memory for completions
//! (no syscall) and ends when one is there.
//!
//! The token has three states. *Clear*: no unpark since the driver last took the token; an
//! unpark must write the eventfd, because the driver may be blocked in the ring. *Pending*: an
//! unpark happened and the driver has not taken it yet; later unparks do nothing more.
//! *Lingering*: the driver is awake, watching the token (F8); an unpark makes it *pending* and
//! writes nothing.

use std::time::Duration;

#[cfg(not(loom))]
use web_time::Instant;

use crate::sync::{AtomicU8, Ordering};

const CLEAR: u8 = 0;
const PENDING: u8 = 1;
const LINGERING: u8 = 2;

/// How long a driver lingers after forwarding a result or completing I/O (F8): long enough for
/// a poller or a peer on another CPU to be woken by the delivery and send its next message.
pub(crate) const LINGER: Duration = Duration::from_micros(50);

/// The most a foreign poll waits for its reply (F9); it stops earlier when the driver reaches
/// its next idle point without having replied.
pub(crate) const REPLY_WAIT: Duration = Duration::from_micros(50);

/// What an unpark found in the token.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenWas {
    /// The token was clear: the driver may be blocked, so the caller writes the eventfd.
    Clear,
    /// An unpark was already pending: its eventfd write (if one was needed) ends the wait.
    Pending,
    /// The driver is lingering (F8) and sees the unpark without an eventfd write.
    Lingering,
}

/// How a linger ended.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Linger {
    /// An unpark arrived (or was already pending): the token is pending; do not block.
    Answered,
    /// The ring had completions before any unpark came: the token is clear again (the driver
    /// is no longer lingering, so the next unpark writes the eventfd); do not block.
    Ready,
    /// The budget passed with no unpark: the token is clear again, so the next unpark writes
    /// the eventfd and a blocking wait may follow.
    Expired,
}

/// The driver's unpark token (see the module documentation).
#[derive(Debug)]
pub(crate) struct Token(AtomicU8);

impl Token {
    pub(crate) fn new() -> Token {
        Token(AtomicU8::new(CLEAR))
    }

    /// Records an unpark from any thread.
    pub(crate) fn unpark(&self) -> TokenWas {
        match self.0.swap(PENDING, Ordering::AcqRel) {
            CLEAR => TokenWas::Clear,
            LINGERING => TokenWas::Lingering,
            _ => TokenWas::Pending,
        }
    }

    /// Driver side: takes the token, returning whether an unpark was pending.
    pub(crate) fn take(&self) -> bool {
        self.0.swap(CLEAR, Ordering::AcqRel) == PENDING
    }

    /// Driver side, after [`take`](Token::take) found nothing (F8): stays awake until an
    /// unpark, until `ready()` says the ring has completions, or until the budget passes. Any
    /// end but an unpark returns the token to clear only if it is still lingering, so an unpark
    /// that found it lingering (and wrote no eventfd) is never lost.
    pub(crate) fn linger(&self, budget: Budget, mut ready: impl FnMut() -> bool) -> Linger {
        if self
            .0
            .compare_exchange(CLEAR, LINGERING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Linger::Answered;
        }
        let mut found_ready = false;
        if wait_until(budget, || {
            found_ready = ready();
            found_ready || self.0.load(Ordering::Acquire) != LINGERING
        }) && !found_ready
        {
            return Linger::Answered;
        }
        match self
            .0
            .compare_exchange(LINGERING, CLEAR, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) if found_ready => Linger::Ready,
            Ok(_) => Linger::Expired,
            Err(_) => Linger::Answered,
        }
    }
}

/// A bounded wait: a duration normally; a number of steps under loom, which has no clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    #[cfg(not(loom))]
    limit: Duration,
    #[cfg(loom)]
    steps: usize,
}

impl Budget {
    #[cfg(not(loom))]
    pub(crate) fn of(limit: Duration) -> Budget {
        Budget { limit }
    }

    /// Under loom a budget is a few steps, whatever its duration.
    #[cfg(loom)]
    pub(crate) fn of(_limit: Duration) -> Budget {
        Budget { steps: 2 }
    }

    /// A budget of `steps` yields: loom lets the other threads run at every yield, so a model
    /// reaches the race with the budget's end only through a budget that yields little.
    #[cfg(all(loom, test))]
    pub(crate) fn steps(steps: usize) -> Budget {
        Budget { steps }
    }
}

/// Yields the CPU until `done()` holds (true) or the budget passes (false). Yielding rather
/// than spinning lets a thread that shares this CPU, possibly the very one we wait for, run.
pub(crate) fn wait_until(budget: Budget, mut done: impl FnMut() -> bool) -> bool {
    #[cfg(not(loom))]
    {
        let start = Instant::now();
        loop {
            if done() {
                return true;
            }
            if start.elapsed() >= budget.limit {
                return false;
            }
            std::thread::yield_now();
        }
    }
    #[cfg(loom)]
    {
        for _ in 0..budget.steps {
            if done() {
                return true;
            }
            loom::thread::yield_now();
        }
        done()
    }
}

/// The driver's choice at an idle point (F8).
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdleChoice {
    /// Linger before any blocking wait.
    Linger,
    /// Block, but time the wait: if an unpark or a completion ends it within [`LINGER`],
    /// lingering would have been answered, so the next delivery lingers again.
    BlockTimed,
    /// Block.
    Block,
}

/// When the driver lingers (F8), owned by the driver's thread: after a turn delivered a result
/// (into a forwarding cell, or a completion from the ring), unless the last linger expired
/// unanswered; a timed wait that an unpark or a completion ends within the budget re-arms it.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LingerPolicy {
    /// The driver's delivery count (forwards and completions) at the previous idle point.
    delivered_seen: u64,
    /// The last linger expired, and no wait since was answered within the budget.
    missed: bool,
}

impl LingerPolicy {
    /// Decides at an idle point, given the driver's count of results delivered (forwarded into
    /// cells or completed by the ring).
    pub(crate) fn choose(&mut self, delivered: u64) -> IdleChoice {
        let fresh = delivered != self.delivered_seen;
        self.delivered_seen = delivered;
        match (fresh, self.missed) {
            (true, false) => IdleChoice::Linger,
            (true, true) => IdleChoice::BlockTimed,
            (false, _) => IdleChoice::Block,
        }
    }

    /// Records how a linger, or a timed wait, ended (`answered`: an unpark or a completion came
    /// within budget).
    pub(crate) fn record(&mut self, answered: bool) {
        self.missed = !answered;
    }
}
