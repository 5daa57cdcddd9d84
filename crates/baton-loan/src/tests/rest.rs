//! The rest (L7): a worker given back with nothing pending stays in the slot for the next
//! `block_on` without waking the background thread, and still goes back to the background
//! thread as soon as it has work: announced through the rest waker, marked during a loan, or
//! unannounced and picked up after the grace period.

use std::sync::Arc;
use std::thread;
use std::time::Instant;

use crate::slot::{Phase, Slot};
use crate::tests::support::{
    HANG_GUARD, TestHandle, TestJoin, YieldNow, assert_block_on_panics_in,
    assert_borrowed_as_root, runtime, shut_down_once, test_worker, wait_join, wait_until,
};
use crate::{Loan, LoanConfig, ThreadRole};

/// A runtime whose grace period outlasts the test: a rest ends only through the rest waker, a
/// borrow or the shutdown, so the test sees it however late its thread runs after the
/// give-back.
fn runtime_resting_until_roused() -> (Arc<Loan>, TestHandle) {
    let (worker, unpark, handle) = test_worker();
    let config = LoanConfig {
        on_background_start: Some(Arc::new(|| {
            Slot::set_rest_grace_on_this_thread(HANG_GUARD * 4);
        })),
        ..LoanConfig::default()
    };
    let loan = Loan::with_config(worker, unpark, config).expect("the background thread starts");
    (Arc::new(loan), handle)
}

#[test]
fn idle_worker_rests_between_block_ons_and_is_borrowed_from_the_rest() {
    let (loan, handle) = runtime_resting_until_roused();
    assert_eq!(loan.block_on(async { 1 }), 1);
    assert_eq!(loan.phase(), Phase::Resting);
    for round in 0..100 {
        assert_eq!(
            loan.block_on(async { loan.thread_role() }),
            ThreadRole::Root,
            "round {round}"
        );
    }
    // Nothing announced work, so the worker came to rest again.
    assert_eq!(loan.phase(), Phase::Resting);
    shut_down_once(&loan, &handle);
}

#[test]
fn worker_with_a_live_task_goes_back_to_the_background_thread() {
    let (loan, handle) = runtime();
    let (gate, open) = TestJoin::pair();
    #[allow(
        clippy::async_yields_async,
        reason = "the join is waited for from outside the runtime"
    )]
    let task = loan.block_on(async { handle.spawn(async move { gate.await + 1 }) });
    // The task is live (waiting for its gate), so the give-back reported work.
    assert!(matches!(loan.phase(), Phase::Returned | Phase::Background));
    wait_until(|| loan.phase() == Phase::Background);
    open.set(41);
    assert_eq!(
        wait_join(&task),
        42,
        "the background thread drove the woken task"
    );
}

#[test]
fn spawn_from_outside_ends_the_rest() {
    let (loan, handle) = runtime_resting_until_roused();
    loan.block_on(async {});
    assert_eq!(loan.phase(), Phase::Resting);
    // The test worker's spawn triggers the rest waker (as the real worker's remote spawn does),
    // which ends the rest before `spawn` returns: no grace period involved.
    let task = handle.spawn(async { thread::current().id() });
    assert!(
        matches!(loan.phase(), Phase::Returned | Phase::Background),
        "{:?}",
        loan.phase()
    );
    let ran_on = wait_join(&task);
    assert_ne!(ran_on, thread::current().id());
}

#[test]
fn spawn_from_another_thread_during_a_loan_keeps_the_worker_from_resting() {
    let (loan, handle) = runtime();
    #[allow(
        clippy::async_yields_async,
        reason = "the join is waited for from outside the runtime"
    )]
    let task = loan.block_on(async {
        let handle = handle.clone();
        thread::spawn(move || handle.spawn(async { 5 }))
            .join()
            .expect("the spawning thread")
    });
    // The rest waker fired while the worker was on loan: even if the drain ran the task (so
    // nothing is pending any more), the give-back handed the worker to the background thread.
    assert!(
        matches!(loan.phase(), Phase::Returned | Phase::Background),
        "{:?}",
        loan.phase()
    );
    assert_eq!(wait_join(&task), 5);
}

#[test]
fn unannounced_work_is_driven_once_the_rest_ends_on_its_own() {
    let (loan, handle) = runtime();
    let started = Instant::now();
    loop {
        loan.block_on(async {});
        // Queued without the rest waker: only the grace period gets it driven. Still resting
        // after the spawn means resting since the give-back (only a borrow rests it again).
        let task = handle.spawn_unannounced(async { 9 });
        let queued_during_the_rest = loan.phase() == Phase::Resting;
        assert_eq!(wait_join(&task), 9);
        assert_eq!(loan.phase(), Phase::Background);
        if queued_during_the_rest {
            break;
        }
        // The grace period ended before the spawn (this thread ran late): the task reached
        // the background thread directly, which proves nothing here. Try again.
        assert!(
            started.elapsed() < HANG_GUARD,
            "never queued a task while the worker rested"
        );
    }
}

