//! A small worker for the loan driver's own tests: a run queue of `Send` tasks with wakers,
//! thread-bound `!Send` local tasks, and a park/unpark with a stored token. It reports
//! [`Pending::Nothing`] while no `Send` task is live, and triggers its rest waker on every wake
//! from outside (spawns, task wakes), as the real worker does. Everything goes through the
//! `sync` shim so the same worker runs under loom.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use crate::sync::{self, AtomicBool, AtomicUsize, Condvar, Mutex, Ordering, thread_local};
use crate::worker::{LoanWorker, Pending, RunOutcome, TurnOutcome, Unpark};

type SendFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
type LocalFuture = Pin<Box<dyn Future<Output = ()>>>;

/// How many tasks one turn polls at most.
pub(crate) const BUDGET: usize = 32;

/// State shared by the worker, its handles, its tasks' wakers and its unparker.
#[derive(Debug)]
struct Shared {
    queue: Mutex<VecDeque<Arc<Task>>>,
    token: Mutex<bool>,
    unparked: Condvar,
    shutting_down: AtomicBool,
    /// Pretend the current thread always holds local tasks (loom refusal models).
    pretend_local: AtomicBool,
    drops: AtomicUsize,
    turns: AtomicUsize,
    /// `Send` tasks spawned and not finished.
    live: AtomicUsize,
    /// The loan's rest waker, once installed (rule 7).
    rest_waker: Mutex<Option<Arc<dyn Unpark>>>,
    /// Fault injection: `pending` reports work whatever the tasks say.
    pretend_pending: AtomicBool,
    /// Fault injection: the next `pending` panics (once).
    panic_on_pending: AtomicBool,
    /// Fault injection: the next `enter` / `leave` panics (once each).
    panic_on_enter: AtomicBool,
    panic_on_leave: AtomicBool,
    /// Runs once when the worker is dropped (a worker-owned callback, rule 8).
    on_drop: Mutex<Option<DropHook>>,
    /// Runs when the worker is closed on loan (rule 8).
    on_close_on_loan: Mutex<Option<DropHook>>,
    closes_on_loan: AtomicUsize,
    roots_started: AtomicUsize,
    roots_finished: AtomicUsize,
}

/// A callback the worker owns and runs from its destructor (or when closed on loan).
struct DropHook(Box<dyn FnOnce() + Send>);

impl std::fmt::Debug for DropHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DropHook").finish_non_exhaustive()
    }
}

/// The payload of an injected `enter` / `leave` panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ContextFault(pub(crate) &'static str);

impl Shared {
    /// The park token alone: what the loan driver's own unpark handle does.
    fn unpark(&self) {
        *sync::lock(&self.token) = true;
        self.unparked.notify_one();
    }

    /// A wake from outside (a spawn, a task wake): the park token, then the rest waker.
    fn wake(&self) {
        self.unpark();
        let rest_waker = sync::lock(&self.rest_waker).clone();
        if let Some(rest_waker) = rest_waker {
            rest_waker.unpark();
        }
    }

    fn park(&self, deadline: Option<Instant>) {
        let mut token = sync::lock(&self.token);
        while !*token {
            match deadline {
                None => token = sync::wait(&self.unparked, token),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return;
                    }
                    token = self
                        .unparked
                        .wait_timeout(token, left)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0;
                }
            }
        }
        *token = false;
    }

    fn key(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }
}

/// A `Send` task: its future and whether it is already queued.
struct Task {
    future: Mutex<Option<SendFuture>>,
    queued: AtomicBool,
    shared: Weak<Shared>,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task").finish_non_exhaustive()
    }
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(shared) = self.shared.upgrade() {
            sync::lock(&shared.queue).push_back(Arc::clone(self));
            shared.wake();
        }
    }
}

/// A local task's wake flag.
#[derive(Debug)]
struct LocalFlag {
    woken: AtomicBool,
    shared: Weak<Shared>,
}

impl Wake for LocalFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        if let Some(shared) = self.shared.upgrade() {
            shared.wake();
        }
    }
}

struct LocalTask {
    worker: usize,
    flag: Arc<LocalFlag>,
    future: LocalFuture,
}

