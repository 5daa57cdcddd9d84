//! Shutdown (T8) and the thread context (T9).

mod support;

use std::sync::Arc;
use std::task::Poll;

use baton_task::{CancelReason, ContextError, RefuseSpawns, SpawnError};
use support::{Gate, drive, poll_once, scheduler};

/// Whether `scheduler` is the one this thread's context names.
fn is_current(scheduler: &baton_task::Scheduler) -> bool {
    baton_task::try_current().is_ok_and(|current| current.same_scheduler(&scheduler.spawner()))
}

#[test]
fn shutdown_resolves_outstanding_handles_as_cancelled() {
    let (scheduler, _) = scheduler();
    let gate = Gate::new();
    let mut idle = scheduler.spawn({
        let gate = Arc::clone(&gate);
        async move { gate.wait().await }
    });
    let _ = scheduler.run_ready(16);
    let mut queued = scheduler.spawn(async { 1 });
    let spawner = scheduler.spawner();
    let mut injected = std::thread::spawn(move || spawner.spawn(async { 2 }))
        .join()
        .unwrap();
    let mut local = scheduler.spawn_local(async { 3 });
    let report = scheduler.shutdown();
    assert_eq!(report.cancelled, 4);
    for result in [
        poll_once(&mut idle).map(|r| r.map(|_| 0)),
        poll_once(&mut queued),
        poll_once(&mut injected),
        poll_once(&mut local),
    ] {
        match result {
            Poll::Ready(Err(err)) => {
                assert_eq!(err.cancel_reason(), Some(CancelReason::RuntimeShutdown));
            }
            other => panic!("expected cancelled, got {other:?}"),
        }
    }
    let counts = scheduler.counts();
    assert_eq!(counts.live, 0);
    assert_eq!(counts.spawned, 4);
    assert_eq!(counts.cancelled, 4);
    // A wake after shutdown is harmless.
    gate.release();
    assert_eq!(scheduler.run_ready(16).polled, 0);
}

#[test]
fn spawn_after_shutdown_is_a_clean_error() {
    let (scheduler, unpark) = scheduler();
    let _ = scheduler.shutdown();
    assert!(scheduler.is_shut_down());
    let spawner = scheduler.spawner();
    let (handle, refused) =
        std::thread::spawn(move || (spawner.spawn(async { 1 }), spawner.try_spawn(async { 2 })))
            .join()
            .unwrap();
    assert_eq!(refused.unwrap_err(), SpawnError::Shutdown);
    assert_eq!(
        drive(&scheduler, handle).unwrap_err().cancel_reason(),
        Some(CancelReason::SpawnAfterShutdown)
    );
    let local = scheduler.spawn_local(async { 3 });
    assert!(drive(&scheduler, local).unwrap_err().is_cancelled());
    let here = scheduler.spawn(async { 4 });
    assert!(drive(&scheduler, here).unwrap_err().is_cancelled());
    assert_eq!(
        scheduler.counts().spawned,
        0,
        "refused spawns are not counted"
    );
    assert_eq!(unpark.count(), 0, "nothing was queued");
}

