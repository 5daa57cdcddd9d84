//! Refused thread spawns (pool rule P4): the submission that needed the thread is rejected,
//! and a job accepted relying on that thread gets a replacement or is cancelled, never
//! orphaned.

use super::{Fixture, fixture, later, refusing};
use crate::completion::CompletionFailure;
use crate::executor::{IoExecutor, RejectReason, ShutdownReport};
use crate::pool::{BlockingPool, InterruptibleThreads, OsThreadSpawner, ThreadSpawner};
use crate::sync::{Arc, AtomicBool, AtomicUsize, Mutex, Ordering, mpsc};
use crate::tests::support::payload;
use std::time::Duration;

#[test]
fn refused_thread_spawn_rejects_the_submission_without_orphaning_it() {
    let f = fixture(BlockingPool::builder().thread_spawner(refusing(0)));
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let rejected = f
        .lease
        .submit(f.blocking(move || flag.store(true, Ordering::SeqCst)))
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
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(f.sink.count(), 0);
    let snapshot = f.pool.snapshot();
    assert_eq!((snapshot.accepted, snapshot.rejected), (0, 1));
    assert_eq!(f.pool.thread_counts(), (0, 0));
    let outcome = f.pool.shutdown(later(5));
    assert!(matches!(outcome, ShutdownReport::Drained { .. }));
}

/// A spawner whose first spawn waits for a gate and then fails; later spawns succeed while
/// `retry_succeeds` allows, else fail too.
#[derive(Debug)]
struct GatedFailingSpawner {
    calls: AtomicUsize,
    entered: Mutex<Option<mpsc::Sender<()>>>,
    gate: Mutex<mpsc::Receiver<()>>,
    retry_succeeds: bool,
}

impl ThreadSpawner for GatedFailingSpawner {
    fn spawn(&self, name: String, body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
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
    let spawner = Arc::new(GatedFailingSpawner {
        calls: AtomicUsize::new(0),
        entered: Mutex::new(Some(entered_tx)),
        gate: Mutex::new(gate_rx),
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
    let lease = Arc::clone(&f.lease);
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
    let outcome = f.pool.shutdown(later(5));
    assert!(matches!(outcome, ShutdownReport::Drained { .. }));
}