thread_local! {
    // loom's `thread_local!` has no `const { }` form; the shim must build both ways.
    /// Local tasks live on the thread that spawned them, so the worker stays `Send`.
    #[allow(clippy::missing_const_for_thread_local)]
    static LOCAL_TASKS: RefCell<Vec<LocalTask>> = RefCell::new(Vec::new());
    /// The stack of entered workers (their keys), innermost last.
    #[allow(clippy::missing_const_for_thread_local)]
    static CONTEXT: RefCell<Vec<usize>> = RefCell::new(Vec::new());
}

/// The worker handed to the loan driver.
#[derive(Debug)]
pub(crate) struct TestWorker {
    shared: Arc<Shared>,
}

/// Spawns onto a [`TestWorker`] and observes it.
#[derive(Debug, Clone)]
pub(crate) struct TestHandle {
    shared: Arc<Shared>,
}

/// The worker's unpark handle.
#[derive(Debug)]
struct TestUnpark {
    shared: Arc<Shared>,
}

impl Unpark for TestUnpark {
    fn unpark(&self) {
        self.shared.unpark();
    }
}

/// A fresh worker, its unpark handle and a handle for spawning.
pub(crate) fn test_worker() -> (Box<dyn LoanWorker>, Arc<dyn Unpark>, TestHandle) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(VecDeque::new()),
        token: Mutex::new(false),
        unparked: Condvar::new(),
        shutting_down: AtomicBool::new(false),
        pretend_local: AtomicBool::new(false),
        drops: AtomicUsize::new(0),
        turns: AtomicUsize::new(0),
        live: AtomicUsize::new(0),
        rest_waker: Mutex::new(None),
        pretend_pending: AtomicBool::new(false),
        panic_on_pending: AtomicBool::new(false),
        panic_on_enter: AtomicBool::new(false),
        panic_on_leave: AtomicBool::new(false),
        on_drop: Mutex::new(None),
        on_close_on_loan: Mutex::new(None),
        closes_on_loan: AtomicUsize::new(0),
        roots_started: AtomicUsize::new(0),
        roots_finished: AtomicUsize::new(0),
    });
    (
        Box::new(TestWorker {
            shared: Arc::clone(&shared),
        }),
        Arc::new(TestUnpark {
            shared: Arc::clone(&shared),
        }),
        TestHandle { shared },
    )
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
        self.shared.live.fetch_add(1, Ordering::AcqRel);
        let task = Arc::new(Task {
            future: Mutex::new(Some(Box::pin(async move { done.set(future.await) }))),
            queued: AtomicBool::new(queued),
            shared: Arc::downgrade(&self.shared),
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
            shared: Arc::downgrade(&self.shared),
        });
        LOCAL_TASKS.with(|tasks| {
            tasks.borrow_mut().push(LocalTask {
                worker: self.shared.key(),
                flag,
                future: Box::pin(async move { done.set(future.await) }),
            });
        });
        self.shared.wake();
        join
    }

    /// Whether this worker's context is the current thread's innermost one.
    pub(crate) fn is_current(&self) -> bool {
        CONTEXT.with(|stack| stack.borrow().last() == Some(&self.shared.key()))
    }

    /// How many times the worker was dropped.
    pub(crate) fn drops(&self) -> usize {
        self.shared.drops.load(Ordering::Acquire)
    }

    /// How many dispatch turns ran.
    pub(crate) fn turns(&self) -> usize {
        self.shared.turns.load(Ordering::Acquire)
    }

    /// Makes the worker report shutting down and wakes it.
    pub(crate) fn begin_shutdown(&self) {
        self.shared.shutting_down.store(true, Ordering::Release);
        self.shared.wake();
    }

    /// Queues a task without triggering the rest waker (only the park token): an event the
    /// worker cannot announce, which a resting worker notices only when its rest ends on its
    /// own (rule 7's grace period).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn spawn_unannounced<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> TestJoin<T> {
        let (join, task) = self.send_task(future, true);
        sync::lock(&self.shared.queue).push_back(task);
        self.shared.unpark();
        join
    }

    /// Makes `pending` report work even with no live task.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn pretend_pending_work(&self) {
        self.shared.pretend_pending.store(true, Ordering::Release);
    }

    /// Makes the worker's next `pending` panic with [`ContextFault`]`("pending")`.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn panic_on_next_pending(&self) {
        self.shared.panic_on_pending.store(true, Ordering::Release);
    }

    /// Makes the worker's next `enter` panic with [`ContextFault`]`("enter")`.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn panic_on_next_enter(&self) {
        self.shared.panic_on_enter.store(true, Ordering::Release);
    }

    /// Makes the worker's next `leave` panic with [`ContextFault`]`("leave")`, after it left.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn panic_on_next_leave(&self) {
        self.shared.panic_on_leave.store(true, Ordering::Release);
    }

    /// Gives the worker a callback that runs from its destructor.
    pub(crate) fn on_drop(&self, hook: impl FnOnce() + Send + 'static) {
        *sync::lock(&self.shared.on_drop) = Some(DropHook(Box::new(hook)));
    }

    /// Gives the worker a callback that runs when it is closed on loan.
    pub(crate) fn on_close_on_loan(&self, hook: impl FnOnce() + Send + 'static) {
        *sync::lock(&self.shared.on_close_on_loan) = Some(DropHook(Box::new(hook)));
    }

    /// How many times the worker was closed on loan.
    pub(crate) fn closes_on_loan(&self) -> usize {
        self.shared.closes_on_loan.load(Ordering::Acquire)
    }

    /// How many roots the driver announced as started and as finished on this worker.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn roots(&self) -> (usize, usize) {
        (
            self.shared.roots_started.load(Ordering::Acquire),
            self.shared.roots_finished.load(Ordering::Acquire),
        )
    }

    /// Makes `holds_local_tasks` report true on every thread (loom refusal models).
    #[cfg_attr(not(loom), allow(dead_code))]
    pub(crate) fn pretend_local_tasks(&self) {
        self.shared.pretend_local.store(true, Ordering::Release);
    }
}