/// Rule T8: refusing spawns from another thread refuses every later spawn (remote, on the
/// scheduler's thread, local, and from inside a task), but keeps what was queued before: it
/// still runs, and what has not finished by the shutdown is cancelled then.
#[test]
fn refused_spawns_keep_what_was_queued_before_and_refuse_everything_after() {
    let (scheduler, _) = scheduler();
    let spawner = scheduler.spawner();
    let gate = Gate::new();
    let (queued, pending) = {
        let spawner = spawner.clone();
        std::thread::spawn(move || {
            (
                spawner.spawn(async { 1 }),
                spawner.spawn(std::future::pending::<()>()),
            )
        })
        .join()
        .unwrap()
    };
    let spawns_inside = scheduler.spawn_local({
        let gate = Arc::clone(&gate);
        async move {
            gate.wait().await;
            baton_task::spawn_local(async { 6 }).await
        }
    });
    let _ = scheduler.run_ready(16);
    let refusal = {
        let spawner = spawner.clone();
        std::thread::spawn(move || spawner.refuse_spawns())
            .join()
            .unwrap()
    };
    assert_eq!(refusal, RefuseSpawns::Refused);
    assert_eq!(spawner.refuse_spawns(), RefuseSpawns::AlreadyRefused);
    assert!(scheduler.is_shut_down() && spawner.is_shut_down());
    let remote = std::thread::spawn(move || spawner.try_spawn(async { 3 }))
        .join()
        .unwrap();
    assert_eq!(remote.map(drop).unwrap_err(), SpawnError::Shutdown);
    let here = scheduler.spawn(async { 4 });
    let local = scheduler.spawn_local(async { 5 });
    for refused in [here, local] {
        assert_eq!(
            drive(&scheduler, refused).unwrap_err().cancel_reason(),
            Some(CancelReason::SpawnAfterShutdown)
        );
    }
    assert_eq!(
        drive(&scheduler, queued).ok(),
        Some(1),
        "queued before: it ran"
    );
    gate.release();
    let inside = drive(&scheduler, spawns_inside).expect("accepted before the refusal");
    assert_eq!(
        inside.unwrap_err().cancel_reason(),
        Some(CancelReason::SpawnAfterShutdown),
        "a spawn from inside a task after the refusal"
    );
    let report = scheduler.shutdown();
    assert_eq!(report.cancelled, 1, "{report:?}");
    let mut pending = pending;
    match poll_once(&mut pending) {
        Poll::Ready(Err(err)) => {
            assert_eq!(err.cancel_reason(), Some(CancelReason::RuntimeShutdown));
        }
        other => panic!("cancelled by the shutdown, got {other:?}"),
    }
    let counts = scheduler.counts();
    assert_eq!(counts.spawned, 3, "refused spawns are not counted");
    assert_eq!(counts.live, 0);
}

#[test]
fn shutdown_from_inside_a_task_cancels_it_after_its_poll() {
    let (scheduler, _) = scheduler();
    let scheduler = std::rc::Rc::new(scheduler);
    let other = scheduler.spawn(std::future::pending::<()>());
    let report_slot = std::rc::Rc::new(std::cell::Cell::new(None));
    let reentrant_run = std::rc::Rc::new(std::cell::Cell::new(None));
    let task = scheduler.spawn_local({
        let scheduler = std::rc::Rc::clone(&scheduler);
        let report_slot = std::rc::Rc::clone(&report_slot);
        let reentrant_run = std::rc::Rc::clone(&reentrant_run);
        async move {
            reentrant_run.set(Some(scheduler.run_ready(8).polled));
            report_slot.set(Some(scheduler.shutdown()));
            std::future::pending::<()>().await;
        }
    });
    let _ = scheduler.run_ready(8);
    assert_eq!(
        reentrant_run.get(),
        Some(0),
        "run_ready does not re-enter itself"
    );
    let report = report_slot.get().expect("the task ran shutdown");
    assert_eq!(report.still_running, 1);
    assert_eq!(report.cancelled, 1);
    let mut task = task;
    let mut other = other;
    assert!(matches!(poll_once(&mut task), Poll::Ready(Err(ref e)) if e.is_cancelled()));
    assert!(matches!(poll_once(&mut other), Poll::Ready(Err(ref e)) if e.is_cancelled()));
    assert_eq!(scheduler.live_tasks(), 0);
}

#[test]
fn spawn_outside_a_runtime_panics_with_guidance() {
    let payload = std::panic::catch_unwind(|| baton_task::spawn(async {})).unwrap_err();
    let message = payload.downcast_ref::<String>().unwrap();
    assert!(message.contains("must be called from a Baton runtime context"));
    assert!(message.contains("Handle::spawn"));
    assert_eq!(
        baton_task::try_current().unwrap_err(),
        ContextError::NoRuntime
    );
    let payload = std::panic::catch_unwind(|| baton_task::spawn_local(async {})).unwrap_err();
    assert!(
        payload
            .downcast_ref::<String>()
            .unwrap()
            .contains("Baton runtime context")
    );
}

