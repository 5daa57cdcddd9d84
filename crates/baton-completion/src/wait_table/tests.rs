//! Unit tests of the wait table (crate rules 10–13).

use super::*;
use crate::completion::CompletionIdentity;
use crate::dispatch::{AsyncDispatch, BlockingDispatch, Dispatch, Submission};
use crate::prepared::{Decoder, PreparedOperation, from_fn};
use crate::recording::{PanicOnDrop, RecordingSink, kind, registrar};
use crate::registrar::Registrar;
use baton_cancel::{HookOutcome, Interruptible, QueueState};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Wake;
use std::time::Duration;

struct Fixture {
    registrar: Registrar,
    sink: Arc<RecordingSink>,
    table: WaitTable,
}

fn fixture() -> Fixture {
    let (registrar, sink, allocator) = registrar();
    Fixture {
        registrar,
        sink,
        table: WaitTable::new(allocator),
    }
}

impl Fixture {
    fn submit(&mut self, prepared: PreparedOperation) -> (WaitKey, Submission) {
        let identity = self.registrar.issue(kind(1)).expect("ids available");
        let binding = self.registrar.bind(identity, prepared).expect("valid bind");
        let (half, submission) = binding.split();
        let key = self.table.register(half).expect("same runtime");
        (key, submission)
    }

    /// An interruptible async job ("socket") that never finishes by itself, armed and polled
    /// once so it is claimed and running. Its hook counts its calls (returned) and reports
    /// `Reaped` from the `reap_after`-th call on, `PendingReap` before.
    fn running_socket_job(&mut self, reap_after: u32) -> (WaitKey, AsyncDispatch, Rc<Cell<u32>>) {
        let calls = Rc::new(Cell::new(0));
        let seen = Rc::clone(&calls);
        let (key, submission) = self.submit(PreparedOperation::interruptible_async(
            kind(1),
            || Pending,
            Decoder::identity(),
            Interruptible::new("socket", move || {
                seen.set(seen.get() + 1);
                Ok(if seen.get() >= reap_after {
                    HookOutcome::Reaped
                } else {
                    HookOutcome::PendingReap
                })
            }),
        ));
        let Dispatch::Async(mut dispatch) = submission.arm() else {
            panic!("async job")
        };
        assert!(
            Pin::new(&mut dispatch)
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending(),
            "claimed and running"
        );
        (key, dispatch, calls)
    }

    fn blocking_u32(&mut self, value: u32) -> (WaitKey, Submission) {
        self.submit(PreparedOperation::interruptible_blocking(
            kind(1),
            from_fn(move || value),
            Decoder::new(|v: u32| format!("decoded {v}")),
            Interruptible::new("test", || Ok(HookOutcome::Reaped)),
        ))
    }

    /// Runs the submission to completion and feeds its completion to the table.
    fn run_and_settle(&mut self, submission: Submission) -> SettleOutcome {
        let Dispatch::Blocking(dispatch) = submission.arm() else {
            panic!("blocking job")
        };
        let _ = dispatch.run();
        self.table.settle(self.sink.only())
    }
}

#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll<T: 'static>(
    table: &mut WaitTable,
    key: WaitKey,
    waker: &Waker,
) -> Poll<Result<T, WaitError>> {
    table.poll_wait::<T>(key, &mut Context::from_waker(waker))
}

#[test]
fn settle_then_poll_returns_the_decoded_value() {
    let mut f = fixture();
    let (key, submission) = f.blocking_u32(5);
    assert!(matches!(
        f.run_and_settle(submission),
        SettleOutcome::Settled { waker: None }
    ));
    assert_eq!(
        poll::<String>(&mut f.table, key, Waker::noop()),
        Poll::Ready(Ok("decoded 5".to_owned()))
    );
    assert!(f.table.is_empty());
    assert_eq!(f.table.counters().settled, 1);
}

