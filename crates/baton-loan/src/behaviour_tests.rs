//! Behaviour tests of `block_on`, nesting, fallback, panics and shutdown, driving the test
//! worker (SPEC §5). Timing bounds only guard against hangs.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use crate::test_worker::{BUDGET, TestHandle, TestJoin, YieldNow, test_worker};
use crate::{
    BackgroundExit, DEFAULT_DRAIN_TURNS, DrainOutcome, Loan, LoanConfig, ThreadRole, Unavailable,
    WorkerDisposal,
};

const HANG_GUARD: Duration = Duration::from_secs(30);

pub(crate) fn runtime() -> (Arc<Loan>, TestHandle) {
    let (worker, unpark, handle) = test_worker();
    let loan = Loan::new(worker, unpark).expect("the test machine can start a thread");
    (Arc::new(loan), handle)
}

/// Runs `f` on its own thread and fails the test if it does not finish within the hang guard.
pub(crate) fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _sent = tx.send(f());
    });
    rx.recv_timeout(HANG_GUARD)
        .expect("finished without hanging (or its thread panicked)")
}

/// Waits (from outside the runtime) until `join` yields its output.
pub(crate) fn wait_join<T>(join: &TestJoin<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = join.try_take() {
            return value;
        }
        assert!(started.elapsed() < HANG_GUARD, "task never finished");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Waits until `cond` holds, failing the test past the hang guard.
pub(crate) fn wait_until(mut cond: impl FnMut() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(started.elapsed() < HANG_GUARD, "condition never held");
        thread::sleep(Duration::from_millis(1));
    }
}

#[derive(Debug, PartialEq)]
pub(crate) struct Payload(pub(crate) u32);

#[test]
fn spawned_during_block_on_runs_on_caller_thread() {
    let (loan, handle) = runtime();
    let caller = thread::current().id();
    let (role, ran_on, in_context) = loan.block_on(async {
        let join = handle.spawn(async { thread::current().id() });
        (loan.thread_role(), join.await, handle.is_current())
    });
    assert_eq!(role, ThreadRole::Root);
    assert_eq!(ran_on, caller);
    assert!(
        in_context,
        "the worker's context is entered while the root runs"
    );
    assert!(!handle.is_current(), "the context is left after block_on");
}

#[test]
fn work_between_block_on_calls_runs_on_background_thread() {
    let (loan, handle) = runtime();
    assert_eq!(loan.block_on(async { 1 }), 1);
    let join = handle.spawn(async { thread::current().name().map(str::to_owned) });
    assert_eq!(wait_join(&join).as_deref(), Some("baton-loan"));
    assert_eq!(loan.block_on(async { 2 }), 2);
    let join = handle.spawn(YieldNow { times: 10 });
    wait_join(&join);
}

#[test]
fn non_send_root_borrows_stack_data() {
    let (loan, _handle) = runtime();
    let mut seen = Vec::new();
    let shared = Rc::new(Cell::new(0));
    let total = loan.block_on(async {
        for i in 1..=3 {
            YieldNow { times: 1 }.await;
            seen.push(i);
            shared.set(shared.get() + i);
        }
        shared.get()
    });
    assert_eq!(total, 6);
    assert_eq!(seen, [1, 2, 3]);
}

#[test]
fn nested_three_deep_spawning_at_every_level() {
    let (loan, handle) = runtime();
    let caller = thread::current().id();
    let roles = loan.block_on(async {
        let outer = handle.spawn(async { thread::current().id() });
        let (middle_roles, middle_ran) = loan.block_on(async {
            let middle = handle.spawn(async { thread::current().id() });
            let (inner_role, inner_ran) = loan.block_on(async {
                let inner = handle.spawn(async { thread::current().id() });
                YieldNow { times: 3 }.await;
                (loan.thread_role(), inner.await)
            });
            ((loan.thread_role(), inner_role, inner_ran), middle.await)
        });
        (loan.thread_role(), middle_roles, middle_ran, outer.await)
    });
    let (outer_role, (middle_role, inner_role, inner_ran), middle_ran, outer_ran) = roles;
    assert_eq!([outer_role, middle_role, inner_role], [ThreadRole::Root; 3]);
    assert_eq!([outer_ran, middle_ran, inner_ran], [caller; 3]);
    assert_eq!(loan.thread_role(), ThreadRole::Outside);
}

