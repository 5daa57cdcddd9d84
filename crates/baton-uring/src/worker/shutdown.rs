//! Closing a worker in order (worker rule W8) and what it reports: [`Worker::close`] runs the
//! steps that need no waiting, [`Worker::shutdown`] runs whatever `close` has not and then
//! drains the driver.

use std::time::Duration;

use web_time::Instant;

use super::Worker;
use super::dispatch::WorkerTurn;
use super::waits::ClosedWaits;
use crate::driver::{DriverShutdownReport, Park};

/// What [`Worker::shutdown`] did.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerShutdownReport {
    /// Completions the inbox had accepted before it closed, settled into their waits.
    pub inbox_settled: usize,
    /// Of those, stale or foreign ones dropped.
    pub inbox_dropped: usize,
    /// What the scheduler did: tasks cancelled, local tasks of other threads leaked, tasks
    /// still being polled (shutdown called from inside a task).
    pub tasks: baton_task::ShutdownReport,
    /// Waits of this thread discarded (jobs not started yet were cancelled before start).
    pub waits_discarded: usize,
    /// Waits of other threads whose tables were leaked rather than dropped here.
    pub waits_leaked: usize,
    /// Completions held for other threads' waits, dropped.
    pub held_dropped: usize,
    /// What the driver did: whether every outstanding completion arrived before the deadline,
    /// and how many requests were leaked on purpose because the kernel might still write them.
    pub driver: DriverShutdownReport,
}

impl WorkerShutdownReport {
    /// Nothing was left behind: the driver drained, no task or wait was leaked and no task was
    /// still running.
    pub fn is_clean(&self) -> bool {
        self.driver.drained
            && self.tasks.leaked == 0
            && self.tasks.still_running == 0
            && self.waits_leaked == 0
    }
}

/// What [`Worker::close`] did.
#[must_use = "a close reports whether this call closed the worker"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerClose {
    /// This call closed the worker.
    Closed,
    /// The worker was closed already, by an earlier `close`.
    AlreadyClosed,
}

/// What the steps of worker rule W8 that need no waiting did, kept from [`Worker::close`] until
/// [`Worker::shutdown`] reports it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Closing {
    turn: WorkerTurn,
    tasks: baton_task::ShutdownReport,
    waits: ClosedWaits,
}

/// How long dropping a worker without [`Worker::shutdown`] waits for the kernel.
const DROP_DEADLINE: Duration = Duration::from_secs(10);

impl Worker {
    /// Worker rule W8, the steps that need no waiting, at once: closes the inbox, settles what it
    /// accepted, submits the requests tasks registered, shuts the scheduler down (spawns
    /// refused, tasks cancelled, local tasks of other threads leaked), discards this thread's
    /// and the migratable waits, and closes the driver: new registrations and pending polls
    /// fail with `Closed` (their wakers are woken before this returns), in-flight reads,
    /// receives and accepts are cancelled, writes and syncs are retained and keep going.
    ///
    /// The worker stays usable afterwards: turns reap the kernel's completions and fire
    /// nothing new, so a future still polled on this thread (a `block_on` root) observes the
    /// closure. [`shutdown`](Self::shutdown) (or dropping the worker) later only drains the
    /// driver and reports what this call did as well. Idempotent: a second call does nothing.
    /// Called from inside a task poll, that task is cancelled when its poll returns, as with
    /// `shutdown`.
    pub fn close(&self) -> WorkerClose {
        if self.closing.get().is_some() {
            return WorkerClose::AlreadyClosed;
        }
        let closing = self.close_steps();
        self.closing.set(Some(closing));
        let _entered = self.enter();
        self.driver().close();
        // Closing the driver defers the wakes of the polls it failed; a turn releases them.
        let _turn = self.driver().turn(Park::Poll);
        WorkerClose::Closed
    }

    /// Worker rule W8: closes the inbox, settles what it accepted, submits the requests tasks
    /// registered, shuts the scheduler down, discards this thread's and the migratable waits,
    /// then closes the driver and waits for its outstanding completions until `deadline`
    /// (`None`: as long as it takes). After [`close`](Self::close) only the driver's drain is
    /// left to do; the report covers both calls.
    pub fn shutdown(mut self, deadline: Option<Instant>) -> WorkerShutdownReport {
        self.finish(deadline)
    }

    /// The steps before the driver's closure (worker rule W8), on this thread.
    fn close_steps(&self) -> Closing {
        let _entered = self.enter();
        self.local.sender.close();
        let mut turn = WorkerTurn::default();
        self.settle_inbox(&mut turn, usize::MAX);
        // Requests that tasks registered reach the kernel before their futures drop, so
        // writes and syncs already issued are retained rather than retired unsubmitted.
        turn.absorb(self.driver().turn(Park::Poll));
        let tasks = self.scheduler.shutdown();
        // The table is borrowed only inside a `with_current_waits` closure of this worker,
        // which cannot move or drop it; should that ever happen, the table is left to drop
        // with the worker rather than panicking here.
        let waits = match self.local.waits.try_borrow_mut() {
            Ok(mut waits) => waits.close(),
            Err(_) => ClosedWaits::default(),
        };
        Closing { turn, tasks, waits }
    }

    fn finish(&mut self, deadline: Option<Instant>) -> WorkerShutdownReport {
        let Closing { turn, tasks, waits } = match self.closing.take() {
            Some(closing) => closing,
            None => self.close_steps(),
        };
        let driver = self
            .driver
            .take()
            .expect("the driver lives until shutdown consumes the worker");
        WorkerShutdownReport {
            inbox_settled: turn.settled,
            inbox_dropped: turn.dropped,
            tasks,
            waits_discarded: waits.discarded,
            waits_leaked: waits.leaked,
            held_dropped: waits.held_dropped,
            driver: driver.shutdown(deadline),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.entered.get() != 0 {
            eprintln!(
                "baton-uring: a Worker was dropped while a leaked WorkerGuard still names it"
            );
            std::process::abort();
        }
        if self.driver.is_some() {
            let _ = self.finish(Some(Instant::now() + DROP_DEADLINE));
        }
    }
}
