//! Tests of `worker/listener.rs`.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use baton_completion::RuntimeId;
use baton_task::Unpark;

use crate::worker::listener::ListenerCell;
use crate::worker::{Worker, WorkerConfig, WorkerSetupError};

/// Counts how often it was told.
#[derive(Debug, Default)]
struct Counter(AtomicUsize);

impl Counter {
    fn told(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

impl Unpark for Counter {
    fn unpark(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

fn worker() -> Option<Worker> {
    let runtime = RuntimeId::allocate().expect("runtime ids are not exhausted in a test");
    match Worker::new(WorkerConfig::new(), runtime) {
        Ok(worker) => Some(worker),
        Err(WorkerSetupError::Ring(err)) => {
            eprintln!("SKIPPED: io_uring is unavailable here: {err}");
            None
        }
        Err(err) => panic!("unexpected set-up error: {err}"),
    }
}

/// A worker with a counting wake listener installed.
fn worker_with_listener() -> Option<(Worker, Arc<Counter>)> {
    let worker = worker()?;
    let listener = Arc::new(Counter::default());
    assert!(
        worker
            .set_wake_listener(Arc::clone(&listener) as Arc<dyn Unpark>)
            .is_ok()
    );
    Some((worker, listener))
}

fn shut_down(worker: Worker) {
    let _report = worker.shutdown(Some(Instant::now() + Duration::from_secs(10)));
}

#[test]
fn second_listener_is_handed_back_and_the_first_stays() {
    let cell = ListenerCell::default();
    let first = Arc::new(Counter::default());
    let second = Arc::new(Counter::default());
    assert!(cell.set(Arc::clone(&first) as Arc<dyn Unpark>).is_ok());
    assert!(cell.set(Arc::clone(&second) as Arc<dyn Unpark>).is_err());
    cell.notify();
    assert_eq!((first.told(), second.told()), (1, 0));
}

#[test]
fn remote_spawn_and_handle_unpark_reach_the_wake_listener_but_local_spawn_does_not() {
    let Some((worker, listener)) = worker_with_listener() else {
        return;
    };
    {
        // Rule W11: a spawn on the thread that has the worker entered is no outside event.
        let _entered = worker.enter();
        drop(worker.handle().spawn(async {}));
    }
    assert_eq!(listener.told(), 0);
    let handle = worker.handle();
    std::thread::spawn(move || drop(handle.spawn(async {})))
        .join()
        .expect("the spawning thread");
    assert_eq!(listener.told(), 1, "a remote spawn");
    worker.handle().unpark();
    assert_eq!(listener.told(), 2, "WorkerHandle::unpark");
    shut_down(worker);
}

#[test]
fn operation_registered_from_another_thread_reaches_the_wake_listener() {
    let Some((worker, listener)) = worker_with_listener() else {
        return;
    };
    let driver = worker.handle().driver().clone();
    let mut nop = std::thread::spawn(move || {
        // The first poll on a thread without the driver entered registers through the
        // driver's mailbox (forward rule F1): an outside event for a resting worker.
        let mut nop = Box::pin(crate::ops::nop().bind(&driver));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(nop.as_mut().poll(&mut cx).is_pending());
        nop
    })
    .join()
    .expect("the registering thread");
    assert_eq!(listener.told(), 1, "a mailbox message from another thread");
    assert!(
        !worker.is_quiescent(),
        "an unapplied mailbox message (a registered nop) is work"
    );
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let deadline = Instant::now() + Duration::from_secs(10);
    let result = loop {
        let _turn = worker.turn(crate::driver::Park::Wait(Some(deadline)));
        if let std::task::Poll::Ready(result) = nop.as_mut().poll(&mut cx) {
            break result;
        }
        assert!(
            Instant::now() < deadline,
            "the forwarded nop never completed"
        );
    };
    assert!(result.is_ok(), "{result:?}");
    shut_down(worker);
}

#[test]
fn quiescence_and_ready_work_are_read_without_entering_the_worker() {
    let Some(worker) = worker() else { return };
    assert!(worker.is_quiescent());
    assert!(!worker.has_ready_work());
    let handle = worker.handle();
    std::thread::spawn(move || drop(handle.spawn(async {})))
        .join()
        .expect("the spawning thread");
    assert!(!worker.is_quiescent(), "a live injected task");
    assert!(
        worker.has_ready_work(),
        "the injected task is runnable here"
    );
    let _turn = worker.turn(crate::driver::Park::Poll);
    assert!(worker.is_quiescent());
    shut_down(worker);
}
