//! The completion inbox: the full blocking-job path through a real pool, stale and foreign
//! completions counted and dropped, completions held for another thread's waits, the wait
//! context's errors, and `InboxClosed` after shutdown.

mod worker_support;

use std::future::poll_fn;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use baton_cancel::{HookOutcome, Interruptible, QuarantineBound};
use baton_completion::{
    BlockingPool, BlockingPoolBuilder, CancelOutcome, CompletionIdentity, CompletionKind, Decoder,
    DeliveryOutcome, ExecutorLease, ExecutorSnapshot, ExternalCompletion, IdentityAllocator,
    InterruptibleThreads, IoExecutor, PreparedOperation, Registrar, RuntimeId, SendDecoder,
    SendInterruptible, SendPreparedOperation, ShutdownReport, Submission, WaitError, WaitKey,
    from_fn,
};
use baton_uring::{
    DriverConfig, Park, WaitsError, WakerPanics, Worker, WorkerConfig, WorkerHandle,
    with_current_waits,
};
use web_time::Instant;
use worker_support::{deadline, run_here, run_to_completion, serial, worker, worker_with};

fn kind() -> CompletionKind {
    CompletionKind::try_from_raw(7).expect("non-zero kind")
}

fn hook() -> Interruptible {
    Interruptible::new("test", || Ok(HookOutcome::Reaped))
}

/// Issues, binds and splits a blocking job that returns `value` through `registrar`, and
/// registers its runtime half in the current thread's wait table of the entered worker.
fn register_job(registrar: &Registrar, value: u32) -> (WaitKey, Submission) {
    let identity = registrar.issue(kind()).expect("identity");
    let prepared = PreparedOperation::interruptible_blocking(
        kind(),
        from_fn(move || value),
        Decoder::new(|n: u32| n + 1),
        hook(),
    );
    let (half, submission) = registrar.bind(identity, prepared).expect("bind").split();
    let key = with_current_waits(|waits| waits.register(half))
        .expect("the worker is entered")
        .expect("the half belongs to this runtime");
    (key, submission)
}

/// The set-up of the tests that run blocking jobs through a real pool: a worker, its handle,
/// a pool attached to the worker's runtime (its lease) and the worker's registrar.
struct PoolFixture {
    worker: Worker,
    handle: WorkerHandle,
    pool: BlockingPool,
    lease: Arc<dyn ExecutorLease>,
    registrar: Registrar,
}

/// A [`PoolFixture`] whose pool has `threads` interruptible threads, or `None` (after a loud
/// `SKIPPED` line) when this machine cannot set up io_uring.
fn worker_with_pool(threads: InterruptibleThreads) -> Option<PoolFixture> {
    worker_with_pool_from(BlockingPool::builder().interruptible_threads(threads))
}

/// A [`PoolFixture`] whose pool is built from `builder`, or `None` (after a loud `SKIPPED`
/// line) when this machine cannot set up io_uring.
fn worker_with_pool_from(builder: BlockingPoolBuilder) -> Option<PoolFixture> {
    let worker = worker()?;
    let handle = worker.handle();
    let pool = builder.build().expect("pool");
    let lease = pool
        .attach_runtime(handle.runtime_id())
        .expect("attach the worker's runtime");
    let registrar = handle.registrar();
    Some(PoolFixture {
        worker,
        handle,
        pool,
        lease,
        registrar,
    })
}

/// The end of a [`PoolFixture`] test: shuts `pool` down, asserting it drained, then `worker`,
/// asserting it shut down cleanly; returns the pool's final counts for further checks.
fn shut_down_drained(pool: &BlockingPool, worker: Worker) -> ExecutorSnapshot {
    let report = pool.shutdown(deadline());
    assert!(
        matches!(report, ShutdownReport::Drained { .. }),
        "{report:?}"
    );
    assert!(worker.shutdown(Some(deadline())).is_clean());
    report.snapshot()
}

/// Enters `worker` and registers there a blocking job that returns `value` (see
/// [`register_job`]).
fn register_job_on(worker: &Worker, value: u32) -> (WaitKey, Submission) {
    let _entered = worker.enter();
    register_job(&worker.handle().registrar(), value)
}

