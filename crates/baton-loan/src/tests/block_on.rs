//! `block_on` on the calling thread (SPEC §5): the root polled in place and interleaved with
//! worker turns (L10), work between calls on the background thread, the bounded drain after
//! the root (L12), the root waker (L14), root accounting (L15) and `drain_until`.
//! Timing bounds only guard against hangs.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::sync::{AtomicUsize, Ordering};
use crate::tests::support::{
    BUDGET, HANG_GUARD, TestJoin, YieldNow, assert_borrowed_as_root, runtime, test_worker,
    wait_join, wait_until, within,
};
use crate::{DEFAULT_DRAIN_TURNS, DrainOutcome, Loan, LoanConfig, ThreadRole};

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

/// Rules L7 and L12: a `block_on` that leaves nothing behind asks its worker once whether
/// anything is pending, and so never whether anything is runnable (there is nothing to drain);
/// one that leaves a runnable task still drains it.
#[test]
fn a_block_on_that_leaves_nothing_behind_asks_its_worker_once() {
    let (loan, handle) = runtime();
    loan.block_on(async {});
    let (pending, runnable) = handle.questions();
    for round in 0..100 {
        assert_eq!(loan.block_on(async move { round }), round);
    }
    let (pending_after, runnable_after) = handle.questions();
    assert_eq!(pending_after - pending, 100, "one pending question per block_on");
    assert_eq!(runnable_after - runnable, 0, "no drain question without work");
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    loan.block_on(async {
        let _join = handle.spawn(async move {
            counter.fetch_add(1, Ordering::AcqRel);
        });
    });
    assert_eq!(ran.load(Ordering::Acquire), 1, "the drain ran the task left behind");
}

/// Rule L12 through L7's answer: a local task the root leaves runnable is drained before
/// `block_on` returns, because a worker with a runnable task never answers nothing pending.
#[test]
fn a_local_task_the_root_leaves_runnable_is_drained() {
    let (loan, handle) = runtime();
    loan.block_on(async {});
    let ran = Rc::new(Cell::new(false));
    let flag = Rc::clone(&ran);
    loan.block_on(async {
        let _join = handle.spawn_local(async move { flag.set(true) });
    });
    assert!(ran.get(), "the drain did not run the local task the root left");
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
    assert_borrowed_as_root(&loan);
}

#[test]
fn default_drain_turns_is_small() {
    assert!((1..=64).contains(&DEFAULT_DRAIN_TURNS));
}

#[test]
fn a_waker_kept_from_an_earlier_root_only_causes_a_spare_poll() {
    let (loan, _handle) = runtime();
    // Rule L14: roots that borrow through the slot share the loan's one waker.
    let stale = loan.block_on(std::future::poll_fn(|cx| {
        std::task::Poll::Ready(cx.waker().clone())
    }));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let polls = Cell::new(0);
    let (first_pending, polled_once) = std::sync::mpsc::channel();
    let setter = {
        let done = Arc::clone(&done);
        let stale = stale.clone();
        thread::spawn(move || {
            // A wake through the earlier root's waker, while the next root waits.
            stale.wake_by_ref();
            // `done` is set only once the root answered Pending, so it must be polled again.
            polled_once
                .recv_timeout(HANG_GUARD)
                .expect("the root was polled");
            done.store(true, std::sync::atomic::Ordering::Release);
            stale.wake();
        })
    };
    let same_waker = loan.block_on(std::future::poll_fn(|cx| {
        polls.set(polls.get() + 1);
        if done.load(std::sync::atomic::Ordering::Acquire) {
            return std::task::Poll::Ready(cx.waker().will_wake(&stale));
        }
        if polls.get() == 1 {
            first_pending.send(()).expect("the setter waits");
        }
        std::task::Poll::Pending
    }));
    setter.join().expect("setter thread");
    assert!(same_waker, "rule L14: the loan's waker is re-armed, not remade");
    assert!(polls.get() >= 2, "the root was polled again after its wake");
    // A nested root has a waker of its own: waking it does not wake the outer one.
    let distinct = loan.block_on(std::future::poll_fn(|outer| {
        let inner = loan.block_on(std::future::poll_fn(|inner| {
            std::task::Poll::Ready(inner.waker().clone())
        }));
        std::task::Poll::Ready(!inner.will_wake(outer.waker()))
    }));
    assert!(distinct, "rule L14: nested roots never share the outer root's waker");
}