#[test]
fn enter_installs_context_and_nests_with_restore() {
    let (outer, _) = scheduler();
    let (inner, _) = scheduler();
    let outer_guard = outer.enter();
    assert!(is_current(&outer));
    {
        let _inner_guard = inner.enter();
        assert!(is_current(&inner));
        let handle = baton_task::spawn(async { "inner" });
        drop(_inner_guard);
        assert_eq!(drive(&inner, handle).unwrap(), "inner");
    }
    assert!(is_current(&outer));
    drop(outer_guard);
    assert!(baton_task::try_current().is_err());
}

#[test]
fn nested_enter_of_the_current_scheduler_keeps_the_context_until_the_outer_guard_drops() {
    let (outer, _) = scheduler();
    let (other, _) = scheduler();
    let first = outer.enter();
    let nested = outer.enter();
    {
        // A different scheduler in between is restored away from again.
        let _other_guard = other.enter();
        assert!(is_current(&other));
    }
    assert!(is_current(&outer));
    drop(nested);
    assert!(
        is_current(&outer),
        "the outer guard still holds the context"
    );
    let handle = baton_task::spawn(async { 5 });
    assert_eq!(outer.run_ready(4).polled, 1);
    drop(first);
    assert!(baton_task::try_current().is_err());
    assert_eq!(drive(&outer, handle).unwrap(), 5);
}

#[test]
fn a_guard_dropped_out_of_order_uninstalls_only_its_own_scheduler() {
    let (first, _) = scheduler();
    let (second, _) = scheduler();
    let first_guard = first.enter();
    let second_guard = second.enter();
    // The outer guard goes first: the inner scheduler stays current, and the outer one is
    // not left behind in the context once its guard is gone.
    drop(first_guard);
    assert!(is_current(&second));
    // With its guard and handle gone, the first scheduler's state must not be reachable from
    // the context any more (a stale entry would be a use after free here).
    drop(first);
    let handle = baton_task::spawn(async { 7 });
    drop(second_guard);
    assert!(baton_task::try_current().is_err());
    assert_eq!(drive(&second, handle).unwrap(), 7);
}

#[test]
fn an_early_drop_removes_its_own_entry_even_when_its_scheduler_is_entered_again_later() {
    let (a, _) = scheduler();
    let (b, _) = scheduler();
    let first_a = a.enter();
    let _b = b.enter();
    let second_a = a.enter();
    // The first guard of `a` goes first: the innermost live guard is still `second_a`'s.
    drop(first_a);
    assert!(
        is_current(&a),
        "the entry of the guard that went, not the innermost one of its scheduler, is removed"
    );
    drop(second_a);
    assert!(is_current(&b));
}

#[test]
fn enter_guard_restores_context_during_a_panic() {
    let (scheduler, _) = scheduler();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _guard = scheduler.enter();
        panic!("inside the context");
    }));
    assert!(result.is_err());
    assert!(baton_task::try_current().is_err());
    // The claim was released too: another thread may now run the scheduler.
    let (_, polled) = std::thread::spawn(move || {
        let handle = scheduler.spawn(async { 1 });
        let report = scheduler.run_ready(4);
        (handle, report.polled)
    })
    .join()
    .unwrap();
    assert_eq!(polled, 1);
}

#[test]
fn leaked_enter_guard_makes_other_threads_refuse_cleanly() {
    let (scheduler, _) = scheduler();
    std::mem::forget(scheduler.enter());
    let err = std::thread::spawn(move || {
        let err = scheduler.try_enter().map(drop).unwrap_err();
        std::mem::forget(scheduler);
        err
    })
    .join()
    .unwrap();
    assert_eq!(err, ContextError::EnteredElsewhere);
}

