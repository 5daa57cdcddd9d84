//! The rest (L7): a worker given back with nothing pending stays in the slot, and what ends
//! that rest: the rest waker, the background thread's second look one grace period later, or a
//! returned worker it takes back. The phase changes here are the slot's, under its one lock.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Answer, Phase, Rouse, Slot, SlotState, Ticket};
use crate::sync::{self, MutexGuard};
use crate::worker::Unpark;

/// How long the background thread waits before it looks at a lent or resting worker again
/// (L7). A worker found resting at two looks in a row with no borrow in between goes back to
/// the background thread. This is a backstop, not a bound: a stream of borrows postpones the
/// second look, so the worker's `pending` must report every event its rest waker announces.
const REST_GRACE: Duration = Duration::from_millis(1);

#[cfg(all(test, not(loom)))]
std::thread_local! {
    /// Tests only: the grace period of the background thread this is read on ([`REST_GRACE`]
    /// unless [`Slot::set_rest_grace_on_this_thread`] changed it).
    static TEST_REST_GRACE: std::cell::Cell<Duration> = const { std::cell::Cell::new(REST_GRACE) };
}

/// The grace period the calling background thread waits.
#[cfg(not(all(test, not(loom))))]
fn rest_grace() -> Duration {
    REST_GRACE
}

/// The grace period the calling background thread waits: [`REST_GRACE`], or what its test set.
#[cfg(all(test, not(loom)))]
fn rest_grace() -> Duration {
    TEST_REST_GRACE.get()
}

/// Whether, and how, the background thread waits on the condvar (it is the only thread that
/// waits while the worker is away from it, so give-backs notify only when this says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BackgroundWait {
    /// Not waiting: running the worker, or woken and about to look at the phase.
    No,
    /// Waiting with a timer (the grace period): it looks at the slot again on its own.
    Timed,
    /// Waiting without a timer (a long loan): a rest must wake it to start the timer.
    Untimed,
}

impl Slot {
    /// Test hook: sets the grace period of the background thread that calls it (from
    /// [`LoanConfig::on_background_start`](crate::LoanConfig::on_background_start)). A grace
    /// period longer than any test lets a test see a rest that only the rest waker, a borrow or
    /// the shutdown ends, however late its thread runs.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn set_rest_grace_on_this_thread(grace: Duration) {
        TEST_REST_GRACE.set(grace);
    }

    /// The rest waker (L7): work became runnable from another thread. A resting worker is
    /// handed to the background thread; a worker away from it otherwise (requested, offered,
    /// lent, returned) is marked so that no give-back rests before the background thread has
    /// taken it back.
    pub(crate) fn rouse(&self) -> Rouse {
        let mut state = sync::lock(&self.state);
        match state.phase {
            Phase::Resting => {
                state.phase = Phase::Returned;
                let waits = state.background_wait != BackgroundWait::No;
                drop(state);
                if waits {
                    self.changed.notify_all();
                }
                Rouse::EndedRest
            }
            Phase::Requested(_) | Phase::Offered(_) | Phase::Loaned(_) | Phase::Returned => {
                // The background thread may hand the worker on (or a borrower may take it)
                // without a turn in between: remember the rouse until it takes the worker.
                state.roused_while_away = true;
                Rouse::MarkedAway
            }
            Phase::Background | Phase::Refused(_) | Phase::Closed => Rouse::Nothing,
        }
    }

    /// Background side, after lending the worker at a dispatch boundary (the second half of
    /// [`Slot::answer`]): wait for it to come back, returned or rested a grace period, and take
    /// it back.
    pub(super) fn reclaim(&self, mut state: MutexGuard<'_, SlotState>) -> Answer {
        // Rule L7: wait for the worker to come back. `seen` is the ticket count at the previous
        // look (unchanged: nobody borrowed the worker since); `rested_at` the ticket count at
        // the previous look if that look found the worker resting.
        let mut seen: Option<Ticket> = None;
        let mut rested_at: Option<Ticket> = None;
        loop {
            let now = Some(state.next_ticket);
            let unchanged = seen == now;
            seen = now;
            let wait = match state.phase {
                Phase::Returned => BackgroundWait::No,
                // Resting at two looks in a row, one grace period apart, with no borrow between.
                Phase::Resting if rested_at == now => BackgroundWait::No,
                Phase::Closed => return Answer::Closed(None),
                Phase::Resting => {
                    rested_at = now;
                    BackgroundWait::Timed
                }
                // A fresh loan gets a timer; one that outlived it waits untimed (its give-back
                // notifies).
                Phase::Offered(_) | Phase::Loaned(_) => {
                    rested_at = None;
                    if unchanged {
                        BackgroundWait::Untimed
                    } else {
                        BackgroundWait::Timed
                    }
                }
                Phase::Background | Phase::Requested(_) | Phase::Refused(_) => {
                    debug_assert!(false, "rule L1: the background thread lent the worker");
                    BackgroundWait::Untimed
                }
            };
            if wait == BackgroundWait::No {
                // Rule L7: returned, or rested a whole grace period untouched: take it back and
                // resume. Its turns see whatever a rouse announced, so the mark is spent.
                state.phase = Phase::Background;
                state.roused_while_away = false;
                let worker = state
                    .parked
                    .take()
                    .expect("rule L1: Returned and Resting keep the worker");
                return Answer::Run(worker);
            }
            state.background_wait = wait;
            state = match wait {
                BackgroundWait::Timed => sync::wait_timeout(&self.changed, state, rest_grace()),
                BackgroundWait::Untimed | BackgroundWait::No => sync::wait(&self.changed, state),
            };
            state.background_wait = BackgroundWait::No;
        }
    }
}

/// The worker's rest waker (L7): handed to the worker once, at start, and triggered by it
/// whenever work becomes runnable from another thread. It holds the slot weakly: the worker
/// holds it, and the slot holds the worker's unpark handle, so a strong reference would make a
/// cycle that keeps both alive.
#[derive(Debug)]
pub(crate) struct RestWaker {
    slot: Weak<Slot>,
}

impl RestWaker {
    pub(crate) fn new(slot: &Arc<Slot>) -> Self {
        Self {
            slot: Arc::downgrade(slot),
        }
    }
}

impl Unpark for RestWaker {
    fn unpark(&self) {
        if let Some(slot) = self.slot.upgrade() {
            let _rouse: Rouse = slot.rouse();
        }
    }
}
