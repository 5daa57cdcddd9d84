//! Fixtures shared by the crate's integration tests and loom models (each test binary uses
//! part of them): a completion sink that records what it receives, a registrar of a fresh
//! runtime, a quiet hook, and binding and submitting a prepared operation.

#![allow(dead_code, unreachable_pub)]

pub mod channel;

use std::sync::Arc;

use baton_cancel::{HookOutcome, Interruptible};
use baton_completion::{
    Binding, CompletionKind, CompletionSender, DeliveryOutcome, ExecutorLease, ExternalCompletion,
    IdentityAllocator, PreparedOperation, Registrar, RuntimeId, Submission,
};
#[cfg(loom)]
use loom::sync::Mutex;
#[cfg(not(loom))]
use std::sync::Mutex;

/// Records every completion it receives (a loom mutex under `cfg(loom)`, so the models see
/// the deliveries as synchronization).
#[derive(Debug, Default)]
pub struct RecordingSink {
    received: Mutex<Vec<ExternalCompletion>>,
}

impl CompletionSender for RecordingSink {
    fn deliver(&self, completion: ExternalCompletion) -> DeliveryOutcome {
        self.received.lock().expect("not poisoned").push(completion);
        DeliveryOutcome::Delivered
    }
}

impl RecordingSink {
    /// How many completions arrived.
    pub fn count(&self) -> usize {
        self.received.lock().expect("not poisoned").len()
    }

    /// The single completion received; fails unless exactly one arrived.
    pub fn only(&self) -> ExternalCompletion {
        let mut all = std::mem::take(&mut *self.received.lock().expect("not poisoned"));
        assert_eq!(all.len(), 1, "exactly one completion is delivered");
        all.pop().expect("length checked")
    }
}

pub fn kind(raw: u32) -> CompletionKind {
    CompletionKind::try_from_raw(raw).expect("test kinds are non-zero")
}

/// An interruptible resource whose hook reports `Reaped` at once.
pub fn quiet_hook() -> Interruptible {
    Interruptible::new("test", || Ok(HookOutcome::Reaped))
}

/// A registrar of a fresh runtime delivering to `sink`.
pub fn registrar_for(sink: Arc<dyn CompletionSender>) -> Registrar {
    let runtime = RuntimeId::allocate().expect("runtime ids available");
    Registrar::new(IdentityAllocator::new(runtime), sink)
}

/// A registrar of a fresh runtime delivering to a fresh recording sink.
pub fn recording_registrar() -> (Registrar, Arc<RecordingSink>) {
    let sink = Arc::new(RecordingSink::default());
    (registrar_for(sink.clone()), sink)
}

/// Issues an identity of the prepared operation's kind and binds the operation to it.
pub fn bind(registrar: &Registrar, prepared: PreparedOperation) -> Binding {
    let identity = registrar.issue(prepared.kind()).expect("ids available");
    registrar
        .bind(identity, prepared)
        .expect("same registrar, same kind")
}

/// Submits through `lease`; a rejected submission is rolled back. Whether it was accepted.
pub fn submit_or_roll_back(lease: &dyn ExecutorLease, submission: Submission) -> bool {
    match lease.submit(submission) {
        Ok(()) => true,
        Err(rejected) => {
            let _ = rejected.rollback();
            false
        }
    }
}
