//! The worker's task loop: foreign spawners, real ring I/O awaited by tasks, fairness between a
//! self-waking task, a timer and injected work, parking ended by every wake-up source, and a
//! worker that migrates between threads.

mod worker_support;

use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use baton_completion::{DeliveryOutcome, ExternalCompletion, RuntimeId};
use baton_uring::{Park, RunUntil, Worker, WorkerConfig, ops};
use web_time::Instant;
use worker_support::{
    BOUND, deadline, poll_once, run_to_completion, serial, serial_worker, worker_with,
};

#[test]
fn spawn_from_four_foreign_threads_while_the_worker_runs_on_another_thread() {
    serial_worker!(worker);
    let handle = worker.handle();
    let ran = Arc::new(AtomicUsize::new(0));
    let runner = {
        let ran = Arc::clone(&ran);
        std::thread::spawn(move || {
            let outcome =
                worker.run_until(&mut || ran.load(Ordering::Acquire) == 400, Some(deadline()));
            (worker, outcome)
        })
    };
    let spawners: Vec<_> = (0..4)
        .map(|t| {
            let handle = handle.clone();
            let ran = Arc::clone(&ran);
            std::thread::spawn(move || {
                (0..100)
                    .map(|i| {
                        let ran = Arc::clone(&ran);
                        handle.spawn(async move {
                            ran.fetch_add(1, Ordering::AcqRel);
                            t * 100 + i
                        })
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let (joins, worker) = worker_support::join_spawners_and_runner(spawners, runner);
    let mut outputs: Vec<usize> = joins
        .into_iter()
        .map(|join| match poll_once(join) {
            Poll::Ready(Ok(value)) => value,
            other => panic!("every task finished with its value, got {other:?}"),
        })
        .collect();
    outputs.sort_unstable();
    assert_eq!(outputs, (0..400).collect::<Vec<_>>());
    let metrics = worker.metrics();
    assert_eq!(metrics.tasks.completed, 400);
    assert_eq!(metrics.tasks.live, 0);
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

#[test]
fn a_task_awaits_a_real_ring_read() {
    serial_worker!(worker);
    let path = std::env::temp_dir().join(format!("baton-worker-read-{}", std::process::id()));
    std::fs::write(&path, b"hello worker").expect("write temp file");
    let fd = Arc::new(OwnedFd::from(std::fs::File::open(&path).expect("open")));
    let join = worker.handle().spawn({
        let fd = Arc::clone(&fd);
        async move {
            let (result, buf) = ops::read_at(fd, Vec::with_capacity(64), 6).await;
            let n = result.expect("read succeeds");
            buf[..n].to_vec()
        }
    });
    let bytes = run_to_completion(&worker, join).expect("task finished");
    assert_eq!(bytes, b"worker");
    assert!(worker.metrics().driver.completed >= 1);
    assert!(worker.shutdown(Some(deadline())).is_clean());
    assert_eq!(Arc::strong_count(&fd), 1, "the driver released the fd");
    std::fs::remove_file(&path).expect("remove temp file");
}

#[test]
fn a_self_waking_task_does_not_starve_a_sleep_or_an_injected_task() {
    let _serial = serial();
    let budget = 16;
    let Some(worker) = worker_with(WorkerConfig::new().tasks_per_turn(budget)) else {
        return;
    };
    let handle = worker.handle();
    let stop = Arc::new(AtomicBool::new(false));
    let spins = Arc::new(AtomicUsize::new(0));
    let spinner = handle.spawn({
        let (stop, spins) = (Arc::clone(&stop), Arc::clone(&spins));
        async move {
            while !stop.load(Ordering::Acquire) {
                spins.fetch_add(1, Ordering::Relaxed);
                baton_task::yield_now().await;
            }
        }
    });
    let slept = Arc::new(AtomicBool::new(false));
    let sleeper = handle.spawn({
        let slept = Arc::clone(&slept);
        async move {
            ops::sleep(Duration::from_millis(30))
                .await
                .expect("sleep completes");
            slept.store(true, Ordering::Release);
        }
    });
    let injected = Arc::new(AtomicBool::new(false));
    let injector = {
        let (handle, injected) = (handle.clone(), Arc::clone(&injected));
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            handle.spawn(async move { injected.store(true, Ordering::Release) })
        })
    };
    let deadline = deadline();
    let mut turns = 0usize;
    while !(slept.load(Ordering::Acquire) && injected.load(Ordering::Acquire)) {
        assert!(Instant::now() < deadline, "starved after {turns} turns");
        let turn = worker.turn(Park::Poll);
        // Worker rule W1: a turn polls at most its budget before I/O and timers get a look
        // (twice the budget when the turn parks and polls again).
        assert!(
            turn.tasks_polled <= 2 * budget,
            "turn polled {}",
            turn.tasks_polled
        );
        turns += 1;
    }
    assert!(
        spins.load(Ordering::Relaxed) > 0,
        "the self-waking task ran too"
    );
    stop.store(true, Ordering::Release);
    let injected_join = injector.join().expect("injector thread");
    run_to_completion(&worker, spinner).expect("spinner stops");
    run_to_completion(&worker, sleeper).expect("sleeper finished");
    run_to_completion(&worker, injected_join).expect("injected task finished");
    assert!(worker.shutdown(Some(deadline)).is_clean());
}

/// Lets pending unpark tokens (set-up, earlier deliveries) be consumed, so the next park
/// really waits.
fn settle_tokens(worker: &Worker) {
    for _ in 0..3 {
        let _ = worker.turn(Park::Wait(Some(Instant::now() + Duration::from_millis(5))));
    }
}

/// Parks the worker once; `wake` runs on another thread after a pause and must end the park.
/// Returns the turn report.
fn park_until_woken(
    worker: &Worker,
    wake: impl FnOnce() + Send + 'static,
) -> baton_uring::WorkerTurn {
    settle_tokens(worker);
    let woke = Arc::new(AtomicBool::new(false));
    let waker = {
        let woke = Arc::clone(&woke);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            woke.store(true, Ordering::Release);
            wake();
        })
    };
    let deadline = deadline();
    let turn = worker.turn(Park::Wait(Some(deadline)));
    assert!(
        Instant::now() < deadline,
        "the park lasted until its {BOUND:?} deadline"
    );
    assert!(turn.parked, "nothing was runnable, so the turn parked");
    assert!(
        woke.load(Ordering::Acquire),
        "the park ended before anyone woke it"
    );
    waker.join().expect("waking thread");
    turn
}

#[test]
fn park_is_ended_by_a_foreign_unpark() {
    serial_worker!(worker);
    let handle = worker.handle();
    let turn = park_until_woken(&worker, move || handle.unpark());
    assert!(turn.unparked);
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

#[test]
fn park_is_ended_by_an_inbox_delivery() {
    serial_worker!(worker);
    let sender = worker.handle().completion_sender();
    let turn = park_until_woken(&worker, move || {
        let outcome = sender.deliver(foreign_completion());
        assert_eq!(outcome, DeliveryOutcome::Delivered);
    });
    assert!(turn.unparked);
    assert_eq!(turn.dropped, 1, "the delivery was routed in the same turn");
    assert_eq!(worker.metrics().inbox.foreign, 1);
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

#[test]
fn park_is_ended_by_an_injected_spawn() {
    serial_worker!(worker);
    let handle = worker.handle();
    let ran = Arc::new(AtomicBool::new(false));
    let turn = park_until_woken(&worker, {
        let ran = Arc::clone(&ran);
        move || drop(handle.spawn(async move { ran.store(true, Ordering::Release) }))
    });
    assert!(turn.tasks_polled >= 1);
    assert!(
        ran.load(Ordering::Acquire),
        "the injected task ran in the turn it woke"
    );
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

/// A completion of a runtime that is not the worker's.
fn foreign_completion() -> ExternalCompletion {
    let other = RuntimeId::allocate().expect("runtime id");
    let allocator = baton_completion::IdentityAllocator::new(other);
    let slot = allocator.allocate_wait().expect("wait id");
    ExternalCompletion::new(
        baton_completion::CompletionIdentity {
            runtime_id: other,
            wait_id: slot.wait_id(),
            generation: slot.generation(),
            operation_id: allocator.allocate_operation().expect("operation id"),
            kind: baton_completion::CompletionKind::try_from_raw(1).expect("non-zero kind"),
        },
        Ok(Box::new(7_u32)),
    )
}

#[test]
fn the_worker_moved_to_another_thread_between_turns_keeps_working() {
    serial_worker!(worker);
    let join = worker.handle().spawn(async {
        ops::nop().await.expect("nop");
        ops::sleep(Duration::from_millis(20)).await.expect("sleep");
        ops::nop().await.expect("nop");
        7
    });
    let mut worker = worker;
    for _ in 0..4 {
        worker = std::thread::spawn(move || {
            let _ = worker.turn(Park::Wait(Some(Instant::now() + Duration::from_millis(5))));
            worker
        })
        .join()
        .expect("turning thread");
    }
    let finisher = std::thread::spawn(move || {
        let value = run_to_completion(&worker, join).expect("task finished");
        (worker, value)
    });
    let (worker, value) = finisher.join().expect("finishing thread");
    assert_eq!(value, 7);
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

#[test]
fn a_turn_from_inside_a_task_is_refused() {
    serial_worker!(worker);
    let worker = Rc::new(worker);
    let join = {
        let _entered = worker.enter();
        let inner = Rc::clone(&worker);
        baton_task::spawn_local(async move {
            let turn = inner.turn(Park::Poll);
            let run = inner.run_until(&mut || false, None);
            (turn.reentered, run)
        })
    };
    assert_eq!(
        run_to_completion(&worker, join).expect("task finished"),
        (true, RunUntil::Reentered)
    );
    let worker = Rc::try_unwrap(worker).expect("the finished task released its reference");
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

#[test]
fn quiescence_follows_live_tasks_and_timers() {
    serial_worker!(worker);
    assert!(worker.is_quiescent());
    let join = worker
        .handle()
        .spawn(async { ops::sleep(Duration::from_millis(10)).await });
    assert!(!worker.is_quiescent(), "a live task");
    let _ = worker.turn(Park::Poll);
    assert!(!worker.is_quiescent(), "a live task with an armed timer");
    run_to_completion(&worker, join)
        .expect("task finished")
        .expect("sleep completes");
    assert!(worker.is_quiescent());
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

#[test]
fn the_worker_migrates_and_its_handle_is_shared_across_threads() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync + Clone>() {}
    send::<Worker>();
    send_sync::<baton_uring::WorkerHandle>();
}

#[test]
fn local_tasks_bind_the_worker_to_their_thread_and_enter_nests() {
    serial_worker!(worker);
    let join = {
        let _outer = worker.enter();
        let _inner = worker.enter();
        baton_task::spawn_local(async {
            let here = std::thread::current().id();
            ops::sleep(Duration::from_millis(5)).await.expect("sleep");
            here == std::thread::current().id()
        })
    };
    assert!(worker.has_local_tasks_on_current_thread());
    let worker = std::thread::spawn(move || {
        assert!(!worker.has_local_tasks_on_current_thread());
        for _ in 0..3 {
            let _ = worker.turn(Park::Wait(Some(Instant::now() + Duration::from_millis(10))));
        }
        worker
    })
    .join()
    .expect("other thread");
    assert!(
        !join.is_finished(),
        "a local task never runs on another thread"
    );
    assert!(run_to_completion(&worker, join).expect("task finished"));
    assert!(!worker.has_local_tasks_on_current_thread());
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

#[test]
fn park_is_ended_by_a_remote_wake_of_a_parked_task() {
    serial_worker!(worker);
    let slot: Arc<std::sync::Mutex<(bool, Option<std::task::Waker>)>> = Arc::default();
    let join = worker.handle().spawn({
        let slot = Arc::clone(&slot);
        std::future::poll_fn(move |cx| {
            let mut slot = slot.lock().expect("slot");
            if slot.0 {
                Poll::Ready(())
            } else {
                slot.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    });
    let _ = worker.turn(Park::Poll);
    assert!(
        slot.lock().expect("slot").1.is_some(),
        "the task parked its waker"
    );
    let turn = park_until_woken(&worker, {
        let slot = Arc::clone(&slot);
        move || {
            let waker = {
                let mut slot = slot.lock().expect("slot");
                slot.0 = true;
                slot.1.take()
            };
            waker.expect("the task's waker").wake();
        }
    });
    assert!(turn.tasks_polled >= 1);
    assert!(
        join.is_finished(),
        "the woken task ran in the turn its wake ended"
    );
    assert!(worker.shutdown(Some(deadline())).is_clean());
}
