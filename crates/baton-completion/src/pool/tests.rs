//! Unit tests of the blocking pool (pool rules 1–6).

use super::*;
use crate::dispatch::Submission;
use crate::prepared::{Decoder, PreparedOperation, from_fn};
use crate::recording::{RecordingSink, kind, payload, registrar};
use crate::registrar::Registrar;
use crate::{CompletionFailure, CompletionSender, DeliveryOutcome, ExternalCompletion};
use baton_cancel::{HookOutcome, Interruptible, QuarantineBound};
use proptest::prelude::*;
use std::sync::mpsc;
use std::time::Duration;

struct Fixture {
    pool: BlockingPool,
    lease: std::sync::Arc<dyn ExecutorLease>,
    registrar: Registrar,
    sink: std::sync::Arc<RecordingSink>,
}

fn fixture(builder: BlockingPoolBuilder) -> Fixture {
    let pool = builder.build().expect("valid pool configuration");
    let (registrar, sink, _allocator) = registrar();
    let lease = pool
        .attach_runtime(registrar.runtime_id())
        .expect("fresh runtime attaches");
    Fixture {
        pool,
        lease,
        registrar,
        sink,
    }
}

fn interruptible() -> Interruptible {
    Interruptible::new("test", || Ok(HookOutcome::Reaped))
}

impl Fixture {
    fn bind(&self, prepared: PreparedOperation) -> Submission {
        let identity = self.registrar.issue(kind(1)).expect("ids available");
        let (_half, submission) = self
            .registrar
            .bind(identity, prepared)
            .expect("valid bind")
            .split();
        submission
    }

    fn blocking<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> Submission {
        self.bind(PreparedOperation::interruptible_blocking(
            kind(1),
            from_fn(job),
            Decoder::identity(),
            interruptible(),
        ))
    }

    fn quarantined<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Submission {
        self.bind(PreparedOperation::quarantined_blocking(
            kind(1),
            from_fn(job),
            Decoder::identity(),
            QuarantineBound::FiniteWork {
                units: 1,
                unit: "job",
            },
        ))
    }

    /// A job that reports it started, then waits for the gate.
    fn gated(&self, quarantined: bool) -> (Submission, mpsc::Receiver<()>, mpsc::Sender<()>) {
        let (started_tx, started_rx) = mpsc::channel();
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let job = move || {
            let _ = started_tx.send(());
            gate_rx.recv().is_ok()
        };
        let submission = if quarantined {
            self.quarantined(job)
        } else {
            self.blocking(job)
        };
        (submission, started_rx, gate_tx)
    }

    fn wait_for_completions(&self, count: usize) -> Vec<ExternalCompletion> {
        wait_until(|| self.sink.count() >= count);
        self.sink.take()
    }
}

