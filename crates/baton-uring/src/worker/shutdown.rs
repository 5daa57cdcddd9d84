//! Closing a worker in order (worker rule 8) and what it reports.

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

/// How long dropping a worker without [`Worker::shutdown`] waits for the kernel.
const DROP_DEADLINE: Duration = Duration::from_secs(10);

impl Worker {
    /// Worker rule 8: closes the inbox, settles what it accepted, submits the requests tasks
    /// registered, shuts the scheduler down, discards this thread's and the migratable waits,
    /// then closes the driver and waits for its outstanding completions until `deadline`
    /// (`None`: as long as it takes).
    pub fn shutdown(mut self, deadline: Option<Instant>) -> WorkerShutdownReport {
        self.finish(deadline)
    }

    fn finish(&mut self, deadline: Option<Instant>) -> WorkerShutdownReport {
        let (turn, tasks, waits) = {
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
            (turn, tasks, waits)
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
