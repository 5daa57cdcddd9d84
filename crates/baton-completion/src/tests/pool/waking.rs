//! How lazily the pool wakes its sleeping threads (pool rule P7): short jobs queued behind
//! busy threads wake no further thread beyond the one that stands by as the sentinel, while
//! jobs measured long wake one thread each.

use super::{Fixture, fixture};
use crate::pool::{BlockingPool, InterruptibleThreads};
use std::time::Duration;
use web_time::Instant;

/// A pool of four fixed threads that spreads short jobs over one.
fn one_short_job_at_a_time() -> Fixture {
    fixture(
        BlockingPool::builder()
            .interruptible_threads(InterruptibleThreads::Fixed(4))
            .short_job_parallelism(1),
    )
}

/// Waits until every thread that runs no job sleeps on the condvar with no wake outstanding
/// (started, done watching the queue, and back from any wake), so that the jobs queued next
/// reach a thread only through the wakes counted.
fn let_threads_fall_asleep(f: &Fixture) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f.pool.interruptible_threads_asleep() {
        assert!(Instant::now() < deadline, "the pool's threads never all slept");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Longer than any test runs: no sentinel tick can fall inside a window a test counts.
const NO_TICK: Duration = Duration::from_secs(3600);

#[test]
fn short_jobs_behind_a_busy_thread_wake_at_most_a_sentinel() {
    let f = fixture(
        BlockingPool::builder()
            .interruptible_threads(InterruptibleThreads::Fixed(4))
            .short_job_parallelism(1)
            .sentinel_tick(NO_TICK),
    );
    let_threads_fall_asleep(&f);
    let (busy, started, gate) = f.gated(false);
    f.lease.submit(busy).expect("accepted");
    started.recv().expect("the busy job starts");
    let_threads_fall_asleep(&f);
    let (before, _) = f.pool.thread_wakes();
    for value in 0..10_u8 {
        f.lease.submit(f.blocking(move || value)).expect("accepted");
    }
    let (after, _) = f.pool.thread_wakes();
    // One wake makes a sentinel; none is needed when a thread that went idle after the busy
    // job started is the sentinel already. A wake per job would count three (every thread).
    assert!(
        after - before <= 1,
        "jobs are short and one thread is running: at most a sentinel is woken (counted {})",
        after - before
    );
    // The busy thread runs the queued jobs once it is free (no tick comes to spread them).
    gate.send(()).expect("the busy job waits");
    assert_eq!(f.wait_for_completions(11).len(), 11);
}

#[test]
fn a_tick_that_finds_jobs_waiting_behind_a_busy_thread_makes_them_worth_a_wake() {
    let f = one_short_job_at_a_time();
    let_threads_fall_asleep(&f);
    let (busy, started, gate) = f.gated(false);
    f.lease.submit(busy).expect("accepted");
    started.recv().expect("the busy job starts");
    // No thread awake but the busy one: the queued jobs wait for the sentinel's tick.
    let_threads_fall_asleep(&f);
    for value in 0..10_u8 {
        f.lease.submit(f.blocking(move || value)).expect("accepted");
    }
    // The busy job never finishes meanwhile, so the sentinel's first tick finds jobs queued
    // and none finished: jobs count as long from then on, and the queue is spread.
    assert_eq!(f.wait_for_completions(10).len(), 10);
    let_threads_fall_asleep(&f);
    let (before, _) = f.pool.thread_wakes();
    f.lease.submit(f.blocking(|| 10_u8)).expect("accepted");
    let (after, _) = f.pool.thread_wakes();
    assert_eq!(after - before, 1, "after that tick, a job is worth a wake");
    assert_eq!(f.wait_for_completions(1).len(), 1);
    gate.send(()).expect("the busy job waits");
    assert_eq!(f.wait_for_completions(1).len(), 1);
}

#[test]
fn jobs_measured_long_wake_a_thread_each() {
    let f = one_short_job_at_a_time();
    f.lease
        .submit(f.blocking(|| std::thread::sleep(Duration::from_millis(5))))
        .expect("accepted");
    assert_eq!(f.wait_for_completions(1).len(), 1);
    let (busy, started, gate) = f.gated(false);
    f.lease.submit(busy).expect("accepted");
    started.recv().expect("the busy job starts");
    let_threads_fall_asleep(&f);
    let (before, _) = f.pool.thread_wakes();
    let gates: Vec<_> = (0..3)
        .map(|_| {
            let (job, _started, gate) = f.gated(false);
            f.lease.submit(job).expect("accepted");
            gate
        })
        .collect();
    let (after, _) = f.pool.thread_wakes();
    // About one wake per job: a woken thread that takes its job while the next is already
    // queued may hand a wake on too (P7), so more than three can be counted, and the sentinel
    // may take one job at its tick, so two can; a lane that held long jobs back like short
    // ones would count one, the sentinel's.
    assert!(
        after - before >= 2,
        "each long job wakes one of the three sleeping threads (counted {})",
        after - before
    );
    for gate in gates.iter().chain([&gate]) {
        gate.send(()).expect("the job waits");
    }
    assert_eq!(f.wait_for_completions(4).len(), 4, "the busy job and the three long ones");
}