fn wait_until(mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "condition not met in 20 s"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn later(seconds: u64) -> Instant {
    Instant::now() + Duration::from_secs(seconds)
}

#[derive(Debug)]
struct RefusingSpawner {
    allow: std::sync::atomic::AtomicUsize,
}

impl ThreadSpawner for RefusingSpawner {
    fn spawn(&self, name: String, body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        let allowed = self
            .allow
            .fetch_update(
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
                |n| n.checked_sub(1),
            )
            .is_ok();
        if allowed {
            OsThreadSpawner.spawn(name, body)
        } else {
            Err(std::io::Error::other("thread limit reached (injected)"))
        }
    }
}

fn refusing(allow: usize) -> std::sync::Arc<dyn ThreadSpawner> {
    std::sync::Arc::new(RefusingSpawner {
        allow: std::sync::atomic::AtomicUsize::new(allow),
    })
}

#[test]
fn zero_capacity_is_refused() {
    let error = BlockingPool::builder().queue_capacity(0).build();
    assert_eq!(error.err(), Some(BuildError::ZeroCapacity));
}

#[test]
fn zero_threads_are_refused() {
    let fixed = BlockingPool::builder()
        .interruptible_threads(InterruptibleThreads::Fixed(0))
        .build();
    assert_eq!(
        fixed.err(),
        Some(BuildError::ZeroThreads {
            lane: "interruptible"
        })
    );
    let elastic = BlockingPool::builder()
        .interruptible_threads(InterruptibleThreads::Elastic {
            max: 0,
            keep_alive: Duration::from_secs(1),
        })
        .build();
    assert!(matches!(elastic, Err(BuildError::ZeroThreads { .. })));
    let quarantine = BlockingPool::builder().quarantine_threads(0).build();
    assert_eq!(
        quarantine.err().map(|e| e.to_string()),
        Some("the quarantine lane needs at least 1 thread".to_owned())
    );
}

#[test]
fn duplicate_runtime_attach_is_refused() {
    let f = fixture(BlockingPool::builder());
    let runtime = f.registrar.runtime_id();
    assert_eq!(
        f.pool.attach_runtime(runtime).err(),
        Some(AttachError::DuplicateRuntime { runtime })
    );
    f.lease.detach();
    assert!(
        f.pool.attach_runtime(runtime).is_ok(),
        "detached may attach again"
    );
}

#[test]
fn submit_after_shutdown_is_rejected_and_delivers_nothing() {
    let f = fixture(BlockingPool::builder());
    assert!(matches!(
        f.pool.shutdown(later(5)),
        ShutdownReport::Drained { .. }
    ));
    struct DropFlag(std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let destroyed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = DropFlag(std::sync::Arc::clone(&destroyed));
    let rejected = f
        .lease
        .submit(f.blocking(move || {
            let _keep = &flag;
            1_u8
        }))
        .expect_err("a closed pool rejects");
    assert_eq!(rejected.reason, RejectReason::ShuttingDown);
    assert!(rejected.to_string().contains("shutting down"));
    assert!(!destroyed.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(rejected.rollback(), baton_cancel::ContainedDrop::Dropped);
    assert!(
        destroyed.load(std::sync::atomic::Ordering::SeqCst),
        "rollback destroys the job"
    );
    assert_eq!(f.sink.count(), 0);
    assert!(matches!(
        f.pool.attach_runtime(RuntimeId::allocate().expect("ids")),
        Err(AttachError::ShuttingDown)
    ));
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
    assert!(matches!(
        f.pool.shutdown(later(10)),
        ShutdownReport::Drained { snapshot } if snapshot.completed == 3 && snapshot.adds_up()
    ));
}

#[test]
fn refused_thread_spawn_rejects_the_submission_without_orphaning_it() {
    let f = fixture(BlockingPool::builder().thread_spawner(refusing(0)));
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&ran);
    let rejected = f
        .lease
        .submit(f.blocking(move || flag.store(true, std::sync::atomic::Ordering::SeqCst)))
        .expect_err("no thread can run it");
    assert_eq!(
        rejected.reason,
        RejectReason::SpawnFailed {
            message: "thread limit reached (injected)".into()
        }
    );
    assert!(
        rejected
            .to_string()
            .contains("OS refused to create a worker thread")
    );
    let _ = rejected.rollback();
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(f.sink.count(), 0);
    let snapshot = f.pool.snapshot();
    assert_eq!((snapshot.accepted, snapshot.rejected), (0, 1));
    assert_eq!(f.pool.thread_counts(), (0, 0));
    assert!(matches!(
        f.pool.shutdown(later(5)),
        ShutdownReport::Drained { .. }
    ));
}

#[test]
fn refused_fixed_thread_fails_the_build() {
    let result = BlockingPool::builder()
        .interruptible_threads(InterruptibleThreads::Fixed(3))
        .thread_spawner(refusing(2))
        .build();
    assert!(matches!(result, Err(BuildError::Spawn { message }) if message.contains("injected")));
}

#[test]
fn detached_and_foreign_submissions_are_rejected() {
    let f = fixture(BlockingPool::builder());
    let other = fixture(BlockingPool::builder());
    let foreign = f
        .lease
        .submit(other.blocking(|| 1_u8))
        .expect_err("another runtime's submission");
    assert!(matches!(
        foreign.reason,
        RejectReason::ForeignRuntime { .. }
    ));
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
fn shutdown_cancels_queued_work_and_reports_drained() {
    let f = fixture(BlockingPool::builder().interruptible_threads(InterruptibleThreads::Fixed(1)));
    let (blocker, started, gate) = f.gated(false);
    f.lease.submit(blocker).expect("accepted");
    started.recv().expect("blocker starts");
    for value in 0..3_u8 {
        f.lease.submit(f.blocking(move || value)).expect("queued");
    }
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
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
    live: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl ThreadSpawner for CountingSpawner {
    fn spawn(&self, name: String, body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        let live = std::sync::Arc::clone(&self.live);
        live.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        OsThreadSpawner.spawn(
            name,
            Box::new(move || {
                body();
                live.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }),
        )
    }
}

#[test]
fn dropping_the_pool_cancels_queued_work_and_stops_its_threads() {
    let spawner = std::sync::Arc::new(CountingSpawner::default());
    let live = std::sync::Arc::clone(&spawner.live);
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
    wait_until(|| live.load(std::sync::atomic::Ordering::SeqCst) == 0);
    assert_eq!(sink.count(), 1, "the running job still delivered");
    let identity = registrar.issue(kind(1)).expect("ids available");
    let (_half, late) = registrar
        .bind(
            identity,
            PreparedOperation::interruptible_blocking(
                kind(1),
                from_fn(|| 2_u8),
                Decoder::identity(),
                interruptible(),
            ),
        )
        .expect("valid bind")
        .split();
    let rejected = lease.submit(late).expect_err("a dropped pool is closed");
    assert_eq!(rejected.reason, RejectReason::ShuttingDown);
}

#[derive(Clone, Debug)]
enum Op {
    Blocking,
    Async,
    Quarantined,
    CancelledBeforeStart,
    Panicking,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Blocking),
        Just(Op::Async),
        Just(Op::Quarantined),
        Just(Op::CancelledBeforeStart),
        Just(Op::Panicking),
    ]
}

proptest! {

    /// Whatever mix of jobs is submitted to a small pool, the counters add up at every
    /// snapshot, every accepted job delivers exactly once, and shutdown drains.
    #[test]
    fn prop_pool_counters_add_up(ops in proptest::collection::vec(op(), 1..40), capacity in 1_usize..8) {
        let f = fixture(
            BlockingPool::builder()
                .queue_capacity(capacity)
                .interruptible_threads(InterruptibleThreads::Elastic {
                    max: 2,
                    keep_alive: Duration::from_millis(5),
                })
                .quarantine_threads(1),
        );
        let mut accepted = 0_u64;
        for op in ops {
            let submission = match op {
                Op::Blocking => f.blocking(|| 1_u8),
                Op::Async => f.bind(PreparedOperation::interruptible_async(
                    kind(1),
                    || async { 1_u8 },
                    Decoder::identity(),
                    interruptible(),
                )),
                Op::Quarantined => f.quarantined(|| 1_u8),
                Op::CancelledBeforeStart => {
                    let identity = f.registrar.issue(kind(1)).expect("ids");
                    let (half, submission) = f
                        .registrar
                        .bind(identity, PreparedOperation::interruptible_blocking(
                            kind(1),
                            from_fn(|| 1_u8),
                            Decoder::identity(),
                            interruptible(),
                        ))
                        .expect("valid bind")
                        .split();
                    let _ = half.cancel_handle().cancel_before_start();
                    submission
                }
                Op::Panicking => f.blocking(|| -> u8 { panic!("proptest job panics") }),
            };
            match f.lease.submit(submission) {
                Ok(()) => accepted += 1,
                Err(rejected) => {
                    let capacity_refusal = matches!(rejected.reason, RejectReason::Capacity { .. });
                    prop_assert!(capacity_refusal, "unexpected rejection {}", rejected.reason);
                    let _ = rejected.rollback();
                }
            }
            let snapshot = f.pool.snapshot();
            prop_assert!(snapshot.adds_up(), "{:?}", snapshot);
            prop_assert_eq!(snapshot.accepted, accepted);
        }
        let report = f.pool.shutdown(later(20));
        let ShutdownReport::Drained { snapshot } = report else {
            panic!("short jobs drain: {report:?}")
        };
        prop_assert!(snapshot.adds_up());
        prop_assert_eq!(snapshot.finished(), accepted);
        prop_assert_eq!(f.sink.count() as u64, accepted);
    }
}

/// A spawner whose first spawn waits for a gate and then fails; later spawns succeed while
/// `retry_succeeds` allows, else fail too.
#[derive(Debug)]
struct GatedFailingSpawner {
    calls: std::sync::atomic::AtomicUsize,
    entered: std::sync::Mutex<Option<mpsc::Sender<()>>>,
    gate: std::sync::Mutex<mpsc::Receiver<()>>,
    retry_succeeds: bool,
}

impl ThreadSpawner for GatedFailingSpawner {
    fn spawn(&self, name: String, body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        let call = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if call == 0 {
            if let Some(entered) = self.entered.lock().expect("not poisoned").take() {
                let _ = entered.send(());
            }
            let _ = self.gate.lock().expect("not poisoned").recv();
            return Err(std::io::Error::other("first spawn refused (injected)"));
        }
        if self.retry_succeeds {
            OsThreadSpawner.spawn(name, body)
        } else {
            Err(std::io::Error::other("retry refused (injected)"))
        }
    }
}

/// Submission A reserves the lane's only thread and blocks in the spawner; submission B is
/// accepted relying on that thread; then A's spawn fails. Returns once A's rejection came
/// back.
fn strand_second_submission(retry_succeeds: bool) -> Fixture {
    let (entered_tx, entered_rx) = mpsc::channel();
    let (gate_tx, gate_rx) = mpsc::channel();
    let spawner = std::sync::Arc::new(GatedFailingSpawner {
        calls: std::sync::atomic::AtomicUsize::new(0),
        entered: std::sync::Mutex::new(Some(entered_tx)),
        gate: std::sync::Mutex::new(gate_rx),
        retry_succeeds,
    });
    let f = fixture(
        BlockingPool::builder()
            .interruptible_threads(InterruptibleThreads::Elastic {
                max: 1,
                keep_alive: Duration::from_secs(3600),
            })
            .thread_spawner(spawner),
    );
    let first = f.blocking(|| 1_u8);
    let lease = std::sync::Arc::clone(&f.lease);
    let submitter = std::thread::spawn(move || lease.submit(first).map_err(|r| r.reason));
    entered_rx.recv().expect("the first spawn starts");
    f.lease
        .submit(f.blocking(|| 2_u8))
        .expect("the second relies on the thread being spawned");
    gate_tx.send(()).expect("the spawner waits");
    let first = submitter.join().expect("submitter does not panic");
    assert!(
        matches!(first, Err(RejectReason::SpawnFailed { .. })),
        "{first:?}"
    );
    f
}

#[test]
fn failed_spawn_respawns_for_a_job_that_relied_on_it() {
    let f = strand_second_submission(true);
    let done = f.wait_for_completions(1);
    assert_eq!(payload::<u8>(done.into_iter().next().expect("one")), Ok(2));
    let ShutdownReport::Drained { snapshot } = f.pool.shutdown(later(10)) else {
        panic!("the second job finished")
    };
    assert!(snapshot.adds_up(), "{snapshot:?}");
    assert_eq!(
        (snapshot.accepted, snapshot.completed, snapshot.rejected),
        (1, 1, 1)
    );
}

#[test]
fn failed_respawn_cancels_the_stranded_job() {
    let f = strand_second_submission(false);
    let done = f.wait_for_completions(1);
    assert_eq!(
        payload::<u8>(done.into_iter().next().expect("one")),
        Err(CompletionFailure::Cancelled)
    );
    let snapshot = f.pool.snapshot();
    assert!(snapshot.adds_up(), "{snapshot:?}");
    assert_eq!(
        (snapshot.accepted, snapshot.cancelled, snapshot.rejected),
        (1, 1, 1)
    );
    assert_eq!(f.pool.thread_counts(), (0, 0));
    assert!(matches!(
        f.pool.shutdown(later(5)),
        ShutdownReport::Drained { .. }
    ));
}

/// A sink whose `deliver` panics, after counting the call.
#[derive(Debug, Default)]
struct PanickingSink {
    calls: std::sync::atomic::AtomicUsize,
}

impl CompletionSender for PanickingSink {
    fn deliver(&self, _completion: ExternalCompletion) -> DeliveryOutcome {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        panic!("hostile sink");
    }
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
    let runtime = RuntimeId::allocate().expect("ids");
    let sink = std::sync::Arc::new(PanickingSink::default());
    let registrar = Registrar::new(crate::IdentityAllocator::new(runtime), sink.clone());
    let lease = pool.attach_runtime(runtime).expect("fresh runtime");
    for value in 0..2_u8 {
        let identity = registrar.issue(kind(1)).expect("ids");
        let (_half, submission) = registrar
            .bind(
                identity,
                PreparedOperation::interruptible_blocking(
                    kind(1),
                    from_fn(move || value),
                    Decoder::identity(),
                    interruptible(),
                ),
            )
            .expect("valid bind")
            .split();
        lease.submit(submission).expect("accepted");
    }
    wait_until(|| pool.snapshot().finished() == 2);
    let report = pool.shutdown(later(10));
    let ShutdownReport::Drained { snapshot } = report else {
        panic!("a panicking sink must not leave a job counted as running: {report:?}")
    };
    assert!(snapshot.adds_up(), "{snapshot:?}");
    assert_eq!((snapshot.completed, snapshot.undeliverable), (2, 2));
    assert_eq!(sink.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
}
