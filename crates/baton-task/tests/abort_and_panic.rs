//! Abort, panic capture, panicking destructors (T4, T5, T7).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use baton_task::CancelReason;
use support::{DropFlag, Gate, drive, poll_once, scheduler};

struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("destructor panics on purpose");
    }
}

#[test]
fn abort_before_first_poll_never_polls() {
    let (scheduler, _) = scheduler();
    let polled = Arc::new(AtomicBool::new(false));
    let handle = scheduler.spawn({
        let polled = Arc::clone(&polled);
        async move { polled.store(true, Ordering::SeqCst) }
    });
    handle.abort();
    let err = drive(&scheduler, handle).unwrap_err();
    assert!(err.is_cancelled());
    assert_eq!(err.cancel_reason(), Some(CancelReason::Aborted));
    assert!(!polled.load(Ordering::SeqCst));
    assert_eq!(scheduler.counts().cancelled, 1);
    assert_eq!(scheduler.live_tasks(), 0);
}

#[test]
fn abort_before_drain_of_injected_task_never_polls() {
    let (scheduler, _) = scheduler();
    let polled = Arc::new(AtomicBool::new(false));
    let spawner = scheduler.spawner();
    let handle = std::thread::spawn({
        let polled = Arc::clone(&polled);
        move || spawner.spawn(async move { polled.store(true, Ordering::SeqCst) })
    })
    .join()
    .unwrap();
    handle.abort();
    assert!(drive(&scheduler, handle).unwrap_err().is_cancelled());
    assert!(!polled.load(Ordering::SeqCst));
}

#[test]
fn abort_while_pending_drops_the_future() {
    let (scheduler, unpark) = scheduler();
    let dropped = Arc::new(AtomicBool::new(false));
    let gate = Gate::new();
    let handle = scheduler.spawn({
        let flag = DropFlag(Arc::clone(&dropped));
        let gate = Arc::clone(&gate);
        async move {
            let _flag = flag;
            gate.wait().await;
        }
    });
    let _ = scheduler.run_ready(16);
    assert_eq!(gate.polls(), 1);
    let handle = std::thread::spawn(move || {
        handle.abort();
        handle
    })
    .join()
    .unwrap();
    assert_eq!(unpark.count(), 1, "a remote abort unparks the worker");
    let _ = scheduler.run_ready(16);
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(gate.polls(), 1, "an aborted task is not polled again");
    let err = drive(&scheduler, handle).unwrap_err();
    assert_eq!(err.cancel_reason(), Some(CancelReason::Aborted));
    assert_eq!(
        err.to_string(),
        "task was cancelled: it was aborted through its JoinHandle"
    );
}

#[test]
fn abort_during_poll_cancels_when_the_poll_returns() {
    let (scheduler, _) = scheduler();
    let slot = Arc::new(std::sync::Mutex::new(None::<baton_task::JoinHandle<()>>));
    let handle = scheduler.spawn({
        let slot = Arc::clone(&slot);
        async move {
            if let Some(me) = slot.lock().unwrap().take() {
                me.abort();
            }
            std::future::pending::<()>().await;
        }
    });
    let watcher = scheduler.spawner();
    *slot.lock().unwrap() = Some(handle);
    let _ = scheduler.run_ready(16);
    assert_eq!(watcher.counts().cancelled, 1);
    assert_eq!(watcher.counts().live, 0);
}

#[test]
fn abort_after_completion_still_returns_the_output() {
    let (scheduler, _) = scheduler();
    let mut handle = scheduler.spawn(async { 17 });
    let _ = scheduler.run_ready(16);
    assert!(handle.is_finished());
    handle.abort();
    assert!(matches!(poll_once(&mut handle), Poll::Ready(Ok(17))));
    assert_eq!(scheduler.counts().completed, 1);
    assert_eq!(scheduler.counts().cancelled, 0);
}