#[test]
fn idle_rest_ends_on_its_own_after_the_grace_period() {
    let (loan, _handle) = runtime();
    loan.block_on(async {});
    wait_until(|| loan.phase() == Phase::Background);
    assert_eq!(
        loan.block_on(async { loan.thread_role() }),
        ThreadRole::Root,
        "borrowed again through a request"
    );
}

#[test]
fn worker_reporting_work_is_returned_not_rested() {
    let (loan, handle) = runtime();
    handle.pretend_pending_work();
    loan.block_on(async {});
    assert!(matches!(loan.phase(), Phase::Returned | Phase::Background));
    wait_until(|| loan.phase() == Phase::Background);
}

#[test]
fn panicking_pending_is_reraised_after_the_worker_is_back() {
    let (loan, handle) = runtime();
    handle.panic_on_next_pending();
    assert_block_on_panics_in(&loan, "pending");
    // A panicking answer counts as work: the background thread took the worker back.
    wait_until(|| loan.phase() == Phase::Background);
    assert_borrowed_as_root(&loan);
    shut_down_once(&loan, &handle);
}

#[test]
fn shutdown_drops_a_resting_worker_now() {
    let (loan, handle) = runtime_resting_until_roused();
    loan.block_on(async {});
    assert_eq!(loan.phase(), Phase::Resting);
    let report = loan.shutdown();
    assert_eq!(report.worker, crate::WorkerDisposal::DroppedNow);
    assert_eq!(handle.drops(), 1);
}

/// One step of [`prop_rest_never_strands_work`].
#[derive(Debug, Clone, Copy)]
enum Step {
    /// A `block_on` of a ready future (the worker comes to rest if nothing is pending).
    BlockOn,
    /// A `block_on` whose root yields twice.
    BlockOnYielding,
    /// A `block_on` that leaves a task behind, waiting for the next outside spawn's gate.
    LeaveTaskBehind,
    /// A spawn from another thread (announced through the rest waker).
    SpawnOutside,
    /// A task queued without the rest waker (driven once the rest ends on its own).
    SpawnUnannounced,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    proptest::prop_oneof![
        proptest::strategy::Just(Step::BlockOn),
        proptest::strategy::Just(Step::BlockOnYielding),
        proptest::strategy::Just(Step::LeaveTaskBehind),
        proptest::strategy::Just(Step::SpawnOutside),
        proptest::strategy::Just(Step::SpawnUnannounced),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Random sequences of `block_on`s, tasks left behind and spawns announced or not: every
    /// `block_on` borrows the worker (one thread, so never contended), every task finishes
    /// without a further `block_on` (the background thread drives whatever the rests left),
    /// and the worker is dropped exactly once at shutdown.
    #[test]
    fn prop_rest_never_strands_work(steps in proptest::collection::vec(step(), 1..12)) {
        let (loan, handle) = runtime();
        let mut joins: Vec<TestJoin<u32>> = Vec::new();
        let mut gates = Vec::new();
        for (index, step) in steps.iter().enumerate() {
            let value = u32::try_from(index).expect("few steps");
            match step {
                Step::BlockOn => {
                    let role = loan.block_on(async { loan.thread_role() });
                    proptest::prop_assert_eq!(role, ThreadRole::Root);
                }
                Step::BlockOnYielding => {
                    let role = loan.block_on(async {
                        YieldNow { times: 2 }.await;
                        loan.thread_role()
                    });
                    proptest::prop_assert_eq!(role, ThreadRole::Root);
                }
                Step::LeaveTaskBehind => {
                    let (gate, open) = TestJoin::pair();
                    gates.push(open);
                    let task = handle.clone();
                    #[allow(
                        clippy::async_yields_async,
                        reason = "the join is waited for from outside the runtime"
                    )]
                    let join = loan.block_on(async move { task.spawn(gate) });
                    joins.push(join);
                }
                Step::SpawnOutside => {
                    let spawner = handle.clone();
                    let opens = std::mem::take(&mut gates);
                    let join = thread::spawn(move || {
                        spawner.spawn(async move {
                            for open in opens {
                                open.set(value);
                            }
                            value
                        })
                    })
                    .join()
                    .expect("the spawning thread");
                    joins.push(join);
                }
                Step::SpawnUnannounced => {
                    joins.push(handle.spawn_unannounced(async move { value }));
                }
            }
        }
        for open in gates {
            open.set(0);
        }
        for join in &joins {
            let _value = wait_join(join);
        }
        let _report = loan.shutdown();
        proptest::prop_assert_eq!(handle.drops(), 1);
    }
}
