//! Shutdown (worker rule W8): in-flight operations, live tasks and waits are cancelled and
//! reported, descriptors and `Arc`s come back, spawns afterwards are refused, and a dropped
//! worker cleans up the same way. Also: bad configurations are refused with a clear error.

mod worker_support;

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use baton_cancel::{HookOutcome, Interruptible};
use baton_completion::{CompletionKind, Decoder, PreparedOperation, RuntimeId, from_fn};
use baton_task::{CancelReason, SpawnError};
use baton_uring::{
    DriverConfig, Park, Worker, WorkerConfig, WorkerSetupError, ops, with_current_waits,
};
use web_time::Instant;
use worker_support::{PendingWrite, deadline, fd_count, poll_once, serial, serial_worker, worker};

fn socket_pair() -> (Arc<OwnedFd>, UnixStream) {
    let (ours, theirs) = UnixStream::pair().expect("socket pair");
    (Arc::new(OwnedFd::from(ours)), theirs)
}

/// Turns until the driver has `in_flight` kernel requests and `timers` armed timers.
fn turn_until_armed(worker: &Worker, in_flight: usize, timers: usize) {
    let deadline = deadline();
    loop {
        let metrics = worker.metrics().driver;
        if metrics.in_flight >= in_flight && metrics.timers >= timers {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "operations never armed: {metrics:?}"
        );
        let _ = worker.turn(Park::Poll);
    }
}

#[test]
fn shutdown_with_in_flight_ops_and_live_tasks_reports_them_and_leaves_no_fd_behind() {
    let _serial = serial();
    let fds_before = fd_count();
    let Some(worker) = worker() else { return };
    let (sock, peer) = socket_pair();
    let handle = worker.handle();
    let receiver = handle.spawn({
        let sock = Arc::clone(&sock);
        async move { ops::recv(sock, Vec::with_capacity(64)).await.0 }
    });
    let sleeper = handle.spawn(async { ops::sleep(Duration::from_secs(3600)).await });
    let registrar = handle.registrar();
    let (local, waiter) = {
        let _entered = worker.enter();
        let local = baton_task::spawn_local(std::future::pending::<()>());
        let waiter = baton_task::spawn_local(async move {
            let kind = CompletionKind::try_from_raw(3).expect("non-zero kind");
            let identity = registrar.issue(kind).expect("identity");
            let prepared = PreparedOperation::interruptible_blocking(
                kind,
                from_fn(|| 1_u8),
                Decoder::identity(),
                Interruptible::new("test", || Ok(HookOutcome::Reaped)),
            );
            let (half, submission) = registrar.bind(identity, prepared).expect("bind").split();
            let key = with_current_waits(|waits| waits.register(half))
                .expect("on the worker")
                .expect("our runtime");
            // Never submitted: the wait stays pending until shutdown discards it.
            drop(submission);
            std::future::poll_fn(|cx| {
                with_current_waits(|waits| waits.poll_wait::<u8>(key, cx)).expect("on the worker")
            })
            .await
        });
        (local, waiter)
    };
    turn_until_armed(&worker, 1, 1);
    assert_eq!(worker.metrics().waits, 1);
    assert!(!worker.is_quiescent());

    let report = worker.shutdown(Some(deadline()));
    assert_eq!(report.tasks.cancelled, 4, "{report:?}");
    assert_eq!(report.tasks.leaked + report.tasks.still_running, 0);
    assert_eq!(report.waits_discarded, 1);
    assert_eq!(report.waits_leaked, 0);
    assert!(
        report.driver.drained,
        "every completion arrived: {report:?}"
    );
    assert!(
        report.driver.completed_during_shutdown >= 1,
        "the receive was cancelled"
    );
    assert!(report.is_clean());

    for outcome in [
        poll_once(receiver).map(|r| r.map(drop)),
        poll_once(sleeper).map(|r| r.map(drop)),
        poll_once(local),
        poll_once(waiter).map(|r| r.map(drop)),
    ] {
        match outcome {
            Poll::Ready(Err(err)) => {
                assert_eq!(err.cancel_reason(), Some(CancelReason::RuntimeShutdown));
            }
            other => panic!("every task resolves cancelled, got {other:?}"),
        }
    }
    assert_eq!(
        Arc::strong_count(&sock),
        1,
        "the driver gave the socket back"
    );
    // The handle keeps the driver's mailbox (and its eventfd) alive, as documented.
    drop((sock, peer, handle));
    assert_eq!(
        fd_count(),
        fds_before,
        "the ring, its eventfd and the socket are closed"
    );
}

