//! Routing by the full identity (E10–E11), polling, decoding, internal waits and tracing.

use super::{CountingWaker, fixture, poll};
use crate::completion::{CompletionIdentity, ExternalCompletion};
use crate::prepared::{DecodeError, Decoder, PreparedOperation, from_fn};
use crate::sync::{Arc, Ordering};
use crate::tests::support::{PanicOnDrop, interruptible, kind};
use crate::wait_table::{CancelOutcome, Discarded, RegisterError, SettleOutcome, WaitError};
use baton_cancel::{TraceOutcome, TraceVisitor};
use std::any::Any;
use std::rc::Rc;
use std::task::{Poll, Waker};

#[test]
fn settle_then_poll_returns_the_decoded_value() {
    let mut f = fixture();
    let (key, submission) = f.blocking_u32(5);
    let outcome = f.run_and_settle(submission);
    assert!(matches!(outcome, SettleOutcome::Settled { waker: None }));
    assert_eq!(
        f.poll_now::<String>(key),
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
    let returned = f.settle_polled(submission);
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
    let returned = f.settle_polled(submission);
    assert!(returned.will_wake(&second));
}

#[test]
fn second_completion_for_a_settled_wait_is_stale() {
    let mut f = fixture();
    let (key, submission) = f.blocking_u32(1);
    let identity = submission.identity();
    let outcome = f.run_and_settle(submission);
    assert!(matches!(outcome, SettleOutcome::Settled { .. }));
    let forged = ExternalCompletion::new(identity, Ok(Box::new(2_u32)));
    assert!(matches!(f.table.settle(forged), SettleOutcome::Stale));
    assert_eq!(f.table.counters().stale, 1);
    assert!(matches!(f.poll_now::<String>(key), Poll::Ready(Ok(_))));
}

#[test]
fn completion_of_an_older_generation_never_reaches_the_new_occupant() {
    let mut f = fixture();
    let (old_key, old_submission) = f.blocking_u32(1);
    let old_identity = old_submission.identity();
    let outcome = f.table.discard(old_key);
    assert!(matches!(outcome, Discarded::Removed { .. }));
    drop(old_submission);
    let (new_key, _new_submission) = f.blocking_u32(2);
    assert_eq!(new_key.wait_id, old_key.wait_id, "the slot is reused");
    assert_ne!(new_key.generation, old_key.generation);
    let late = ExternalCompletion::new(old_identity, Ok(Box::new(1_u32)));
    assert!(matches!(f.table.settle(late), SettleOutcome::Stale));
    assert!(f.poll_now::<String>(new_key).is_pending());
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
                interruptible(),
            ),
        )
        .expect("valid bind");
    let (half, _submission) = binding.split();
    let outcome = f.table.register(half);
    assert!(matches!(outcome, Err(RegisterError::ForeignRuntime { .. })));
}

#[test]
fn decoder_panic_is_a_wait_error() {
    let mut f = fixture();
    let (key, submission) = f.submit(PreparedOperation::interruptible_blocking(
        kind(1),
        from_fn(|| 1_u32),
        Decoder::new(|_: u32| -> u32 { panic!("bad decoder") }),
        interruptible(),
    ));
    let outcome = f.run_and_settle(submission);
    assert!(matches!(outcome, SettleOutcome::Settled { .. }));
    assert_eq!(
        f.poll_now::<u32>(key),
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
    let outcome = f.table.settle(forged);
    assert!(matches!(outcome, SettleOutcome::Settled { .. }));
    assert_eq!(
        f.poll_now::<String>(key),
        Poll::Ready(Err(WaitError::Decode(DecodeError::PayloadType {
            expected: "u32"
        })))
    );
    let (key, submission) = f.blocking_u32(1);
    let outcome = f.run_and_settle(submission);
    assert!(matches!(outcome, SettleOutcome::Settled { .. }));
    let outcome = f.poll_now::<u64>(key);
    assert!(matches!(outcome, Poll::Ready(Err(WaitError::ValueType { .. }))));
    assert_eq!(
        f.poll_now::<u64>(key),
        Poll::Ready(Err(WaitError::UnknownWait { key }))
    );
}

/// The value a wait settled with is user data: polling it as the wrong type destroys it, and
/// its panicking destructor must not escape `poll_wait` (crate rule E7).
#[test]
fn value_polled_as_the_wrong_type_is_destroyed_contained() {
    let mut f = fixture();
    let key = f.table.register_internal().expect("ids available");
    let outcome = f.table.complete_internal(key, Box::new(PanicOnDrop));
    assert!(matches!(outcome, SettleOutcome::Settled { .. }));
    let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f.poll_now::<u8>(key)));
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
    assert!(f.poll_now::<u8>(internal).is_pending());
    let outcome = f.table.complete_internal(internal, Box::new(3_u8));
    assert!(matches!(outcome, SettleOutcome::Settled { .. }));
    let outcome = f.table.complete_internal(internal, Box::new(4_u8));
    assert!(matches!(outcome, SettleOutcome::Stale));
    let outcome = f.table.complete_internal(external, Box::new(4_u8));
    assert!(matches!(outcome, SettleOutcome::Stale));
    assert_eq!(f.poll_now::<u8>(internal), Poll::Ready(Ok(3)));
    let timer = f.table.register_internal().expect("ids available");
    let outcome = f.table.cancel(timer);
    assert!(matches!(outcome, CancelOutcome::CancelledQueued { waker: None }));
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
        interruptible(),
    ));
    let mut collect = Collect(Vec::new());
    assert_eq!(f.table.trace(&mut collect), TraceOutcome::Complete);
    assert_eq!(collect.0, vec![77]);
    let _held = traced.borrow_mut();
    let outcome = f.table.trace(&mut collect);
    assert!(matches!(outcome, TraceOutcome::Incomplete { .. }));
}

/// The table stores its entries by slot number (dense, reused): a removed wait's place is
/// taken by the next wait that reuses its slot, the old key stays unknown, and the count
/// follows every insert and removal.
#[test]
fn a_reused_slot_holds_only_its_new_wait() {
    let mut f = fixture();
    let keys: Vec<crate::wait_table::WaitKey> = (0..3)
        .map(|_| f.table.register_internal().expect("ids available"))
        .collect();
    assert_eq!(f.table.len(), 3);
    let middle = keys[1];
    let outcome = f.table.complete_internal(middle, Box::new(1_u8));
    assert!(matches!(outcome, SettleOutcome::Settled { .. }));
    assert!(matches!(f.poll_now::<u8>(middle), Poll::Ready(Ok(1))));
    assert_eq!(f.table.len(), 2);
    let reused = f.table.register_internal().expect("ids available");
    assert_eq!(reused.wait_id, middle.wait_id, "the freed slot is handed out first");
    assert_ne!(reused.generation, middle.generation);
    assert!(matches!(
        f.poll_now::<u8>(middle),
        Poll::Ready(Err(WaitError::UnknownWait { .. }))
    ));
    let outcome = f.table.complete_internal(reused, Box::new(2_u8));
    assert!(matches!(outcome, SettleOutcome::Settled { .. }));
    assert!(matches!(f.poll_now::<u8>(reused), Poll::Ready(Ok(2))));
    for key in [keys[0], keys[2]] {
        let _ = f.table.complete_internal(key, Box::new(0_u8));
        assert!(matches!(f.poll_now::<u8>(key), Poll::Ready(Ok(0))));
    }
    assert!(f.table.is_empty());
}
