//! The glue between the loan driver (`baton-loan`) and the io_uring worker (`baton-uring`):
//! [`WorkerAdapter`] implements [`LoanWorker`] for a [`Worker`], and [`WakeWorker`] implements
//! the loan driver's [`Unpark`] with the worker's unpark token.
//!
//! # Rules
//!
//! A1. `enter` installs the worker's context (driver, scheduler, wait table) *and* the facade's
//!    [`Handle`] on the calling thread; `leave` removes the most recent pair. The loan driver
//!    pairs them like a stack on one thread (its `LoanWorker` contract), so the guards held
//!    here never cross threads.
//!
//! A2. `turn` and `run_until` install the same context for their duration, because the
//!    background thread runs the worker without calling `enter`.
//!
//! A3. The worker is shut down, not merely dropped, when the loan driver drops the adapter: it
//!    waits for the kernel until the deadline the runtime published, and the report is stored
//!    where `Runtime::shutdown_timeout` reads it.
//!
//! A4. Both `enter` and the turn's installation record the worker in the facade's thread
//!    context (context rule X1), so code running under them on this thread — a `block_on`
//!    inside a task poll, `Runtime::metrics` — can reach the worker without the loan driver.
//!
//! A5. `root_started` / `root_finished` count the roots driven on the worker (the root is a real
//!    task for accounting); the count is `RuntimeMetrics::roots_active`, and a
//!    runtime with a live root is not quiescent.
//!
//! A6. The loan driver's rest waker is the worker's wake listener (worker rule W11): remote
//!    spawns and wakes, [`WorkerHandle::unpark`] and operation messages from foreign threads
//!    end a rest in the slot, and `is_quiescent` counts each of them until it is applied. So
//!    `pending` reports nothing only for a quiescent worker whose listener is this rest
//!    waker, and not while the runtime shuts down. [`WakeWorker`], the loan driver's own unpark (requests,
//!    root wakes, closure), unparks the driver alone: the loan driver handles its own events.
//!
//! A7. `close_on_loan` (the runtime shut down while a `block_on` has the worker on loan) closes
//!    the worker where it is, without waiting ([`Worker::close`]: inbox closed, tasks
//!    cancelled, waits discarded, driver closed — pending polls fail with `Closed`, in-flight
//!    reads are cancelled, writes and syncs keep going), and records it for the runtime's
//!    shutdown report. The borrower's root then observes the closure; when its `block_on`
//!    returns, the loan driver drops the adapter there and rule A3 drains what is left.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_loan::{LoanWorker, Pending, RunOutcome, TurnOutcome, Unpark};
use baton_uring::{Park, RunUntil, Worker, WorkerClose, WorkerGuard, WorkerHandle};

use crate::context;
use crate::handle::Handle;

/// How long the worker's shutdown waits for the kernel when the runtime is dropped without
/// [`Runtime::shutdown_timeout`](crate::Runtime::shutdown_timeout).
pub(crate) const DROP_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// A [`Worker`] as the loan driver sees it.
///
/// Invariants: `worker` is boxed and neither moved nor dropped while `guards` is non-empty
/// (each guard borrows it, with its lifetime erased to `'static`); `guards` is non-empty only
/// between an `enter` and its `leave`, which happen on one thread (A1).
pub(crate) struct WorkerAdapter {
    /// Declared before `worker`, so the guards would drop first even on an unexpected path.
    guards: Vec<WorkerGuard<'static>>,
    worker: Option<Box<Worker>>,
    handle: Handle,
    /// Whether the loan driver's rest waker is the worker's wake listener (A6).
    rest_waker_installed: bool,
}

// SAFETY: the `!Send` parts are the guards, which exist only between `enter` and `leave` on one
// thread (type invariant, rule A1); the loan driver never moves the adapter to another thread
// in between (its frames keep an entered worker in the thread's own stack). Outside that window
// the adapter holds a `Worker` (which is `Send`) and a `Handle` (`Send + Sync`).
unsafe impl Send for WorkerAdapter {}

