//! End to end: `baton::task::JoinSet` — every result joined once, in completion order; abort,
//! detach, shutdown and drop; local tasks; `join_next` cancel safety; ten thousand tasks.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use baton::task::{CancelReason, JoinSet, yield_now};

/// A flag tasks wait on: `open` lets every waiter through.
#[derive(Clone, Default)]
struct Gate(Arc<AtomicBool>);

impl Gate {
    fn open(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Yields until the gate is open.
    async fn passed(&self) {
        while !self.0.load(Ordering::Acquire) {
            yield_now().await;
        }
    }

    /// A fresh gate and a set holding one task behind it, which returns `value` once through.
    fn holding<T: Send + 'static>(value: T) -> (Gate, JoinSet<T>) {
        let gate = Gate::default();
        let mut set = JoinSet::new();
        set.spawn(gate.behind(value));
        (gate, set)
    }

    /// A task body that passes this gate, then returns `value`.
    fn behind<T>(&self, value: T) -> impl std::future::Future<Output = T> + use<T> {
        let gate = self.clone();
        async move {
            gate.passed().await;
            value
        }
    }
}

/// Counts its drops: held by a task's future, it tells when that future was dropped.
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// Yields until `counter` reaches `expected` (at most 10,000 yields), and returns its value.
async fn settle(counter: &AtomicUsize, expected: usize) -> usize {
    for _ in 0..10_000 {
        if counter.load(Ordering::Acquire) >= expected {
            break;
        }
        yield_now().await;
    }
    counter.load(Ordering::Acquire)
}

/// Polls `future` once with `waker`, outside any executor's loop.
fn poll_once<F: Future + ?Sized>(future: std::pin::Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(waker))
}

/// A waker that records that it was woken.
#[derive(Default)]
struct WokenFlag(AtomicBool);

impl Wake for WokenFlag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

fn runtime() -> baton::Runtime {
    baton::Runtime::new().expect("a runtime with default settings builds")
}

/// Joins every task of `set`, in the order `join_next` returns them.
async fn join_all<T>(set: &mut JoinSet<T>) -> Vec<T> {
    let mut out = Vec::new();
    while let Some(result) = set.join_next().await {
        out.push(result.expect("the task neither panics nor is aborted"));
    }
    out
}

fn joined_each_once(n: usize) {
    let rt = runtime();
    let mut joined = rt.block_on(async {
        let mut set = JoinSet::new();
        for i in 0..n {
            set.spawn(async move {
                if i % 3 == 0 {
                    yield_now().await;
                }
                i
            });
        }
        assert_eq!(set.len(), n);
        let joined = join_all(&mut set).await;
        assert!(set.is_empty());
        joined
    });
    joined.sort_unstable();
    assert_eq!(
        joined,
        (0..n).collect::<Vec<_>>(),
        "each result exactly once"
    );
}

#[test]
fn hundred_tasks_are_each_joined_once() {
    joined_each_once(100);
}

#[test]
fn ten_thousand_tasks_are_each_joined_once() {
    joined_each_once(10_000);
}

#[test]
fn the_task_that_finishes_first_is_joined_first() {
    runtime().block_on(async {
        let (gate, mut set) = Gate::holding("slow");
        set.spawn(async { "fast" });
        assert_eq!(set.join_next().await.and_then(Result::ok), Some("fast"));
        gate.open();
        assert_eq!(set.join_next().await.and_then(Result::ok), Some("slow"));
        assert!(set.join_next().await.is_none());
    });
}

#[test]
fn tasks_finished_before_the_first_join_come_in_completion_order() {
    runtime().block_on(async {
        let gates: Vec<Gate> = (0..5).map(|_| Gate::default()).collect();
        let finished = Arc::new(AtomicUsize::new(0));
        let mut set = JoinSet::new();
        for (i, gate) in gates.iter().enumerate() {
            let gate = gate.clone();
            let finished = Arc::clone(&finished);
            set.spawn(async move {
                gate.passed().await;
                finished.fetch_add(1, Ordering::AcqRel);
                i
            });
        }
        // Each task finishes, in this order, before anything is joined.
        let order = [3, 1, 4, 0, 2];
        for (done, &i) in order.iter().enumerate() {
            gates[i].open();
            assert_eq!(settle(&finished, done + 1).await, done + 1);
        }
        assert_eq!(join_all(&mut set).await, order);
    });
}

#[test]
fn dropping_the_set_aborts_its_tasks() {
    runtime().block_on(async {
        let started = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let mut set = JoinSet::new();
        for i in 0..100 {
            let counter = DropCounter(Arc::clone(&dropped));
            let started = Arc::clone(&started);
            let task = async move {
                let _counter = counter;
                started.fetch_add(1, Ordering::AcqRel);
                std::future::pending::<()>().await;
            };
            if i % 2 == 0 {
                set.spawn(task);
            } else {
                set.spawn_local(task);
            }
        }
        // Every task has started and waits forever.
        assert_eq!(settle(&started, 100).await, 100);
        assert_eq!(dropped.load(Ordering::Acquire), 0);
        drop(set);
        assert_eq!(settle(&dropped, 100).await, 100, "every future was dropped");
    });
}

#[test]
fn abort_all_then_join_next_yields_cancelled_errors() {
    runtime().block_on(async {
        let mut set = JoinSet::new();
        for _ in 0..20 {
            set.spawn(std::future::pending::<u8>());
        }
        set.abort_all();
        assert_eq!(set.len(), 20, "aborted tasks stay until joined");
        let mut cancelled = 0;
        while let Some(result) = set.join_next().await {
            let err = result.expect_err("a pending-forever task can only end cancelled");
            assert_eq!(err.cancel_reason(), Some(CancelReason::Aborted), "{err}");
            cancelled += 1;
        }
        assert_eq!(cancelled, 20);
    });
}

