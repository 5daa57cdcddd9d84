//! End to end: blocking jobs through the facade — registrar, pool, the worker's inbox — with
//! cancel before start, drop before start, panics, a full queue, quarantined jobs, jobs
//! started and awaited off the worker, the metrics that count them, and jobs the runtime's
//! shutdown withdrew or abandoned (queued or running, relayed or started on the worker).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::thread;
use std::time::{Duration, Instant};

use baton::BlockingError;
use baton::blocking::QuarantineBound;
use baton::blocking::RejectReason;
use baton::blocking::{BlockingCancel, BlockingHandle, spawn_blocking, spawn_quarantined};
use baton_completion::IoExecutor as _;
use baton_tests::{on_runtime, poll_here};

/// A job that blocks its pool thread until `release` is sent, and says when it started.
fn gate() -> (
    mpsc::Sender<()>,
    mpsc::Receiver<()>,
    impl FnOnce() + Send + 'static,
) {
    let (release, wait) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    let wait = Mutex::new(wait);
    let job = move || {
        let _ = started_tx.send(());
        let _ = wait.lock().map(|wait| wait.recv());
    };
    (release, started, job)
}

/// Occupies the pool's thread with a [`gate`] job and waits until it runs; the sender releases
/// it.
fn occupy_the_thread() -> io::Result<(mpsc::Sender<()>, baton::blocking::BlockingHandle<()>)> {
    let (release, started, job) = gate();
    let busy = spawn_blocking(job);
    started.recv().map_err(io::Error::other)?;
    Ok((release, busy))
}

/// Tells whether any of the jobs made by [`Ran::job`] ran.
#[derive(Default)]
struct Ran(Arc<AtomicBool>);

impl Ran {
    /// A job body that records that it ran.
    fn job(&self) -> impl FnOnce() + Send + 'static {
        let ran = Arc::clone(&self.0);
        move || ran.store(true, Ordering::SeqCst)
    }

    fn assert_never(&self) {
        assert!(
            !self.0.load(Ordering::SeqCst),
            "a job cancelled or dropped before start never runs"
        );
    }
}

fn one_thread_runtime() -> io::Result<baton::Runtime> {
    one_thread_runtime_with_queue(1)
}

/// One blocking thread and a queue of `capacity`. A job cancelled while queued keeps its slot
/// until the thread dequeues it, so tests that leave a cancelled job behind and then submit
/// again need room for both.
fn one_thread_runtime_with_queue(capacity: usize) -> io::Result<baton::Runtime> {
    baton::Builder::new()
        .blocking_threads(1)
        .blocking_queue_capacity(capacity)
        .build()
}

#[test]
fn cancel_before_start_never_runs_the_body() -> io::Result<()> {
    let rt = one_thread_runtime()?;
    let ran = Ran::default();
    rt.block_on(async {
        let (release, busy) = occupy_the_thread()?;
        let queued = spawn_blocking(ran.job());
        assert_eq!(queued.cancel(), BlockingCancel::CancelledBeforeStart);
        assert_eq!(queued.cancel(), BlockingCancel::AlreadyCancelled);
        assert_eq!(queued.await, Err(BlockingError::Cancelled));
        release.send(()).map_err(io::Error::other)?;
        assert_eq!(busy.await, Ok(()));
        io::Result::Ok(())
    })?;
    ran.assert_never();
    Ok(())
}