#[test]
fn distinct_runtimes_nest_on_one_thread() {
    let (first, first_handle) = runtime();
    let (second, second_handle) = runtime();
    let caller = thread::current().id();
    let (outer, inner, ran) = first.block_on(async {
        let inner = second.block_on(async {
            let on_second = second_handle.spawn(async { thread::current().id() });
            let on_first = first_handle.spawn(async { thread::current().id() });
            let nested_first = first.block_on(async { first.thread_role() });
            (
                second.thread_role(),
                nested_first,
                second_handle.is_current(),
                on_second.await,
                on_first.await,
            )
        });
        (first.thread_role(), inner, first_handle.is_current())
    });
    let (second_role, nested_first, second_current, on_second, on_first) = inner;
    assert_eq!(outer, ThreadRole::Root);
    assert_eq!(second_role, ThreadRole::Root);
    assert_eq!(nested_first, ThreadRole::Root);
    assert!(
        second_current && ran,
        "each runtime's context is current in its own root"
    );
    assert_eq!((on_second, on_first), (caller, caller));
}

#[test]
fn block_on_inside_task_falls_back() {
    let (loan, handle) = runtime();
    let task_loan = Arc::clone(&loan);
    let role = within(move || {
        loan.block_on(async {
            handle
                .spawn(async move {
                    task_loan.block_on(async {
                        YieldNow { times: 2 }.await;
                        task_loan.thread_role()
                    })
                })
                .await
        })
    });
    assert_eq!(role, ThreadRole::TaskPoll);
}

#[test]
fn block_on_on_background_thread_falls_back() {
    let (loan, handle) = runtime();
    let task_loan = Arc::clone(&loan);
    let join = handle.spawn(async move {
        let value = task_loan.block_on(async {
            YieldNow { times: 2 }.await;
            7
        });
        (task_loan.thread_role(), value)
    });
    assert_eq!(wait_join(&join), (ThreadRole::Background, 7));
    assert_eq!(
        loan.block_on(async { loan.thread_role() }),
        ThreadRole::Root
    );
}

#[test]
fn block_on_from_four_threads_all_complete() {
    let (loan, handle) = runtime();
    let barrier = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4u32)
        .map(|i| {
            let (loan, handle, barrier) = (Arc::clone(&loan), handle.clone(), Arc::clone(&barrier));
            thread::spawn(move || {
                barrier.wait();
                (0..50u32)
                    .map(|round| {
                        loan.block_on(async {
                            let join = handle.spawn(async move { i * 1000 + round });
                            YieldNow { times: 2 }.await;
                            join.await
                        })
                    })
                    .sum::<u32>()
            })
        })
        .collect();
    let sums = within(move || {
        threads
            .into_iter()
            .map(|t| t.join().expect("a block_on thread panicked"))
            .collect::<Vec<_>>()
    });
    let expected: Vec<u32> = (0..4)
        .map(|i| (0..50).map(|r| i * 1000 + r).sum())
        .collect();
    assert_eq!(sums, expected);
}

#[test]
fn root_panic_is_reraised_and_runtime_stays_usable() {
    let (loan, handle) = runtime();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        loan.block_on(async {
            YieldNow { times: 1 }.await;
            panic::panic_any(Payload(42));
        })
    }));
    let payload = caught.expect_err("the root panicked");
    assert_eq!(payload.downcast_ref::<Payload>(), Some(&Payload(42)));
    assert_eq!(loan.active_roots(), 0);
    let (role, value) =
        loan.block_on(async { (loan.thread_role(), handle.spawn(async { 5 }).await) });
    assert_eq!((role, value), (ThreadRole::Root, 5));
    assert_eq!(handle.drops(), 0);
}

/// Ready at once; its destructor panics with `Payload(7)`.
struct PanicOnDrop;

impl std::future::Future for PanicOnDrop {
    type Output = u8;
    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<u8> {
        std::task::Poll::Ready(3)
    }
}

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic::panic_any(Payload(7));
    }
}

/// Panics on poll with `Payload(1)` and on drop with `Payload(2)`.
struct PanicTwice;