#[test]
fn tasks_see_their_scheduler_as_current() {
    let (scheduler, _) = scheduler();
    let expected = scheduler.spawner();
    let handle = scheduler.spawn(async move {
        let current = baton_task::try_current().expect("inside a task");
        let child = baton_task::spawn_local(async { 5 });
        (current.same_scheduler(&expected), child.await.unwrap())
    });
    assert_eq!(drive(&scheduler, handle).unwrap(), (true, 5));
}

/// `Spawner::reject`: the future is dropped unpolled, the handle carries the reason, and
/// nothing is counted as spawned (a runtime's spawn on a worker it does not have).
#[test]
fn a_rejected_spawn_drops_its_future_unpolled_and_carries_the_reason() {
    let (scheduler, _) = scheduler();
    let polled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dropped = Arc::new(());
    let mut handle = scheduler.spawner().reject(
        {
            let polled = Arc::clone(&polled);
            let dropped = Arc::clone(&dropped);
            async move {
                let _keep = dropped;
                polled.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        },
        CancelReason::NoSuchWorker {
            index: 3,
            workers: 2,
        },
    );
    assert_eq!(
        Arc::strong_count(&dropped),
        1,
        "the future was dropped at once"
    );
    match poll_once(&mut handle) {
        Poll::Ready(Err(err)) => {
            assert_eq!(
                err.cancel_reason(),
                Some(CancelReason::NoSuchWorker {
                    index: 3,
                    workers: 2
                })
            );
            let message = err.to_string();
            assert!(
                message.contains("worker 3") && message.contains("2 worker"),
                "{message}"
            );
        }
        other => panic!("expected a cancelled handle, got {other:?}"),
    }
    assert!(!polled.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(scheduler.counts().spawned, 0);
    assert_eq!(scheduler.counts().live, 0);
}

/// Rule T12: while this thread holds the scheduler's tasks back, a handle of an unfinished task
/// of it panics when polled, saying why; a finished task's handle, another scheduler's task,
/// and any handle once the hold ends are unaffected.
#[test]
fn a_held_scheduler_s_unfinished_task_is_not_waited_for() {
    let (scheduler, _) = scheduler();
    let (other, _) = support::scheduler();
    let _guard = scheduler.enter();
    let mut finished = scheduler.spawn(async { 1 });
    let _ = scheduler.run_ready(16);
    assert!(finished.is_finished());
    let mut unfinished = scheduler.spawn(async { 2 });
    let mut elsewhere = other.spawn(async { 3 });
    {
        let _held = scheduler.spawner().hold_tasks();
        assert!(baton_task::holds_tasks());
        assert!(!unfinished.can_finish(), "its scheduler is held");
        assert!(
            elsewhere.can_finish(),
            "another scheduler's task can still run"
        );
        assert!(
            finished.can_finish(),
            "a finished task has nothing left to run"
        );
        assert!(
            matches!(
                unfinished
                    .poll_unchecked(&mut std::task::Context::from_waker(std::task::Waker::noop())),
                Poll::Pending
            ),
            "a registration is not a wait"
        );
        assert!(matches!(poll_once(&mut finished), Poll::Ready(Ok(1))));
        assert!(
            poll_once(&mut elsewhere).is_pending(),
            "another scheduler's task"
        );
        let waited =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poll_once(&mut unfinished)));
        let payload = waited.expect_err("the wait could never end, so it panics");
        let message = payload.downcast_ref::<&str>().copied().expect("a message");
        assert!(
            message.contains("block_on` inside a task waits for another task"),
            "{message}"
        );
    }
    assert!(!baton_task::holds_tasks());
    assert!(unfinished.can_finish(), "the hold ended");
    assert!(poll_once(&mut unfinished).is_pending(), "the hold ended");
    let _ = scheduler.run_ready(16);
    assert!(matches!(poll_once(&mut unfinished), Poll::Ready(Ok(2))));
    assert!(matches!(drive(&other, elsewhere), Ok(3)));
}