#[test]
fn cancel_off_the_worker_before_start_is_resolved_at_once() -> io::Result<()> {
    // Room for both cancelled jobs: whether the relay submitted the first one before seeing
    // the cancel is a race this test does not decide.
    let rt = one_thread_runtime_with_queue(2)?;
    let ran = Ran::default();
    let (release, started, job) = gate();
    let busy = rt.spawn_blocking(job);
    started.recv().map_err(io::Error::other)?;
    // Started from this thread (not running the worker): the job goes through a relay task.
    let relayed = rt.spawn_blocking(ran.job());
    assert_eq!(relayed.cancel(), BlockingCancel::CancelledBeforeStart);
    assert_eq!(relayed.cancel(), BlockingCancel::AlreadyCancelled);
    // Started on the worker, cancelled from another thread.
    let mut job = Some(ran.job());
    let registered = rt
        .block_on(std::future::poll_fn(|_| {
            Poll::Ready(job.take().map(spawn_blocking))
        }))
        .ok_or_else(|| io::Error::other("polled twice"))?;
    let (first, second, registered) = thread::spawn(move || {
        let first = registered.cancel();
        (first, registered.cancel(), registered)
    })
    .join()
    .map_err(|_| io::Error::other("the cancelling thread panicked"))?;
    assert_eq!(first, BlockingCancel::CancelledBeforeStart);
    assert_eq!(second, BlockingCancel::AlreadyCancelled);
    release.send(()).map_err(io::Error::other)?;
    assert_eq!(rt.block_on(busy), Ok(()));
    assert_eq!(rt.block_on(relayed), Err(BlockingError::Cancelled));
    assert_eq!(rt.block_on(registered), Err(BlockingError::Cancelled));
    ran.assert_never();
    Ok(())
}

#[test]
fn is_finished_turns_true_once_the_job_ran() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let job = spawn_blocking(|| 5);
        let waited = Instant::now();
        while !job.is_finished() && waited.elapsed() < Duration::from_secs(30) {
            baton::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(job.is_finished(), "a 5-returning job finished long ago");
        assert_eq!(job.await, Ok(5));
    });
    let outside = rt.spawn_blocking(|| 6);
    let waited = Instant::now();
    while !outside.is_finished() && waited.elapsed() < Duration::from_secs(30) {
        thread::sleep(Duration::from_millis(1));
    }
    assert!(outside.is_finished(), "a relayed job finished long ago");
    assert_eq!(rt.block_on(outside), Ok(6));
    Ok(())
}

#[test]
fn cancel_after_start_lets_the_job_finish() -> io::Result<()> {
    let rt = one_thread_runtime()?;
    rt.block_on(async {
        let (release, started, job) = gate();
        let running = spawn_blocking(move || {
            job();
            "finished"
        });
        started.recv().map_err(io::Error::other)?;
        assert_eq!(running.cancel(), BlockingCancel::AlreadyStarted);
        release.send(()).map_err(io::Error::other)?;
        assert_eq!(running.await, Ok("finished"));
        io::Result::Ok(())
    })
}

#[test]
fn dropping_a_queued_handle_cancels_the_job() -> io::Result<()> {
    // Room for the dropped job and the next one: the thread may not have dequeued the
    // cancelled job yet when the next is submitted.
    let rt = one_thread_runtime_with_queue(2)?;
    let ran = Ran::default();
    rt.block_on(async {
        let (release, busy) = occupy_the_thread()?;
        drop(spawn_blocking(ran.job()));
        release.send(()).map_err(io::Error::other)?;
        busy.await.map_err(io::Error::other)?;
        // The next job runs after the dropped one would have: if it had run, it ran by now.
        spawn_blocking(|| ()).await.map_err(io::Error::other)
    })?;
    ran.assert_never();
    Ok(())
}

#[test]
fn a_panicking_job_is_reported_and_the_pool_keeps_working() -> io::Result<()> {
    on_runtime(async {
        let panicked = spawn_blocking(|| -> u8 { panic!("job exploded") }).await;
        match panicked {
            Err(BlockingError::Panicked { message }) => assert!(message.contains("job exploded")),
            other => panic!("expected a panic report, got {other:?}"),
        }
        assert_eq!(spawn_blocking(|| 3).await, Ok(3));
        Ok(())
    })
}

