//! Loom models of the blocking pool's submit/shutdown protocol (pool rules P1, P2 and P5) and
//! of its recovery from a refused thread spawn (P4).
#![cfg(loom)]

mod support;

use baton_completion::{
    BlockingPool, CompletionSender, Decoder, DeliveryOutcome, ExternalCompletion,
    InterruptibleThreads, IoExecutor, PreparedOperation, ShutdownReport, ThreadSpawner, from_fn,
};
use loom::sync::{Condvar, Mutex};
use std::sync::Arc;
use std::time::Duration;
use support::{bind, kind, quiet_hook, recording_registrar, registrar_for, submit_or_roll_back};
use web_time::Instant;

/// A blocking job returning `value`.
fn returns(value: u8) -> PreparedOperation {
    PreparedOperation::interruptible_blocking(
        kind(1),
        from_fn(move || value),
        Decoder::identity(),
        quiet_hook(),
    )
}

/// Starts pool threads as loom threads and keeps their handles so the model joins them.
#[derive(Debug, Default)]
struct LoomSpawner {
    handles: Mutex<Vec<loom::thread::JoinHandle<()>>>,
}

impl ThreadSpawner for LoomSpawner {
    fn spawn(
        &self,
        _name: String,
        body: Box<dyn FnOnce() + Send + 'static>,
    ) -> std::io::Result<()> {
        let handle = loom::thread::spawn(body);
        self.handles.lock().expect("not poisoned").push(handle);
        Ok(())
    }
}

impl LoomSpawner {
    fn join_all(&self) {
        let handles = std::mem::take(&mut *self.handles.lock().expect("not poisoned"));
        for handle in handles {
            handle.join().expect("pool thread does not panic");
        }
    }
}

/// A pool of `queue_capacity` places whose interruptible lane has at most one thread (kept
/// alive for the whole model), started by `spawner`.
fn one_thread_pool(queue_capacity: usize, spawner: Arc<dyn ThreadSpawner>) -> BlockingPool {
    BlockingPool::builder()
        .queue_capacity(queue_capacity)
        .interruptible_threads(InterruptibleThreads::Elastic {
            max: 1,
            keep_alive: Duration::from_secs(3600),
        })
        .short_job_parallelism(1)
        .thread_spawner(spawner)
        .build()
        .expect("valid pool")
}

/// Runs one submit racing one shutdown on a pool with one elastic thread, then checks the
/// report against the deliveries seen when it returned and against the final counters.
fn submit_vs_shutdown(deadline_passed: bool) {
    let spawner = Arc::new(LoomSpawner::default());
    let pool = one_thread_pool(1, spawner.clone());
    let (registrar, sink) = recording_registrar();
    let (_half, submission) = bind(&registrar, returns(1)).split();
    let lease = pool
        .attach_runtime(registrar.runtime_id())
        .expect("fresh runtime");
    let submitter = loom::thread::spawn(move || submit_or_roll_back(&*lease, submission));
    // The deadline is an explicit event: either already passed (one check, no wait) or far
    // away (shutdown must wait for the running job and be woken).
    let deadline = if deadline_passed {
        Instant::now()
    } else {
        Instant::now() + Duration::from_secs(3600)
    };
    let report = pool.shutdown(deadline);
    let delivered_at_report = sink.count() as u64;
    let accepted = submitter.join().expect("submitter does not panic");
    spawner.join_all();

    let at_report = report.snapshot();
    assert!(at_report.adds_up(), "{at_report:?}");
    if let ShutdownReport::Drained { snapshot } = report {
        // Never drained while a job is still queued or on its way to the queue.
        assert_eq!(snapshot.outstanding(), 0);
        assert_eq!(
            delivered_at_report, snapshot.accepted,
            "every accepted job delivered before drained was reported"
        );
        assert_eq!(
            pool.snapshot().accepted,
            snapshot.accepted,
            "nothing was accepted after drained was reported"
        );
    } else {
        assert!(deadline_passed, "a far deadline always drains");
    }
    let last = pool.snapshot();
    assert!(last.adds_up() && last.outstanding() == 0, "{last:?}");
    assert_eq!(last.accepted, u64::from(accepted));
    assert_eq!(
        sink.count(),
        usize::from(accepted),
        "accepted jobs deliver once"
    );
}

