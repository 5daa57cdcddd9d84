//! The fair dispatch turn (worker rules W1–W3 and W7) and the routing of inbox completions
//! (worker rules W5 and W6).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use baton_completion::BoundCheck;
use web_time::Instant;

use super::Worker;
use super::waits::{Routed, WaitTables};
use crate::driver::{Park, TurnReport};
use crate::inbox::{InboxReceiver, InboxSender, Received};

/// What one [`Worker::turn`] did.
#[must_use]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerTurn {
    /// External completions settled into their waits.
    pub settled: usize,
    /// Stale or foreign completions counted and dropped.
    pub dropped: usize,
    /// Quarantined waits settled with `BoundExceeded` (worker rule W9).
    pub bounds_exceeded: usize,
    /// CQEs reaped by the driver.
    pub io_completions: usize,
    /// Timers and deadlines that fired.
    pub timers_fired: usize,
    /// Tasks polled (or cancelled).
    pub tasks_polled: usize,
    /// Whether the turn parked in the ring.
    pub parked: bool,
    /// Whether an unpark ended (or pre-empted) the park.
    pub unparked: bool,
    /// Whether the turn was refused because a turn is already running further up this thread's
    /// stack (worker rule W7).
    pub reentered: bool,
}

impl WorkerTurn {
    /// Whether the turn did anything.
    pub fn progressed(&self) -> bool {
        self.settled
            + self.dropped
            + self.bounds_exceeded
            + self.io_completions
            + self.timers_fired
            + self.tasks_polled
            > 0
    }

    pub(crate) fn absorb(&mut self, driver: TurnReport) {
        self.io_completions += driver.completions;
        self.timers_fired += driver.timers_fired;
        self.unparked |= driver.unparked;
    }
}

/// Why [`Worker::run_until`] returned.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunUntil {
    /// The predicate held.
    Satisfied,
    /// The deadline passed first.
    DeadlineReached,
    /// A turn is already running further up this thread's stack (worker rule W7), so nothing
    /// could progress from here.
    Reentered,
}

/// Counters of the inbox routing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RouteCounts {
    pub(crate) settled: u64,
    pub(crate) stale: u64,
    pub(crate) foreign: u64,
    pub(crate) held: u64,
    pub(crate) bounds_exceeded: u64,
}

/// The worker's state reachable from the thread context (boxed, so its address survives the
/// worker's moves).
#[derive(Debug)]
pub(crate) struct WorkerLocal {
    pub(crate) waits: RefCell<WaitTables>,
    pub(crate) inbox: InboxReceiver,
    pub(crate) sender: Arc<InboxSender>,
    pub(crate) turning: Cell<bool>,
    pub(crate) counts: Cell<RouteCounts>,
    /// The emptied waker list of the last inbox settle, kept so a settle does not allocate
    /// one; taken (left empty) while a settle fills it, so a re-entrant settle never shares it.
    pub(crate) spare_wakers: RefCell<Vec<Waker>>,
}

/// How long after a quarantine bound's deadline the worker checks it (a bound is exceeded only
/// strictly after its deadline).
const BOUND_SLACK: Duration = Duration::from_millis(1);

/// Clears the turning flag when the turn ends, also when it unwinds.
struct Turning<'a>(&'a Cell<bool>);

impl Drop for Turning<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl Worker {
    /// One fair dispatch turn (worker rule W1): settle inbox completions, reap I/O and fire
    /// timers without blocking, poll up to `tasks_per_turn` ready tasks, and — if `park`
    /// allows it and nothing is runnable — park in the ring until a completion, a timer, an
    /// unpark from any thread, or the deadline; then settle and poll once more.
    ///
    /// A turn called from inside a task poll, a decoder or a waker does nothing (worker rule W7).
    pub fn turn(&self, park: Park) -> WorkerTurn {
        let _entered = self.enter();
        self.turn_entered(park)
    }

    /// [`turn`](Worker::turn)'s body, for a caller that holds a [`WorkerGuard`] of this worker
    /// on this thread already.
    fn turn_entered(&self, park: Park) -> WorkerTurn {
        let local = &*self.local;
        let mut report = WorkerTurn::default();
        if local.turning.replace(true) {
            report.reentered = true;
            return report;
        }
        let _turning = Turning(&local.turning);
        self.settle_inbox(&mut report, self.config.inbox_per_turn);
        report.absorb(self.driver().turn(Park::Poll));
        let run = self.scheduler.run_ready(self.config.tasks_per_turn);
        report.tasks_polled += run.polled;
        // Park only after a turn that found nothing to do, so a caller whose predicate this
        // turn satisfied gets to check it before any wait.
        if let Park::Wait(deadline) = park
            && !report.progressed()
            && !run.more_ready
            && !self.ready_besides_tasks()
        {
            // Worker rule W3: every wake-up source unparks the driver, whose unpark is a token,
            // so a wake that raced the checks above ends this wait at once. Rule W9: the park
            // also ends just after the next quarantine bound of this thread passes.
            let bound = local
                .waits
                .try_borrow()
                .ok()
                .and_then(|waits| waits.next_bound_here())
                .map(|bound| bound + BOUND_SLACK);
            let until = match (deadline, bound) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            report.parked = true;
            report.absorb(self.driver().turn(Park::Wait(until)));
            self.settle_inbox(&mut report, self.config.inbox_per_turn);
            let run = self.scheduler.run_ready(self.config.tasks_per_turn);
            report.tasks_polled += run.polled;
        }
        report
    }