#[test]
fn shutdown_aborts_and_joins_every_task() {
    runtime().block_on(async {
        let dropped = Arc::new(AtomicUsize::new(0));
        let mut set = JoinSet::new();
        for _ in 0..20 {
            let counter = DropCounter(Arc::clone(&dropped));
            set.spawn(async move {
                let _counter = counter;
                std::future::pending::<()>().await;
            });
        }
        set.shutdown().await;
        assert!(set.is_empty());
        assert_eq!(dropped.load(Ordering::Acquire), 20, "joined means dropped");
    });
}

#[test]
fn detach_all_lets_the_tasks_run_on() {
    runtime().block_on(async {
        let gate = Gate::default();
        let finished = Arc::new(AtomicUsize::new(0));
        let mut set = JoinSet::new();
        for _ in 0..10 {
            let gate = gate.clone();
            let finished = Arc::clone(&finished);
            set.spawn(async move {
                gate.passed().await;
                finished.fetch_add(1, Ordering::AcqRel);
            });
        }
        set.detach_all();
        assert!(set.is_empty());
        assert!(set.join_next().await.is_none());
        drop(set); // aborts nothing: the tasks are no longer in it
        gate.open();
        assert_eq!(settle(&finished, 10).await, 10);
    });
}

#[test]
fn local_tasks_are_joined_with_their_non_send_results() {
    runtime().block_on(async {
        let shared = Rc::new(40);
        let mut set = JoinSet::new();
        for i in 0..10 {
            let shared = Rc::clone(&shared);
            set.spawn_local(async move {
                yield_now().await;
                Rc::new(*shared + i)
            });
        }
        let mut joined: Vec<i32> = join_all(&mut set).await.into_iter().map(|v| *v).collect();
        joined.sort_unstable();
        assert_eq!(joined, (40..50).collect::<Vec<_>>());
    });
}

#[test]
fn a_join_next_cancelled_by_timeout_loses_no_result() {
    runtime().block_on(async {
        let (gate, mut set) = Gate::holding(7);
        let timed_out = baton::time::timeout(Duration::from_millis(20), set.join_next()).await;
        assert!(timed_out.is_err(), "nothing finished within the timeout");
        gate.open();
        assert_eq!(set.join_next().await.and_then(Result::ok), Some(7));
    });
}

#[test]
fn a_join_next_dropped_after_its_wake_loses_no_result() {
    runtime().block_on(async {
        let (gate, mut set) = Gate::holding("kept");
        let woken = Arc::new(WokenFlag::default());
        {
            let next = pin!(set.join_next());
            assert!(poll_once(next, &Waker::from(Arc::clone(&woken))).is_pending());
            gate.open();
            // The task finishes and wakes the pending join_next, which is then dropped
            // without being polled again: the result is already queued in the set.
            for _ in 0..10_000 {
                if woken.0.load(Ordering::Acquire) {
                    break;
                }
                yield_now().await;
            }
            assert!(
                woken.0.load(Ordering::Acquire),
                "the finished task woke join_next"
            );
        }
        assert_eq!(set.try_join_next().and_then(Result::ok), Some("kept"));
        assert!(set.is_empty());
    });
}

#[test]
fn try_join_next_returns_only_finished_tasks() {
    runtime().block_on(async {
        let mut set: JoinSet<u8> = JoinSet::new();
        assert!(set.try_join_next().is_none(), "an empty set has nothing");
        let gate = Gate::default();
        set.spawn(gate.behind(1));
        yield_now().await;
        assert!(set.try_join_next().is_none(), "the task is still waiting");
        gate.open();
        let mut joined = None;
        for _ in 0..10_000 {
            joined = set.try_join_next();
            if joined.is_some() {
                break;
            }
            yield_now().await;
        }
        assert_eq!(joined.and_then(Result::ok), Some(1));
    });
}

#[test]
fn a_panicking_task_joins_as_a_panic_error() {
    runtime().block_on(async {
        let mut set = JoinSet::new();
        set.spawn(async { panic!("task failed on purpose") });
        set.spawn(async { 5 });
        let mut outcomes = Vec::new();
        while let Some(result) = set.join_next().await {
            outcomes.push(result.map_err(|err| err.is_panic()));
        }
        outcomes.sort();
        assert_eq!(outcomes, [Ok(5), Err(true)]);
    });
}

#[test]
fn spawn_on_a_handle_works_from_a_thread_outside_the_runtime() {
    let rt = runtime();
    let handle = rt.handle();
    let mut set = std::thread::spawn(move || {
        let mut set = JoinSet::new();
        for i in 0..10u32 {
            set.spawn_on(async move { i * 2 }, &handle);
        }
        set
    })
    .join()
    .expect("the spawning thread does not panic");
    let mut joined = rt.block_on(join_all(&mut set));
    joined.sort_unstable();
    assert_eq!(joined, (0..10).map(|i| i * 2).collect::<Vec<_>>());
}

#[test]
fn spawn_outside_a_runtime_panics_saying_what_to_do() {
    let mut set = JoinSet::new();
    let payload = catch_unwind(AssertUnwindSafe(|| set.spawn(async {})))
        .expect_err("spawn outside a runtime panics, as baton::spawn does");
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(message.contains("Runtime::block_on"), "{message}");
    assert!(set.is_empty());
}