/// Proves pool rules P2 and P5: when a submit races a shutdown whose deadline has already
/// passed, the shutdown reports *drained* only if every accepted job has already delivered
/// (a job counted at acceptance can never hide between reservation and queue), and every
/// accepted job delivers exactly once.
#[test]
fn loom_pool_submit_vs_shutdown_never_drained_with_job_queued() {
    loom::model(|| submit_vs_shutdown(true));
}

/// Proves pool rule P5's waiting path: a shutdown with a far deadline racing a submit always
/// reports *drained* (no lost wake-up between the finishing job and the waiting shutdown), and
/// the accepted job delivers exactly once.
#[test]
fn loom_pool_shutdown_waits_for_accepted_job() {
    loom::model(|| submit_vs_shutdown(false));
}

/// A sink that lets the model wait for a number of deliveries (a lost delivery deadlocks the
/// model, which loom reports).
#[derive(Debug, Default)]
struct WaitableSink {
    received: Mutex<usize>,
    changed: Condvar,
}

impl CompletionSender for WaitableSink {
    fn deliver(&self, _completion: ExternalCompletion) -> DeliveryOutcome {
        *self.received.lock().expect("not poisoned") += 1;
        self.changed.notify_all();
        DeliveryOutcome::Delivered
    }
}

impl WaitableSink {
    fn wait_for(&self, count: usize) {
        let mut received = self.received.lock().expect("not poisoned");
        while *received < count {
            received = self.changed.wait(received).expect("not poisoned");
        }
    }
}

/// Refuses the first spawn; later spawns start loom threads when `replacement_ok`, else are
/// refused too.
#[derive(Debug)]
struct FailingSpawner {
    calls: Mutex<usize>,
    replacement_ok: bool,
    inner: LoomSpawner,
}

impl ThreadSpawner for FailingSpawner {
    fn spawn(&self, name: String, body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        let call = {
            let mut calls = self.calls.lock().expect("not poisoned");
            *calls += 1;
            *calls
        };
        if call == 1 || !self.replacement_ok {
            return Err(std::io::Error::other("refused (injected)"));
        }
        self.inner.spawn(name, body)
    }
}

/// Two submissions race on a lane of at most one thread whose first spawn is refused; every
/// accepted one must deliver (waited for before any shutdown), and the counters add up.
fn refused_spawn_strands_nothing(replacement_ok: bool) {
    let spawner = Arc::new(FailingSpawner {
        calls: Mutex::new(0),
        replacement_ok,
        inner: LoomSpawner::default(),
    });
    let pool = one_thread_pool(2, spawner.clone());
    let sink = Arc::new(WaitableSink::default());
    let registrar = registrar_for(sink.clone());
    let first = bind(&registrar, returns(0)).split().1;
    let second = bind(&registrar, returns(1)).split().1;
    let lease = pool
        .attach_runtime(registrar.runtime_id())
        .expect("fresh runtime");
    let other = Arc::clone(&lease);
    let submitter = loom::thread::spawn(move || submit_or_roll_back(&*other, first));
    let second_accepted = submit_or_roll_back(&*lease, second);
    let first_accepted = submitter.join().expect("submitter does not panic");
    let accepted = usize::from(first_accepted) + usize::from(second_accepted);
    assert!(
        accepted < 2,
        "the first spawn was refused, so one submission was too"
    );
    // Rule P4: no accepted job waits without a thread (a stranded one deadlocks here).
    sink.wait_for(accepted);
    let snapshot = pool.snapshot();
    assert!(snapshot.adds_up(), "{snapshot:?}");
    assert_eq!(snapshot.accepted as usize, accepted);
    assert_eq!(snapshot.accepted + snapshot.rejected, 2);
    let report = pool.shutdown(Instant::now() + Duration::from_secs(3600));
    assert!(
        matches!(report, ShutdownReport::Drained { .. }),
        "{report:?}"
    );
    spawner.inner.join_all();
    assert_eq!(*sink.received.lock().expect("not poisoned"), accepted);
}