impl std::future::Future for PanicTwice {
    type Output = ();
    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        panic::panic_any(Payload(1));
    }
}

impl Drop for PanicTwice {
    fn drop(&mut self) {
        panic::panic_any(Payload(2));
    }
}

#[test]
fn panicking_root_destructor_still_returns_worker() {
    let (loan, handle) = runtime();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| loan.block_on(PanicOnDrop)));
    let payload = caught.expect_err("the destructor panicked");
    assert_eq!(payload.downcast_ref::<Payload>(), Some(&Payload(7)));
    assert_eq!(
        loan.block_on(async { loan.thread_role() }),
        ThreadRole::Root
    );
    let join = handle.spawn(async { 9 });
    assert_eq!(
        wait_join(&join),
        9,
        "the background thread runs the returned worker"
    );
}

#[test]
fn poll_panic_wins_over_destructor_panic() {
    let (loan, _handle) = runtime();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| loan.block_on(PanicTwice)));
    let payload = caught.expect_err("the root panicked");
    assert_eq!(payload.downcast_ref::<Payload>(), Some(&Payload(1)));
    assert_eq!(
        loan.block_on(async { loan.thread_role() }),
        ThreadRole::Root
    );
}

/// Calls `block_on` on its runtime from its destructor and records the role it saw.
struct NestOnDrop<'a> {
    loan: &'a Loan,
    handle: &'a TestHandle,
    seen: &'a Cell<Option<(ThreadRole, u32)>>,
}

impl std::future::Future for NestOnDrop<'_> {
    type Output = ();
    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        std::task::Poll::Ready(())
    }
}

impl Drop for NestOnDrop<'_> {
    fn drop(&mut self) {
        let (loan, handle) = (self.loan, self.handle);
        let seen = loan.block_on(async { (loan.thread_role(), handle.spawn(async { 4 }).await) });
        self.seen.set(Some(seen));
    }
}

#[test]
fn root_destructor_calls_block_on() {
    let (loan, handle) = runtime();
    let seen = Cell::new(None);
    loan.block_on(NestOnDrop {
        loan: &loan,
        handle: &handle,
        seen: &seen,
    });
    assert_eq!(seen.get(), Some((ThreadRole::Root, 4)));
}

#[test]
fn self_waking_task_cannot_keep_block_on_from_returning() {
    let (loan, handle) = runtime();
    let spinner = handle.clone();
    let value = within({
        let loan = Arc::clone(&loan);
        move || {
            loan.block_on(async {
                // Cancellation-blind: wakes itself forever and is never aborted.
                let _forever = spinner.spawn(async {
                    loop {
                        YieldNow { times: 1 }.await;
                    }
                });
                YieldNow { times: 3 }.await;
                11
            })
        }
    });
    assert_eq!(value, 11);
    let before = handle.turns();
    wait_until(|| handle.turns() > before);
}

#[test]
fn drain_is_bounded_by_drain_turns() {
    let (worker, unpark, handle) = test_worker();
    let config = LoanConfig {
        drain_turns: 3,
        ..LoanConfig::default()
    };
    let loan = Loan::with_config(worker, unpark, config).expect("thread starts");
    let caller = thread::current().id();
    let polls_here = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&polls_here);
    loan.block_on(async {
        // The root completes on its first poll, so only drain turns poll the spinner here.
        let _forever = handle.spawn(async move {
            loop {
                if thread::current().id() == caller {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                YieldNow { times: 1 }.await;
            }
        });
    });
    let polls = polls_here.load(Ordering::Relaxed);
    assert!(polls >= 1, "the drain ran the runnable task");
    assert!(
        polls <= 3 * BUDGET,
        "{polls} polls exceed three drain turns"
    );
}

#[test]
fn hand_over_refused_while_background_holds_local_tasks() {
    let (loan, handle) = runtime();
    let local = handle.clone();
    let join = handle.spawn(async move {
        let _pinned = local.spawn_local(std::future::pending::<()>());
    });
    wait_join(&join);
    let role = within({
        let loan = Arc::clone(&loan);
        move || loan.block_on(async { loan.thread_role() })
    });
    assert_eq!(role, ThreadRole::Outside, "the caller fell back");
    let drained = loan.drain_until(Instant::now() + HANG_GUARD, &mut || true);
    assert_eq!(drained, DrainOutcome::Unavailable(Unavailable::Refused));
    let join = handle.spawn(async { 3 });
    assert_eq!(wait_join(&join), 3, "the background thread keeps running");
}

