//! Loom models of exactly-once dispatch (crate rule E6): a run, a drop or a withdrawal of the
//! armed dispatch and a cancel racing from the runtime thread always deliver exactly one
//! completion, and the completion agrees with whoever won the cancel/claim race.
#![cfg(loom)]

mod support;

use baton_cancel::{CancelBeforeStart, QueueState};
use baton_completion::{
    CompletionFailure, Decoder, Dispatch, PreparedOperation, RuntimeHalf, Submission,
    TerminalClass, from_fn,
};
use loom::sync::atomic::{AtomicBool, Ordering};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use support::{RecordingSink, bind, kind, quiet_hook, recording_registrar};

fn bind_split(prepared: PreparedOperation) -> (RuntimeHalf, Submission, Arc<RecordingSink>) {
    let (registrar, sink) = recording_registrar();
    let (half, submission) = bind(&registrar, prepared).split();
    (half, submission, sink)
}

/// Proves: a blocking dispatch run on an executor thread while the runtime cancels it
/// delivers exactly once — `Cancelled` with the body never run when the cancel wins,
/// the body's result when the claim wins.
#[test]
fn loom_dispatch_run_vs_cancel_delivers_once() {
    loom::model(|| {
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let (half, submission, sink) = bind_split(PreparedOperation::interruptible_blocking(
            kind(1),
            from_fn(move || {
                flag.store(true, Ordering::SeqCst);
                5_u8
            }),
            Decoder::identity(),
            quiet_hook(),
        ));
        let Dispatch::Blocking(dispatch) = submission.arm() else {
            panic!("blocking job")
        };
        let runner = loom::thread::spawn(move || dispatch.run().class);
        let cancel = half.cancel_handle().cancel_before_start();
        let class = runner.join().expect("runner does not panic");
        let completion = sink.only();
        match cancel {
            CancelBeforeStart::CancelledQueued => {
                assert_eq!(class, TerminalClass::Cancelled);
                assert!(!ran.load(Ordering::SeqCst), "the body never runs");
                assert!(matches!(
                    completion.result,
                    Err(CompletionFailure::Cancelled)
                ));
            }
            CancelBeforeStart::AlreadyRunning => {
                assert_eq!(class, TerminalClass::Completed);
                assert!(ran.load(Ordering::SeqCst));
                assert!(completion.result.is_ok());
            }
            CancelBeforeStart::AlreadyCancelled => {
                panic!("one cancel only, and no withdrawal")
            }
        }
    });
}

/// Proves: an armed blocking dispatch dropped by the executor while the runtime cancels it
/// delivers exactly one `Cancelled`.
#[test]
fn loom_dispatch_drop_vs_cancel_delivers_once() {
    loom::model(|| {
        let (half, submission, sink) = bind_split(PreparedOperation::interruptible_blocking(
            kind(1),
            from_fn(|| 5_u8),
            Decoder::identity(),
            quiet_hook(),
        ));
        let dispatch = submission.arm();
        let dropper = loom::thread::spawn(move || drop(dispatch));
        let _ = half.cancel_handle().cancel_before_start();
        dropper.join().expect("dropper does not panic");
        assert!(matches!(
            sink.only().result,
            Err(CompletionFailure::Cancelled)
        ));
    });
}

/// Proves rule E6 with `baton-cancel` rule C7: an executor withdrawing a queued blocking
/// dispatch (its shutdown) while the runtime cancels it delivers exactly one `Cancelled`, the
/// body never runs, and the queue cell names the one winner — cancelled when the runtime's
/// cancel won, cancelled and `was_withdrawn` (the cancel seeing `AlreadyCancelled`) when the
/// withdrawal did.
#[test]
fn loom_dispatch_withdraw_vs_cancel_delivers_once() {
    loom::model(|| {
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let (half, submission, sink) = bind_split(PreparedOperation::interruptible_blocking(
            kind(1),
            from_fn(move || flag.store(true, Ordering::SeqCst)),
            Decoder::identity(),
            quiet_hook(),
        ));
        let dispatch = submission.arm();
        let executor = loom::thread::spawn(move || dispatch.withdraw().class);
        let cancel = half.cancel_handle().cancel_before_start();
        let class = executor.join().expect("executor does not panic");
        assert_eq!(class, TerminalClass::Cancelled);
        assert!(!ran.load(Ordering::SeqCst), "the body never runs");
        assert!(matches!(
            sink.only().result,
            Err(CompletionFailure::Cancelled)
        ));
        let state = half.cancel_handle().state();
        match cancel {
            CancelBeforeStart::CancelledQueued => {
                assert_eq!(state, QueueState::Cancelled);
                assert!(!half.cancel_handle().was_withdrawn());
            }
            CancelBeforeStart::AlreadyCancelled => {
                assert_eq!(state, QueueState::Cancelled);
                assert!(half.cancel_handle().was_withdrawn());
            }
            other => panic!("nothing claimed the job, yet the cancel saw {other:?}"),
        }
    });
}

struct PendingForever;

impl Future for PendingForever {
    type Output = u8;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u8> {
        Poll::Pending
    }
}

/// Proves: an async dispatch polled (claimed, future constructed, pending) and then dropped
/// on an executor thread while the runtime cancels delivers exactly one `Cancelled`, and the
/// future is never constructed when the cancel wins.
#[test]
fn loom_async_dispatch_poll_drop_vs_cancel_delivers_once() {
    loom::model(|| {
        let constructed = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&constructed);
        let (half, submission, sink) = bind_split(PreparedOperation::interruptible_async(
            kind(1),
            move || {
                flag.store(true, Ordering::SeqCst);
                PendingForever
            },
            Decoder::identity(),
            quiet_hook(),
        ));
        let Dispatch::Async(mut dispatch) = submission.arm() else {
            panic!("async job")
        };
        let executor = loom::thread::spawn(move || {
            let polled = Pin::new(&mut dispatch).poll(&mut Context::from_waker(Waker::noop()));
            drop(dispatch);
            polled.map(|report| report.class)
        });
        let cancel = half.cancel_handle().cancel_before_start();
        let polled = executor.join().expect("executor does not panic");
        assert!(matches!(
            sink.only().result,
            Err(CompletionFailure::Cancelled)
        ));
        match cancel {
            CancelBeforeStart::CancelledQueued => {
                assert_eq!(polled, Poll::Ready(TerminalClass::Cancelled));
                assert!(!constructed.load(Ordering::SeqCst), "never constructed");
            }
            CancelBeforeStart::AlreadyRunning => {
                assert_eq!(polled, Poll::Pending);
                assert!(constructed.load(Ordering::SeqCst));
            }
            CancelBeforeStart::AlreadyCancelled => {
                panic!("one cancel only, and no withdrawal")
            }
        }
    });
}
