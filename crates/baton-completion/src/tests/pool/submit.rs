//! Submitting (pool rules P1–P3 and P6): rejections hand the submission back unarmed and are
//! counted, the queue limit holds, the lanes do not starve each other, async jobs run, and a
//! closed inbox or a panicking sink is accounted.

use super::{fixture, later, submit_values};
use crate::executor::{AttachError, IoExecutor, RejectReason, ShutdownReport};
use crate::identity::RuntimeId;
use crate::pool::{BlockingPool, InterruptibleThreads};
use crate::prepared::{Decoder, PreparedOperation};
use crate::sync::{Arc, AtomicBool, Ordering};
use crate::tests::support::{
    DropFlag, interruptible, kind, panicking_registrar, payload, wait_until,
};
use std::time::Duration;

#[test]
fn submit_after_shutdown_is_rejected_and_delivers_nothing() {
    let f = fixture(BlockingPool::builder());
    let outcome = f.pool.shutdown(later(5));
    assert!(matches!(outcome, ShutdownReport::Drained { .. }));
    let destroyed = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(Arc::clone(&destroyed));
    let rejected = f
        .lease
        .submit(f.blocking(move || {
            let _keep = &flag;
            1_u8
        }))
        .expect_err("a closed pool rejects");
    assert_eq!(rejected.reason, RejectReason::ShuttingDown);
    assert!(rejected.to_string().contains("shutting down"));
    assert!(!destroyed.load(Ordering::SeqCst));
    assert_eq!(rejected.rollback(), baton_cancel::ContainedDrop::Dropped);
    assert!(
        destroyed.load(Ordering::SeqCst),
        "rollback destroys the job"
    );
    assert_eq!(f.sink.count(), 0);
    let outcome = f.pool.attach_runtime(RuntimeId::allocate().expect("ids"));
    assert!(matches!(outcome, Err(AttachError::ShuttingDown)));
    let snapshot = f.pool.snapshot();
    assert_eq!((snapshot.accepted, snapshot.rejected), (0, 1));
}

#[test]
fn full_queue_rejects_with_capacity() {
    let f = fixture(
        BlockingPool::builder()
            .queue_capacity(2)
            .interruptible_threads(InterruptibleThreads::Fixed(1)),
    );
    let (blocker, started, gate) = f.gated(false);
    f.lease.submit(blocker).expect("accepted");
    started.recv().expect("the blocker starts");
    f.lease.submit(f.blocking(|| 1_u8)).expect("first queued");
    f.lease.submit(f.blocking(|| 2_u8)).expect("second queued");
    let rejected = f
        .lease
        .submit(f.blocking(|| 3_u8))
        .expect_err("the queue is full");
    assert_eq!(rejected.reason, RejectReason::Capacity { capacity: 2 });
    let snapshot = f.pool.snapshot();
    assert_eq!(snapshot.queued, 2);
    assert_eq!(snapshot.running_interruptible, 1);
    assert!(snapshot.adds_up());
    gate.send(()).expect("blocker waits");
    assert_eq!(f.wait_for_completions(3).len(), 3);
    let outcome = f.pool.shutdown(later(10));
    assert!(matches!(outcome, ShutdownReport::Drained { snapshot } if snapshot.completed == 3 && snapshot.adds_up()));
}

#[test]
fn detached_and_foreign_submissions_are_rejected() {
    let f = fixture(BlockingPool::builder());
    let other = fixture(BlockingPool::builder());
    let foreign = f
        .lease
        .submit(other.blocking(|| 1_u8))
        .expect_err("another runtime's submission");
    let outcome = foreign.reason;
    assert!(matches!(outcome, RejectReason::ForeignRuntime { .. }));
    f.lease.detach();
    let detached = f
        .lease
        .submit(f.blocking(|| 1_u8))
        .expect_err("detached lease");
    assert_eq!(detached.reason, RejectReason::Detached);
    assert_eq!(
        f.pool.snapshot().rejected,
        2,
        "foreign and detached rejections are counted like every other rejection"
    );
    let retry = detached.into_submission();
    let lease = f
        .pool
        .attach_runtime(f.registrar.runtime_id())
        .expect("attach again");
    lease
        .submit(retry)
        .expect("a new lease accepts the handed-back submission");
    assert_eq!(payload::<u8>(f.wait_for_completions(1).remove(0)), Ok(1));
}