impl fmt::Debug for WorkerAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerAdapter")
            .field("entered", &self.guards.len())
            .field("worker", &self.worker)
            .finish()
    }
}

/// Rule A2: keeps the facade handle installed for a turn, also when a task's panic unwinds.
struct Installed;

impl Installed {
    /// Rule A4: records `worker` too; the adapter holds it for the guard's whole life.
    fn new(handle: &Handle, worker: &Worker) -> Installed {
        // SAFETY: context rules X1 and X3 — `worker` and `handle` are the adapter's own (boxed
        // with it), borrowed for the whole turn that this guard spans; the guard is dropped
        // (popping the entry) before the turn returns or unwinds, on this thread.
        unsafe { context::enter_with_worker(handle, worker) };
        Installed
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        context::leave();
    }
}

impl WorkerAdapter {
    pub(crate) fn new(worker: Worker, handle: Handle) -> WorkerAdapter {
        WorkerAdapter {
            guards: Vec::new(),
            worker: Some(Box::new(worker)),
            handle,
            rest_waker_installed: false,
        }
    }

    fn worker(&self) -> &Worker {
        self.worker
            .as_deref()
            .expect("the worker lives until the adapter is dropped")
    }
}

impl LoanWorker for WorkerAdapter {
    fn turn(&mut self) -> TurnOutcome {
        let worker = self.worker();
        let _installed = Installed::new(&self.handle, worker);
        let turn = worker.turn(Park::Poll);
        self.handle.home().metrics_cell().publish_if_due(worker);
        TurnOutcome::progressed_if(turn.progressed())
    }

