//! Shared helpers of the `worker_*` tests: set-up that skips loudly without io_uring, a
//! bounded "run until this handle finishes", fd counting; [`inbox`] for the completion
//! inbox's tests.

#![allow(dead_code, unreachable_pub)]

pub mod inbox;

use std::future::Future;
use std::pin::pin;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use baton_completion::{Dispatch, RuntimeId, Submission};
use baton_task::{JoinError, JoinHandle};
use baton_uring::{RunUntil, Worker, WorkerConfig, WorkerSetupError};
use web_time::Instant;

/// Overall bound for one test's waits: a bug fails the test instead of hanging it.
pub const BOUND: Duration = Duration::from_secs(20);

/// Serializes the tests of one binary (fd counts are process-wide).
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// A worker with `config`, or `None` (after a loud `SKIPPED` line) when this machine cannot
/// set up io_uring at all.
pub fn worker_with(config: WorkerConfig) -> Option<Worker> {
    let runtime = RuntimeId::allocate().expect("runtime ids are not exhausted in a test");
    match Worker::new(config, runtime) {
        Ok(worker) => Some(worker),
        Err(WorkerSetupError::Ring(err)) => {
            eprintln!("SKIPPED: io_uring is unavailable here: {err}");
            None
        }
        Err(err) => panic!("unexpected set-up error: {err}"),
    }
}

/// The prologue of a test of one default worker: holds the [`serial`] guard for the rest of the
/// test and binds `$worker` to a [`worker`], or returns from the test (after the loud `SKIPPED`
/// line) when this machine cannot set up io_uring.
#[allow(unused_macros)] // Not every test file starts so.
macro_rules! serial_worker {
    ($worker:ident) => {
        let _serial = $crate::worker_support::serial();
        let Some($worker) = $crate::worker_support::worker() else {
            return;
        };
    };
}
#[allow(unused_imports)]
pub(crate) use serial_worker;

/// A worker with the default configuration (see [`worker_with`]).
pub fn worker() -> Option<Worker> {
    worker_with(WorkerConfig::new())
}

/// The deadline of a test's bounded waits.
pub fn deadline() -> Instant {
    Instant::now() + BOUND
}

/// Polls `future` once with a no-op waker.
pub fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    pin!(future).poll(&mut cx)
}

/// Runs the worker on this thread until `join` finishes (bounded), then takes its result.
pub fn run_to_completion<T>(worker: &Worker, join: JoinHandle<T>) -> Result<T, JoinError> {
    let outcome = worker.run_until(&mut || join.is_finished(), Some(deadline()));
    assert_eq!(
        outcome,
        RunUntil::Satisfied,
        "the task did not finish within {BOUND:?}"
    );
    match poll_once(join) {
        Poll::Ready(result) => result,
        Poll::Pending => panic!("a finished JoinHandle must be ready"),
    }
}

/// Runs an armed blocking dispatch on this thread (as a pool thread would).
pub fn run_here(submission: Submission) {
    match submission.arm() {
        Dispatch::Blocking(dispatch) => {
            let _ = dispatch.run();
        }
        Dispatch::Async(_) => panic!("the test submits blocking jobs only"),
    }
}

/// Open descriptors of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd is readable")
        .count()
}

/// A task on a worker writing `bytes` at the start of a fresh temp file, polled by one turn so
/// its write is registered (the tests of retained writes at close and shutdown).
pub struct PendingWrite {
    path: std::path::PathBuf,
    fd: std::sync::Arc<std::os::fd::OwnedFd>,
    bytes: &'static [u8],
    pub writer: JoinHandle<std::io::Result<usize>>,
}

impl PendingWrite {
    /// Spawns the writing task on `worker` (its file tagged `tag`) and turns once.
    pub fn start(worker: &Worker, tag: &str, bytes: &'static [u8]) -> PendingWrite {
        let path = std::env::temp_dir().join(format!("baton-worker-{tag}-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .expect("open temp file");
        let fd = std::sync::Arc::new(std::os::fd::OwnedFd::from(file));
        let writer = worker.handle().spawn({
            let fd = std::sync::Arc::clone(&fd);
            async move { baton_uring::ops::write_at(fd, bytes.to_vec(), 0).await.0 }
        });
        let _ = worker.turn(baton_uring::Park::Poll);
        PendingWrite {
            path,
            fd,
            bytes,
            writer,
        }
    }

    /// Shuts `worker` down, asserting that it was clean, that the task finished and the bytes
    /// are in the file, and that the descriptor came back; removes the file.
    pub fn assert_landed_by_shutdown(self, worker: Worker) {
        let report = worker.shutdown(Some(deadline()));
        assert!(report.is_clean(), "{report:?}");
        assert!(matches!(poll_once(self.writer), Poll::Ready(_)));
        assert_eq!(std::fs::read(&self.path).expect("read back"), self.bytes);
        assert_eq!(std::sync::Arc::strong_count(&self.fd), 1);
        std::fs::remove_file(&self.path).expect("remove temp file");
    }
}

/// Joins the foreign `spawners` (each returns the join handles it spawned) and then the
/// `runner` thread that drove the worker until the test's condition held; asserts that the run
/// was satisfied, not cut off by its deadline. Returns every join handle and the worker.
pub fn join_spawners_and_runner<T>(
    spawners: Vec<std::thread::JoinHandle<Vec<JoinHandle<T>>>>,
    runner: std::thread::JoinHandle<(Worker, RunUntil)>,
) -> (Vec<JoinHandle<T>>, Worker) {
    let joins: Vec<_> = spawners
        .into_iter()
        .flat_map(|s| s.join().expect("spawner thread"))
        .collect();
    let (worker, outcome) = runner.join().expect("runner thread");
    assert_eq!(outcome, RunUntil::Satisfied);
    (joins, worker)
}
