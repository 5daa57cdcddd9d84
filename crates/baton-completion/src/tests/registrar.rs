//! Unit tests of the registrar (crate rules E2–E4).

use super::support::{DropFlag, PanicOnDrop, interruptible, kind, registrar};
use crate::prepared::{Decoder, PreparedOperation, from_fn};
use crate::registrar::BindError;
use crate::sendable::{SendDecoder, SendInterruptible, SendPreparedOperation};
use crate::sync::{Arc, AtomicBool, Ordering};
use baton_cancel::HookOutcome;

fn watched(kind_raw: u32) -> (PreparedOperation, Arc<AtomicBool>, Arc<AtomicBool>) {
    let ran = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let (ran_flag, drop_flag) = (Arc::clone(&ran), DropFlag(Arc::clone(&dropped)));
    let prepared = PreparedOperation::interruptible_blocking(
        kind(kind_raw),
        from_fn(move || {
            let _keep = &drop_flag;
            ran_flag.store(true, Ordering::SeqCst);
        }),
        Decoder::identity(),
        interruptible(),
    );
    (prepared, ran, dropped)
}

#[test]
fn foreign_identity_is_refused_and_destroys_the_operation() {
    let (ours, sink, _) = registrar();
    let (theirs, their_sink, _) = registrar();
    let identity = theirs.issue(kind(1)).expect("ids available");
    let (prepared, ran, dropped) = watched(1);
    let error = ours.bind(identity, prepared).expect_err("foreign identity");
    assert!(matches!(error, BindError::ForeignIdentity { .. }));
    assert!(error.to_string().contains("another registrar"));
    assert!(dropped.load(Ordering::SeqCst), "the job was destroyed");
    assert!(!ran.load(Ordering::SeqCst), "the job never ran");
    assert_eq!(sink.count() + their_sink.count(), 0, "nothing delivered");
}

#[test]
fn kind_mismatch_is_refused_and_destroys_the_operation() {
    let (registrar, sink, _) = registrar();
    let identity = registrar.issue(kind(1)).expect("ids available");
    let (prepared, ran, dropped) = watched(2);
    assert_eq!(
        registrar.bind(identity, prepared).err(),
        Some(BindError::KindMismatch {
            expected: kind(1),
            declared: kind(2)
        })
    );
    assert!(dropped.load(Ordering::SeqCst));
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(sink.count(), 0);
}

#[test]
fn refused_bind_contains_a_panicking_job_destructor() {
    let (registrar, sink, _) = registrar();
    let identity = registrar.issue(kind(1)).expect("ids available");
    let hostile = PanicOnDrop;
    let prepared = PreparedOperation::interruptible_blocking(
        kind(2),
        from_fn(move || {
            let _keep = &hostile;
        }),
        Decoder::identity(),
        interruptible(),
    );
    assert!(registrar.bind(identity, prepared).is_err());
    assert_eq!(sink.count(), 0);
}

#[test]
fn split_halves_share_one_identity() {
    let (registrar, _sink, allocator) = registrar();
    let identity = registrar.issue(kind(4)).expect("ids available");
    assert_eq!(identity.kind(), kind(4));
    assert_eq!(identity.runtime_id(), allocator.runtime_id());
    let (prepared, _, _) = watched(4);
    let (half, submission) = registrar.bind(identity, prepared).expect("valid").split();
    assert_eq!(half.identity(), submission.identity());
    assert!(half.resource().bound().is_none());
}

#[test]
fn unbound_identity_releases_its_slot() {
    let (registrar, _sink, _allocator) = registrar();
    let first = registrar.issue(kind(1)).expect("ids available");
    let slot = first.slot().wait_id();
    drop(first);
    let second = registrar.issue(kind(1)).expect("ids available");
    assert_eq!(second.slot().wait_id(), slot);
    assert_eq!(second.slot().generation().get(), 1);
}

#[test]
fn bind_send_refuses_like_bind_and_its_halves_share_one_identity() {
    let (ours, sink, _) = registrar();
    let (theirs, _their_sink, _) = registrar();
    let prepared = || {
        SendPreparedOperation::interruptible_blocking(
            kind(1),
            from_fn(|| 1_u8),
            SendDecoder::identity(),
            SendInterruptible::new("test", || Ok(HookOutcome::Reaped)),
        )
    };
    let foreign = theirs.issue(kind(1)).expect("ids available");
    let outcome = ours.bind_send(foreign, prepared());
    assert!(matches!(outcome, Err(BindError::ForeignIdentity { .. })));
    let identity = ours.issue(kind(1)).expect("ids available");
    let (half, submission) = ours.bind_send(identity, prepared()).expect("valid").split();
    assert_eq!(half.identity(), submission.identity());
    assert!(half.resource().bound().is_none());
    assert_eq!(sink.count(), 0, "nothing delivered");
}

/// A shared value embedding the queue cell a binding decides on.
struct Host(baton_cancel::QueueCell);

impl baton_cancel::QueueHost for Host {
    fn queue_cell(&self) -> &baton_cancel::QueueCell {
        &self.0
    }
}

#[test]
fn a_cancel_through_the_callers_queue_cell_keeps_the_bound_job_from_running() {
    let (registrar, sink, allocator) = registrar();
    let host = std::sync::Arc::new(Host(baton_cancel::QueueCell::new()));
    let (prepared, ran, _dropped) = watched(1);
    let identity = registrar.issue(kind(1)).expect("ids available");
    let (half, submission) = registrar
        .bind_with_control(
            identity,
            prepared,
            baton_cancel::hosted_queue_control(host.clone()),
        )
        .expect("same registrar, same kind")
        .split();
    let mut table = crate::WaitTable::new(allocator);
    let key = table.register(half).expect("same runtime");
    // The caller's cancel wins on its own cell, off the table.
    assert_eq!(
        host.0.cancel_before_start(),
        baton_cancel::CancelBeforeStart::CancelledQueued
    );
    // The table's cancel sees that cancel, and settles the still-pending wait.
    assert!(matches!(
        table.cancel(key),
        crate::CancelOutcome::AlreadyCancelled { waker: None }
    ));
    // The dispatch claims the same cell: the job never runs, `Cancelled` is delivered once.
    let report = match submission.arm() {
        crate::Dispatch::Blocking(dispatch) => dispatch.run(),
        crate::Dispatch::Async(_) => panic!("a blocking job arms as a blocking dispatch"),
    };
    assert_eq!(report.class, crate::TerminalClass::Cancelled);
    assert!(!ran.load(Ordering::SeqCst), "the job never ran");
    assert_eq!(sink.count(), 1, "delivered once");
}