#[test]
fn panicking_task_is_reported_with_its_payload() {
    let (scheduler, _) = scheduler();
    let handle = scheduler.spawn(async {
        let n = std::hint::black_box(7);
        panic!("boom {n}");
    });
    let after = scheduler.spawn(async { "worker survived" });
    let err = drive(&scheduler, handle).unwrap_err();
    assert!(err.is_panic());
    assert!(!err.is_cancelled());
    assert_eq!(err.to_string(), "task panicked: boom 7");
    let payload = err.into_panic();
    assert_eq!(payload.downcast_ref::<String>().unwrap(), "boom 7");
    assert_eq!(drive(&scheduler, after).unwrap(), "worker survived");
    assert_eq!(scheduler.counts().panicked, 1);
}

#[test]
fn non_string_panic_payload_is_retrievable() {
    let (scheduler, _) = scheduler();
    let handle = scheduler.spawn(async {
        std::panic::panic_any(42u32);
    });
    let err = drive(&scheduler, handle).unwrap_err();
    assert!(err.to_string().contains("non-string panic payload"));
    assert_eq!(*err.into_panic().downcast::<u32>().unwrap(), 42);
}

/// A future that is ready at once and whose own destructor panics.
struct ReadyThenBomb;

impl std::future::Future for ReadyThenBomb {
    type Output = u8;

    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> Poll<u8> {
        Poll::Ready(5)
    }
}

impl Drop for ReadyThenBomb {
    fn drop(&mut self) {
        panic!("future destructor panics on purpose");
    }
}

#[test]
fn panicking_future_destructor_after_completion_is_contained() {
    let (scheduler, _) = scheduler();
    let handle = scheduler.spawn(ReadyThenBomb);
    assert_eq!(drive(&scheduler, handle).unwrap(), 5);
    assert_eq!(scheduler.counts().completed, 1);
}

#[test]
fn panic_while_dropping_locals_at_completion_is_a_task_panic() {
    let (scheduler, _) = scheduler();
    let handle = scheduler.spawn(async {
        let _bomb = PanicOnDrop;
        5
    });
    assert!(drive(&scheduler, handle).unwrap_err().is_panic());
}

#[test]
fn panicking_destructor_of_aborted_task_is_contained() {
    let (scheduler, _) = scheduler();
    let handle = scheduler.spawn(async {
        let _bomb = PanicOnDrop;
        std::future::pending::<()>().await;
    });
    let _ = scheduler.run_ready(16);
    handle.abort();
    assert!(drive(&scheduler, handle).unwrap_err().is_cancelled());
    let next = scheduler.spawn(async { 1 });
    assert_eq!(drive(&scheduler, next).unwrap(), 1);
}

#[test]
fn panicking_output_destructor_of_detached_task_is_contained() {
    let (scheduler, _) = scheduler();
    drop(scheduler.spawn(async { PanicOnDrop }));
    let report = scheduler.run_ready(16);
    assert_eq!(report.polled, 1);
    assert_eq!(scheduler.counts().completed, 1);
}

#[test]
fn panicking_destructors_during_shutdown_are_contained() {
    let (scheduler, _) = scheduler();
    let handles: Vec<_> = (0..3)
        .map(|_| {
            scheduler.spawn(async {
                let _bomb = PanicOnDrop;
                std::future::pending::<()>().await;
            })
        })
        .collect();
    let _ = scheduler.run_ready(16);
    let report = scheduler.shutdown();
    assert_eq!(report.cancelled, 3);
    assert!(handles.iter().all(|h| h.is_finished()));
}

#[test]
fn scheduler_dropped_during_unwinding_leaks_instead_of_double_panicking() {
    let (scheduler, _) = scheduler();
    let handle = scheduler.spawn(async {
        let _bomb = PanicOnDrop;
        std::future::pending::<()>().await;
    });
    let _ = scheduler.run_ready(16);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _owned = scheduler;
        panic!("worker panics while holding the scheduler");
    }));
    assert!(result.is_err());
    let mut handle = handle;
    assert!(matches!(poll_once(&mut handle), Poll::Ready(Err(ref e)) if e.is_cancelled()));
}
