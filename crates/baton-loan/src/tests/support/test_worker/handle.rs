//! [`TestHandle`]: spawns onto a test worker from any thread, observes it (drops, turns, roots,
//! closures on loan), and injects its faults.

use std::future::Future;
use std::sync::Arc;
use std::task::Wake;

use super::{CONTEXT, DropHook, LOCAL_TASKS, LocalFlag, LocalTask, Task, TestWorkerState};
use crate::sync::{self, AtomicBool, Mutex, Ordering};
use crate::tests::support::TestJoin;

/// Spawns onto a [`TestWorker`](super::TestWorker) and observes it.
#[derive(Debug, Clone)]
pub(crate) struct TestHandle {
    pub(super) state: Arc<TestWorkerState>,
}

impl TestHandle {
    /// Spawns a `Send` task from any thread.
    pub(crate) fn spawn<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> TestJoin<T> {
        let (join, task) = self.send_task(future, false);
        task.wake();
        join
    }

    /// A counted `Send` task and its join, `queued` as given (not queued yet either way).
    fn send_task<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
        queued: bool,
    ) -> (TestJoin<T>, Arc<Task>) {
        let (join, done) = TestJoin::pair();
        self.state.live.fetch_add(1, Ordering::AcqRel);
        let task = Arc::new(Task {
            future: Mutex::new(Some(Box::pin(async move { done.set(future.await) }))),
            queued: AtomicBool::new(queued),
            state: Arc::downgrade(&self.state),
        });
        (join, task)
    }

    /// Spawns a `!Send` task bound to the calling thread.
    pub(crate) fn spawn_local<T: 'static>(
        &self,
        future: impl Future<Output = T> + 'static,
    ) -> TestJoin<T> {
        let (join, done) = TestJoin::pair();
        let flag = Arc::new(LocalFlag {
            woken: AtomicBool::new(true),
            state: Arc::downgrade(&self.state),
        });
        LOCAL_TASKS.with(|tasks| {
            tasks.borrow_mut().push(LocalTask {
                worker: self.state.key(),
                flag,
                future: Box::pin(async move { done.set(future.await) }),
            });
        });
        self.state.wake();
        join
    }

    /// Whether this worker's context is the current thread's innermost one.
    pub(crate) fn is_current(&self) -> bool {
        CONTEXT.with(|stack| stack.borrow().last() == Some(&self.state.key()))
    }

    /// How many times the worker was dropped.
    pub(crate) fn drops(&self) -> usize {
        self.state.drops.load(Ordering::Acquire)
    }

    /// How many times the loan asked `pending` and `has_runnable`.
    pub(crate) fn questions(&self) -> (usize, usize) {
        (
            self.state.pending_asked.load(Ordering::Acquire),
            self.state.runnable_asked.load(Ordering::Acquire),
        )
    }

    /// How many dispatch turns ran.
    pub(crate) fn turns(&self) -> usize {
        self.state.turns.load(Ordering::Acquire)
    }

    /// Makes the worker report shutting down and wakes it.
    pub(crate) fn begin_shutdown(&self) {
        self.state.shutting_down.store(true, Ordering::Release);
        self.state.wake();
    }

    /// Queues a task without triggering the rest waker (only the park token): an event the
    /// worker cannot announce, which a resting worker notices only when its rest ends on its
    /// own (rule L7's grace period).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn spawn_unannounced<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> TestJoin<T> {
        let (join, task) = self.send_task(future, true);
        sync::lock(&self.state.queue).push_back(task);
        self.state.unpark();
        join
    }

    /// Makes `pending` report work even with no live task.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn pretend_pending_work(&self) {
        self.state.pretend_pending.store(true, Ordering::Release);
    }

    /// Makes the worker's next `pending` panic with [`ContextFault`]`("pending")`.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn panic_on_next_pending(&self) {
        self.state.panic_on_pending.store(true, Ordering::Release);
    }

    /// Makes the worker's next `enter` panic with [`ContextFault`]`("enter")`.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn panic_on_next_enter(&self) {
        self.state.panic_on_enter.store(true, Ordering::Release);
    }

    /// Makes the worker's next `leave` panic with [`ContextFault`]`("leave")`, after it left.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn panic_on_next_leave(&self) {
        self.state.panic_on_leave.store(true, Ordering::Release);
    }

    /// Gives the worker a callback that runs from its destructor.
    pub(crate) fn on_drop(&self, hook: impl FnOnce() + Send + 'static) {
        *sync::lock(&self.state.on_drop) = Some(DropHook(Box::new(hook)));
    }

    /// Gives the worker a callback that runs when it is closed on loan.
    pub(crate) fn on_close_on_loan(&self, hook: impl FnOnce() + Send + 'static) {
        *sync::lock(&self.state.on_close_on_loan) = Some(DropHook(Box::new(hook)));
    }

    /// How many times the worker was closed on loan.
    pub(crate) fn closes_on_loan(&self) -> usize {
        self.state.closes_on_loan.load(Ordering::Acquire)
    }

    /// How many roots the driver announced as started and as finished on this worker.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn roots(&self) -> (usize, usize) {
        (
            self.state.roots_started.load(Ordering::Acquire),
            self.state.roots_finished.load(Ordering::Acquire),
        )
    }

    /// Makes `holds_local_tasks` report true on every thread (loom refusal models).
    #[cfg_attr(not(loom), allow(dead_code))]
    pub(crate) fn pretend_local_tasks(&self) {
        self.state.pretend_local.store(true, Ordering::Release);
    }
}
