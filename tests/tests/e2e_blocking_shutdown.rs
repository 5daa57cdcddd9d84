//! End to end: what a blocking job's handle reports — `is_finished`, `cancel`, and what
//! awaiting it gives — when the runtime's shutdown withdrew or abandoned it (queued or running,
//! relayed or started on the worker, on an owned or a shared pool), and when the pool refused
//! it (job-cell rules J1–J6).

use std::io;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use baton::BlockingError;
use baton::blocking::{BlockingCancel, BlockingHandle, RejectReason, spawn_blocking};
use baton_completion::IoExecutor as _;
use baton_tests::blocking::{
    GIVEN_UP, Ran, SHUTDOWN, after_shutdown, awaited_then_asked, eventually, gate,
    on_a_shared_pool, one_thread_runtime, one_thread_runtime_with_queue, queued_behind_a_busy_job,
    started_on_worker,
};

#[test]
fn a_relayed_job_queued_at_shutdown_resolves_closed() -> io::Result<()> {
    let rt = one_thread_runtime_with_queue(2)?;
    let ran = Ran::default();
    // Started from this thread (not running the worker): a relay task submits it.
    let (release, _busy, queued) = queued_behind_a_busy_job(&rt, &ran)?;
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

/// A job started with `start` on a runtime with one blocking thread, whose body returns only
/// after the runtime shut down (its gate holds past the deadline): awaited afterwards, on
/// another runtime, it reports what every job the shutdown gave up does.
fn result_after_the_worker_closed(
    start: impl Fn(&baton::Runtime, Gated) -> io::Result<BlockingHandle<u8>>,
) -> io::Result<()> {
    for report in [after_shutdown, awaited_then_asked] {
        result_after_the_worker_closed_reported(&start, report)?;
    }
    Ok(())
}

/// Reports of a handle after its runtime shut down, in one of two orders.
type Report =
    fn(BlockingHandle<u8>) -> io::Result<(bool, BlockingCancel, Result<(), BlockingError>)>;

fn result_after_the_worker_closed_reported(
    start: &impl Fn(&baton::Runtime, Gated) -> io::Result<BlockingHandle<u8>>,
    report: Report,
) -> io::Result<()> {
    let rt = one_thread_runtime()?;
    let (release, started, job) = gate();
    let running = start(
        &rt,
        Box::new(move || {
            job();
            7_u8
        }),
    )?;
    started.recv().map_err(io::Error::other)?;
    // The deadline passes while the gate holds: the result arrives after the worker closed.
    let _report = rt.shutdown_timeout(SHUTDOWN);
    release.send(()).map_err(io::Error::other)?;
    assert!(eventually(|| running.is_finished()), "the body returned");
    assert_eq!(report(running)?, GIVEN_UP);
    Ok(())
}

/// A gated job's body.
type Gated = Box<dyn FnOnce() -> u8 + Send>;

#[test]
fn a_relayed_job_whose_result_arrives_after_the_worker_closed_resolves_closed() -> io::Result<()> {
    result_after_the_worker_closed(|rt, body| Ok(rt.spawn_blocking(body)))
}

#[test]
fn a_job_started_on_the_worker_whose_result_arrives_after_it_closed_resolves_closed()
-> io::Result<()> {
    // Polled off the worker, on another runtime: the wait it had is gone with the worker.
    result_after_the_worker_closed(started_on_worker)
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

/// A shared pool keeps a runtime's queued jobs when it shuts down; the relay the worker drops
/// then withdraws its job rather than cancelling the cell it shares with the handle.
#[test]
fn a_relayed_job_queued_on_a_shared_pool_at_shutdown_resolves_closed() -> io::Result<()> {
    let (rt, pool) = on_a_shared_pool()?;
    let ran = Ran::default();
    let (release, _busy, queued) = queued_behind_a_busy_job(&rt, &ran)?;
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