/// The end of a test of one wait: polls `key` once on the entered worker, asserting it gives
/// `expected`, then shuts the worker down, asserting it shut down cleanly.
fn assert_wait_then_shut_down(
    worker: Worker,
    key: WaitKey,
    expected: Poll<Result<u32, WaitError>>,
) {
    {
        let _entered = worker.enter();
        assert_eq!(poll_wait(key), expected);
    }
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

/// The body of a task on the worker that runs `job` through the pool: issues and binds a
/// blocking job with a `+ 1` decoder, registers its wait as migratable, submits it to `lease`
/// and returns the decoded value.
async fn migratable_job<F>(registrar: Registrar, lease: Arc<dyn ExecutorLease>, job: F) -> u32
where
    F: FnOnce() -> u32 + Send + 'static,
{
    let identity = registrar.issue(kind()).expect("identity");
    let prepared = SendPreparedOperation::interruptible_blocking(
        kind(),
        from_fn(job),
        SendDecoder::new(|n: u32| n + 1),
        SendInterruptible::new("test", || Ok(HookOutcome::Reaped)),
    );
    let (half, submission) = registrar
        .bind_send(identity, prepared)
        .expect("bind")
        .split();
    let key = with_current_waits(|waits| waits.register_migratable(half))
        .expect("the task runs on the worker")
        .expect("the half belongs to this runtime");
    lease.submit(submission).expect("the pool accepts the job");
    poll_fn(|cx| {
        with_current_waits(|waits| waits.poll_wait::<u32>(key, cx))
            .expect("the task runs on the worker")
    })
    .await
    .expect("the job's decoded value")
}

/// Polls a wait once on the entered worker with a no-op waker.
fn poll_wait(key: WaitKey) -> Poll<Result<u32, WaitError>> {
    let mut cx = Context::from_waker(Waker::noop());
    with_current_waits(|waits| waits.poll_wait::<u32>(key, &mut cx)).expect("entered")
}

#[test]
fn a_blocking_job_travels_through_the_pool_and_the_task_receives_the_decoded_value() {
    let _serial = serial();
    let Some(PoolFixture {
        worker,
        pool,
        lease,
        registrar,
        ..
    }) = worker_with_pool(InterruptibleThreads::Fixed(2))
    else {
        return;
    };
    let join = {
        let _entered = worker.enter();
        baton_task::spawn_local(async move {
            let identity = registrar.issue(kind()).expect("identity");
            // A `!Send` decoder: it runs on this thread, the worker's.
            let prepared = PreparedOperation::interruptible_blocking(
                kind(),
                from_fn(|| {
                    std::thread::sleep(Duration::from_millis(10));
                    20_u32
                }),
                Decoder::new(|n: u32| Rc::new(n * 2 + 2)),
                hook(),
            );
            let (half, submission) = registrar.bind(identity, prepared).expect("bind").split();
            let key = with_current_waits(|waits| waits.register(half))
                .expect("the task runs on the worker")
                .expect("the half belongs to this runtime");
            lease.submit(submission).expect("the pool accepts the job");
            let value: Rc<u32> = poll_fn(|cx| {
                with_current_waits(|waits| waits.poll_wait::<Rc<u32>>(key, cx))
                    .expect("the task runs on the worker")
            })
            .await
            .expect("the job's decoded value");
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
fn a_completion_whose_wait_was_cancelled_is_counted_stale_and_dropped() {
    let _serial = serial();
    let Some(worker) = worker() else { return };
    let registrar = worker.handle().registrar();
    let (key, submission) = {
        let _entered = worker.enter();
        let (key, submission) = register_job(&registrar, 5);
        let cancelled = with_current_waits(|waits| waits.cancel(key)).expect("entered");
        assert!(matches!(cancelled, CancelOutcome::CancelledQueued { .. }));
        (key, submission)
    };
    run_here(submission);
    let turn = worker.turn(Park::Poll);
    assert_eq!((turn.settled, turn.dropped), (0, 1));
    let metrics = worker.metrics();
    assert_eq!((metrics.inbox.settled, metrics.inbox.stale), (0, 1));
    assert_wait_then_shut_down(worker, key, Poll::Ready(Err(WaitError::Cancelled)));
}

#[test]
fn another_runtimes_completion_is_refused_and_never_reaches_our_waiter() {
    let _serial = serial();
    let Some(worker) = worker() else { return };
    let (key, own_submission) = register_job_on(&worker, 1);
    // Another runtime's registrar delivering into our inbox, with a wait id and generation that
    // may well equal ours: the runtime id alone must keep it out.
    let other = IdentityAllocator::new(RuntimeId::allocate().expect("runtime id"));
    let foreign = Registrar::new(other, worker.handle().completion_sender());
    let identity = foreign.issue(kind()).expect("identity");
    let prepared = PreparedOperation::interruptible_blocking(
        kind(),
        from_fn(|| 99_u32),
        Decoder::identity(),
        hook(),
    );
    let (_half, submission) = foreign.bind(identity, prepared).expect("bind").split();
    let foreign_identity: CompletionIdentity = submission.identity();
    run_here(submission);
    let turn = worker.turn(Park::Poll);
    assert_eq!((turn.settled, turn.dropped), (0, 1));
    assert_eq!(worker.metrics().inbox.foreign, 1);
    {
        let _entered = worker.enter();
        assert_eq!(
            poll_wait(key),
            Poll::Pending,
            "our waiter saw nothing of it"
        );
        if foreign_identity.wait_id == key.wait_id {
            eprintln!("note: the foreign completion carried our wait id and generation");
        }
    }
    run_here(own_submission);
    let _ = worker.turn(Park::Poll);
    assert_wait_then_shut_down(worker, key, Poll::Ready(Ok(2)));
}

#[test]
fn a_completion_for_another_threads_wait_is_held_until_the_worker_returns_there() {
    let _serial = serial();
    let Some(worker) = worker() else { return };
    let (key, submission) = register_job_on(&worker, 10);
    assert!(
        worker.has_local_tasks_on_current_thread(),
        "a live wait binds the worker here"
    );
    run_here(submission);
    let worker = std::thread::spawn(move || {
        assert!(!worker.has_local_tasks_on_current_thread());
        let turn = worker.turn(Park::Poll);
        assert_eq!((turn.settled, turn.dropped), (0, 0));
        assert_eq!(worker.metrics().inbox.held, 1);
        assert!(
            !worker.has_ready_work(),
            "held work is not runnable on this thread"
        );
        worker
    })
    .join()
    .expect("other thread");
    assert!(
        worker.has_ready_work(),
        "the held completion is runnable back home"
    );
    let turn = worker.turn(Park::Poll);
    assert_eq!(turn.settled, 1);
    assert_eq!(worker.metrics().inbox.held, 0);
    assert_wait_then_shut_down(worker, key, Poll::Ready(Ok(11)));
}

#[test]
fn the_wait_context_reports_where_it_cannot_be_used() {
    let _serial = serial();
    assert_eq!(
        with_current_waits(|_| ()).expect_err("no worker entered"),
        WaitsError::NotOnWorker
    );
    let Some(worker) = worker() else { return };
    let _entered = worker.enter();
    let nested = with_current_waits(|_| with_current_waits(|_| ()).expect_err("nested"));
    assert_eq!(nested, Ok(WaitsError::Busy));
    drop(_entered);
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

/// A payload that counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

fn counted_completion(worker: &Worker, drops: &Arc<AtomicUsize>) -> ExternalCompletion {
    let allocator = Arc::clone(worker.handle().allocator());
    let slot = allocator.allocate_wait().expect("wait id");
    ExternalCompletion::new(
        CompletionIdentity {
            runtime_id: worker.runtime_id(),
            wait_id: slot.wait_id(),
            generation: slot.generation(),
            operation_id: allocator.allocate_operation().expect("operation id"),
            kind: kind(),
        },
        Ok(Box::new(Counted(Arc::clone(drops)))),
    )
}

#[test]
fn the_inbox_reports_inbox_closed_after_shutdown() {
    let _serial = serial();
    let Some(worker) = worker() else { return };
    let handle = worker.handle();
    let sender = handle.completion_sender();
    let drops = Arc::new(AtomicUsize::new(0));
    // Accepted before closure: routed (stale: no such wait) by the shutdown's final drain.
    let early = counted_completion(&worker, &drops);
    assert_eq!(sender.deliver(early), DeliveryOutcome::Delivered);
    let late = counted_completion(&worker, &drops);
    assert!(!handle.is_closed());
    let report = worker.shutdown(Some(deadline()));
    assert_eq!(report.inbox_dropped, 1, "{report:?}");
    assert!(report.is_clean());
    assert!(handle.is_closed());
    assert_eq!(sender.deliver(late), DeliveryOutcome::InboxClosed);
    assert_eq!(
        drops.load(Ordering::Acquire),
        2,
        "both payloads were dropped, none leaked"
    );
}

struct PanicOnWake;

impl std::task::Wake for PanicOnWake {
    fn wake(self: Arc<Self>) {
        panic!("this waker panics on wake");
    }
}

struct CountWakes(AtomicUsize);

impl std::task::Wake for CountWakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

#[test]
fn a_panicking_waker_fails_the_turn_only_after_every_completion_settled_and_woke() {
    panicking_waker_of_a_settled_wait(WakerPanics::Propagate);
}

#[test]
fn a_panicking_waker_of_a_settled_wait_is_contained_after_every_completion_settled_and_woke() {
    panicking_waker_of_a_settled_wait(WakerPanics::Contain);
}

/// Worker rule W2: a waker panicking when its wait settles; every other settled wait's waker
/// still runs, and the panic reaches the runner only under `Propagate`.
fn panicking_waker_of_a_settled_wait(policy: WakerPanics) {
    let _serial = serial();
    let config =
        WorkerConfig::new().driver(DriverConfig::new().ring_entries(64).waker_panics(policy));
    let Some(worker) = worker_with(config) else {
        return;
    };
    let registrar = worker.handle().registrar();
    let counter = Arc::new(CountWakes(AtomicUsize::new(0)));
    let (first, second, submissions) = {
        let _entered = worker.enter();
        let (first, s1) = register_job(&registrar, 1);
        let (second, s2) = register_job(&registrar, 2);
        let panicky = Waker::from(Arc::new(PanicOnWake));
        let counting = Waker::from(Arc::clone(&counter));
        with_current_waits(|waits| {
            let mut cx = Context::from_waker(&panicky);
            assert!(waits.poll_wait::<u32>(first, &mut cx).is_pending());
            let mut cx = Context::from_waker(&counting);
            assert!(waits.poll_wait::<u32>(second, &mut cx).is_pending());
        })
        .expect("entered");
        (first, second, [s1, s2])
    };
    for submission in submissions {
        run_here(submission);
    }
    let turn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.turn(Park::Poll)));
    assert_eq!(
        turn.is_err(),
        policy == WakerPanics::Propagate,
        "the waker's panic reaches the runner only when asked to"
    );
    assert_eq!(worker.metrics().driver.waker_panics, 1);
    assert_eq!(
        counter.0.load(Ordering::Acquire),
        1,
        "the other waker still ran"
    );
    assert_eq!(worker.metrics().inbox.settled, 2);
    assert!(
        !worker.turn(Park::Poll).reentered,
        "the worker is usable afterwards"
    );
    {
        let _entered = worker.enter();
        assert_eq!(poll_wait(first), Poll::Ready(Ok(2)));
        assert_eq!(poll_wait(second), Poll::Ready(Ok(3)));
    }
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

#[test]
fn a_migratable_wait_settles_and_is_consumed_wherever_the_worker_runs() {
    let _serial = serial();
    let Some(PoolFixture {
        worker,
        handle,
        pool,
        lease,
        registrar,
    }) = worker_with_pool(InterruptibleThreads::Fixed(1))
    else {
        return;
    };
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
    let _serial = serial();
    let Some(PoolFixture {
        worker,
        pool,
        lease,
        registrar,
        ..
    }) = worker_with_pool_from(BlockingPool::builder())
    else {
        return;
    };
    let (release, released) = std::sync::mpsc::channel::<()>();
    let bound = QuarantineBound::Deadline(Instant::now() + Duration::from_millis(50));
    let join = {
        let _entered = worker.enter();
        baton_task::spawn_local(async move {
            let identity = registrar.issue(kind()).expect("identity");
            let prepared = PreparedOperation::quarantined_blocking(
                kind(),
                from_fn(move || released.recv().is_ok()),
                Decoder::<bool>::identity(),
                bound,
            );
            let (half, submission) = registrar.bind(identity, prepared).expect("bind").split();
            let key = with_current_waits(|waits| waits.register(half))
                .expect("on the worker")
                .expect("our runtime");
            lease.submit(submission).expect("the pool accepts the job");
            poll_fn(|cx| {
                with_current_waits(|waits| waits.poll_wait::<bool>(key, cx)).expect("on the worker")
            })
            .await
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
fn a_hostile_decoder_is_contained_and_cannot_reenter_the_table() {
    let _serial = serial();
    let Some(worker) = worker() else { return };
    let registrar = worker.handle().registrar();
    let reentry = Rc::new(std::cell::Cell::new(None));
    let (panicking, reentering, submissions) = {
        let _entered = worker.enter();
        let mut keys = Vec::new();
        let mut submissions = Vec::new();
        let decoders: [Decoder<u32>; 2] = [
            Decoder::new(|_: u32| -> u32 { panic!("this decoder panics") }),
            Decoder::new({
                let reentry = Rc::clone(&reentry);
                move |n: u32| {
                    reentry.set(Some(with_current_waits(|_| ())));
                    n
                }
            }),
        ];
        for decoder in decoders {
            let identity = registrar.issue(kind()).expect("identity");
            let prepared = PreparedOperation::interruptible_blocking(
                kind(),
                from_fn(|| 1_u32),
                decoder,
                hook(),
            );
            let (half, submission) = registrar.bind(identity, prepared).expect("bind").split();
            keys.push(
                with_current_waits(|waits| waits.register(half))
                    .expect("entered")
                    .expect("our runtime"),
            );
            submissions.push(submission);
        }
        (keys[0], keys[1], submissions)
    };
    for submission in submissions {
        run_here(submission);
    }
    let turn = worker.turn(Park::Poll);
    assert_eq!(
        turn.settled, 2,
        "both completions settled despite the hostile decoders"
    );
    assert_eq!(reentry.get(), Some(Err(WaitsError::Busy)));
    let _entered = worker.enter();
    assert!(matches!(
        poll_wait(panicking),
        Poll::Ready(Err(WaitError::Decode(
            baton_completion::DecodeError::Panicked { .. }
        )))
    ));
    assert_eq!(poll_wait(reentering), Poll::Ready(Ok(1)));
    drop(_entered);
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

#[test]
fn a_thousand_blocking_jobs_from_foreign_spawners_all_settle_exactly_once() {
    let _serial = serial();
    let Some(PoolFixture {
        worker,
        handle,
        pool,
        lease,
        ..
    }) = worker_with_pool(InterruptibleThreads::Fixed(4))
    else {
        return;
    };
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

/// Turns the worker from a destructor, which runs while the thread unwinds.
struct TurnOnDrop<'a>(&'a Worker);

impl Drop for TurnOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.turn(Park::Poll);
    }
}

#[test]
fn a_panicking_waker_woken_by_a_turn_during_unwinding_does_not_abort() {
    let _serial = serial();
    let Some(worker) = worker() else { return };
    let registrar = worker.handle().registrar();
    let (key, submission) = {
        let _entered = worker.enter();
        let (key, submission) = register_job(&registrar, 1);
        let panicky = Waker::from(Arc::new(PanicOnWake));
        with_current_waits(|waits| {
            let mut cx = Context::from_waker(&panicky);
            assert!(waits.poll_wait::<u32>(key, &mut cx).is_pending());
        })
        .expect("entered");
        (key, submission)
    };
    run_here(submission);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _turn = TurnOnDrop(&worker);
        panic!("the thread is already unwinding");
    }));
    assert!(unwound.is_err(), "the first panic still propagates");
    assert_eq!(
        worker.metrics().inbox.settled,
        1,
        "the turn settled the job"
    );
    assert_wait_then_shut_down(worker, key, Poll::Ready(Ok(2)));
}