#[test]
fn settle_returns_the_waker_instead_of_waking_it() {
    let mut f = fixture();
    let (key, submission) = f.blocking_u32(1);
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    assert!(poll::<String>(&mut f.table, key, &waker).is_pending());
    assert!(poll::<String>(&mut f.table, key, &waker).is_pending());
    let SettleOutcome::Settled {
        waker: Some(returned),
    } = f.run_and_settle(submission)
    else {
        panic!("a polled wait settles with its waker")
    };
    assert_eq!(counter.0.load(Ordering::SeqCst), 0, "settle never wakes");
    assert!(returned.will_wake(&waker));
    returned.wake();
    assert_eq!(counter.0.load(Ordering::SeqCst), 1);
}

#[test]
fn a_new_waker_replaces_the_old_one() {
    let mut f = fixture();
    let (key, submission) = f.blocking_u32(1);
    let first = Waker::from(Arc::new(CountingWaker::default()));
    let second = Waker::from(Arc::new(CountingWaker::default()));
    assert!(poll::<String>(&mut f.table, key, &first).is_pending());
    assert!(poll::<String>(&mut f.table, key, &second).is_pending());
    let SettleOutcome::Settled {
        waker: Some(returned),
    } = f.run_and_settle(submission)
    else {
        panic!("a polled wait settles with its waker")
    };
    assert!(returned.will_wake(&second));
}

#[test]
fn second_completion_for_a_settled_wait_is_stale() {
    let mut f = fixture();
    let (key, submission) = f.blocking_u32(1);
    let identity = submission.identity();
    assert!(matches!(
        f.run_and_settle(submission),
        SettleOutcome::Settled { .. }
    ));
    let forged = ExternalCompletion::new(identity, Ok(Box::new(2_u32)));
    assert!(matches!(f.table.settle(forged), SettleOutcome::Stale));
    assert_eq!(f.table.counters().stale, 1);
    assert!(matches!(
        poll::<String>(&mut f.table, key, Waker::noop()),
        Poll::Ready(Ok(_))
    ));
}

#[test]
fn completion_of_an_older_generation_never_reaches_the_new_occupant() {
    let mut f = fixture();
    let (old_key, old_submission) = f.blocking_u32(1);
    let old_identity = old_submission.identity();
    assert!(matches!(
        f.table.discard(old_key),
        Discarded::Removed { .. }
    ));
    drop(old_submission);
    let (new_key, _new_submission) = f.blocking_u32(2);
    assert_eq!(new_key.wait_id, old_key.wait_id, "the slot is reused");
    assert_ne!(new_key.generation, old_key.generation);
    let late = ExternalCompletion::new(old_identity, Ok(Box::new(1_u32)));
    assert!(matches!(f.table.settle(late), SettleOutcome::Stale));
    assert!(poll::<String>(&mut f.table, new_key, Waker::noop()).is_pending());
}

#[test]
fn foreign_completion_is_refused_and_counted() {
    let mut f = fixture();
    let (_key, submission) = f.blocking_u32(1);
    let mut other = fixture();
    let (_other_key, other_submission) = other.blocking_u32(1);
    let foreign = ExternalCompletion::new(other_submission.identity(), Ok(Box::new(1_u32)));
    assert!(matches!(f.table.settle(foreign), SettleOutcome::Foreign));
    assert_eq!(f.table.counters().foreign, 1);
    drop(submission);
}

#[test]
fn foreign_runtime_half_is_refused() {
    let mut f = fixture();
    let other = fixture();
    let identity = other.registrar.issue(kind(1)).expect("ids available");
    let binding = other
        .registrar
        .bind(
            identity,
            PreparedOperation::interruptible_blocking(
                kind(1),
                from_fn(|| 1_u32),
                Decoder::identity(),
                Interruptible::new("test", || Ok(HookOutcome::Reaped)),
            ),
        )
        .expect("valid bind");
    let (half, _submission) = binding.split();
    assert!(matches!(
        f.table.register(half),
        Err(RegisterError::ForeignRuntime { .. })
    ));
}

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