#[test]
fn quarantine_lane_does_not_starve_interruptible_work() {
    let f = fixture(BlockingPool::builder().quarantine_threads(1));
    let (runaway, started, gate) = f.gated(true);
    f.lease.submit(runaway).expect("accepted");
    started.recv().expect("runaway starts");
    f.lease
        .submit(f.quarantined(|| 0_u8))
        .expect("queued behind it");
    f.lease
        .submit(f.blocking(|| 5_u8))
        .expect("interruptible lane");
    let done = f.wait_for_completions(1);
    assert_eq!(payload::<u8>(done.into_iter().next().expect("one")), Ok(5));
    let snapshot = f.pool.snapshot();
    assert_eq!(snapshot.running_quarantined, 1);
    assert_eq!(snapshot.queued, 1);
    gate.send(()).expect("runaway waits");
    assert_eq!(f.wait_for_completions(2).len(), 2);
}

struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = &'static str;
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<&'static str> {
        if self.0 {
            std::task::Poll::Ready("async done")
        } else {
            self.0 = true;
            let waker = cx.waker().clone();
            std::thread::spawn(move || waker.wake());
            std::task::Poll::Pending
        }
    }
}

#[test]
fn async_jobs_run_on_pool_threads() {
    let f = fixture(BlockingPool::builder());
    let submission = f.bind(PreparedOperation::interruptible_async(
        kind(1),
        || YieldOnce(false),
        Decoder::identity(),
        interruptible(),
    ));
    f.lease.submit(submission).expect("accepted");
    let done = f.wait_for_completions(1).remove(0);
    assert_eq!(payload::<&str>(done), Ok("async done"));
}

#[test]
fn closed_inbox_counts_as_undeliverable() {
    let f = fixture(BlockingPool::builder());
    f.sink.close();
    f.lease.submit(f.blocking(|| 1_u8)).expect("accepted");
    wait_until(|| f.pool.snapshot().finished() == 1);
    let snapshot = f.pool.snapshot();
    assert_eq!((snapshot.completed, snapshot.undeliverable), (1, 1));
}

#[test]
fn panicking_sink_is_contained_and_the_lane_stays_accounted() {
    let pool = BlockingPool::builder()
        .interruptible_threads(InterruptibleThreads::Elastic {
            max: 1,
            keep_alive: Duration::from_secs(3600),
        })
        .build()
        .expect("valid pool");
    let (registrar, sink) = panicking_registrar();
    let lease = pool
        .attach_runtime(registrar.runtime_id())
        .expect("fresh runtime");
    submit_values(&registrar, &*lease, 0..2);
    wait_until(|| pool.snapshot().finished() == 2);
    let report = pool.shutdown(later(10));
    let ShutdownReport::Drained { snapshot } = report else {
        panic!("a panicking sink must not leave a job counted as running: {report:?}")
    };
    assert!(snapshot.adds_up(), "{snapshot:?}");
    assert_eq!((snapshot.completed, snapshot.undeliverable), (2, 2));
    assert_eq!(sink.calls.load(Ordering::SeqCst), 2);
}

#[test]
fn jobs_queued_behind_a_running_job_start_while_it_runs() {
    // Rule P7: a job queued while another thread runs a long job gets a thread without
    // waiting for that job, whether the spare thread is spinning, asleep or the sentinel.
    let f = fixture(BlockingPool::builder().interruptible_threads(
        crate::pool::InterruptibleThreads::Elastic {
            max: 4,
            keep_alive: Duration::from_secs(60),
        },
    ));
    let (long, started, gate) = f.gated(false);
    f.lease.submit(long).expect("accepted");
    started.recv().expect("the long job starts");
    for round in 1..=5_u8 {
        // Long enough for the spare thread to stop spinning and wait as the sentinel.
        std::thread::sleep(Duration::from_millis(5));
        f.lease
            .submit(f.blocking(move || round))
            .expect("accepted");
        let done = f.wait_for_completions(1);
        assert_eq!(payload::<u8>(done.into_iter().next().expect("one")), Ok(round));
    }
    assert_eq!(f.pool.snapshot().running_interruptible, 1, "the long job still runs");
    gate.send(()).expect("the long job waits");
    assert_eq!(f.wait_for_completions(1).len(), 1);
}
