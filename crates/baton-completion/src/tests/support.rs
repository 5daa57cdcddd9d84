//! Fixtures shared by the crate's unit tests: completion sinks (one that records, one that
//! panics), a registrar delivering to a fresh recording sink, the common prepared operations
//! and their bindings, and small values and helpers the tests of several modules need.

use crate::completion::{CompletionFailure, CompletionSender, DeliveryOutcome, ExternalCompletion};
use crate::dispatch::Submission;
use crate::identity::{CompletionKind, IdentityAllocator, RuntimeId};
use crate::prepared::{Decoder, PreparedOperation, from_fn};
use crate::registrar::{Registrar, RuntimeHalf};
use crate::sync::{Arc, AtomicBool, AtomicUsize, Mutex, Ordering};
use baton_cancel::{HookOutcome, Interruptible};
use std::time::{Duration, Instant};

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

/// A sink whose `deliver` panics, after counting the call.
#[derive(Debug, Default)]
pub(crate) struct PanickingSink {
    pub(crate) calls: AtomicUsize,
}

impl CompletionSender for PanickingSink {
    fn deliver(&self, _completion: ExternalCompletion) -> DeliveryOutcome {
        self.calls.fetch_add(1, Ordering::SeqCst);
        panic!("hostile sink");
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

/// A registrar of a fresh runtime delivering to a sink whose `deliver` panics.
pub(crate) fn panicking_registrar() -> (Registrar, Arc<PanickingSink>) {
    let runtime = RuntimeId::allocate().expect("ids");
    let sink = Arc::new(PanickingSink::default());
    let registrar = Registrar::new(IdentityAllocator::new(runtime), sink.clone());
    (registrar, sink)
}

pub(crate) fn kind(raw: u32) -> CompletionKind {
    CompletionKind::try_from_raw(raw).expect("test kinds are non-zero")
}

/// An interruptible resource whose hook reports `Reaped` at once.
pub(crate) fn interruptible() -> Interruptible {
    Interruptible::new("test", || Ok(HookOutcome::Reaped))
}

/// An interruptible blocking job of kind 1 running `job`, with an identity decoder.
pub(crate) fn blocking_op<T: Send + 'static>(
    job: impl FnOnce() -> T + Send + 'static,
) -> PreparedOperation {
    PreparedOperation::interruptible_blocking(
        kind(1),
        from_fn(job),
        Decoder::identity(),
        interruptible(),
    )
}

/// Issues a kind-1 identity from `registrar`, binds `prepared` to it and splits the binding.
pub(crate) fn bind_split(
    registrar: &Registrar,
    prepared: PreparedOperation,
) -> (RuntimeHalf, Submission) {
    let identity = registrar.issue(kind(1)).expect("ids available");
    registrar
        .bind(identity, prepared)
        .expect("valid bind")
        .split()
}

/// The payload of a completion as `T`, or its failure.
/// Asserts that `sink` received exactly one completion, `Cancelled` (its value type `T`).
#[track_caller]
pub(crate) fn assert_only_cancelled<T: 'static + std::fmt::Debug + PartialEq>(sink: &RecordingSink) {
    assert_eq!(payload::<T>(sink.only()), Err(CompletionFailure::Cancelled));
}

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

/// Sets its flag when dropped.
pub(crate) struct DropFlag(pub(crate) Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Polls `condition` every millisecond until it holds; fails the test after 20 s.
pub(crate) fn wait_until(mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "condition not met in 20 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}