struct Pending;

impl Future for Pending {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {
        Poll::Pending
    }
}

#[test]
fn started_interruptible_job_gets_its_hook_once_then_reaps() {
    let mut f = fixture();
    let (key, dispatch, calls) = f.running_socket_job(3);
    assert!(matches!(
        f.table.cancel(key),
        CancelOutcome::Interrupted(Ok(HookOutcome::PendingReap))
    ));
    assert!(matches!(
        f.table.cancel(key),
        CancelOutcome::AlreadyInterrupted
    ));
    assert_eq!(f.table.reap(key), Some(Ok(HookOutcome::PendingReap)));
    assert_eq!(f.table.reap(key), Some(Ok(HookOutcome::Reaped)));
    assert_eq!(calls.get(), 3);
    drop(dispatch);
    assert!(matches!(
        f.table.settle(f.sink.only()),
        SettleOutcome::Settled { .. }
    ));
    assert_eq!(
        poll::<u32>(&mut f.table, key, Waker::noop()),
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
    assert!(matches!(
        f.table.settle(f.sink.only()),
        SettleOutcome::Stale
    ));
}

#[test]
fn started_quarantined_job_reports_its_bound() {
    let mut f = fixture();
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
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
    while f.table.entries[&key.wait_id]
        .cancel
        .as_ref()
        .map(CancelHandle::state)
        != Some(QueueState::Running)
    {
        assert!(std::time::Instant::now() < deadline, "job never started");
        std::thread::yield_now();
    }
    assert!(matches!(
        f.table.cancel(key),
        CancelOutcome::Quarantined { bound: b } if b == bound
    ));
    assert_eq!(f.table.reap(key), None);
    gate_tx.send(()).expect("runner waits on the gate");
    runner.join().expect("runner does not panic");
    assert!(matches!(
        f.table.settle(f.sink.only()),
        SettleOutcome::Settled { .. }
    ));
    assert_eq!(
        poll::<u32>(&mut f.table, key, Waker::noop()),
        Poll::Ready(Ok(11))
    );
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
        poll::<u32>(&mut f.table, key, Waker::noop()),
        Poll::Ready(Err(WaitError::BoundExceeded { bound }))
    );
}

#[test]
fn decoder_panic_is_a_wait_error() {
    let mut f = fixture();
    let (key, submission) = f.submit(PreparedOperation::interruptible_blocking(
        kind(1),
        from_fn(|| 1_u32),
        Decoder::new(|_: u32| -> u32 { panic!("bad decoder") }),
        Interruptible::new("test", || Ok(HookOutcome::Reaped)),
    ));
    assert!(matches!(
        f.run_and_settle(submission),
        SettleOutcome::Settled { .. }
    ));
    assert_eq!(
        poll::<u32>(&mut f.table, key, Waker::noop()),
        Poll::Ready(Err(WaitError::Decode(DecodeError::Panicked {
            message: "bad decoder".into()
        })))
    );
}

#[test]
fn forged_payload_type_and_wrong_poll_type_are_errors() {
    let mut f = fixture();
    let (key, submission) = f.blocking_u32(1);
    let forged = ExternalCompletion::new(submission.identity(), Ok(Box::new("not a u32")));
    assert!(matches!(
        f.table.settle(forged),
        SettleOutcome::Settled { .. }
    ));
    assert_eq!(
        poll::<String>(&mut f.table, key, Waker::noop()),
        Poll::Ready(Err(WaitError::Decode(DecodeError::PayloadType {
            expected: "u32"
        })))
    );
    let (key, submission) = f.blocking_u32(1);
    assert!(matches!(
        f.run_and_settle(submission),
        SettleOutcome::Settled { .. }
    ));
    assert!(matches!(
        poll::<u64>(&mut f.table, key, Waker::noop()),
        Poll::Ready(Err(WaitError::ValueType { .. }))
    ));
    assert_eq!(
        poll::<u64>(&mut f.table, key, Waker::noop()),
        Poll::Ready(Err(WaitError::UnknownWait { key }))
    );
}

