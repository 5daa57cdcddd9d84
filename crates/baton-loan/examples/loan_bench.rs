//! Measures `block_on` round trips through the loan driver (recorded, not asserted).
//!
//! Run with `cargo run --release -p baton-loan --example loan_bench`. It prints nanoseconds per
//! `block_on` of a ready future (including the hand-over from the background thread and back),
//! of a future that yields ten times, and of a nested `block_on` (no hand-over) for comparison.
//! The worker is a minimal one defined here: nothing to run (so it rests in the slot between
//! calls, rule L7), and a park with a stored token.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::Poll;
use std::time::{Duration, Instant};

use baton_loan::{Loan, LoanWorker, Pending, RunOutcome, TurnOutcome, Unpark};

/// A park with a stored token; unparking a worker that is not parked costs one atomic swap,
/// as in a real worker (a ring wait is only interrupted when the worker really sleeps).
#[derive(Debug, Default)]
struct Parker {
    /// 0: empty, 1: parked, 2: notified.
    state: AtomicU8,
    lock: Mutex<()>,
    cond: Condvar,
}

const EMPTY: u8 = 0;
const PARKED: u8 = 1;
const NOTIFIED: u8 = 2;

impl Parker {
    fn park(&self, deadline: Option<Instant>) {
        if self
            .state
            .compare_exchange(NOTIFIED, EMPTY, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return;
        }
        let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        if self
            .state
            .compare_exchange(EMPTY, PARKED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            self.state.store(EMPTY, Ordering::Release);
            return;
        }
        loop {
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                // Timed out: withdraw, consuming a token that raced in.
                self.state.store(EMPTY, Ordering::Release);
                return;
            }
            guard = self
                .cond
                .wait_timeout(guard, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            if self
                .state
                .compare_exchange(NOTIFIED, EMPTY, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return;
            }
        }
    }
}

impl Unpark for Parker {
    fn unpark(&self) {
        if self.state.swap(NOTIFIED, Ordering::AcqRel) == PARKED {
            drop(self.lock.lock().unwrap_or_else(PoisonError::into_inner));
            self.cond.notify_one();
        }
    }
}

/// A worker with no tasks: it only parks until its predicate holds.
#[derive(Debug)]
struct IdleWorker {
    parker: Arc<Parker>,
}

impl LoanWorker for IdleWorker {
    fn turn(&mut self) -> TurnOutcome {
        TurnOutcome::Idle
    }

    fn run_until(
        &mut self,
        until: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> RunOutcome {
        while !until() {
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return RunOutcome::DeadlineReached;
            }
            self.parker.park(deadline);
        }
        RunOutcome::Satisfied
    }

    fn has_runnable(&self) -> bool {
        false
    }

    fn holds_local_tasks(&self) -> bool {
        false
    }

    fn enter(&mut self) {}

    fn leave(&mut self) {}

    fn is_shutting_down(&self) -> bool {
        false
    }

    fn pending(&self) -> Pending {
        // Nothing ever gives this worker work, so it may rest in the slot between calls.
        Pending::Nothing
    }

    fn install_rest_waker(&mut self, rest_waker: Arc<dyn Unpark>) {
        // No outside event gives this worker work, so there is nothing to announce.
        drop(rest_waker);
    }
}

/// Wakes itself and yields `times` times before completing.
async fn yield_times(mut times: u32) {
    std::future::poll_fn(|cx| {
        if times == 0 {
            return Poll::Ready(());
        }
        times -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

fn per_call(iterations: u32, mut call: impl FnMut()) -> f64 {
    for _ in 0..iterations / 10 {
        call();
    }
    let started = Instant::now();
    for _ in 0..iterations {
        call();
    }
    started.elapsed().as_nanos() as f64 / f64::from(iterations)
}

fn main() -> Result<(), baton_loan::LoanError> {
    let parker = Arc::new(Parker::default());
    let worker = Box::new(IdleWorker {
        parker: Arc::clone(&parker),
    });
    let loan = Loan::new(worker, parker)?;
    let iterations = 200_000;

    let ready = per_call(iterations, || loan.block_on(async {}));
    let yields = per_call(iterations, || loan.block_on(yield_times(10)));
    let nested = loan.block_on(async { per_call(iterations, || loan.block_on(async {})) });

    println!("block_on round trips ({iterations} calls each, ns per call)");
    println!("  ready future, hand-over included : {ready:>10.0}");
    println!("  yields ten times, hand-over incl. : {yields:>10.0}");
    println!("  ready future, nested (no hand-over): {nested:>8.0}");
    let report = loan.shutdown();
    println!("shutdown: {report:?}");
    Ok(())
}
