//! Property test of the inbox routing (worker rules W5 and W6): for random sequences of
//! register / run / cancel / discard / foreign delivery / turn / poll on a real worker, every
//! wait yields only its own job's decoded value (or `Cancelled`), and every accepted
//! completion is counted exactly once as settled, stale or foreign.

mod worker_support;

use std::task::{Context, Poll, Waker};

use baton_cancel::{HookOutcome, Interruptible};
use baton_completion::{
    CancelOutcome, CompletionKind, Decoder, Discarded, IdentityAllocator, PreparedOperation,
    Registrar, RuntimeId, Submission, WaitError, WaitKey, from_fn,
};
use baton_uring::{Park, Worker, with_current_waits};
use proptest::prelude::*;
use worker_support::{deadline, run_here, serial, worker};

#[derive(Debug, Clone)]
enum Step {
    Register,
    Run(usize),
    Cancel(usize),
    Discard(usize),
    Foreign,
    Turn,
    Poll(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::Register),
        3 => (0..8usize).prop_map(Step::Run),
        1 => (0..8usize).prop_map(Step::Cancel),
        1 => (0..8usize).prop_map(Step::Discard),
        1 => Just(Step::Foreign),
        2 => Just(Step::Turn),
        3 => (0..8usize).prop_map(Step::Poll),
    ]
}

fn kind() -> CompletionKind {
    CompletionKind::try_from_raw(5).expect("non-zero kind")
}

fn prepared(value: u32) -> PreparedOperation {
    PreparedOperation::interruptible_blocking(
        kind(),
        from_fn(move || value),
        Decoder::new(|n: u32| u64::from(n) * 10),
        Interruptible::new("test", || Ok(HookOutcome::Reaped)),
    )
}

/// One registered wait as the model sees it.
struct Wait {
    key: WaitKey,
    value: u32,
    submission: Option<Submission>,
    cancelled: bool,
    gone: bool,
}

fn check(worker: &Worker, steps: &[Step]) -> Result<(), TestCaseError> {
    let registrar = worker.handle().registrar();
    let foreign = Registrar::new(
        IdentityAllocator::new(RuntimeId::allocate().expect("runtime id")),
        worker.handle().completion_sender(),
    );
    let mut waits: Vec<Wait> = Vec::new();
    let mut delivered = 0u64;
    let mut cx = Context::from_waker(Waker::noop());
    for step in steps {
        match *step {
            Step::Register => {
                let value = waits.len() as u32 + 1;
                let identity = registrar.issue(kind()).expect("identity");
                let (half, submission) = registrar
                    .bind(identity, prepared(value))
                    .expect("bind")
                    .split();
                let _entered = worker.enter();
                let key = with_current_waits(|w| w.register(half))
                    .expect("entered")
                    .expect("our runtime");
                waits.push(Wait {
                    key,
                    value,
                    submission: Some(submission),
                    cancelled: false,
                    gone: false,
                });
            }
            Step::Run(i) => {
                if let Some(submission) = waits.get_mut(i).and_then(|w| w.submission.take()) {
                    run_here(submission);
                    delivered += 1;
                }
            }
            Step::Cancel(i) => {
                if let Some(wait) = waits.get_mut(i) {
                    let _entered = worker.enter();
                    let outcome = with_current_waits(|w| w.cancel(wait.key)).expect("entered");
                    if let CancelOutcome::CancelledQueued { .. } = outcome {
                        prop_assert!(!wait.gone);
                        wait.cancelled = true;
                    }
                }
            }
            Step::Discard(i) => {
                if let Some(wait) = waits.get_mut(i) {
                    let _entered = worker.enter();
                    let outcome = with_current_waits(|w| w.discard(wait.key)).expect("entered");
                    prop_assert_eq!(
                        matches!(outcome, Discarded::Removed { .. }),
                        !wait.gone,
                        "discard finds exactly the waits still registered"
                    );
                    wait.gone = true;
                }
            }
            Step::Foreign => {
                let identity = foreign.issue(kind()).expect("identity");
                let (_half, submission) =
                    foreign.bind(identity, prepared(999)).expect("bind").split();
                run_here(submission);
                delivered += 1;
            }
            Step::Turn => {
                let _ = worker.turn(Park::Poll);
            }
            Step::Poll(i) => {
                if let Some(wait) = waits.get_mut(i) {
                    let _entered = worker.enter();
                    let polled = with_current_waits(|w| w.poll_wait::<u64>(wait.key, &mut cx))
                        .expect("entered");
                    match polled {
                        Poll::Pending => prop_assert!(!wait.gone && !wait.cancelled),
                        Poll::Ready(Ok(value)) => {
                            prop_assert!(!wait.gone && !wait.cancelled);
                            prop_assert_eq!(value, u64::from(wait.value) * 10, "its own value");
                            wait.gone = true;
                        }
                        Poll::Ready(Err(WaitError::Cancelled)) => {
                            prop_assert!(wait.cancelled && !wait.gone);
                            wait.gone = true;
                        }
                        Poll::Ready(Err(WaitError::UnknownWait { .. })) => prop_assert!(wait.gone),
                        Poll::Ready(Err(other)) => prop_assert!(false, "unexpected {other}"),
                    }
                }
            }
        }
    }
    for wait in &mut waits {
        if let Some(submission) = wait.submission.take() {
            run_here(submission);
            delivered += 1;
        }
    }
    let _ = worker.turn(Park::Poll);
    let metrics = worker.metrics().inbox;
    prop_assert_eq!(metrics.traffic.accepted, delivered);
    prop_assert_eq!(
        metrics.settled + metrics.stale + metrics.foreign,
        delivered,
        "every accepted completion is counted exactly once"
    );
    let live = waits.iter().filter(|w| !w.gone && !w.cancelled).count() as u64;
    prop_assert!(metrics.settled >= live, "every live wait settled");
    Ok(())
}

proptest! {
    #[test]
    fn prop_inbox_delivers_each_completion_to_its_own_wait_or_counts_it_dropped(
        steps in proptest::collection::vec(step(), 1..40)
    ) {
        let _serial = serial();
        let Some(worker) = worker() else { return Ok(()) };
        check(&worker, &steps)?;
        prop_assert!(worker.shutdown(Some(deadline())).is_clean());
    }
}
