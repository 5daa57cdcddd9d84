//! End to end: blocking jobs through the facade — registrar, pool, the worker's inbox — with
//! cancel before start, drop before start, panics, a full queue, quarantined jobs, jobs
//! started and awaited off the worker, the metrics that count them, and jobs that wait on
//! jobs queued behind them after a stream of short ones (pool rule P7). Jobs the runtime's
//! shutdown gave up, and jobs the pool refused, are in `e2e_blocking_shutdown`.

use std::io;
use std::sync::mpsc;
use std::task::Poll;
use std::thread;
use std::time::{Duration, Instant};

use baton::BlockingError;
use baton::blocking::QuarantineBound;
use baton::blocking::RejectReason;
use baton::blocking::{BlockingCancel, spawn_blocking, spawn_quarantined};
use baton_tests::blocking::{Ran, gate, one_thread_runtime, one_thread_runtime_with_queue};
use baton_tests::{on_runtime, poll_here};

/// Occupies the pool's thread with a [`gate`] job and waits until it runs; the sender releases
/// it.
fn occupy_the_thread() -> io::Result<(mpsc::Sender<()>, baton::blocking::BlockingHandle<()>)> {
    let (release, started, job) = gate();
    let busy = spawn_blocking(job);
    started.recv().map_err(io::Error::other)?;
    Ok((release, busy))
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

#[test]
fn jobs_that_wait_on_each_other_all_finish_after_a_stream_of_short_ones() -> io::Result<()> {
    // Pool rule P7: short jobs leave the lane's estimate short, so the next jobs wake no more
    // threads than the CPUs; jobs that then block on jobs queued behind them are still spread
    // (the sentinel's tick sees none finish) instead of waiting for each other forever.
    // Idle threads outlive the test, so no keep-alive timeout stands in for the sentinel.
    let rt = baton::Builder::new()
        .blocking_keep_alive(Duration::from_secs(600))
        .build()?;
    rt.block_on(async {
        let short: Vec<_> = (0..2_000_u32).map(|i| spawn_blocking(move || i)).collect();
        for (i, job) in short.into_iter().enumerate() {
            assert_eq!(job.await, Ok(i as u32));
        }
        // Job i waits for job i + 1, which is queued after it; the last waits for nothing.
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..8).map(|_| mpsc::channel::<()>()).unzip();
        let mut senders = senders.into_iter().map(Some).collect::<Vec<_>>();
        let chain: Vec<_> = receivers
            .into_iter()
            .enumerate()
            .map(|(i, waits_for)| {
                let releases = if i == 0 { None } else { senders[i - 1].take() };
                let last = i == 7;
                spawn_blocking(move || {
                    if !last {
                        waits_for
                            .recv_timeout(Duration::from_secs(20))
                            .expect("the job queued behind this one ran within 20 s");
                    }
                    if let Some(release) = releases {
                        let _ = release.send(());
                    }
                })
            })
            .collect();
        drop(senders);
        for job in chain {
            assert_eq!(job.await, Ok(()));
        }
    });
    Ok(())
}
