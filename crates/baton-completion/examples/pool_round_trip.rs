//! Blocking-pool round trip: submit → job → completion received, for 100 000 empty jobs.
//!
//! Run with `cargo run --release -p baton-completion --example pool_round_trip`. Two modes:
//!
//! * **sequential** — submit one job, wait for its completion on the runtime's inbox, repeat:
//!   the full latency of one round trip (p50, p99, mean);
//! * **pipelined** — submit all jobs (retrying on `Capacity`) while draining the inbox: the
//!   throughput of the pool with a full queue.
//!
//! Each mode runs `ROUNDS` times; the summary line gives the median round (the machine these
//! run on is shared, so single rounds are noisy).
//!
//! Each job goes through the whole runtime path: registrar issue → bind → split → wait table
//! register → lease submit → pool thread → channel inbox → wait table settle → poll.

#[allow(unreachable_pub)] // The fixture is `pub` for `baton_tests::pool`.
#[path = "../tests/support/channel.rs"]
mod channel;

use baton_cancel::{HookOutcome, Interruptible};
use baton_completion::{
    BlockingPool, CompletionKind, Decoder, ExternalCompletion, InterruptibleThreads,
    PreparedOperation, SettleOutcome, from_fn,
};
use channel::PoolRuntime;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

const JOBS: usize = 100_000;
const ROUNDS: usize = 5;

/// The runtime side: the shared fixture, with the bench's submit and settle loops.
type Runtime = PoolRuntime;

/// A fresh runtime attached to `pool`, its jobs of kind 1.
fn attached(pool: &BlockingPool) -> Runtime {
    Runtime::attach(
        pool,
        CompletionKind::try_from_raw(1).expect("1 is non-zero"),
    )
}

impl Runtime {
    /// Prepares, binds, registers and submits one empty job; returns its key and how many
    /// completions it settled while the queue was full.
    fn submit(&mut self) -> (baton_completion::WaitKey, usize) {
        let prepared = PreparedOperation::interruptible_blocking(
            self.kind,
            from_fn(|| ()),
            Decoder::identity(),
            Interruptible::new("bench", || Ok(HookOutcome::Reaped)),
        );
        let identity = self.registrar.issue(self.kind).expect("ids available");
        let (half, mut submission) = self
            .registrar
            .bind(identity, prepared)
            .expect("same registrar, same kind")
            .split();
        let key = self.table.register(half).expect("same runtime");
        let mut settled = 0;
        loop {
            match self.lease.submit(submission) {
                Ok(()) => return (key, settled),
                Err(rejected) => {
                    submission = rejected.into_submission();
                    settled += self.settle_available();
                    std::thread::yield_now();
                }
            }
        }
    }

    fn settle(&mut self, completion: ExternalCompletion) {
        match self.table.settle(completion) {
            SettleOutcome::Settled { waker } => drop(waker),
            other => panic!("unexpected settle outcome {other:?}"),
        }
    }

    fn settle_available(&mut self) -> usize {
        let mut settled = 0;
        while let Ok(completion) = self.inbox.try_recv() {
            self.settle(completion);
            settled += 1;
        }
        settled
    }

    fn consume(&mut self, key: baton_completion::WaitKey) {
        let mut cx = Context::from_waker(Waker::noop());
        match self.table.poll_wait::<()>(key, &mut cx) {
            Poll::Ready(Ok(())) => {}
            other => panic!("job did not complete: {other:?}"),
        }
    }
}

fn pool(threads: usize) -> BlockingPool {
    BlockingPool::builder()
        .queue_capacity(4096)
        .interruptible_threads(InterruptibleThreads::Fixed(threads))
        .build()
        .expect("valid pool")
}

fn sequential(threads: usize) -> Round {
    let pool = pool(threads);
    let mut runtime = attached(&pool);
    let mut latencies = Vec::with_capacity(JOBS);
    let start = Instant::now();
    for _ in 0..JOBS {
        let begun = Instant::now();
        let (key, _) = runtime.submit();
        let completion = runtime
            .inbox
            .recv_timeout(Duration::from_secs(30))
            .expect("the pool delivers");
        runtime.settle(completion);
        runtime.consume(key);
        latencies.push(begun.elapsed());
    }
    let total = start.elapsed();
    latencies.sort_unstable();
    Round {
        total,
        p50: Some(latencies[JOBS / 2]),
        p99: Some(latencies[JOBS * 99 / 100]),
    }
}

fn pipelined(threads: usize) -> Round {
    let pool = pool(threads);
    let mut runtime = attached(&pool);
    let mut keys = Vec::with_capacity(JOBS);
    let start = Instant::now();
    let mut settled = 0;
    for _ in 0..JOBS {
        let (key, settled_while_full) = runtime.submit();
        keys.push(key);
        settled += settled_while_full + runtime.settle_available();
    }
    while settled < JOBS {
        let completion = runtime
            .inbox
            .recv_timeout(Duration::from_secs(30))
            .expect("the pool delivers");
        runtime.settle(completion);
        settled += 1;
    }
    for key in keys {
        runtime.consume(key);
    }
    Round {
        total: start.elapsed(),
        p50: None,
        p99: None,
    }
}

/// One timed round of `JOBS` jobs.
struct Round {
    total: Duration,
    p50: Option<Duration>,
    p99: Option<Duration>,
}

impl Round {
    fn line(&self) -> String {
        let micros = |d: Duration| d.as_secs_f64() * 1e6;
        let mut line = format!(
            "{:8.1} ms total, {:6.2} us/job, {:8.0} jobs/s",
            self.total.as_secs_f64() * 1e3,
            micros(self.total) / JOBS as f64,
            JOBS as f64 / self.total.as_secs_f64(),
        );
        if let (Some(p50), Some(p99)) = (self.p50, self.p99) {
            line += &format!(", p50 {:.2} us, p99 {:.2} us", micros(p50), micros(p99));
        }
        line
    }
}

fn measure(label: &str, run: impl Fn() -> Round) {
    let mut rounds: Vec<Round> = (0..ROUNDS).map(|_| run()).collect();
    for (i, round) in rounds.iter().enumerate() {
        println!("  {label} round {}: {}", i + 1, round.line());
    }
    rounds.sort_by_key(|round| round.total);
    println!("{label} median: {}", rounds[ROUNDS / 2].line());
}

fn main() {
    println!("{JOBS} empty jobs per round, {ROUNDS} rounds per mode");
    for threads in [1, 4] {
        measure(&format!("sequential, {threads} thread(s)"), || {
            sequential(threads)
        });
        measure(&format!("pipelined,  {threads} thread(s)"), || {
            pipelined(threads)
        });
    }
}