#[test]
fn a_full_queue_rejects_with_capacity() -> io::Result<()> {
    let rt = one_thread_runtime()?;
    rt.block_on(async {
        let (release, busy) = occupy_the_thread()?;
        let queued = spawn_blocking(|| 1);
        let refused = spawn_blocking(|| 2).await;
        assert!(
            matches!(
                refused,
                Err(BlockingError::Rejected {
                    reason: RejectReason::Capacity { capacity: 1 }
                })
            ),
            "{refused:?}"
        );
        release.send(()).map_err(io::Error::other)?;
        busy.await.map_err(io::Error::other)?;
        assert_eq!(queued.await, Ok(1));
        io::Result::Ok(())
    })
}

#[test]
fn quarantined_jobs_run_on_their_own_lane() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let bound = QuarantineBound::FiniteWork {
        units: 1000,
        unit: "items",
    };
    let sum = rt.block_on(spawn_quarantined(bound, || (0..1000u64).sum::<u64>()));
    assert_eq!(sum, Ok(499_500));
    Ok(())
}

#[test]
fn jobs_started_or_awaited_off_the_worker_are_relayed() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let from_foreign = thread::spawn(move || poll_here(handle.spawn_blocking(|| 7)))
        .join()
        .map_err(|_| io::Error::other("the foreign thread panicked"))?;
    assert_eq!(from_foreign, Ok(7));
    // Started on the worker inside `block_on`, handed out unawaited.
    let mut job = Some(|| 9);
    let started_inside = rt.block_on(std::future::poll_fn(|_| {
        Poll::Ready(job.take().map(spawn_blocking))
    }));
    let started_inside = started_inside.ok_or_else(|| io::Error::other("polled twice"))?;
    let awaited_outside = thread::spawn(move || poll_here(started_inside))
        .join()
        .map_err(|_| io::Error::other("the foreign thread panicked"))?;
    assert_eq!(awaited_outside, Ok(9));
    assert_eq!(
        poll_here(spawn_blocking(|| 1)),
        Err(BlockingError::NotInRuntime)
    );
    // Made outside, polled inside: it starts on the runtime that polls it.
    assert_eq!(rt.block_on(spawn_blocking(|| 2)), Ok(2));
    let cancelled = spawn_blocking(|| 3);
    assert_eq!(cancelled.cancel(), BlockingCancel::CancelledBeforeStart);
    assert_eq!(rt.block_on(cancelled), Err(BlockingError::Cancelled));
    Ok(())
}

#[test]
fn metrics_count_tasks_io_and_blocking_jobs() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        for n in 0..10u64 {
            assert_eq!(spawn_blocking(move || n).await, Ok(n));
        }
        for _ in 0..5 {
            baton::spawn(baton::time::sleep(Duration::from_millis(1)))
                .await
                .map_err(io::Error::other)?;
        }
        io::Result::Ok(())
    })?;
    let waited = Instant::now();
    let metrics = loop {
        let metrics = rt.metrics();
        if metrics.worker_counters_fresh || waited.elapsed() > Duration::from_secs(10) {
            break metrics;
        }
    };
    assert!(metrics.worker_counters_fresh, "{metrics:?}");
    assert!(metrics.tasks.spawned >= 5, "{metrics:?}");
    assert_eq!(metrics.tasks.live, 0, "{metrics:?}");
    assert_eq!(metrics.blocking.completed, 10, "{metrics:?}");
    assert_eq!(metrics.blocking.queued, 0, "{metrics:?}");
    assert!(metrics.inbox.settled >= 10, "{metrics:?}");
    assert_eq!(metrics.active_block_ons, 0, "{metrics:?}");
    Ok(())
}

/// An output whose destructor panics.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("the output's destructor panics");
    }
}

