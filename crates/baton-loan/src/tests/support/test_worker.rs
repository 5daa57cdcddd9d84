//! A small worker for the loan driver's own tests: a run queue of `Send` tasks with wakers,
//! thread-bound `!Send` local tasks, and a park/unpark with a stored token. It reports
//! [`Pending::Nothing`] while no `Send` task is live, and triggers its rest waker on every wake
//! from outside (spawns, task wakes), as the real worker does. Everything goes through the
//! `sync` shim so the same worker runs under loom. The [`TestHandle`] that spawns onto it and
//! injects its faults lives in the `handle` submodule.

mod handle;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Wake, Waker};
use std::time::Instant;

use crate::sync::{self, AtomicBool, AtomicUsize, Condvar, Mutex, Ordering, thread_local};
use crate::worker::{LoanWorker, Pending, RunOutcome, TurnOutcome, Unpark};

pub(crate) use handle::TestHandle;

type SendFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
type LocalFuture = Pin<Box<dyn Future<Output = ()>>>;

/// How many tasks one turn polls at most.
pub(crate) const BUDGET: usize = 32;

/// State shared by the worker, its handles, its tasks' wakers and its unparker.
#[derive(Debug)]
struct TestWorkerState {
    queue: Mutex<VecDeque<Arc<Task>>>,
    token: Mutex<bool>,
    unparked: Condvar,
    shutting_down: AtomicBool,
    /// Pretend the current thread always holds local tasks (loom refusal models).
    pretend_local: AtomicBool,
    drops: AtomicUsize,
    turns: AtomicUsize,
    /// Calls of `pending` and of `has_runnable` through the `LoanWorker` trait.
    pending_asked: AtomicUsize,
    runnable_asked: AtomicUsize,
    /// `Send` tasks spawned and not finished.
    live: AtomicUsize,
    /// The loan's rest waker, once installed (L7).
    rest_waker: Mutex<Option<Arc<dyn Unpark>>>,
    /// Fault injection: `pending` reports work whatever the tasks say.
    pretend_pending: AtomicBool,
    /// Fault injection: the next `pending` panics (once).
    panic_on_pending: AtomicBool,
    /// Fault injection: the next `enter` / `leave` panics (once each).
    panic_on_enter: AtomicBool,
    panic_on_leave: AtomicBool,
    /// Runs once when the worker is dropped (a worker-owned callback, rule L8).
    on_drop: Mutex<Option<DropHook>>,
    /// Runs when the worker is closed on loan (L8).
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

impl TestWorkerState {
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
                    token = sync::wait_timeout(&self.unparked, token, left);
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
    state: Weak<TestWorkerState>,
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
        if let Some(state) = self.state.upgrade() {
            sync::lock(&state.queue).push_back(Arc::clone(self));
            state.wake();
        }
    }
}

/// A local task's wake flag.
#[derive(Debug)]
struct LocalFlag {
    woken: AtomicBool,
    state: Weak<TestWorkerState>,
}

impl Wake for LocalFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        if let Some(state) = self.state.upgrade() {
            state.wake();
        }
    }
}

struct LocalTask {
    worker: usize,
    flag: Arc<LocalFlag>,
    future: LocalFuture,
}

thread_local! {
    /// Local tasks live on the thread that spawned them, so the worker stays `Send`.
    static LOCAL_TASKS: RefCell<Vec<LocalTask>> = const { RefCell::new(Vec::new()) };
    /// The stack of entered workers (their keys), innermost last.
    static CONTEXT: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The worker handed to the loan driver.
#[derive(Debug)]
pub(crate) struct TestWorker {
    state: Arc<TestWorkerState>,
}

/// The worker's unpark handle.
#[derive(Debug)]
struct TestUnpark {
    state: Arc<TestWorkerState>,
}

impl Unpark for TestUnpark {
    fn unpark(&self) {
        self.state.unpark();
    }
}

/// A fresh worker, its unpark handle and a handle for spawning.
pub(crate) fn test_worker() -> (Box<dyn LoanWorker>, Arc<dyn Unpark>, TestHandle) {
    let state = Arc::new(TestWorkerState {
        queue: Mutex::new(VecDeque::new()),
        token: Mutex::new(false),
        unparked: Condvar::new(),
        shutting_down: AtomicBool::new(false),
        pretend_local: AtomicBool::new(false),
        drops: AtomicUsize::new(0),
        turns: AtomicUsize::new(0),
        pending_asked: AtomicUsize::new(0),
        runnable_asked: AtomicUsize::new(0),
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
            state: Arc::clone(&state),
        }),
        Arc::new(TestUnpark {
            state: Arc::clone(&state),
        }),
        TestHandle { state },
    )
}

