//! Spawning, joining, remote wakes, fairness and `yield_now`.

mod support;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use baton_task::{JoinHandle, Scheduler, yield_now};
use support::{Gate, drive, poll_once, scheduler};

#[test]
fn ten_thousand_tasks_spawned_and_joined_from_a_task() {
    let (scheduler, _) = scheduler();
    let root = scheduler.spawn(async {
        let handles: Vec<JoinHandle<u64>> = (0..10_000u64)
            .map(|i| baton_task::spawn(async move { i * 2 }))
            .collect();
        let mut sum = 0;
        for handle in handles {
            sum += handle.await.expect("tiny tasks complete");
        }
        sum
    });
    assert_eq!(
        drive(&scheduler, root).unwrap(),
        2 * (0..10_000u64).sum::<u64>()
    );
    let counts = scheduler.counts();
    assert_eq!(counts.spawned, 10_001);
    assert_eq!(counts.completed, 10_001);
    assert_eq!(counts.live, 0);
    assert!(!scheduler.has_live_tasks());
}

#[test]
fn tasks_spawned_from_four_foreign_threads_all_run() {
    let (scheduler, unpark) = scheduler();
    let spawner = scheduler.spawner();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let spawner = spawner.clone();
            std::thread::spawn(move || {
                (0..500u64)
                    .map(|i| spawner.spawn(async move { t * 1000 + i }))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let handles: Vec<JoinHandle<u64>> = threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect();
    assert!(unpark.count() >= 1, "injected spawns unpark the worker");
    assert_eq!(scheduler.live_tasks(), 2000);
    let mut sum = 0;
    for handle in handles {
        sum += drive(&scheduler, handle).unwrap();
    }
    let expected: u64 = (0..4u64)
        .flat_map(|t| (0..500u64).map(move |i| t * 1000 + i))
        .sum();
    assert_eq!(sum, expected);
    assert_eq!(scheduler.counts().completed, 2000);
}

#[test]
fn wake_from_foreign_thread_unparks_and_repolls() {
    let (scheduler, unpark) = scheduler();
    let gate = Gate::new();
    let handle = scheduler.spawn(gate.behind("done"));
    let _ = scheduler.run_ready(16);
    assert_eq!(gate.polls(), 1);
    assert!(!scheduler.has_ready_for_current_thread());
    let before = unpark.count();
    gate.release_from_another_thread();
    assert_eq!(
        unpark.count(),
        before + 1,
        "a remote wake unparks exactly once"
    );
    assert!(scheduler.has_ready_for_current_thread());
    let report = scheduler.run_ready(16);
    assert_eq!(report.polled, 1);
    assert_eq!(drive(&scheduler, handle).unwrap(), "done");
}

#[test]
fn same_thread_wake_does_not_unpark() {
    let (scheduler, unpark) = scheduler();
    let handle = scheduler.spawn(async {
        for _ in 0..10 {
            yield_now().await;
        }
    });
    drive(&scheduler, handle).unwrap();
    assert_eq!(unpark.count(), 0);
}

#[test]
fn yield_now_lets_other_ready_tasks_run_first() {
    let (scheduler, _) = scheduler();
    let log = Rc::new(RefCell::new(Vec::new()));
    let first = scheduler.spawn_local({
        let log = Rc::clone(&log);
        async move {
            log.borrow_mut().push("a1");
            yield_now().await;
            log.borrow_mut().push("a2");
        }
    });
    let second = scheduler.spawn_local({
        let log = Rc::clone(&log);
        async move { log.borrow_mut().push("b1") }
    });
    drive(&scheduler, first).unwrap();
    drive(&scheduler, second).unwrap();
    assert_eq!(*log.borrow(), ["a1", "b1", "a2"]);
}

#[test]
fn yield_now_returns_pending_once_and_wakes_itself() {
    let woken = Arc::new(AtomicUsize::new(0));
    struct CountWake(Arc<AtomicUsize>);
    impl std::task::Wake for CountWake {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let waker = std::task::Waker::from(Arc::new(CountWake(Arc::clone(&woken))));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(yield_now());
    assert!(future.as_mut().poll(&mut cx).is_pending());
    assert_eq!(woken.load(Ordering::SeqCst), 1);
    assert!(future.as_mut().poll(&mut cx).is_ready());
}

#[test]
fn self_waking_local_task_does_not_starve_injected_task() {
    let (scheduler, _) = scheduler();
    let spins = Rc::new(std::cell::Cell::new(0u64));
    let spinner = scheduler.spawn_local({
        let spins = Rc::clone(&spins);
        async move {
            loop {
                spins.set(spins.get() + 1);
                yield_now().await;
            }
        }
    });
    let _ = scheduler.run_ready(8);
    let spawner = scheduler.spawner();
    let mut injected = std::thread::spawn(move || spawner.spawn(async { 42 }))
        .join()
        .unwrap();
    let mut calls = 0;
    let value = loop {
        let _ = scheduler.run_ready(8);
        calls += 1;
        if let Poll::Ready(value) = poll_once(&mut injected) {
            break value.unwrap();
        }
        assert!(
            calls < 3,
            "the injected task ran within two run_ready calls"
        );
    };
    assert_eq!(value, 42);
    let before = spins.get();
    let _ = scheduler.run_ready(8);
    assert!(
        spins.get() > before,
        "the self-waking task keeps progressing too"
    );
    abort_to_the_end(&scheduler, &spinner);
}

/// Aborts a self-waking task and runs the scheduler once more, asserting that it finished.
fn abort_to_the_end<T>(scheduler: &Scheduler, spinner: &JoinHandle<T>) {
    spinner.abort();
    let _ = scheduler.run_ready(8);
    assert!(spinner.is_finished());
}

#[test]
fn self_waking_send_task_does_not_starve_local_task() {
    let (scheduler, _) = scheduler();
    let spinner = scheduler.spawn(async {
        loop {
            yield_now().await;
        }
    });
    let _ = scheduler.run_ready(8);
    let mut local = scheduler.spawn_local(async { Rc::new(5) });
    let _ = scheduler.run_ready(4);
    match poll_once(&mut local) {
        Poll::Ready(value) => assert_eq!(*value.unwrap(), 5),
        Poll::Pending => panic!("the local task ran within one run_ready call"),
    }
    abort_to_the_end(&scheduler, &spinner);
}

#[test]
fn run_ready_respects_its_budget() {
    let (scheduler, _) = scheduler();
    let handles: Vec<_> = (0..10).map(|i| scheduler.spawn(async move { i })).collect();
    let report = scheduler.run_ready(4);
    assert_eq!(report.polled, 4);
    assert!(report.more_ready);
    let report = scheduler.run_ready(100);
    assert_eq!(report.polled, 6);
    assert!(!report.more_ready);
    assert!(handles.iter().all(JoinHandle::is_finished));
}

#[test]
fn join_handle_awaited_by_another_task_is_woken() {
    let (scheduler, _) = scheduler();
    let gate = Gate::new();
    let inner = scheduler.spawn(gate.behind(9));
    let outer = scheduler.spawn(async move { inner.await.unwrap() + 1 });
    let _ = scheduler.run_ready(16);
    assert!(!outer.is_finished());
    gate.release();
    assert_eq!(drive(&scheduler, outer).unwrap(), 10);
}

#[test]
fn handles_and_spawners_cross_threads() {
    fn assert_send<T: Send>() {}
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send::<baton_task::Scheduler>();
    assert_send_sync::<baton_task::Spawner>();
    assert_send_sync::<JoinHandle<u8>>();
    assert_send_sync::<baton_task::JoinError>();
    assert_send_sync::<std::task::Waker>();
}

#[test]
fn wake_from_a_thread_local_destructor_is_delivered() {
    struct WakeOnDrop(std::cell::RefCell<Option<std::task::Waker>>);
    impl Drop for WakeOnDrop {
        fn drop(&mut self) {
            if let Some(waker) = self.0.borrow_mut().take() {
                waker.wake();
            }
        }
    }
    thread_local! {
        static PARKED: WakeOnDrop = const { WakeOnDrop(std::cell::RefCell::new(None)) };
    }
    let (scheduler, unpark) = scheduler();
    let gate = Gate::new();
    let handle = scheduler.spawn(gate.wait());
    let _ = scheduler.run_ready(4);
    let waker = gate.take_waker().expect("the task parked its waker");
    gate.open_without_waking();
    std::thread::spawn(move || PARKED.with(|parked| *parked.0.borrow_mut() = Some(waker)))
        .join()
        .unwrap();
    assert_eq!(unpark.count(), 1);
    drive(&scheduler, handle).unwrap();
}
