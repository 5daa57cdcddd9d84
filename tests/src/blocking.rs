//! Blocking-job test support (`e2e_blocking`, `e2e_blocking_shutdown`): gated jobs that hold
//! the pool's thread, runtimes with one blocking thread, and what a handle reports after its
//! runtime shut down.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::thread;
use std::time::{Duration, Instant};

use baton::BlockingError;
use baton::blocking::{BlockingCancel, BlockingHandle, spawn_blocking};

/// A job that blocks its pool thread until `release` is sent, and says when it started.
pub fn gate() -> (
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

/// Tells whether any of the jobs made by [`Ran::job`] ran.
#[derive(Debug, Default)]
pub struct Ran(Arc<AtomicBool>);

impl Ran {
    /// A job body that records that it ran.
    pub fn job(&self) -> impl FnOnce() + Send + 'static {
        let ran = Arc::clone(&self.0);
        move || ran.store(true, Ordering::SeqCst)
    }

    /// Fails the test if any of them ran.
    pub fn assert_never(&self) {
        assert!(
            !self.0.load(Ordering::SeqCst),
            "a job cancelled or dropped before start never runs"
        );
    }
}

/// One blocking thread and a queue of one.
pub fn one_thread_runtime() -> io::Result<baton::Runtime> {
    one_thread_runtime_with_queue(1)
}

/// One blocking thread and a queue of `capacity`. A job cancelled while queued keeps its slot
/// until the thread dequeues it, so tests that leave a cancelled job behind and then submit
/// again need room for both.
pub fn one_thread_runtime_with_queue(capacity: usize) -> io::Result<baton::Runtime> {
    baton::Builder::new()
        .blocking_threads(1)
        .blocking_queue_capacity(capacity)
        .build()
}

/// The deadline of the shutdowns below. Their gates hold past it, so a gated job's result can
/// only arrive after the worker closed.
pub const SHUTDOWN: Duration = Duration::from_secs(2);

/// Waits until `done` holds, for at most 30 s; `false` if it never did.
pub fn eventually(mut done: impl FnMut() -> bool) -> bool {
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
pub fn started_on_worker<T: Send + 'static>(
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
pub fn after_shutdown<T: Send + 'static>(
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

/// [`after_shutdown`]'s report in the other order: awaited by reference first (on another
/// runtime, bounded), then `is_finished` and `cancel` on the resolved handle.
pub fn awaited_then_asked<T: Send + 'static>(
    mut job: BlockingHandle<T>,
) -> io::Result<(bool, BlockingCancel, Result<(), BlockingError>)> {
    let other = baton::Runtime::new()?;
    let awaited = other
        .block_on(baton::time::timeout(Duration::from_secs(30), &mut job))
        .map_err(|_| io::Error::other("the handle of a shut-down runtime never resolved"))?;
    Ok((job.is_finished(), job.cancel(), awaited.map(drop)))
}

/// What every job the shutdown gave up reports: finished, `Closed` from `cancel`, and
/// `Err(Closed)` from awaiting it.
pub const GIVEN_UP: (bool, BlockingCancel, Result<(), BlockingError>) =
    (true, BlockingCancel::Closed, Err(BlockingError::Closed));

/// A runtime on a blocking pool it shares (`Builder::blocking_executor`), with one thread.
pub fn on_a_shared_pool() -> io::Result<(baton::Runtime, Arc<baton_completion::BlockingPool>)> {
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

/// A gated job holding `rt`'s one blocking thread (its handle and the sender that releases
/// it), and a job of `ran` queued behind it from this thread, so through a relay task.
pub type QueuedBehind = (mpsc::Sender<()>, BlockingHandle<()>, BlockingHandle<()>);

/// Occupies `rt`'s one blocking thread with a gated job, then queues a job of `ran` behind it
/// from this thread (so through a relay task); see [`QueuedBehind`].
pub fn queued_behind_a_busy_job(rt: &baton::Runtime, ran: &Ran) -> io::Result<QueuedBehind> {
    let (release, started, job) = gate();
    let busy = rt.spawn_blocking(job);
    started.recv().map_err(io::Error::other)?;
    let queued = rt.spawn_blocking(ran.job());
    assert!(
        eventually(|| rt.metrics().blocking.queued == 1),
        "the relay queued the job behind the busy one"
    );
    Ok((release, busy, queued))
}