#[test]
fn shutdown_while_loaned_drops_worker_when_it_comes_back() {
    let (loan, handle) = runtime();
    let (report, drops_inside) = loan.block_on(async { (loan.shutdown(), handle.drops()) });
    assert_eq!(report.worker, WorkerDisposal::DroppedOnReturn);
    assert_eq!(report.background, BackgroundExit::Joined);
    assert_eq!(drops_inside, 0);
    assert_eq!(handle.drops(), 1);
    assert!(loan.is_closed());
    assert_eq!(
        loan.block_on(async { loan.thread_role() }),
        ThreadRole::Outside
    );
    let again = loan.shutdown();
    assert_eq!(again.worker, WorkerDisposal::AlreadyClosed);
}

#[test]
fn shutdown_between_calls_drops_worker_once() {
    let (loan, handle) = runtime();
    assert_eq!(loan.block_on(async { 1 }), 1);
    let report = loan.shutdown();
    assert!(matches!(
        report.worker,
        WorkerDisposal::DroppedByBackground | WorkerDisposal::DroppedNow
    ));
    assert_eq!(report.background, BackgroundExit::Joined);
    assert_eq!(handle.drops(), 1);
    drop(loan);
    assert_eq!(handle.drops(), 1);
}

#[test]
fn background_panic_closes_protocol_so_callers_fall_back() {
    let (loan, handle) = runtime();
    let _boom = handle.spawn(async { panic::panic_any(Payload(13)) });
    wait_until(|| loan.is_closed());
    assert!(loan.background_panicked());
    assert_eq!(handle.drops(), 1);
    let role = within({
        let loan = Arc::clone(&loan);
        move || loan.block_on(async { loan.thread_role() })
    });
    assert_eq!(role, ThreadRole::Outside);
    assert_eq!(loan.shutdown().background, BackgroundExit::Panicked);
}

#[test]
fn worker_retiring_itself_closes_protocol() {
    let (loan, handle) = runtime();
    handle.begin_shutdown();
    wait_until(|| loan.is_closed());
    assert_eq!(handle.drops(), 1);
    assert_eq!(loan.block_on(async { 8 }), 8);
}

#[test]
fn root_wake_from_foreign_thread_ends_idle_wait() {
    let (loan, _handle) = runtime();
    let (join, done) = TestJoin::pair();
    let setter = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        done.set(21);
    });
    let value = loan.block_on(async { join.await * 2 });
    assert_eq!(value, 42);
    setter.join().expect("setter thread");
}

#[test]
fn active_roots_counts_running_roots() {
    let (loan, _handle) = runtime();
    assert_eq!(loan.active_roots(), 0);
    let inside = loan.block_on(async {
        (
            loan.active_roots(),
            loan.block_on(async { loan.active_roots() }),
        )
    });
    assert_eq!(inside, (1, 2));
    assert_eq!(loan.active_roots(), 0);
}

#[test]
fn drain_until_runs_worker_until_predicate() {
    let (loan, handle) = runtime();
    let joins: Vec<_> = (0..3).map(|i| handle.spawn(async move { i })).collect();
    let mut done = Vec::new();
    let outcome = loan.drain_until(Instant::now() + HANG_GUARD, &mut || {
        done.extend(joins.iter().filter_map(TestJoin::try_take));
        done.len() == 3
    });
    assert_eq!(outcome, DrainOutcome::Satisfied);
    done.sort_unstable();
    assert_eq!(done, [0, 1, 2]);
}

#[test]
fn drain_until_stops_at_deadline() {
    let (loan, _handle) = runtime();
    let outcome = loan.drain_until(Instant::now() + Duration::from_millis(20), &mut || false);
    assert_eq!(outcome, DrainOutcome::DeadlineReached);
    assert_eq!(
        loan.block_on(async { loan.thread_role() }),
        ThreadRole::Root
    );
}

#[test]
fn default_drain_turns_is_small() {
    assert!((1..=64).contains(&DEFAULT_DRAIN_TURNS));
}
