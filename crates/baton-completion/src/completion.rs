//! What an executor delivers to a runtime: [`ExternalCompletion`] through a
//! [`CompletionSender`] (crate rule E5).

use crate::identity::{CompletionKind, OperationId, RuntimeId, WaitGeneration, WaitId};
use baton_cancel::QuarantineBound;
use std::any::Any;
use std::fmt;

/// The `Send` value a job produced, decoded on the runtime thread.
pub type Payload = Box<dyn Any + Send>;

/// Why an operation produced no payload.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompletionFailure {
    /// The operation was cancelled: before start, or its dispatch or future was dropped.
    #[error("the operation was cancelled")]
    Cancelled,
    /// The job, the future's construction or one of its polls panicked.
    #[error("the operation's worker panicked: {message}")]
    WorkerPanic {
        /// The panic message.
        message: String,
    },
    /// A quarantined job outlived its declared bound.
    #[error("the quarantined operation outlived its bound ({bound})")]
    BoundExceeded {
        /// The bound it declared.
        bound: QuarantineBound,
    },
}

/// The full identity a completion is routed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompletionIdentity {
    /// The runtime waiting for it.
    pub runtime_id: RuntimeId,
    /// The wait slot.
    pub wait_id: WaitId,
    /// The slot's generation when the wait was issued.
    pub generation: WaitGeneration,
    /// The operation number.
    pub operation_id: OperationId,
    /// What it carries.
    pub kind: CompletionKind,
}

/// One operation's result, addressed to the wait that expects it. Delivered exactly once.
pub struct ExternalCompletion {
    /// The runtime waiting for it.
    pub runtime_id: RuntimeId,
    /// The wait slot.
    pub wait_id: WaitId,
    /// The slot's generation when the wait was issued.
    pub generation: WaitGeneration,
    /// The operation number.
    pub operation_id: OperationId,
    /// What it carries.
    pub kind: CompletionKind,
    /// The payload, or why there is none.
    pub result: Result<Payload, CompletionFailure>,
}

impl ExternalCompletion {
    /// Builds a completion for `identity`.
    pub fn new(identity: CompletionIdentity, result: Result<Payload, CompletionFailure>) -> Self {
        Self {
            runtime_id: identity.runtime_id,
            wait_id: identity.wait_id,
            generation: identity.generation,
            operation_id: identity.operation_id,
            kind: identity.kind,
            result,
        }
    }

    /// The identity fields.
    pub fn identity(&self) -> CompletionIdentity {
        CompletionIdentity {
            runtime_id: self.runtime_id,
            wait_id: self.wait_id,
            generation: self.generation,
            operation_id: self.operation_id,
            kind: self.kind,
        }
    }
}

impl fmt::Debug for ExternalCompletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalCompletion")
            .field("identity", &self.identity())
            .field("result", &self.result.as_ref().map(|_| "<payload>"))
            .finish()
    }
}

/// Whether a completion reached the runtime's inbox.
#[must_use = "an undeliverable completion should be counted"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeliveryOutcome {
    /// The inbox accepted it.
    Delivered,
    /// The inbox is closed (its runtime is gone); the completion was dropped.
    InboxClosed,
}

/// A runtime's completion inbox, as seen by executors.
///
/// The io_uring worker implements it by pushing into a channel and waking its thread; the
/// blocking pool calls it from its worker threads. Implementations must not block for long
/// and must not call back into the executor.
///
/// A sink that refuses a completion (`InboxClosed`) must drop it contained (for example with
/// [`baton_cancel::ContainedDrop::drop_value`]): its payload is user data whose destructor may
/// panic. Executors contain a `deliver` that panics anyway and count that completion as
/// `InboxClosed`, but the panic still unwinds through the sink's own state.
pub trait CompletionSender: Send + Sync + fmt::Debug {
    /// Hands one completion to the runtime.
    fn deliver(&self, completion: ExternalCompletion) -> DeliveryOutcome;
}