/// A job whose handle is dropped while it runs leaves its output to nobody; the output is dropped
/// contained wherever its job cell is let go (here: by the pool's start token on the lane
/// thread), so the job counts as completed and no lane thread unwinds.
#[test]
fn an_unclaimed_output_with_a_panicking_destructor_is_contained() -> io::Result<()> {
    let rt = baton::Builder::new().blocking_threads(1).build()?;
    let (release, gate) = mpsc::channel::<()>();
    rt.block_on(async {
        let job = rt.spawn_blocking(move || {
            let _ = gate.recv();
            PanicsOnDrop
        });
        while rt.metrics().blocking.running_interruptible == 0 {
            baton::time::sleep(Duration::from_millis(1)).await;
        }
        // Running: dropping the handle discards the wait; the body runs on.
        drop(job);
    });
    release
        .send(())
        .map_err(|_| io::Error::other("the job's body is gone"))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let settled = loop {
        let blocking = rt.metrics().blocking;
        if blocking.completed + blocking.panicked > 0 || Instant::now() > deadline {
            break blocking;
        }
        thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(settled.completed, 1, "{settled:?}");
    assert_eq!(settled.panicked, 0, "a lane thread unwound: {settled:?}");
    Ok(())
}

/// The deadline of the shutdowns below. Their gates hold past it, so a gated job's result can
/// only arrive after the worker closed.
const SHUTDOWN: Duration = Duration::from_secs(2);

/// Waits until `done` holds, for at most 30 s; `false` if it never did.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
    true
}

/// A job started on the worker (inside `block_on`) and handed out unawaited.
fn started_on_worker<T: Send + 'static>(
    rt: &baton::Runtime,
    body: impl FnOnce() -> T + Send + 'static,
) -> io::Result<BlockingHandle<T>> {
    let mut body = Some(body);
    rt.block_on(std::future::poll_fn(|_| {
        Poll::Ready(body.take().map(spawn_blocking))
    }))
    .ok_or_else(|| io::Error::other("polled twice"))
}

/// What a handle of a shut-down runtime reports, in this order: `is_finished`, `cancel`, and
/// awaiting it on another runtime (bounded, so a handle that never resolves fails the test),
/// the value of an `Ok` dropped.
fn after_shutdown<T: Send + 'static>(
    job: BlockingHandle<T>,
) -> io::Result<(bool, BlockingCancel, Result<(), BlockingError>)> {
    let finished = job.is_finished();
    let cancelled = job.cancel();
    let other = baton::Runtime::new()?;
    let awaited = other
        .block_on(baton::time::timeout(Duration::from_secs(30), job))
        .map_err(|_| io::Error::other("the handle of a shut-down runtime never resolved"))?;
    Ok((finished, cancelled, awaited.map(drop)))
}

/// What every job the shutdown gave up reports: finished, `Closed` from `cancel`, and
/// `Err(Closed)` from awaiting it.
const GIVEN_UP: (bool, BlockingCancel, Result<(), BlockingError>) =
    (true, BlockingCancel::Closed, Err(BlockingError::Closed));

#[test]
fn a_relayed_job_queued_at_shutdown_resolves_closed() -> io::Result<()> {
    let rt = one_thread_runtime_with_queue(2)?;
    let ran = Ran::default();
    let (release, started, job) = gate();
    let _busy = rt.spawn_blocking(job);
    started.recv().map_err(io::Error::other)?;
    // Started from this thread (not running the worker): a relay task submits it.
    let queued = rt.spawn_blocking(ran.job());
    assert!(
        eventually(|| rt.metrics().blocking.queued == 1),
        "the relay queued the job behind the busy one"
    );
    let _report = rt.shutdown_timeout(SHUTDOWN);
    release.send(()).map_err(io::Error::other)?;
    assert_eq!(after_shutdown(queued)?, GIVEN_UP);
    ran.assert_never();
    Ok(())
}

