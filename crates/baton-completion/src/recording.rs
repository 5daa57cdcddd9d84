//! Test fixtures: a completion sink that records what it receives, and builders for the
//! common prepared operations.

use crate::completion::{CompletionFailure, CompletionSender, DeliveryOutcome, ExternalCompletion};
use crate::identity::{CompletionKind, IdentityAllocator, RuntimeId};
use crate::registrar::Registrar;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Records every completion; reports `InboxClosed` once closed (and then drops them).
#[derive(Debug, Default)]
pub(crate) struct RecordingSink {
    received: Mutex<Vec<ExternalCompletion>>,
    closed: AtomicBool,
}

impl RecordingSink {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    pub(crate) fn count(&self) -> usize {
        self.received.lock().expect("not poisoned").len()
    }

    pub(crate) fn take(&self) -> Vec<ExternalCompletion> {
        std::mem::take(&mut *self.received.lock().expect("not poisoned"))
    }

    /// The single completion received; panics unless exactly one arrived.
    pub(crate) fn only(&self) -> ExternalCompletion {
        let mut all = self.take();
        assert_eq!(all.len(), 1, "expected exactly one completion");
        all.pop().expect("length checked")
    }
}

impl CompletionSender for RecordingSink {
    fn deliver(&self, completion: ExternalCompletion) -> DeliveryOutcome {
        if self.closed.load(Ordering::SeqCst) {
            return DeliveryOutcome::InboxClosed;
        }
        self.received.lock().expect("not poisoned").push(completion);
        DeliveryOutcome::Delivered
    }
}

/// A runtime id, its allocator and a registrar delivering to a fresh recording sink.
pub(crate) fn registrar() -> (Registrar, Arc<RecordingSink>, Arc<IdentityAllocator>) {
    let runtime = RuntimeId::allocate().expect("test process has runtime ids");
    let allocator = IdentityAllocator::new(runtime);
    let sink = RecordingSink::new();
    let registrar = Registrar::new(Arc::clone(&allocator), sink.clone());
    (registrar, sink, allocator)
}

pub(crate) fn kind(raw: u32) -> CompletionKind {
    CompletionKind::try_from_raw(raw).expect("test kinds are non-zero")
}

/// The payload of a completion as `T`, or its failure.
pub(crate) fn payload<T: 'static>(completion: ExternalCompletion) -> Result<T, CompletionFailure> {
    completion.result.map(|payload| {
        *payload
            .downcast::<T>()
            .expect("the test knows the payload type")
    })
}

/// A value whose destructor panics.
#[derive(Debug)]
pub(crate) struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("hostile destructor");
    }
}