#[test]
fn a_write_in_flight_at_shutdown_still_lands() {
    serial_worker!(worker);
    // One turn polls the task, which registers the write; shutdown submits and finishes it.
    let write = PendingWrite::start(&worker, "write", b"durable");
    assert!(!write.writer.is_finished());
    write.assert_landed_by_shutdown(worker);
}

/// The facade's report: with a 4-entry ring, writes registered by tasks and then dropped sit
/// in the driver's userspace queue at shutdown; every one must still land (lifecycle rule U9).
#[test]
fn dropped_writes_queued_behind_a_four_entry_ring_all_land_at_shutdown() {
    const WRITES: usize = 512;
    let _serial = serial();
    let config = WorkerConfig::new().driver(DriverConfig::new().ring_entries(4));
    let Some(worker) = worker_support::worker_with(config) else {
        return;
    };
    let path = std::env::temp_dir().join(format!("baton-worker-queued-{}", std::process::id()));
    std::fs::write(&path, vec![0; WRITES * 8]).expect("create temp file");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .expect("open temp file");
    let fd = Arc::new(OwnedFd::from(file));
    let chunk = |i: usize| {
        [
            (i as u64).to_le_bytes()[0],
            (i >> 8) as u8,
            0x5A,
            1,
            2,
            3,
            4,
            5,
        ]
    };
    let writer = worker.handle().spawn({
        let fd = Arc::clone(&fd);
        async move {
            for i in 0..WRITES {
                let write = ops::write_at(Arc::clone(&fd), chunk(i).to_vec(), (i * 8) as u64);
                // Poll once (registering the request), then drop the future.
                let mut write = std::pin::pin!(write);
                std::future::poll_fn(|cx| {
                    let _ = write.as_mut().poll(cx);
                    Poll::Ready(())
                })
                .await;
            }
        }
    });
    let outcome = worker.run_until(&mut || writer.is_finished(), Some(deadline()));
    assert_eq!(outcome, baton_uring::RunUntil::Satisfied);
    assert!(
        worker.metrics().driver.queued > 0,
        "writes wait in userspace at shutdown"
    );
    let report = worker.shutdown(Some(deadline()));
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.driver.unsubmitted, 0, "{report:?}");
    let contents = std::fs::read(&path).expect("read back");
    for i in 0..WRITES {
        assert_eq!(contents[i * 8..(i + 1) * 8], chunk(i), "write {i} landed");
    }
    assert_eq!(Arc::strong_count(&fd), 1);
    std::fs::remove_file(&path).expect("remove temp file");
}

#[test]
fn spawns_after_shutdown_are_refused() {
    serial_worker!(worker);
    let handle = worker.handle();
    assert!(worker.shutdown(Some(deadline())).is_clean());
    assert!(handle.is_closed());
    assert_eq!(
        handle.try_spawn(async {}).map(drop).expect_err("refused"),
        SpawnError::Shutdown
    );
    match poll_once(handle.spawn(async { 1 })) {
        Poll::Ready(Err(err)) => {
            assert_eq!(err.cancel_reason(), Some(CancelReason::SpawnAfterShutdown));
        }
        other => panic!("a spawn after shutdown resolves cancelled, got {other:?}"),
    }
}

#[test]
fn dropping_a_worker_without_shutdown_cancels_and_drains_too() {
    let _serial = serial();
    let fds_before = fd_count();
    let Some(worker) = worker() else { return };
    let (sock, peer) = socket_pair();
    let receiver = worker.handle().spawn({
        let sock = Arc::clone(&sock);
        async move { ops::recv(sock, Vec::with_capacity(8)).await.0 }
    });
    turn_until_armed(&worker, 1, 0);
    drop(worker);
    assert!(matches!(poll_once(receiver), Poll::Ready(Err(_))));
    assert_eq!(Arc::strong_count(&sock), 1);
    drop((sock, peer));
    assert_eq!(fd_count(), fds_before);
}

#[test]
fn zero_budgets_are_refused_with_a_clear_error() {
    let runtime = RuntimeId::allocate().expect("runtime id");
    let err = Worker::new(WorkerConfig::new().tasks_per_turn(0), runtime).expect_err("refused");
    assert!(matches!(err, WorkerSetupError::ZeroTasksPerTurn));
    assert!(err.to_string().contains("tasks_per_turn"));
    let err = Worker::new(WorkerConfig::new().inbox_per_turn(0), runtime).expect_err("refused");
    assert!(matches!(err, WorkerSetupError::ZeroInboxPerTurn));
    let err = Worker::new(
        WorkerConfig::new().driver(baton_uring::DriverConfig::new().ring_entries(0)),
        runtime,
    )
    .expect_err("refused");
    assert!(err.to_string().contains("ring_entries"), "{err}");
}
