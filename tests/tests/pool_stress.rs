//! Blocking-pool stress: 4 runtimes on 4 threads submit 100 000 jobs in all to one
//! `BlockingPool` — blocking and async jobs, panicking jobs, random cancels that race the
//! pool's threads (issued right after the submit: the cancel wins while the job is queued, or
//! the job is already running and finishes with its own result), and capacity rejections that
//! are retried — while a monitor thread checks that every snapshot adds up. Every job's
//! completion arrives exactly once, every wait settles with the right value, and shutdown
//! reports *drained*. Some dispatches are also armed and dropped by the runtime itself (they
//! never reach the pool) to check the runtime side of exactly-once delivery under the same
//! load.

use baton_cancel::{HookOutcome, Interruptible, QuarantineBound};
use baton_completion::{
    BlockingPool, CancelOutcome, CompletionKind, Decoder, InterruptibleThreads, IoExecutor,
    PreparedOperation, RejectReason, SettleOutcome, ShutdownReport, WaitError, WaitKey, from_fn,
};
use baton_tests::pool::PoolRuntime;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use web_time::Instant;

const THREADS: u64 = 4;
const JOBS_PER_THREAD: u64 = 25_000;
const PANIC_MESSAGE: &str = "stress job panics on purpose";

/// What each job should settle to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Value(u64),
    Cancelled,
    Panicked,
}

/// A small deterministic generator (xorshift), one per thread.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Per-thread totals, summed and checked against the pool's counters.
#[derive(Debug, Default)]
struct Totals {
    accepted: u64,
    delivered: u64,
    dropped_locally: u64,
    cancelled_first: u64,
    cancel_found_running: u64,
    rejections: u64,
}

/// The shared [`PoolRuntime`] fixture, with this test's drain, prepare and submit steps.
struct Runtime(PoolRuntime);

impl Runtime {
    fn drain(&mut self, block: bool, totals: &mut Totals) {
        loop {
            let completion = if block {
                match self.0.inbox.recv_timeout(Duration::from_secs(60)) {
                    Ok(completion) => completion,
                    Err(_) => panic!("a completion never arrived: {totals:?}"),
                }
            } else {
                match self.0.inbox.try_recv() {
                    Ok(completion) => completion,
                    Err(_) => return,
                }
            };
            totals.delivered += 1;
            match self.0.table.settle(completion) {
                SettleOutcome::Settled { waker } => drop(waker),
                // The wait was cancelled first and already settled: expected once per cancel.
                SettleOutcome::Stale => {}
                SettleOutcome::Foreign => panic!("a completion reached the wrong runtime"),
            }
            if block {
                return;
            }
        }
    }

    fn prepare(&self, choice: u64, index: u64) -> (PreparedOperation, Expect) {
        let hook = || Interruptible::new("stress", || Ok(HookOutcome::Reaped));
        match choice {
            0..=4 => (
                PreparedOperation::interruptible_blocking(
                    self.0.kind,
                    from_fn(move || index),
                    Decoder::identity(),
                    hook(),
                ),
                Expect::Value(index),
            ),
            5..=6 => (
                PreparedOperation::interruptible_async(
                    self.0.kind,
                    move || async move { index },
                    Decoder::identity(),
                    hook(),
                ),
                Expect::Value(index),
            ),
            7..=8 => (
                PreparedOperation::quarantined_blocking(
                    self.0.kind,
                    from_fn(move || index),
                    Decoder::identity(),
                    QuarantineBound::FiniteWork {
                        units: 1,
                        unit: "job",
                    },
                ),
                Expect::Value(index),
            ),
            _ => (
                PreparedOperation::interruptible_blocking(
                    self.0.kind,
                    from_fn(|| -> u64 { panic!("{PANIC_MESSAGE}") }),
                    Decoder::identity(),
                    hook(),
                ),
                Expect::Panicked,
            ),
        }
    }
}