#[test]
fn a_job_started_on_the_worker_and_queued_at_shutdown_resolves_closed() -> io::Result<()> {
    let rt = one_thread_runtime_with_queue(2)?;
    let ran = Ran::default();
    let (release, started, job) = gate();
    let _busy = rt.spawn_blocking(job);
    started.recv().map_err(io::Error::other)?;
    let queued = started_on_worker(&rt, ran.job())?;
    let _report = rt.shutdown_timeout(SHUTDOWN);
    release.send(()).map_err(io::Error::other)?;
    assert_eq!(after_shutdown(queued)?, GIVEN_UP);
    ran.assert_never();
    Ok(())
}

#[test]
fn a_relayed_job_whose_result_arrives_after_the_worker_closed_resolves_closed() -> io::Result<()> {
    let rt = one_thread_runtime()?;
    let (release, started, job) = gate();
    let running = rt.spawn_blocking(move || {
        job();
        7_u8
    });
    started.recv().map_err(io::Error::other)?;
    // The deadline passes while the gate holds: the result arrives after the worker closed.
    let _report = rt.shutdown_timeout(SHUTDOWN);
    release.send(()).map_err(io::Error::other)?;
    assert!(eventually(|| running.is_finished()), "the body returned");
    assert_eq!(after_shutdown(running)?, GIVEN_UP);
    Ok(())
}

#[test]
fn a_job_started_on_the_worker_whose_result_arrives_after_it_closed_resolves_closed()
-> io::Result<()> {
    let rt = one_thread_runtime()?;
    let (release, started, job) = gate();
    let running = started_on_worker(&rt, move || {
        job();
        7_u8
    })?;
    started.recv().map_err(io::Error::other)?;
    let _report = rt.shutdown_timeout(SHUTDOWN);
    release.send(()).map_err(io::Error::other)?;
    assert!(eventually(|| running.is_finished()), "the body returned");
    // Polled off the worker, on another runtime: the wait it had is gone with the worker.
    assert_eq!(after_shutdown(running)?, GIVEN_UP);
    Ok(())
}

#[test]
fn a_relayed_job_refused_by_a_shutting_down_runtime_resolves_closed() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let (refused_tx, refused) = mpsc::channel();
    let _task = handle.clone().spawn(async move {
        // From inside, shutdown refuses every spawn at once and returns; the worker closes when
        // this task returns. A job started from another thread meanwhile needs a relay task,
        // which the runtime refuses.
        let _report = rt.shutdown_timeout(SHUTDOWN);
        let job = thread::spawn(move || handle.spawn_blocking(|| ()))
            .join()
            .map_err(|_| io::Error::other("the starting thread panicked"));
        let _ = refused_tx.send(job);
    });
    let job = refused
        .recv_timeout(Duration::from_secs(30))
        .map_err(io::Error::other)??;
    assert_eq!(after_shutdown(job)?, GIVEN_UP);
    Ok(())
}

/// A runtime on a blocking pool it shares (`Builder::blocking_executor`), with one thread.
fn on_a_shared_pool() -> io::Result<(baton::Runtime, Arc<baton_completion::BlockingPool>)> {
    let pool = baton_completion::BlockingPool::builder()
        .interruptible_threads(baton_completion::InterruptibleThreads::Fixed(1))
        .build()
        .map_err(io::Error::other)?;
    let pool = Arc::new(pool);
    let rt = baton::Builder::new()
        .blocking_executor(Arc::clone(&pool) as Arc<dyn baton_completion::IoExecutor>)
        .build()?;
    Ok((rt, pool))
}

/// A shared pool keeps a runtime's queued jobs when it shuts down; the relay the worker drops
/// then withdraws its job rather than cancelling the cell it shares with the handle.
#[test]
fn a_relayed_job_queued_on_a_shared_pool_at_shutdown_resolves_closed() -> io::Result<()> {
    let (rt, pool) = on_a_shared_pool()?;
    let ran = Ran::default();
    let (release, started, job) = gate();
    let _busy = rt.spawn_blocking(job);
    started.recv().map_err(io::Error::other)?;
    let queued = rt.spawn_blocking(ran.job());
    assert!(
        eventually(|| rt.metrics().blocking.queued == 1),
        "the relay queued the job behind the busy one"
    );
    let _report = rt.shutdown_timeout(SHUTDOWN);
    release.send(()).map_err(io::Error::other)?;
    assert_eq!(after_shutdown(queued)?, GIVEN_UP);
    assert!(
        eventually(|| pool.snapshot().outstanding() == 0),
        "the shared pool reached the withdrawn job"
    );
    ran.assert_never();
    Ok(())
}

