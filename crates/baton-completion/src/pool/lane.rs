//! One lane's state under the pool lock, and the decisions made from it alone: whether a
//! queued job needs a wake (rule P7), whether it needs a new thread and how to cover a lost one
//! (P4).

use super::outcomes::Recovery;
use crate::dispatch::Dispatch;
use std::collections::VecDeque;
use std::time::Duration;

/// How often the lane's sentinel looks at the queue while other threads run jobs (rule P7):
/// the longest a job queued behind running jobs, without a wake of its own, waits for a
/// thread. The default of [`LaneLimits::sentinel_tick`].
pub(super) const SENTINEL_TICK: Duration = Duration::from_millis(1);

/// How long jobs must run, typically, before waking a sleeping thread to run one beside the
/// ones already awake pays (rule P7): a shorter job is over before the woken thread would
/// start it, so its wake buys nothing and costs the waker a futex call and the woken thread a
/// context switch.
const WAKE_PAYS_AFTER: Duration = Duration::from_micros(50);

/// Which lane a job runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LaneId {
    Interruptible = 0,
    Quarantine = 1,
}

/// How many threads a lane may run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaneLimits {
    pub(crate) capacity: usize,
    pub(crate) min_threads: usize,
    pub(crate) max_threads: usize,
    pub(crate) keep_alive: Duration,
    /// How many threads are enough for short jobs (P7), at least 1.
    pub(crate) short_job_parallelism: usize,
    /// How often the sentinel looks at the queue (P7): [`SENTINEL_TICK`], except in tests that
    /// count wakes over a window no tick may fall into.
    pub(crate) sentinel_tick: Duration,
}

/// One lane. Invariants (under the pool lock): `queue.len() + spawning <= queued <= capacity`
/// (the difference is accepted reservations not yet enqueued); `spawning` reservations wait
/// for the thread their submitter is starting and are not accepted yet, so the snapshot's
/// `queued` leaves them out; `running <= threads <= max_threads`, where `threads` counts
/// threads being spawned too; `threads == 0` implies no accepted job waits in this lane
/// (P4), which [`Lanes::enqueue`](super::lanes::Lanes::enqueue) and
/// [`Lanes::spawn_failed`](super::lanes::Lanes::spawn_failed) uphold.
///
/// Waking (rule P7): `idle` threads wait on the lane's condvar, at most one thread is
/// `spinning` (between jobs, watching the lane's queue length without the lock), at most one
/// idle thread is the `sentinel` (its wait times out every `sentinel_tick` while jobs run),
/// and `notified <= idle` counts `notify_one` calls no woken thread has accounted for yet. A
/// job is queued only while the lock is held, and every thread that stops spinning, wakes or
/// finishes a job re-checks the queue under the lock, so a job left without a notification
/// always has a spinning thread, a running one or a notified one that will find it; the
/// sentinel only bounds how long a job waits behind long-running ones.
///
/// `typical_run` is a moving average of how long this lane's jobs ran. While it is under
/// [`WAKE_PAYS_AFTER`] and `short_job_parallelism` threads are running or notified, a queued
/// job wakes no further thread to run it; instead, if no sentinel exists, one sleeping thread
/// is woken to stand by as the sentinel (`sentinel_wanted` until a woken thread takes the
/// role). A standing-by thread skips the queue until its first tick only while a job runs, so
/// the running thread still comes back for the queue. A sentinel tick that finds jobs queued
/// and none `finished` since the tick began raises `typical_run` to the tick: the running jobs
/// last, and the jobs behind them are spread over more threads from then on.
#[derive(Debug)]
pub(super) struct Lane {
    pub(super) limits: LaneLimits,
    pub(super) queue: VecDeque<Dispatch>,
    pub(super) queued: u64,
    pub(super) spawning: u64,
    pub(super) running: u64,
    pub(super) threads: usize,
    pub(super) idle: usize,
    pub(super) spinning: usize,
    pub(super) notified: usize,
    pub(super) sentinel: bool,
    pub(super) sentinel_wanted: bool,
    pub(super) typical_run: Duration,
    pub(super) finished: u64,
    pub(super) wakes: u64,
}

impl Lane {
    pub(super) fn new(limits: LaneLimits) -> Self {
        Self {
            limits,
            queue: VecDeque::new(),
            queued: 0,
            spawning: 0,
            running: 0,
            threads: 0,
            idle: 0,
            spinning: 0,
            notified: 0,
            sentinel: false,
            sentinel_wanted: false,
            // Jobs count as short until one is measured or a tick sees them last: a first
            // burst of long jobs is spread from the sentinel's first tick.
            typical_run: Duration::ZERO,
            finished: 0,
            wakes: 0,
        }
    }

    /// Rule P7: whether a newly visible job needs a `notify_one` — no thread is spinning and
    /// some idle thread is not notified yet — counting the notification if so.
    pub(super) fn take_wake(&mut self) -> bool {
        let short = self.typical_run < WAKE_PAYS_AFTER;
        if self.spinning > 0 || (short && self.sentinel && self.running > 0) {
            // A spinner sees the job within its watch, a sentinel within a tick; and with a
            // job running, its thread re-checks the queue when the job ends. (A job that
            // will likely run long is worth a wake rather than a tick's wait.)
            return false;
        }
        if self.idle <= self.notified {
            return false;
        }
        let awake = self.running as usize + self.notified;
        if short && awake >= self.limits.short_job_parallelism {
            // Enough threads are awake for short jobs, and each will look at the queue
            // (`awake` is at least 1). Only make sure a sentinel will look too, in case the
            // running jobs are the ones that last.
            if self.sentinel_wanted {
                return false;
            }
            self.sentinel_wanted = true;
        }
        self.notified += 1;
        self.wakes += 1;
        true
    }

    /// Folds how long a job ran into `typical_run` (an average weighting the last job 1/8).
    pub(super) fn note_run(&mut self, ran_for: Duration) {
        self.typical_run = self.typical_run.saturating_mul(7) / 8 + ran_for / 8;
    }

    /// Whether an accepted job would wait without a thread that could start it now, while the
    /// lane may still start one (P4).
    pub(super) fn lacks_thread(&self) -> bool {
        let free = (self.threads as u64).saturating_sub(self.running);
        self.queued > free && self.threads < self.limits.max_threads
    }

    /// Rule P4 after a lost or failed thread: respawn when queued work lacks a thread (if
    /// `may_respawn`), else hand back the queue of a lane without any thread.
    pub(super) fn recover(&mut self, closed: bool, may_respawn: bool) -> Recovery {
        if closed {
            // The close takes the queue out and cancels it; nothing new is accepted.
            return Recovery::Covered;
        }
        if may_respawn && self.lacks_thread() {
            self.threads += 1;
            return Recovery::Respawn;
        }
        if self.threads == 0 {
            return Recovery::Stranded(self.queue.drain(..).collect());
        }
        Recovery::Covered
    }
}
