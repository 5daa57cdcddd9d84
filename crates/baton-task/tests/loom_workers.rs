//! Loom model of a runtime with two workers (the facade's workers rules Q3 and Q6), run against
//! the shipped scheduler through the crate's `sync` shim (`--cfg loom`): each worker is a
//! `Scheduler` owned by its own thread, as the facade's workers are.
#![cfg(loom)]

mod support;

use std::sync::Arc;
use std::task::Poll;

use baton_task::CancelReason;
use loom::sync::atomic::{AtomicBool, Ordering};
use support::{poll_once, scheduler};

/// Proves workers rule Q6 (step 1, with baton-task rule T8) for the cross-worker spawn path: a
/// task on worker 1 spawning onto worker 0 while worker 0 shuts down the way the runtime does
/// (refuse every spawn, then shut the scheduler down) either has its spawn run to completion
/// or refused/cancelled with its future never polled — never lost (the handle always resolves),
/// never both — and every `Arc` the spawned future held is back to one once both workers are
/// done. The spawn comes from a thread that holds *another* scheduler's claim, so it must take
/// worker 0's injection queue (Q3), not the claim holder's fast path.
#[test]
fn loom_cross_worker_spawn_racing_shutdown_runs_or_is_refused() {
    loom::model(|| {
        let (zero, _) = scheduler();
        let to_zero = zero.spawner();
        let ran = Arc::new(AtomicBool::new(false));
        let worker_one = loom::thread::spawn({
            let ran = Arc::clone(&ran);
            move || {
                let (one, _) = scheduler();
                #[allow(
                    clippy::async_yields_async,
                    reason = "the inner handle is checked after both workers shut down"
                )]
                let mut outer = one.spawn(async move {
                    to_zero.spawn(async move { ran.store(true, Ordering::SeqCst) })
                });
                let _ = one.run_ready(2);
                let inner = match poll_once(&mut outer) {
                    Poll::Ready(Ok(inner)) => inner,
                    other => panic!("worker 1's task did not finish: {other:?}"),
                };
                let report = one.shutdown();
                assert_eq!(report.cancelled + report.leaked + report.still_running, 0);
                inner
            }
        });
        let _refused = zero.spawner().refuse_spawns();
        let _ = zero.run_ready(2);
        let report = zero.shutdown();
        assert_eq!(report.still_running, 0);
        let mut inner = worker_one.join().unwrap();
        assert!(inner.is_finished(), "the cross-worker spawn was lost");
        match poll_once(&mut inner) {
            Poll::Ready(Ok(())) => assert!(ran.load(Ordering::SeqCst)),
            Poll::Ready(Err(err)) => {
                assert!(
                    matches!(
                        err.cancel_reason(),
                        Some(CancelReason::SpawnAfterShutdown | CancelReason::RuntimeShutdown)
                    ),
                    "{err}"
                );
                assert!(!ran.load(Ordering::SeqCst), "refused but it ran");
            }
            Poll::Pending => panic!("the handle never resolves"),
        }
        let counts = zero.counts();
        assert_eq!(counts.live, 0);
        assert_eq!(counts.spawned, counts.completed + counts.cancelled);
        assert_eq!(
            Arc::strong_count(&ran),
            1,
            "the spawned future was never dropped"
        );
    });
}