/// Proves pool rule P4 when a replacement thread starts: a job accepted while another
/// submission's spawn was in flight, and relying on that thread, still runs and delivers
/// after the spawn is refused.
#[test]
fn loom_pool_refused_spawn_gets_a_replacement_thread() {
    loom::model(|| refused_spawn_strands_nothing(true));
}

/// Proves pool rule P4 when no thread can start at all: a job that relied on the refused
/// thread is cancelled (one `Cancelled` delivery, counted) instead of waiting forever.
#[test]
fn loom_pool_refused_spawn_without_replacement_cancels_the_stranded_job() {
    loom::model(|| refused_spawn_strands_nothing(false));
}

/// Submits jobs in `rounds`, each round's jobs back to back and the round waited for before
/// the next, on a pool of `threads` elastic threads that spreads short jobs (under loom every
/// job is short) over `short_job_parallelism`, so later jobs find the lane's threads between
/// jobs: spinning, about to sleep, asleep or just notified, and a round of two may start a
/// second thread and hand a wake on, or wake one to stand by as the sentinel. A job left
/// queued with no thread looking for it deadlocks the model, which loom reports.
fn jobs_between_jobs(threads: usize, short_job_parallelism: usize, rounds: &[u8]) {
    let spawner = Arc::new(LoomSpawner::default());
    let total: u8 = rounds.iter().sum();
    let pool = BlockingPool::builder()
        .queue_capacity(usize::from(total))
        .interruptible_threads(InterruptibleThreads::Elastic {
            max: threads,
            keep_alive: Duration::from_secs(3600),
        })
        .short_job_parallelism(short_job_parallelism)
        .thread_spawner(spawner.clone())
        .build()
        .expect("valid pool");
    let sink = Arc::new(WaitableSink::default());
    let registrar = registrar_for(sink.clone());
    let lease = pool
        .attach_runtime(registrar.runtime_id())
        .expect("fresh runtime");
    let mut submitted = 0;
    for &round in rounds {
        for _ in 0..round {
            let submission = bind(&registrar, returns(submitted)).split().1;
            assert!(
                submit_or_roll_back(&*lease, submission),
                "room for every job"
            );
            submitted += 1;
        }
        sink.wait_for(usize::from(submitted));
    }
    let report = pool.shutdown(Instant::now() + Duration::from_secs(3600));
    assert!(
        matches!(report, ShutdownReport::Drained { .. }),
        "{report:?}"
    );
    spawner.join_all();
    assert_eq!(
        *sink.received.lock().expect("not poisoned"),
        usize::from(total)
    );
}

/// Proves pool rule P7 on one thread: a job queued while the lane's only thread is between
/// jobs (watching the queue, re-checking it under the lock, or waiting on the condvar) is
/// always found — the submit notifies exactly when no spinner will see it.
#[test]
fn loom_pool_job_queued_while_the_thread_spins_or_sleeps_is_run() {
    loom::model(|| jobs_between_jobs(1, 1, &[1, 1]));
}

/// Proves pool rule P7 with two threads: two jobs back to back (the second may start a second
/// thread, or wait for a thread that takes one job and hands the wake on), then a third while
/// one thread may spin and the other sleep with a notification outstanding; each is found.
#[test]
fn loom_pool_wakes_are_never_lost_between_two_threads() {
    loom::model(|| jobs_between_jobs(2, 2, &[2, 1]));
}

/// Proves pool rule P7 when short jobs are spread over one thread: with one thread running, a
/// queued job wakes no second thread to run it, only one to stand by as the sentinel, and the
/// last round's job may be queued (without a wake of its own) while that wake is still on its
/// way and nothing runs any more. The standing-by thread skips the queue only while a job
/// runs (loom never ends its tick), so each job is still found, by the running thread as it
/// finishes or by the woken one.
#[test]
fn loom_pool_short_jobs_spread_over_one_thread_are_never_lost() {
    loom::model(|| jobs_between_jobs(2, 1, &[2, 2, 1]));
}