    /// Runs turns, parking whenever nothing is runnable, until `done()` holds (checked before
    /// every turn) or `deadline` passes.
    ///
    /// The worker stays entered on this thread across the turns (and while `done` runs), so a
    /// turn does not enter and leave its contexts again.
    pub fn run_until(&self, done: &mut dyn FnMut() -> bool, deadline: Option<Instant>) -> RunUntil {
        let _entered = self.enter();
        loop {
            if done() {
                return RunUntil::Satisfied;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return RunUntil::DeadlineReached;
            }
            let turn = self.turn_entered(Park::Wait(deadline));
            if turn.reentered {
                // Rule W7: nothing can progress from here; answer instead of spinning.
                return if done() {
                    RunUntil::Satisfied
                } else {
                    RunUntil::Reentered
                };
            }
        }
    }

    /// Worker rule W10: a turn of the driver and the inbox only, for a `block_on` that runs
    /// inside a task poll (or a decoder) and so cannot run a full turn (W7). It settles
    /// inbox completions, reaps I/O and fires timers, and with `Park::Wait` parks in the ring
    /// until a completion, a timer, an unpark or the deadline; it never polls a task. Tasks it
    /// wakes run on the next full turn.
    pub fn turn_driver_only(&self, park: Park) -> WorkerTurn {
        let _entered = self.enter();
        let mut report = WorkerTurn::default();
        self.settle_inbox(&mut report, self.config.inbox_per_turn);
        let park = match park {
            Park::Wait(_) if report.progressed() => Park::Poll,
            other => other,
        };
        report.parked = matches!(park, Park::Wait(_));
        report.absorb(self.driver().turn(park));
        self.settle_inbox(&mut report, self.config.inbox_per_turn);
        report
    }

    /// Inbox work, held completions or messages from other threads (operations they
    /// registered, forwarded, dropped or cancelled) wait for a turn on this thread.
    pub(crate) fn ready_besides_tasks(&self) -> bool {
        let local = &*self.local;
        local.inbox.has_queued()
            || self.driver().has_messages()
            || local
                .waits
                .try_borrow()
                .is_ok_and(|waits| waits.has_held_here())
    }

    /// Worker rules W5, W6, W9 and W2: routes held completions of this thread, then up to `limit`
    /// queued ones, settles quarantined waits past their bound, and wakes the settled waits'
    /// tasks after the table borrow is released. A panicking waker is handled by the driver's
    /// [`WakerPanics`](crate::WakerPanics) policy after every waker ran.
    pub(crate) fn settle_inbox(&self, report: &mut WorkerTurn, limit: usize) {
        let local = &*self.local;
        let Ok(mut waits) = local.waits.try_borrow_mut() else {
            // Only reachable while user code holds the table further up the stack; the
            // completions stay queued for the next turn.
            return;
        };
        // Most turns find nothing to settle: no completion held or queued, no bound to check.
        // Answering that with three loads skips the waker list and the counts (a turn settles
        // the inbox twice when it parks). A completion queued just after the look unparks the
        // worker (W3), so the next turn takes it.
        if !waits.has_held() && !local.inbox.has_queued() && !waits.has_bounds() {
            return;
        }
        let mut wakers = local.spare_wakers.take();
        {
            let mut counts = local.counts.get();
            let mut route = |waits: &mut WaitTables, completion| match waits.route(completion) {
                Routed::Settled(waker) => {
                    counts.settled += 1;
                    report.settled += 1;
                    wakers.extend(waker);
                }
                Routed::Stale => {
                    counts.stale += 1;
                    crate::trace::completion_refused(true);
                    report.dropped += 1;
                }
                Routed::Foreign => {
                    counts.foreign += 1;
                    crate::trace::completion_refused(false);
                    report.dropped += 1;
                }
                Routed::Held => counts.held += 1,
            };
            for completion in waits.take_held_here() {
                route(&mut waits, completion);
            }
            // Most turns find the inbox empty. Checking that with two loads first skips the
            // receive attempt, whose empty-queue path costs a sequentially consistent fence; a
            // completion that lands just after the check unparks the worker (W3), so the
            // next turn takes it, as it would after a receive attempt that just missed it.
            if local.inbox.has_queued() {
                for _ in 0..limit {
                    match local.inbox.next() {
                        Received::Completion(completion) => route(&mut waits, completion),
                        Received::Empty | Received::Finished => break,
                    }
                }
            }
            // Rule W9: after the completions, so a job that finished in time is not reported
            // as having outlived its bound.
            let check = if waits.has_bounds() {
                waits.check_due_bounds(Instant::now())
            } else {
                BoundCheck::default()
            };
            counts.bounds_exceeded += check.exceeded as u64;
            report.bounds_exceeded += check.exceeded;
            wakers.extend(check.wakers);
            local.counts.set(counts);
            drop(waits);
        }
        // Worker rule W2: the driver's waker-panic policy decides (contained by default).
        let panicked = wake_all(&mut wakers);
        local.spare_wakers.replace(wakers);
        if let Some(payload) = panicked {
            self.driver().waker_panicked(payload);
        }
    }
}

/// Wakes (and removes) every waker, catching panics; returns the first payload.
fn wake_all(wakers: &mut Vec<Waker>) -> Option<Box<dyn Any + Send>> {
    // Most turns settle nothing from the inbox: no drain for an empty list.
    if wakers.is_empty() {
        return None;
    }
    let mut first = None;
    for waker in wakers.drain(..) {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| waker.wake())) {
            first.get_or_insert(payload);
        }
    }
    first
}
