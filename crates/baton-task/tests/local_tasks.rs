//! Local tasks stay on their owner thread while the worker migrates (T7).

mod support;

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::Poll;

use baton_task::{CancelReason, ContextError, Scheduler};
use support::{DropFlag, Gate, drive, poll_once, scheduler};

/// Moves the scheduler to a fresh thread, runs `f` there and brings it back.
fn on_other_thread<R: Send + 'static>(
    scheduler: Scheduler,
    f: impl FnOnce(&Scheduler) -> R + Send + 'static,
) -> (Scheduler, R) {
    std::thread::spawn(move || {
        let result = f(&scheduler);
        (scheduler, result)
    })
    .join()
    .unwrap()
}

#[test]
fn local_task_waits_while_worker_runs_on_another_thread() {
    let (scheduler, _) = scheduler();
    let polls = Arc::new(AtomicUsize::new(0));
    let owner_marker = Rc::new(());
    let mut handle = scheduler.spawn_local({
        let polls = Arc::clone(&polls);
        async move {
            polls.fetch_add(1, Ordering::SeqCst);
            Rc::strong_count(&owner_marker)
        }
    });
    assert_eq!(scheduler.live_local_tasks_on_current_thread(), 1);
    let (scheduler, (report, ready_there, local_there)) = on_other_thread(scheduler, |s| {
        (
            s.run_ready(100),
            s.has_ready_for_current_thread(),
            s.live_local_tasks_on_current_thread(),
        )
    });
    assert_eq!(report.polled, 0, "the local task is not polled on thread B");
    assert!(!ready_there);
    assert_eq!(local_there, 0);
    assert_eq!(polls.load(Ordering::SeqCst), 0);
    assert!(poll_once(&mut handle).is_pending());
    assert!(scheduler.has_ready_for_current_thread());
    let report = scheduler.run_ready(100);
    assert_eq!(report.polled, 1, "back on its owner thread it runs");
    assert_eq!(polls.load(Ordering::SeqCst), 1);
    assert_eq!(drive(&scheduler, handle).unwrap(), 1);
    assert_eq!(scheduler.live_local_tasks_on_current_thread(), 0);
}

#[test]
fn send_tasks_run_on_whichever_thread_holds_the_worker() {
    let (scheduler, _) = scheduler();
    let handle = scheduler.spawn(async { std::thread::current().id() });
    let (scheduler, there) = on_other_thread(scheduler, |s| {
        let _ = s.run_ready(100);
        std::thread::current().id()
    });
    assert_eq!(drive(&scheduler, handle).unwrap(), there);
}

#[test]
fn local_waker_woken_from_foreign_thread_requeues_for_owner() {
    let (scheduler, unpark) = scheduler();
    let gate = Gate::new();
    let handle = scheduler.spawn_local({
        let gate = Arc::clone(&gate);
        let not_send = Rc::new(3);
        async move {
            gate.wait().await;
            *not_send
        }
    });
    let _ = scheduler.run_ready(16);
    assert_eq!(gate.polls(), 1);
    let before = unpark.count();
    gate.release_from_another_thread();
    assert_eq!(unpark.count(), before + 1);
    // The worker visits thread B first: the woken local task is not polled there.
    let (scheduler, polled_there) = on_other_thread(scheduler, |s| s.run_ready(16).polled);
    assert_eq!(polled_there, 0);
    assert_eq!(gate.polls(), 1);
    assert_eq!(drive(&scheduler, handle).unwrap(), 3);
    assert_eq!(gate.polls(), 2);
}

#[test]
fn abort_of_local_task_drops_it_on_its_owner_thread() {
    let (scheduler, _) = scheduler();
    let dropped = Arc::new(AtomicBool::new(false));
    let dropped_on = Arc::new(std::sync::Mutex::new(None));
    struct RecordDropThread(Arc<std::sync::Mutex<Option<std::thread::ThreadId>>>);
    impl Drop for RecordDropThread {
        fn drop(&mut self) {
            *self.0.lock().unwrap() = Some(std::thread::current().id());
        }
    }
    let handle = scheduler.spawn_local({
        let flag = DropFlag(Arc::clone(&dropped));
        let record = RecordDropThread(Arc::clone(&dropped_on));
        async move {
            let _keep = (flag, record);
            std::future::pending::<()>().await;
        }
    });
    let _ = scheduler.run_ready(16);
    let handle = std::thread::spawn(move || {
        handle.abort();
        handle
    })
    .join()
    .unwrap();
    let (scheduler, _) = on_other_thread(scheduler, |s| s.run_ready(16));
    assert!(
        !dropped.load(Ordering::SeqCst),
        "not dropped on a foreign thread"
    );
    let err = drive(&scheduler, handle).unwrap_err();
    assert_eq!(err.cancel_reason(), Some(CancelReason::Aborted));
    assert_eq!(
        *dropped_on.lock().unwrap(),
        Some(std::thread::current().id())
    );
}

#[test]
fn shutdown_on_foreign_thread_leaks_local_tasks_and_cancels_their_handles() {
    let (scheduler, _) = scheduler();
    let dropped = Arc::new(AtomicBool::new(false));
    let mut local = scheduler.spawn_local(DropFlag::pending_forever(&dropped));
    let send_dropped = Arc::new(AtomicBool::new(false));
    let mut send = scheduler.spawn(DropFlag::pending_forever(&send_dropped));
    let _ = scheduler.run_ready(16);
    let (scheduler, report) = on_other_thread(scheduler, |s| s.shutdown());
    assert_eq!(report.leaked, 1);
    assert_eq!(report.cancelled, 1);
    assert!(
        !dropped.load(Ordering::SeqCst),
        "a !Send future is never dropped abroad"
    );
    assert!(send_dropped.load(Ordering::SeqCst));
    for result in [poll_once(&mut local), poll_once(&mut send)] {
        match result {
            Poll::Ready(Err(err)) => {
                assert_eq!(err.cancel_reason(), Some(CancelReason::RuntimeShutdown));
            }
            other => panic!("expected a cancelled handle, got {other:?}"),
        }
    }
    assert_eq!(scheduler.live_tasks(), 0);
    assert_eq!(scheduler.live_local_tasks_on_current_thread(), 0);
}

#[test]
fn shutdown_on_owner_thread_drops_local_tasks() {
    let (scheduler, _) = scheduler();
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = scheduler.spawn_local(DropFlag::pending_forever(&dropped));
    let _ = scheduler.run_ready(16);
    let report = scheduler.shutdown();
    assert_eq!(report.cancelled, 1);
    assert_eq!(report.leaked, 0);
    assert!(dropped.load(Ordering::SeqCst));
    assert!(drive(&scheduler, handle).unwrap_err().is_cancelled());
}

#[test]
fn spawn_local_outside_worker_thread_is_a_clear_error() {
    assert_eq!(
        baton_task::try_spawn_local(async {}).unwrap_err(),
        ContextError::NoRuntime
    );
    let (scheduler, _) = scheduler();
    let guard = scheduler.enter();
    let handle = baton_task::try_spawn_local(async { 1 }).expect("entered on this thread");
    drop(guard);
    assert_eq!(drive(&scheduler, handle).unwrap(), 1);
}