impl TestWorker {
    fn poll_local(&self) -> bool {
        let key = self.shared.key();
        let woken: Vec<LocalTask> = LOCAL_TASKS.with(|tasks| {
            let mut tasks = tasks.borrow_mut();
            let (ready, rest): (Vec<_>, Vec<_>) = tasks
                .drain(..)
                .partition(|task| task.worker == key && task.flag.woken.load(Ordering::Acquire));
            *tasks = rest;
            ready
        });
        let progressed = !woken.is_empty();
        for mut task in woken {
            task.flag.woken.store(false, Ordering::Release);
            let waker = Waker::from(Arc::clone(&task.flag));
            if task
                .future
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
            {
                LOCAL_TASKS.with(|tasks| tasks.borrow_mut().push(task));
            }
        }
        progressed
    }

    fn local_woken(&self) -> bool {
        let key = self.shared.key();
        LOCAL_TASKS.with(|tasks| {
            tasks
                .borrow()
                .iter()
                .any(|task| task.worker == key && task.flag.woken.load(Ordering::Acquire))
        })
    }
}

impl LoanWorker for TestWorker {
    fn turn(&mut self) -> TurnOutcome {
        self.shared.turns.fetch_add(1, Ordering::AcqRel);
        let mut progressed = self.poll_local();
        for _ in 0..BUDGET {
            let Some(task) = sync::lock(&self.shared.queue).pop_front() else {
                break;
            };
            progressed = true;
            task.queued.store(false, Ordering::Release);
            let waker = Waker::from(Arc::clone(&task));
            let future = sync::lock(&task.future).take();
            if let Some(mut future) = future {
                if future
                    .as_mut()
                    .poll(&mut Context::from_waker(&waker))
                    .is_pending()
                {
                    *sync::lock(&task.future) = Some(future);
                } else {
                    self.shared.live.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
        if progressed {
            TurnOutcome::Progressed
        } else {
            TurnOutcome::Idle
        }
    }

    fn run_until(
        &mut self,
        until: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> RunOutcome {
        loop {
            if until() {
                return RunOutcome::Satisfied;
            }
            if self.is_shutting_down() {
                return RunOutcome::ShuttingDown;
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return RunOutcome::DeadlineReached;
            }
            if self.has_runnable() {
                let _turn = self.turn();
            } else {
                self.shared.park(deadline);
            }
        }
    }

    fn has_runnable(&self) -> bool {
        !sync::lock(&self.shared.queue).is_empty() || self.local_woken()
    }

    fn holds_local_tasks(&self) -> bool {
        let key = self.shared.key();
        self.shared.pretend_local.load(Ordering::Acquire)
            || LOCAL_TASKS.with(|tasks| tasks.borrow().iter().any(|task| task.worker == key))
    }

    fn enter(&mut self) {
        if self.shared.panic_on_enter.swap(false, Ordering::AcqRel) {
            std::panic::panic_any(ContextFault("enter"));
        }
        CONTEXT.with(|stack| stack.borrow_mut().push(self.shared.key()));
    }

    fn leave(&mut self) {
        let left = CONTEXT.with(|stack| stack.borrow_mut().pop());
        assert_eq!(left, Some(self.shared.key()), "enter/leave pairs nest");
        if self.shared.panic_on_leave.swap(false, Ordering::AcqRel) {
            std::panic::panic_any(ContextFault("leave"));
        }
    }

    fn root_started(&mut self) {
        self.shared.roots_started.fetch_add(1, Ordering::AcqRel);
    }

    fn root_finished(&mut self) {
        self.shared.roots_finished.fetch_add(1, Ordering::AcqRel);
    }

    fn is_shutting_down(&self) -> bool {
        self.shared.shutting_down.load(Ordering::Acquire)
    }

    fn close_on_loan(&mut self) {
        self.shared.closes_on_loan.fetch_add(1, Ordering::AcqRel);
        let hook = sync::lock(&self.shared.on_close_on_loan).take();
        if let Some(DropHook(hook)) = hook {
            hook();
        }
    }

    fn pending(&self) -> Pending {
        if self.shared.panic_on_pending.swap(false, Ordering::AcqRel) {
            std::panic::panic_any(ContextFault("pending"));
        }
        let work = self.shared.live.load(Ordering::Acquire) > 0
            || !sync::lock(&self.shared.queue).is_empty()
            || self.shared.pretend_pending.load(Ordering::Acquire);
        if work {
            Pending::Work
        } else {
            Pending::Nothing
        }
    }

    fn install_rest_waker(&mut self, rest_waker: Arc<dyn Unpark>) {
        *sync::lock(&self.shared.rest_waker) = Some(rest_waker);
    }
}

impl Drop for TestWorker {
    fn drop(&mut self) {
        self.shared.drops.fetch_add(1, Ordering::AcqRel);
        let queued = std::mem::take(&mut *sync::lock(&self.shared.queue));
        drop(queued);
        let hook = sync::lock(&self.shared.on_drop).take();
        if let Some(DropHook(hook)) = hook {
            hook();
        }
    }
}

/// The output slot of a spawned task.
#[derive(Debug)]
struct JoinState<T> {
    output: Mutex<(Option<T>, Option<Waker>)>,
}

/// Awaits a spawned task's output.
#[derive(Debug)]
pub(crate) struct TestJoin<T> {
    state: Arc<JoinState<T>>,
}

/// Completes a [`TestJoin`].
pub(crate) struct Done<T> {
    state: Arc<JoinState<T>>,
}

impl<T> TestJoin<T> {
    pub(crate) fn pair() -> (Self, Done<T>) {
        let state = Arc::new(JoinState {
            output: Mutex::new((None, None)),
        });
        (
            Self {
                state: Arc::clone(&state),
            },
            Done { state },
        )
    }

    /// The output, if the task finished (without waiting).
    pub(crate) fn try_take(&self) -> Option<T> {
        sync::lock(&self.state.output).0.take()
    }
}

impl<T> Done<T> {
    pub(crate) fn set(self, value: T) {
        let waker = {
            let mut output = sync::lock(&self.state.output);
            output.0 = Some(value);
            output.1.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Future for TestJoin<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut output = sync::lock(&self.state.output);
        match output.0.take() {
            Some(value) => Poll::Ready(value),
            None => {
                output.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// A future that wakes itself and yields `times` times before completing.
#[derive(Debug)]
pub(crate) struct YieldNow {
    pub(crate) times: usize,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.times == 0 {
            return Poll::Ready(());
        }
        self.times -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