/// The value a wait settled with is user data: polling it as the wrong type destroys it, and
/// its panicking destructor must not escape `poll_wait` (crate rule 7).
#[test]
fn value_polled_as_the_wrong_type_is_destroyed_contained() {
    let mut f = fixture();
    let key = f.table.register_internal().expect("ids available");
    assert!(matches!(
        f.table.complete_internal(key, Box::new(PanicOnDrop)),
        SettleOutcome::Settled { .. }
    ));
    let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        poll::<u8>(&mut f.table, key, Waker::noop())
    }));
    assert!(
        matches!(polled, Ok(Poll::Ready(Err(WaitError::ValueType { .. })))),
        "the wrong type is an error and the destructor's panic stays contained: {polled:?}"
    );
}

#[test]
fn mismatched_operation_in_a_completion_is_stale() {
    let mut f = fixture();
    let (_key, submission) = f.blocking_u32(1);
    let identity = submission.identity();
    let wrong = CompletionIdentity {
        kind: kind(2),
        ..identity
    };
    let forged = ExternalCompletion::new(wrong, Ok(Box::new(1_u32)));
    assert!(matches!(f.table.settle(forged), SettleOutcome::Stale));
}

#[test]
fn internal_waits_share_the_allocator_with_external_operations() {
    let mut f = fixture();
    let internal = f.table.register_internal().expect("ids available");
    let (external, _submission) = f.blocking_u32(1);
    assert_ne!(internal.wait_id, external.wait_id);
    assert!(poll::<u8>(&mut f.table, internal, Waker::noop()).is_pending());
    assert!(matches!(
        f.table.complete_internal(internal, Box::new(3_u8)),
        SettleOutcome::Settled { .. }
    ));
    assert!(matches!(
        f.table.complete_internal(internal, Box::new(4_u8)),
        SettleOutcome::Stale
    ));
    assert!(matches!(
        f.table.complete_internal(external, Box::new(4_u8)),
        SettleOutcome::Stale
    ));
    assert_eq!(
        poll::<u8>(&mut f.table, internal, Waker::noop()),
        Poll::Ready(Ok(3))
    );
    let timer = f.table.register_internal().expect("ids available");
    assert!(matches!(
        f.table.cancel(timer),
        CancelOutcome::CancelledQueued { waker: None }
    ));
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
        Interruptible::new("test", || Ok(HookOutcome::Reaped)),
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

#[test]
fn trace_visits_decoder_references_and_stops_when_incomplete() {
    struct Collect(Vec<u32>);
    impl TraceVisitor for Collect {
        fn visit(&mut self, reference: &dyn Any) {
            if let Some(v) = reference.downcast_ref::<u32>() {
                self.0.push(*v);
            }
        }
    }
    let mut f = fixture();
    let traced = Rc::new(std::cell::RefCell::new(77_u32));
    let in_tracer = Rc::clone(&traced);
    let (_key, _submission) = f.submit(PreparedOperation::interruptible_blocking(
        kind(1),
        from_fn(|| 1_u32),
        Decoder::identity().with_tracer(move |visitor| match in_tracer.try_borrow() {
            Ok(value) => {
                visitor.visit(&*value);
                TraceOutcome::Complete
            }
            Err(_) => TraceOutcome::Incomplete {
                reason: "decoder state borrowed".into(),
            },
        }),
        Interruptible::new("test", || Ok(HookOutcome::Reaped)),
    ));
    let mut collect = Collect(Vec::new());
    assert_eq!(f.table.trace(&mut collect), TraceOutcome::Complete);
    assert_eq!(collect.0, vec![77]);
    let _held = traced.borrow_mut();
    assert!(matches!(
        f.table.trace(&mut collect),
        TraceOutcome::Incomplete { .. }
    ));
}
