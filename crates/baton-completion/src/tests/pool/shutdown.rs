//! Shutting down (pool rule P5): queued work is withdrawn, running work waited for, idle
//! elastic threads leave, and dropping the pool closes it.

use super::{Fixture, fixture, later};
use crate::completion::CompletionFailure;
use crate::executor::{IoExecutor, RejectReason, ShutdownReport};
use crate::pool::{BlockingPool, InterruptibleThreads, OsThreadSpawner, ThreadSpawner};
use crate::sync::{Arc, AtomicUsize, Ordering};
use crate::tests::support::{bind_split, blocking_op, payload, wait_until};
use baton_cancel::QueueState;
use std::time::Duration;

#[test]
fn shutdown_withdraws_queued_work_and_reports_drained() {
    let f = fixture(BlockingPool::builder().interruptible_threads(InterruptibleThreads::Fixed(1)));
    let (blocker, started, gate) = f.gated(false);
    f.lease.submit(blocker).expect("accepted");
    started.recv().expect("blocker starts");
    let halves: Vec<_> = (0..3_u8)
        .map(|value| {
            let (half, submission) = bind_split(&f.registrar, blocking_op(move || value));
            f.lease.submit(submission).expect("queued");
            half
        })
        .collect();
    // The blocker finishes only once the shutdown withdrew the queued jobs, so the one thread
    // never gets to run them.
    let lease = Arc::clone(&f.lease);
    let releaser = std::thread::spawn(move || {
        wait_until(|| lease.snapshot().cancelled == 3);
        gate.send(()).expect("blocker waits");
    });
    let report = f.pool.shutdown(later(20));
    releaser.join().expect("releaser does not panic");
    let ShutdownReport::Drained { snapshot } = report else {
        panic!("the blocker finished before the deadline: {report:?}")
    };
    assert_eq!((snapshot.completed, snapshot.cancelled), (1, 3));
    assert!(snapshot.adds_up());
    let completions = f.sink.take();
    assert_eq!(completions.len(), 4);
    let cancelled = completions
        .into_iter()
        .filter(|c| matches!(c.result, Err(CompletionFailure::Cancelled)))
        .count();
    assert_eq!(cancelled, 3);
    // Rule P5: withdrawn (baton-cancel rule C7), so their requesters see nobody cancelled them.
    for half in &halves {
        assert_eq!(half.cancel_handle().state(), QueueState::Cancelled);
        assert!(half.cancel_handle().was_withdrawn());
    }
}

#[test]
fn idle_elastic_threads_leave_after_keep_alive() {
    let f = fixture(
        BlockingPool::builder()
            .interruptible_threads(InterruptibleThreads::Elastic {
                max: 4,
                keep_alive: Duration::from_millis(20),
            })
            .quarantine_keep_alive(Duration::from_millis(20)),
    );
    f.lease.submit(f.blocking(|| 1_u8)).expect("accepted");
    f.lease.submit(f.quarantined(|| 1_u8)).expect("accepted");
    assert_eq!(f.wait_for_completions(2).len(), 2);
    wait_until(|| f.pool.thread_counts() == (0, 0));
    f.lease
        .submit(f.blocking(|| 2_u8))
        .expect("a new thread starts on demand");
    assert_eq!(f.wait_for_completions(1).len(), 1);
}

/// Counts live threads: the body decrements the counter when it returns.
#[derive(Debug, Default)]
struct CountingSpawner {
    live: Arc<AtomicUsize>,
}

impl ThreadSpawner for CountingSpawner {
    fn spawn(&self, name: String, body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        let live = Arc::clone(&self.live);
        live.fetch_add(1, Ordering::SeqCst);
        OsThreadSpawner.spawn(
            name,
            Box::new(move || {
                body();
                live.fetch_sub(1, Ordering::SeqCst);
            }),
        )
    }
}

#[test]
fn dropping_the_pool_cancels_queued_work_and_stops_its_threads() {
    let spawner = Arc::new(CountingSpawner::default());
    let live = Arc::clone(&spawner.live);
    let f = fixture(
        BlockingPool::builder()
            .interruptible_threads(InterruptibleThreads::Fixed(1))
            .thread_spawner(spawner),
    );
    let (blocker, started, gate) = f.gated(false);
    f.lease.submit(blocker).expect("accepted");
    started.recv().expect("blocker starts");
    f.lease.submit(f.blocking(|| 1_u8)).expect("queued");
    assert_eq!(f.lease.snapshot().queued, 1);
    let Fixture {
        pool,
        lease,
        sink,
        registrar,
    } = f;
    drop(pool);
    assert_eq!(
        payload::<u8>(sink.take().remove(0)),
        Err(CompletionFailure::Cancelled)
    );
    assert_eq!(lease.snapshot().running_interruptible, 1);
    gate.send(()).expect("blocker waits");
    wait_until(|| live.load(Ordering::SeqCst) == 0);
    assert_eq!(sink.count(), 1, "the running job still delivered");
    let (_half, late) = bind_split(&registrar, blocking_op(|| 2_u8));
    let rejected = lease.submit(late).expect_err("a dropped pool is closed");
    assert_eq!(rejected.reason, RejectReason::ShuttingDown);
}

#[test]
fn idle_elastic_thread_leaves_after_keep_alive_while_another_job_runs() {
    // Rule P4 with P7's sentinel: the spare thread's ticks count toward its keep-alive.
    let f = fixture(
        BlockingPool::builder().interruptible_threads(InterruptibleThreads::Elastic {
            max: 2,
            keep_alive: Duration::from_millis(20),
        }),
    );
    let (long, started, gate) = f.gated(false);
    f.lease.submit(long).expect("accepted");
    started.recv().expect("the long job starts");
    f.lease.submit(f.blocking(|| 1_u8)).expect("accepted");
    assert_eq!(f.wait_for_completions(1).len(), 1);
    wait_until(|| f.pool.thread_counts().0 == 1);
    gate.send(()).expect("the long job waits");
    assert_eq!(f.wait_for_completions(1).len(), 1);
}