impl TestWorker {
    fn poll_local(&self) -> bool {
        let key = self.state.key();
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

    /// Whether a turn would find work (`has_runnable` without counting the question).
    fn runnable_now(&self) -> bool {
        !sync::lock(&self.state.queue).is_empty() || self.local_woken()
    }

    fn local_woken(&self) -> bool {
        let key = self.state.key();
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
        self.state.turns.fetch_add(1, Ordering::AcqRel);
        let mut progressed = self.poll_local();
        for _ in 0..BUDGET {
            let Some(task) = sync::lock(&self.state.queue).pop_front() else {
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
                    self.state.live.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
        TurnOutcome::progressed_if(progressed)
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
            if self.runnable_now() {
                let _turn = self.turn();
            } else {
                self.state.park(deadline);
            }
        }
    }

    fn has_runnable(&self) -> bool {
        self.state.runnable_asked.fetch_add(1, Ordering::AcqRel);
        self.runnable_now()
    }

    fn holds_local_tasks(&self) -> bool {
        let key = self.state.key();
        self.state.pretend_local.load(Ordering::Acquire)
            || LOCAL_TASKS.with(|tasks| tasks.borrow().iter().any(|task| task.worker == key))
    }

    fn enter(&mut self) {
        if self.state.panic_on_enter.swap(false, Ordering::AcqRel) {
            std::panic::panic_any(ContextFault("enter"));
        }
        CONTEXT.with(|stack| stack.borrow_mut().push(self.state.key()));
    }

    fn leave(&mut self) {
        let left = CONTEXT.with(|stack| stack.borrow_mut().pop());
        assert_eq!(left, Some(self.state.key()), "enter/leave pairs nest");
        if self.state.panic_on_leave.swap(false, Ordering::AcqRel) {
            std::panic::panic_any(ContextFault("leave"));
        }
    }

    fn root_started(&mut self) {
        self.state.roots_started.fetch_add(1, Ordering::AcqRel);
    }

    fn root_finished(&mut self) {
        self.state.roots_finished.fetch_add(1, Ordering::AcqRel);
    }

    fn is_shutting_down(&self) -> bool {
        self.state.shutting_down.load(Ordering::Acquire)
    }

    fn close_on_loan(&mut self) {
        self.state.closes_on_loan.fetch_add(1, Ordering::AcqRel);
        let hook = sync::lock(&self.state.on_close_on_loan).take();
        if let Some(DropHook(hook)) = hook {
            hook();
        }
    }

    fn pending(&self) -> Pending {
        self.state.pending_asked.fetch_add(1, Ordering::AcqRel);
        if self.state.panic_on_pending.swap(false, Ordering::AcqRel) {
            std::panic::panic_any(ContextFault("pending"));
        }
        let work = self.state.live.load(Ordering::Acquire) > 0
            || self.runnable_now()
            || self.state.pretend_pending.load(Ordering::Acquire);
        if work {
            Pending::Work
        } else {
            Pending::Nothing
        }
    }

    fn install_rest_waker(&mut self, rest_waker: Arc<dyn Unpark>) {
        *sync::lock(&self.state.rest_waker) = Some(rest_waker);
    }
}

impl Drop for TestWorker {
    fn drop(&mut self) {
        self.state.drops.fetch_add(1, Ordering::AcqRel);
        let queued = std::mem::take(&mut *sync::lock(&self.state.queue));
        drop(queued);
        let hook = sync::lock(&self.state.on_drop).take();
        if let Some(DropHook(hook)) = hook {
            hook();
        }
    }
}
