//! Nesting and fallback (L11 and L12): nested `block_on`s of one runtime or of distinct
//! runtimes drive the borrowed worker at every depth, a root's destructor may nest, and a
//! `block_on` that cannot borrow (inside a task, on the background thread, on a refusing or
//! contended slot) polls its future directly.

use std::cell::Cell;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Instant;

use crate::tests::support::{
    HANG_GUARD, TestHandle, YieldNow, assert_borrowed_as_root, runtime, wait_join, within,
    within_on,
};
use crate::{DrainOutcome, Loan, ThreadRole, Unavailable};

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
    assert_borrowed_as_root(&loan);
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
fn hand_over_refused_while_background_holds_local_tasks() {
    let (loan, handle) = runtime();
    let local = handle.clone();
    let join = handle.spawn(async move {
        let _pinned = local.spawn_local(std::future::pending::<()>());
    });
    wait_join(&join);
    let role = within_on(&loan, move |loan| {
        loan.block_on(async { loan.thread_role() })
    });
    assert_eq!(role, ThreadRole::Outside, "the caller fell back");
    let drained = loan.drain_until(Instant::now() + HANG_GUARD, &mut || true);
    assert_eq!(drained, DrainOutcome::Unavailable(Unavailable::Refused));
    let join = handle.spawn(async { 3 });
    assert_eq!(wait_join(&join), 3, "the background thread keeps running");
}
