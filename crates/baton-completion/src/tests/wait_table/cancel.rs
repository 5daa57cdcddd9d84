//! The cancel state machine through the table (E12) and quarantine bounds (E13).

use super::{CountingWaker, fixture, poll};
use crate::dispatch::{BlockingDispatch, Dispatch};
use crate::prepared::{Decoder, PreparedOperation, from_fn};
use crate::sync::{Arc, mpsc};
use crate::tests::support::{PanicOnDrop, interruptible, kind};
use crate::wait_table::{CancelOutcome, Discarded, SettleOutcome, WaitError};
use baton_cancel::{CancelBeforeStart, HookOutcome, QuarantineBound, QueueState};
use std::task::{Poll, Waker};
use std::time::Duration;
use web_time::Instant;

#[test]
fn cancel_before_start_settles_cancelled_and_the_late_completion_is_stale() {
    let mut f = fixture();
    let (key, submission) = f.blocking_u32(1);
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    assert!(poll::<String>(&mut f.table, key, &waker).is_pending());
    let CancelOutcome::CancelledQueued { waker: Some(_) } = f.table.cancel(key) else {
        panic!("a queued job is cancelled before start")
    };
    assert!(matches!(f.table.cancel(key), CancelOutcome::AlreadySettled));
    assert!(matches!(f.run_and_settle(submission), SettleOutcome::Stale));
    assert_eq!(
        poll::<String>(&mut f.table, key, &waker),
        Poll::Ready(Err(WaitError::Cancelled))
    );
    assert!(matches!(f.table.cancel(key), CancelOutcome::Unknown));
}

#[test]
fn cancel_of_a_withdrawn_job_settles_cancelled_before_its_completion_arrives() {
    let mut f = fixture();
    let (key, submission) = f.blocking_u32(1);
    // The executor's shutdown withdrew it (baton-cancel rule C7); its `Cancelled` is still on
    // its way when the runtime cancels.
    let _report = submission.arm().withdraw();
    let CancelOutcome::AlreadyCancelled { waker: None } = f.table.cancel(key) else {
        panic!("a withdrawn job never runs: its wait settles cancelled")
    };
    assert_eq!(f.table.queue_state(key), Some(QueueState::Cancelled));
    assert!(matches!(f.table.settle(f.sink.only()), SettleOutcome::Stale));
    assert_eq!(
        f.poll_now::<String>(key),
        Poll::Ready(Err(WaitError::Cancelled))
    );
}

#[test]
fn started_interruptible_job_gets_its_hook_once_then_reaps() {
    let mut f = fixture();
    let (key, dispatch, calls) = f.running_socket_job(3);
    let outcome = f.table.cancel(key);
    assert!(matches!(outcome, CancelOutcome::Interrupted(Ok(HookOutcome::PendingReap))));
    let outcome = f.table.cancel(key);
    assert!(matches!(outcome, CancelOutcome::AlreadyInterrupted));
    assert_eq!(f.table.reap(key), Some(Ok(HookOutcome::PendingReap)));
    assert_eq!(f.table.reap(key), Some(Ok(HookOutcome::Reaped)));
    assert_eq!(calls.get(), 3);
    drop(dispatch);
    let outcome = f.table.settle(f.sink.only());
    assert!(matches!(outcome, SettleOutcome::Settled { .. }));
    assert_eq!(
        f.poll_now::<u32>(key),
        Poll::Ready(Err(WaitError::Cancelled))
    );
}

#[test]
fn discard_of_a_running_interruptible_job_calls_its_hook() {
    let mut f = fixture();
    let (key, dispatch, calls) = f.running_socket_job(2);
    let Discarded::Removed {
        cancel: Some(CancelBeforeStart::AlreadyRunning),
        interrupted: Some(mut interrupted),
    } = f.table.discard(key)
    else {
        panic!("a running interruptible job comes back interrupted")
    };
    assert_eq!(calls.get(), 1, "discarding a running job interrupts it");
    assert_eq!(interrupted.first(), &Ok(HookOutcome::PendingReap));
    assert_eq!(interrupted.kind(), "socket");
    assert_eq!(interrupted.reap(), Ok(HookOutcome::Reaped));
    assert_eq!(calls.get(), 2);
    drop(interrupted);
    assert!(matches!(f.table.discard(key), Discarded::Unknown));
    drop(dispatch);
    let outcome = f.table.settle(f.sink.only());
    assert!(matches!(outcome, SettleOutcome::Stale));
}

#[test]
fn started_quarantined_job_reports_its_bound() {
    let mut f = fixture();
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let bound = QuarantineBound::FiniteWork {
        units: 3,
        unit: "blocks",
    };
    let (key, submission) = f.submit(PreparedOperation::quarantined_blocking(
        kind(1),
        from_fn(move || gate_rx.recv().map(|()| 11_u32).unwrap_or(0)),
        Decoder::identity(),
        bound,
    ));
    let Dispatch::Blocking(dispatch) = submission.arm() else {
        panic!("blocking job")
    };
    let runner = std::thread::spawn(move || BlockingDispatch::run(dispatch).class);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while f.table.queue_state(key) != Some(QueueState::Running) {
        assert!(std::time::Instant::now() < deadline, "job never started");
        std::thread::yield_now();
    }
    let outcome = f.table.cancel(key);
    assert!(matches!(outcome, CancelOutcome::Quarantined { bound: b } if b == bound));
    assert_eq!(f.table.reap(key), None);
    gate_tx.send(()).expect("runner waits on the gate");
    runner.join().expect("runner does not panic");
    let outcome = f.table.settle(f.sink.only());
    assert!(matches!(outcome, SettleOutcome::Settled { .. }));
    assert_eq!(f.poll_now::<u32>(key), Poll::Ready(Ok(11)));
}

#[test]
fn quarantined_wait_past_its_deadline_is_bound_exceeded() {
    let mut f = fixture();
    let start = Instant::now();
    let bound = QuarantineBound::Deadline(start + Duration::from_secs(1));
    let (key, submission) = f.submit(PreparedOperation::quarantined_blocking(
        kind(1),
        from_fn(|| 1_u32),
        Decoder::identity(),
        bound,
    ));
    let counter = Arc::new(CountingWaker::default());
    assert!(poll::<u32>(&mut f.table, key, &Waker::from(Arc::clone(&counter))).is_pending());
    let early = f.table.check_bounds(start);
    assert_eq!(early.exceeded, 0);
    let late = f.table.check_bounds(start + Duration::from_secs(2));
    assert_eq!(late.exceeded, 1);
    assert_eq!(late.wakers.len(), 1);
    assert_eq!(f.table.counters().bound_exceeded, 1);
    assert!(matches!(f.run_and_settle(submission), SettleOutcome::Stale));
    assert_eq!(
        f.poll_now::<u32>(key),
        Poll::Ready(Err(WaitError::BoundExceeded { bound }))
    );
}

#[test]
fn discard_cancels_a_queued_job_and_contains_hostile_destructors() {
    let mut f = fixture();
    let hostile = PanicOnDrop;
    let (key, submission) = f.submit(PreparedOperation::interruptible_blocking(
        kind(1),
        from_fn(|| 1_u32),
        Decoder::new(move |v: u32| {
            let _keep = &hostile;
            v
        }),
        interruptible(),
    ));
    assert!(matches!(
        f.table.discard(key),
        Discarded::Removed {
            cancel: Some(CancelBeforeStart::CancelledQueued),
            interrupted: None,
        }
    ));
    assert!(matches!(f.table.discard(key), Discarded::Unknown));
    assert!(matches!(f.run_and_settle(submission), SettleOutcome::Stale));
}