/// A job the pool refused reports, whether started on the worker or relayed: finished,
/// `AlreadyFinished` from `cancel` (it failed to start; the handle resolves to that failure),
/// and `Rejected` from awaiting it. Before, `cancel` claimed to have cancelled it, and a
/// relayed one never reported finished.
#[test]
fn a_rejected_job_reports_finished_and_cancel_agrees_with_its_result() -> io::Result<()> {
    let rt = one_thread_runtime()?;
    let (release, started, job) = gate();
    let busy = rt.spawn_blocking(job);
    started.recv().map_err(io::Error::other)?;
    let queued = rt.spawn_blocking(|| 1);
    assert!(
        eventually(|| rt.metrics().blocking.queued == 1),
        "the queue's one place is taken"
    );
    let on_worker = started_on_worker(&rt, || 2)?;
    let relayed = rt.spawn_blocking(|| 3);
    assert!(
        eventually(|| relayed.is_finished()),
        "a relayed job the pool refused reports finished"
    );
    for refused in [on_worker, relayed] {
        assert!(refused.is_finished());
        assert_eq!(refused.cancel(), BlockingCancel::AlreadyFinished);
        let awaited = rt.block_on(refused);
        assert!(
            matches!(
                awaited,
                Err(BlockingError::Rejected {
                    reason: RejectReason::Capacity { capacity: 1 }
                })
            ),
            "{awaited:?}"
        );
    }
    // A refused relayed job keeps answering so after the runtime shut down: it has no result
    // that the shutdown could have lost.
    let late = rt.spawn_blocking(|| 4);
    assert!(eventually(|| late.is_finished()), "refused, so finished");
    release.send(()).map_err(io::Error::other)?;
    assert_eq!(rt.block_on(busy), Ok(()));
    assert_eq!(rt.block_on(queued), Ok(1));
    let _report = rt.shutdown_timeout(SHUTDOWN);
    let (finished, cancelled, awaited) = after_shutdown(late)?;
    assert!(finished);
    assert_eq!(cancelled, BlockingCancel::AlreadyFinished);
    assert!(
        matches!(awaited, Err(BlockingError::Rejected { .. })),
        "{awaited:?}"
    );
    Ok(())
}

/// A job started on a runtime whose worker already closed is given up like one the shutdown
/// withdrew: `cancel` says `Closed`, as awaiting it does.
#[test]
fn a_job_started_after_the_worker_closed_resolves_closed() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let _report = rt.shutdown_timeout(SHUTDOWN);
    assert_eq!(after_shutdown(handle.spawn_blocking(|| ()))?, GIVEN_UP);
    Ok(())
}

/// A job started on the worker after shutdown began (its pool already closed, its worker not
/// yet) is given up by the shutdown too, not refused as if the pool were merely full.
#[test]
fn a_job_refused_because_the_runtime_is_shutting_down_resolves_closed() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let (sent, received) = mpsc::channel();
    let _task = handle.spawn(async move {
        // From inside a task: the pool stops at once, the worker only at this task's return.
        let _report = rt.shutdown_timeout(SHUTDOWN);
        let _ = sent.send(spawn_blocking(|| ()));
    });
    let job = received
        .recv_timeout(Duration::from_secs(30))
        .map_err(io::Error::other)?;
    assert_eq!(after_shutdown(job)?, GIVEN_UP);
    Ok(())
}