    fn run_until(
        &mut self,
        until: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> RunOutcome {
        let home = self.handle.home();
        let worker = self.worker();
        let _installed = Installed::new(&self.handle, worker);
        let mut until_published = || {
            home.metrics_cell().publish_if_due(worker);
            until()
        };
        // Shutdown reaches a running worker through the loan driver (its slot closes and the
        // background thread's `until` fires), so this never reports `ShuttingDown` itself.
        match worker.run_until(&mut until_published, deadline) {
            RunUntil::Satisfied => RunOutcome::Satisfied,
            // A turn is already running further up this thread's stack: nothing can progress
            // from here, which the loan driver treats like a deadline (it re-checks its root).
            RunUntil::DeadlineReached | RunUntil::Reentered => RunOutcome::DeadlineReached,
        }
    }

    fn has_runnable(&self) -> bool {
        self.worker().has_ready_work()
    }

    fn holds_local_tasks(&self) -> bool {
        self.worker().has_local_tasks_on_current_thread()
    }

    fn enter(&mut self) {
        let guard = self.worker().enter();
        // SAFETY: the guard borrows the boxed worker, which stays at its address and is not
        // dropped while any guard is held (type invariant: `leave` pops every guard before the
        // adapter can be dropped, and `Drop` pops leftovers before the worker). Erasing the
        // lifetime only lets the guard live in this struct next to the box it borrows.
        let guard = unsafe { std::mem::transmute::<WorkerGuard<'_>, WorkerGuard<'static>>(guard) };
        self.guards.push(guard);
        // SAFETY: context rules X1 and X3 — the boxed worker, and this adapter's handle (the
        // adapter lives in the loan driver's box and never moves), stay in place and alive
        // until the matching `leave` pops this entry (type invariant: guards and entries pair
        // up, and `Drop` pops leftovers before the worker or the handle goes).
        unsafe { context::enter_with_worker(&self.handle, self.worker()) };
    }

    fn leave(&mut self) {
        context::leave();
        self.handle
            .home()
            .metrics_cell()
            .publish_if_due(self.worker());
        let guard = self.guards.pop();
        debug_assert!(guard.is_some(), "A1: leave pairs with an earlier enter");
        drop(guard);
    }

    fn is_shutting_down(&self) -> bool {
        self.handle.shared.is_shutting_down()
    }

    fn root_started(&mut self) {
        // Rule A5: the loan driver calls this on the thread holding the worker.
        self.handle.home().root_started();
    }

    fn root_finished(&mut self) {
        // Rule A5.
        self.handle.home().root_finished();
    }

    fn close_on_loan(&mut self) {
        // Rule A7: the loan driver calls this once, at the borrower's dispatch boundary.
        let _closed: WorkerClose = self.worker().close();
        self.handle.home().note_closed_on_loan();
    }

    fn pending(&self) -> Pending {
        // Rule A6: only a quiescent worker whose wakes reach the rest waker may rest.
        if self.rest_waker_installed && !self.is_shutting_down() && self.worker().is_quiescent() {
            Pending::Nothing
        } else {
            Pending::Work
        }
    }

    fn install_rest_waker(&mut self, rest_waker: Arc<dyn Unpark>) {
        // Rule A6: a listener installed before (never, by the builder) keeps `pending` at work.
        let listener = Arc::new(EndRest(rest_waker));
        self.rest_waker_installed = self.worker().set_wake_listener(listener).is_ok();
    }
}

/// Rule A6: the worker's wake listener, ending the loan driver's rest.
struct EndRest(Arc<dyn Unpark>);

impl baton_task::Unpark for EndRest {
    fn unpark(&self) {
        self.0.unpark();
    }
}

impl Drop for WorkerAdapter {
    fn drop(&mut self) {
        // Type invariant: no guard, and no context entry naming the worker (A4), may
        // outlive the worker it borrows.
        while let Some(guard) = self.guards.pop() {
            context::leave();
            drop(guard);
        }
        let Some(worker) = self.worker.take() else {
            return;
        };
        // Rule A3: shut down with the runtime's deadline, and publish the report.
        let home = self.handle.home();
        home.metrics_cell().publish(&worker);
        let deadline = self
            .handle
            .shared
            .shutdown_deadline()
            .unwrap_or_else(|| Instant::now() + DROP_SHUTDOWN_TIMEOUT);
        let report = worker.shutdown(Some(deadline));
        home.publish_report(report);
    }
}

/// The loan driver's [`Unpark`]: the worker's unpark token, usable from any thread. It skips
/// the wake listener (A6): a root wake during a loan must not count as outside work.
#[derive(Debug)]
pub(crate) struct WakeWorker(pub(crate) WorkerHandle);

impl Unpark for WakeWorker {
    fn unpark(&self) {
        self.0.driver().unparker().unpark();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    /// Rule A6: back-to-back roots leave the idle worker resting in the loan slot; a spawn from
    /// another thread still reaches it (through the wake listener) and runs without a
    /// `block_on`.
    #[test]
    fn spawn_from_another_thread_runs_after_back_to_back_block_ons() {
        let rt = crate::Runtime::new().expect("a runtime with default settings builds");
        for i in 0..100_u32 {
            assert_eq!(rt.block_on(async move { i }), i);
        }
        let handle = rt.handle();
        let (sent, received) = mpsc::channel();
        std::thread::spawn(move || drop(handle.spawn(async move { sent.send(7) })))
            .join()
            .expect("the spawning thread");
        assert_eq!(received.recv_timeout(Duration::from_secs(30)), Ok(7));
    }

    /// Rule A6: a live task keeps the worker with the background thread after the root: it runs
    /// to completion while nobody calls `block_on`.
    #[test]
    fn task_left_running_by_a_root_finishes_on_the_background_thread() {
        let rt = crate::Runtime::new().expect("a runtime with default settings builds");
        let (sent, received) = mpsc::channel();
        rt.block_on(async move {
            drop(crate::spawn(async move {
                crate::time::sleep(Duration::from_millis(5)).await;
                sent.send(8)
            }));
        });
        assert_eq!(received.recv_timeout(Duration::from_secs(30)), Ok(8));
    }

    /// Rule A6: the metrics asked from outside after a root are fresh (the unpark that asks for
    /// them ends the worker's rest, so the background thread publishes).
    #[test]
    fn metrics_asked_from_outside_after_a_root_are_fresh() {
        let rt = crate::Runtime::new().expect("a runtime with default settings builds");
        rt.block_on(async {});
        let metrics = rt.metrics();
        assert!(metrics.worker_counters_fresh, "{metrics:?}");
    }
}