fn run_runtime(pool: Arc<BlockingPool>, seed: u64) -> Totals {
    let kind = CompletionKind::try_from_raw(9).expect("non-zero");
    let mut runtime = Runtime(PoolRuntime::attach(&pool, kind));
    let mut rng = Rng(seed);
    let mut totals = Totals::default();
    let mut expected: Vec<(WaitKey, Expect)> = Vec::with_capacity(JOBS_PER_THREAD as usize);
    for index in 0..JOBS_PER_THREAD {
        let roll = rng.next() % 100;
        let (prepared, mut expect) = runtime.prepare(roll % 10, index);
        let identity = runtime
            .0
            .registrar
            .issue(runtime.0.kind)
            .expect("ids available");
        let (half, submission) = runtime
            .0
            .registrar
            .bind(identity, prepared)
            .expect("valid bind")
            .split();
        let key = runtime.0.table.register(half).expect("same runtime");
        if roll < 5 {
            // A random dispatch drop: armed, then dropped without running.
            drop(submission.arm());
            totals.dropped_locally += 1;
            expected.push((key, Expect::Cancelled));
            continue;
        }
        let mut submission = submission;
        loop {
            match runtime.0.lease.submit(submission) {
                Ok(()) => break,
                Err(rejected) => {
                    assert!(
                        matches!(rejected.reason, RejectReason::Capacity { .. }),
                        "only capacity rejections are expected: {}",
                        rejected.reason
                    );
                    totals.rejections += 1;
                    submission = rejected.into_submission();
                    runtime.drain(false, &mut totals);
                    std::thread::yield_now();
                }
            }
        }
        totals.accepted += 1;
        if roll < 10 {
            // A random cancel racing the pool's threads.
            match runtime.0.table.cancel(key) {
                // Still queued: the cancel wins, the wait settles at once and the pool's
                // later `Cancelled` completion is stale.
                CancelOutcome::CancelledQueued { .. } => {
                    totals.cancelled_first += 1;
                    expect = Expect::Cancelled;
                }
                // Already running (interruptible: the hook was called; quarantined: it runs
                // on) or already settled: the job's own result stands.
                CancelOutcome::Interrupted(Ok(_))
                | CancelOutcome::Quarantined { .. }
                | CancelOutcome::AlreadySettled => totals.cancel_found_running += 1,
                other => panic!("a fresh wait cannot be {other:?}"),
            }
        }
        expected.push((key, expect));
        if index % 64 == 0 {
            runtime.drain(false, &mut totals);
        }
    }
    while totals.delivered < totals.accepted + totals.dropped_locally {
        runtime.drain(true, &mut totals);
    }
    assert!(
        runtime.0.inbox.try_recv().is_err(),
        "no completion is delivered twice"
    );
    assert_eq!(runtime.0.table.counters().stale, totals.cancelled_first);
    assert_eq!(runtime.0.table.counters().foreign, 0);
    let mut cx = Context::from_waker(Waker::noop());
    for (key, expect) in expected {
        let Poll::Ready(result) = runtime.0.table.poll_wait::<u64>(key, &mut cx) else {
            panic!("wait {key:?} never settled")
        };
        match (expect, result) {
            (Expect::Value(v), Ok(got)) => assert_eq!(got, v),
            (Expect::Cancelled, Err(WaitError::Cancelled)) => {}
            (Expect::Panicked, Err(WaitError::WorkerPanic { message })) => {
                assert!(message.contains(PANIC_MESSAGE))
            }
            (expect, got) => panic!("wait {key:?}: expected {expect:?}, got {got:?}"),
        }
    }
    assert!(runtime.0.table.is_empty());
    totals
}

fn silence_expected_panics() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let expected = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|message| message.contains(PANIC_MESSAGE));
        if !expected {
            default_hook(info);
        }
    }));
}

#[test]
fn pool_stress_every_completion_arrives_exactly_once() {
    silence_expected_panics();
    let pool = Arc::new(
        BlockingPool::builder()
            .queue_capacity(256)
            .interruptible_threads(InterruptibleThreads::Elastic {
                max: 8,
                keep_alive: Duration::from_millis(50),
            })
            .quarantine_threads(2)
            .build()
            .expect("valid pool"),
    );
    let done = Arc::new(AtomicBool::new(false));
    let monitor = {
        let (pool, done) = (Arc::clone(&pool), Arc::clone(&done));
        std::thread::spawn(move || {
            // At least one snapshot however late this thread runs: `done` is read after it.
            let mut checked = 0_u64;
            loop {
                let snapshot = pool.snapshot();
                assert!(snapshot.adds_up(), "counters do not add up: {snapshot:?}");
                checked += 1;
                if done.load(Ordering::SeqCst) {
                    break checked;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    };
    let submitters: Vec<_> = (0..THREADS)
        .map(|t| {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || run_runtime(pool, 0x9E37_79B9_7F4A_7C15 ^ (t + 1)))
        })
        .collect();
    let totals: Vec<Totals> = submitters
        .into_iter()
        .map(|s| s.join().expect("submitter succeeds"))
        .collect();
    done.store(true, Ordering::SeqCst);
    let snapshots_checked = monitor.join().expect("monitor succeeds");
    assert!(snapshots_checked > 0);

    let accepted: u64 = totals.iter().map(|t| t.accepted).sum();
    let dropped: u64 = totals.iter().map(|t| t.dropped_locally).sum();
    let rejections: u64 = totals.iter().map(|t| t.rejections).sum();
    assert_eq!(accepted + dropped, THREADS * JOBS_PER_THREAD);

    let report = pool.shutdown(Instant::now() + Duration::from_secs(60));
    let ShutdownReport::Drained { snapshot } = report else {
        panic!("every job finished, shutdown must drain: {report:?}")
    };
    assert!(snapshot.adds_up());
    assert_eq!(snapshot.accepted, accepted);
    assert_eq!(snapshot.finished(), accepted);
    assert_eq!(snapshot.rejected, rejections);
    assert_eq!(snapshot.undeliverable, 0);
    let cancelled_first: u64 = totals.iter().map(|t| t.cancelled_first).sum();
    let cancel_found_running: u64 = totals.iter().map(|t| t.cancel_found_running).sum();
    assert_eq!(snapshot.cancelled, cancelled_first);
    println!(
        "stress: {accepted} accepted, {cancelled_first} cancelled while queued, \
         {cancel_found_running} cancels found the job running or done, {dropped} dispatches \
         dropped locally, {rejections} capacity rejections retried, {snapshots_checked} \
         snapshots checked, final {snapshot:?}"
    );
}
