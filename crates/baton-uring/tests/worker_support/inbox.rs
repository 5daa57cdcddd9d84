//! Shared fixtures of the `worker_inbox_*` tests: blocking jobs issued, bound and registered on
//! the worker, polled there, run here or through a real pool attached to the worker's runtime.

use std::future::poll_fn;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use baton_cancel::{HookOutcome, Interruptible};
use baton_completion::{
    BlockingPool, BlockingPoolBuilder, CompletionKind, Decoder, ExecutorLease, ExecutorSnapshot,
    InterruptibleThreads, IoExecutor, PreparedOperation, Registrar, SendDecoder, SendInterruptible,
    SendPreparedOperation, ShutdownReport, Submission, WaitError, WaitKey, from_fn,
};
use baton_uring::{Worker, WorkerHandle, with_current_waits};

use super::{deadline, worker};

/// The completion kind of every job here.
pub fn kind() -> CompletionKind {
    CompletionKind::try_from_raw(7).expect("non-zero kind")
}

/// An interruption hook that reaps at once.
pub fn hook() -> Interruptible {
    Interruptible::new("test", || Ok(HookOutcome::Reaped))
}

/// An interruptible blocking job running `job`, its output decoded by `decoder`.
pub fn interruptible_job<T, F>(job: F, decoder: Decoder<T>) -> PreparedOperation
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    PreparedOperation::interruptible_blocking(kind(), from_fn(job), decoder, hook())
}

/// Issues an identity through `registrar`, binds `prepared` to it, splits the binding and
/// registers its runtime half in the current thread's wait table (the worker is entered, or
/// this runs in a task on it): the wait's key and the submission to run.
pub fn register_prepared(
    registrar: &Registrar,
    prepared: PreparedOperation,
) -> (WaitKey, Submission) {
    let identity = registrar.issue(kind()).expect("identity");
    let (half, submission) = registrar.bind(identity, prepared).expect("bind").split();
    let key = with_current_waits(|waits| waits.register(half))
        .expect("on the worker")
        .expect("the half belongs to this runtime");
    (key, submission)
}

/// Registers (see [`register_prepared`]) a blocking job that returns `value`, decoded `+ 1`.
pub fn register_job(registrar: &Registrar, value: u32) -> (WaitKey, Submission) {
    register_prepared(
        registrar,
        interruptible_job(move || value, Decoder::new(|n: u32| n + 1)),
    )
}

/// Enters `worker` and registers there a blocking job that returns `value` (see
/// [`register_job`]).
pub fn register_job_on(worker: &Worker, value: u32) -> (WaitKey, Submission) {
    let _entered = worker.enter();
    register_job(&worker.handle().registrar(), value)
}

/// Polls a wait once on the entered worker with `waker`.
pub fn poll_wait_with<T: 'static>(key: WaitKey, waker: &Waker) -> Poll<Result<T, WaitError>> {
    let mut cx = Context::from_waker(waker);
    with_current_waits(|waits| waits.poll_wait::<T>(key, &mut cx)).expect("entered")
}

/// Polls a wait once on the entered worker with a no-op waker.
pub fn poll_wait(key: WaitKey) -> Poll<Result<u32, WaitError>> {
    poll_wait_with(key, Waker::noop())
}

/// Waits, from a task on the worker, for the wait `key` to settle.
pub async fn wait_for<T: 'static>(key: WaitKey) -> Result<T, WaitError> {
    poll_fn(|cx| with_current_waits(|waits| waits.poll_wait::<T>(key, cx)).expect("on the worker"))
        .await
}

/// Shuts `worker` down, asserting it shut down cleanly.
pub fn shut_down_clean(worker: Worker) {
    assert!(worker.shutdown(Some(deadline())).is_clean());
}

/// The end of a test of one wait: polls `key` once on the entered worker, asserting it gives
/// `expected`, then shuts the worker down, asserting it shut down cleanly.
pub fn assert_wait_then_shut_down(
    worker: Worker,
    key: WaitKey,
    expected: Poll<Result<u32, WaitError>>,
) {
    {
        let _entered = worker.enter();
        assert_eq!(poll_wait(key), expected);
    }
    shut_down_clean(worker);
}

/// A waker that panics when woken.
pub struct PanicOnWake;

impl std::task::Wake for PanicOnWake {
    fn wake(self: Arc<Self>) {
        panic!("this waker panics on wake");
    }
}

/// The set-up of the tests that run blocking jobs through a real pool: a worker, its handle,
/// a pool attached to the worker's runtime (its lease) and the worker's registrar.
pub struct PoolFixture {
    pub worker: Worker,
    pub handle: WorkerHandle,
    pub pool: BlockingPool,
    pub lease: Arc<dyn ExecutorLease>,
    pub registrar: Registrar,
}

/// The prologue of a [`PoolFixture`] test: holds the [`serial`](super::serial) guard for the
/// rest of the test and binds `$fixture` (a pattern) to `$make`'s fixture, or returns from the
/// test (after the loud `SKIPPED` line) when this machine cannot set up io_uring.
#[allow(unused_macros)] // Only the pool tests use it.
macro_rules! pool_fixture {
    (let $fixture:pat = $make:expr) => {
        let _serial = $crate::worker_support::serial();
        let Some($fixture) = $make else {
            return;
        };
    };
}
#[allow(unused_imports)]
pub(crate) use pool_fixture;

/// A [`PoolFixture`] whose pool has `threads` interruptible threads, or `None` (after a loud
/// `SKIPPED` line) when this machine cannot set up io_uring.
pub fn worker_with_pool(threads: usize) -> Option<PoolFixture> {
    worker_with_pool_from(
        BlockingPool::builder().interruptible_threads(InterruptibleThreads::Fixed(threads)),
    )
}

/// A [`PoolFixture`] whose pool has the default configuration (see [`worker_with_pool`]).
pub fn worker_with_default_pool() -> Option<PoolFixture> {
    worker_with_pool_from(BlockingPool::builder())
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
pub fn shut_down_drained(pool: &BlockingPool, worker: Worker) -> ExecutorSnapshot {
    let report = pool.shutdown(deadline());
    assert!(
        matches!(report, ShutdownReport::Drained { .. }),
        "{report:?}"
    );
    shut_down_clean(worker);
    report.snapshot()
}

/// The body of a task on the worker that runs `job` through the pool: issues and binds a
/// blocking job with a `+ 1` decoder, registers its wait as migratable, submits it to `lease`
/// and returns the decoded value.
pub async fn migratable_job<F>(registrar: Registrar, lease: Arc<dyn ExecutorLease>, job: F) -> u32
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
    wait_for::<u32>(key).await.expect("the job's decoded value")
}
