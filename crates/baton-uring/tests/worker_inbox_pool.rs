//! The completion inbox with a real pool: blocking jobs travel through the pool's threads and
//! their tasks receive the decoded values, a migratable wait settles wherever the worker runs,
//! a quarantined job outliving its bound is reported without waiting for it, and a thousand
//! jobs from foreign spawners all settle exactly once.

mod worker_support;

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use baton_cancel::QuarantineBound;
use baton_completion::{Decoder, PreparedOperation, WaitError, from_fn};
use web_time::Instant;
use worker_support::inbox::{
    PoolFixture, interruptible_job, kind, migratable_job, pool_fixture, register_prepared,
    shut_down_drained, wait_for, worker_with_default_pool, worker_with_pool,
};
use worker_support::{deadline, run_to_completion};

#[test]
fn a_blocking_job_travels_through_the_pool_and_the_task_receives_the_decoded_value() {
    pool_fixture!(let PoolFixture { worker, pool, lease, registrar, .. } = worker_with_pool(2));
    let join = {
        let _entered = worker.enter();
        baton_task::spawn_local(async move {
            // A `!Send` decoder: it runs on this thread, the worker's.
            let prepared = interruptible_job(
                || {
                    std::thread::sleep(Duration::from_millis(10));
                    20_u32
                },
                Decoder::new(|n: u32| Rc::new(n * 2 + 2)),
            );
            let (key, submission) = register_prepared(&registrar, prepared);
            lease.submit(submission).expect("the pool accepts the job");
            let value: Rc<u32> = wait_for(key).await.expect("the job's decoded value");
            *value
        })
    };
    assert_eq!(run_to_completion(&worker, join).expect("task finished"), 42);
    let metrics = worker.metrics();
    assert_eq!(metrics.inbox.settled, 1);
    assert_eq!(metrics.inbox.stale + metrics.inbox.foreign, 0);
    assert_eq!(metrics.inbox.traffic.accepted, 1);
    assert_eq!(metrics.waits, 0, "the consumed wait left the table");
    shut_down_drained(&pool, worker);
}

#[test]
fn a_migratable_wait_settles_and_is_consumed_wherever_the_worker_runs() {
    pool_fixture!(let PoolFixture { worker, handle, pool, lease, registrar } = worker_with_pool(1));
    let (release, released) = std::sync::mpsc::channel::<()>();
    let join = handle.spawn(migratable_job(registrar, lease, move || {
        released.recv().expect("the test releases the job");
        41_u32
    }));
    let registered = worker.run_until(&mut || worker.metrics().waits == 1, Some(deadline()));
    assert_eq!(registered, baton_uring::RunUntil::Satisfied);
    assert!(
        !worker.has_local_tasks_on_current_thread(),
        "a migratable wait does not bind the worker to this thread"
    );
    let (worker, value) = std::thread::spawn(move || {
        release.send(()).expect("the job waits for the release");
        let value = run_to_completion(&worker, join).expect("task finished");
        (worker, value)
    })
    .join()
    .expect("other thread");
    assert_eq!(value, 42);
    let metrics = worker.metrics();
    assert_eq!((metrics.inbox.settled, metrics.inbox.held), (1, 0));
    assert_eq!(metrics.waits, 0);
    shut_down_drained(&pool, worker);
}

#[test]
fn a_quarantined_job_outliving_its_bound_is_reported_without_waiting_for_it() {
    pool_fixture!(
        let PoolFixture { worker, pool, lease, registrar, .. } = worker_with_default_pool()
    );
    let (release, released) = std::sync::mpsc::channel::<()>();
    let bound = QuarantineBound::Deadline(Instant::now() + Duration::from_millis(50));
    let join = {
        let _entered = worker.enter();
        baton_task::spawn_local(async move {
            let prepared = PreparedOperation::quarantined_blocking(
                kind(),
                from_fn(move || released.recv().is_ok()),
                Decoder::<bool>::identity(),
                bound,
            );
            let (key, submission) = register_prepared(&registrar, prepared);
            lease.submit(submission).expect("the pool accepts the job");
            wait_for::<bool>(key).await
        })
    };
    // The job never finishes on its own: only the bound check, and the park ending for it
    // long before the run's own deadline, can resolve the wait.
    let run_deadline = deadline();
    let _ = worker.run_until(&mut || join.is_finished(), Some(run_deadline));
    assert!(
        Instant::now() < run_deadline,
        "the park did not end for the bound"
    );
    let outcome = run_to_completion(&worker, join).expect("task finished");
    assert_eq!(outcome, Err(WaitError::BoundExceeded { bound }));
    assert_eq!(worker.metrics().inbox.bounds_exceeded, 1);
    release.send(()).expect("the job still runs");
    let late = worker.run_until(&mut || worker.metrics().inbox.stale == 1, Some(deadline()));
    assert_eq!(
        late,
        baton_uring::RunUntil::Satisfied,
        "the late completion is stale"
    );
    assert_eq!(worker.metrics().inbox.settled, 0);
    shut_down_drained(&pool, worker);
}

#[test]
fn a_thousand_blocking_jobs_from_foreign_spawners_all_settle_exactly_once() {
    pool_fixture!(let PoolFixture { worker, handle, pool, lease, .. } = worker_with_pool(4));
    let finished = Arc::new(AtomicUsize::new(0));
    let runner = {
        let finished = Arc::clone(&finished);
        std::thread::spawn(move || {
            let outcome = worker.run_until(
                &mut || finished.load(Ordering::Acquire) == 1000,
                Some(deadline()),
            );
            (worker, outcome)
        })
    };
    let spawners: Vec<_> = (0..4u32)
        .map(|t| {
            let (handle, lease, finished) =
                (handle.clone(), Arc::clone(&lease), Arc::clone(&finished));
            std::thread::spawn(move || {
                (0..250u32)
                    .map(|i| {
                        let value = t * 1000 + i;
                        let (registrar, lease, finished) = (
                            handle.registrar(),
                            Arc::clone(&lease),
                            Arc::clone(&finished),
                        );
                        handle.spawn(async move {
                            let got = migratable_job(registrar, lease, move || value).await;
                            finished.fetch_add(1, Ordering::AcqRel);
                            (value, got)
                        })
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let (joins, worker) = worker_support::join_spawners_and_runner(spawners, runner);
    for join in joins {
        match worker_support::poll_once(join) {
            Poll::Ready(Ok((value, got))) => assert_eq!(got, value + 1, "its own value"),
            other => panic!("every task got its value, got {other:?}"),
        }
    }
    let metrics = worker.metrics();
    assert_eq!(metrics.inbox.settled, 1000);
    assert_eq!(metrics.inbox.stale + metrics.inbox.foreign, 0);
    assert_eq!(metrics.waits, 0);
    let snapshot = shut_down_drained(&pool, worker);
    assert!(snapshot.adds_up());
}
