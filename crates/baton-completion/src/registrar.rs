//! The registrar: issues identities and binds them to prepared operations (crate rules E2–E4).
//!
//! An [`IssuedIdentity`] is not `Clone` and [`Registrar::bind`] consumes it, so an identity
//! binds once. A refused bind destroys the prepared operation (its job never runs, nothing is
//! delivered) and releases the identity's wait slot.

use crate::completion::{CompletionIdentity, CompletionSender};
use crate::dispatch::Submission;
use crate::identity::{
    CompletionKind, IdentityAllocator, IdentityError, OperationId, RuntimeId, WaitSlot,
};
use crate::prepared::{ErasedDecoder, PreparedOperation};
use crate::sendable::{SendBinding, SendPreparedOperation};
use crate::sync::{Ordering, StaticCounter, StdArc};
use baton_cancel::{CancelHandle, ContainedDrop, ResourceClass, StartToken, queue_control};
use std::fmt;

static NEXT_REGISTRAR: StaticCounter = StaticCounter::new(1);

/// Issues identities for one runtime and binds them to prepared operations.
pub struct Registrar {
    id: u64,
    allocator: StdArc<IdentityAllocator>,
    sender: StdArc<dyn CompletionSender>,
}

/// An identity issued for one operation of a given kind. Not `Clone`: it binds once.
///
/// ```compile_fail
/// # use std::sync::Arc;
/// # use baton_completion::*;
/// # #[derive(Debug)] struct Nowhere;
/// # impl CompletionSender for Nowhere {
/// #     fn deliver(&self, _: ExternalCompletion) -> DeliveryOutcome { DeliveryOutcome::InboxClosed }
/// # }
/// let allocator = IdentityAllocator::new(RuntimeId::allocate().unwrap());
/// let registrar = Registrar::new(allocator, StdArc::new(Nowhere));
/// let identity = registrar.issue(CompletionKind::try_from_raw(1).unwrap()).unwrap();
/// let twin = identity.clone(); // an identity cannot be duplicated
/// ```
#[derive(Debug)]
pub struct IssuedIdentity {
    registrar: u64,
    slot: WaitSlot,
    operation_id: OperationId,
    kind: CompletionKind,
}

/// A bind was refused; the prepared operation was destroyed without running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// The identity came from another registrar.
    #[error(
        "identity was issued by another registrar (of {identity_runtime}), not this one (of {registrar_runtime}); issue identities from the registrar that binds them"
    )]
    ForeignIdentity {
        /// The runtime of the identity's registrar.
        identity_runtime: RuntimeId,
        /// The runtime of the registrar asked to bind.
        registrar_runtime: RuntimeId,
    },
    /// The identity was issued for another kind than the prepared operation declares.
    #[error("identity was issued for {expected} but the prepared operation declares {declared}")]
    KindMismatch {
        /// The kind the identity was issued for.
        expected: CompletionKind,
        /// The kind the prepared operation declares.
        declared: CompletionKind,
    },
}

/// An identity bound to its operation, ready to [`split`](Binding::split).
#[derive(Debug)]
pub struct Binding {
    runtime: RuntimeHalf,
    submission: Submission,
}

/// The half of a binding that stays on the runtime thread: decoder, resource class and cancel
/// handle. Register it in a `WaitTable`. Dropping it releases its wait slot.
pub struct RuntimeHalf {
    pub(crate) slot: WaitSlot,
    pub(crate) identity: CompletionIdentity,
    pub(crate) decoder: ErasedDecoder,
    pub(crate) resource: ResourceClass,
    pub(crate) cancel: CancelHandle,
}

impl Registrar {
    /// A registrar issuing identities from `allocator` and delivering to `sender`, the
    /// runtime's inbox.
    pub fn new(allocator: StdArc<IdentityAllocator>, sender: StdArc<dyn CompletionSender>) -> Self {
        Self {
            id: NEXT_REGISTRAR.fetch_add(1, Ordering::Relaxed),
            allocator,
            sender,
        }
    }

    /// The runtime this registrar issues identities for.
    pub fn runtime_id(&self) -> RuntimeId {
        self.allocator.runtime_id()
    }

    /// Issues a fresh identity for an operation of `kind`.
    pub fn issue(&self, kind: CompletionKind) -> Result<IssuedIdentity, IdentityError> {
        let slot = self.allocator.allocate_wait()?;
        let operation_id = self.allocator.allocate_operation()?;
        Ok(IssuedIdentity {
            registrar: self.id,
            slot,
            operation_id,
            kind,
        })
    }

    /// Binds `identity` to `prepared` (E2): refuses a foreign identity and a kind
    /// mismatch, destroying the prepared operation in both cases (E4).
    pub fn bind(
        &self,
        identity: IssuedIdentity,
        prepared: PreparedOperation,
    ) -> Result<Binding, BindError> {
        self.bind_with(identity, prepared, None)
    }

    /// [`bind`](Registrar::bind), deciding cancel-before-start with the caller's queue cell
    /// (both sides of one cell, from `baton_cancel::hosted_queue_control`, say) instead of a
    /// fresh one: the wait table's cancel and the dispatch's claim then race on that cell, so
    /// a cancel made through it (from any thread, before or after this call) keeps the job
    /// from running, and no cell is allocated here.
    pub fn bind_with_control(
        &self,
        identity: IssuedIdentity,
        prepared: PreparedOperation,
        control: (CancelHandle, StartToken),
    ) -> Result<Binding, BindError> {
        self.bind_with(identity, prepared, Some(control))
    }

    fn bind_with(
        &self,
        identity: IssuedIdentity,
        prepared: PreparedOperation,
        control: Option<(CancelHandle, StartToken)>,
    ) -> Result<Binding, BindError> {
        let refusal = if identity.registrar != self.id {
            Some(BindError::ForeignIdentity {
                identity_runtime: identity.slot.runtime_id(),
                registrar_runtime: self.runtime_id(),
            })
        } else if identity.kind != prepared.kind {
            Some(BindError::KindMismatch {
                expected: identity.kind,
                declared: prepared.kind,
            })
        } else {
            None
        };
        if let Some(error) = refusal {
            // Rule E4: destroyed without running; a hostile destructor is contained.
            let _ = ContainedDrop::drop_value(prepared);
            return Err(error);
        }
        let identity_fields = CompletionIdentity {
            runtime_id: identity.slot.runtime_id(),
            wait_id: identity.slot.wait_id(),
            generation: identity.slot.generation(),
            operation_id: identity.operation_id,
            kind: identity.kind,
        };
        let work_class = prepared.work_class();
        let PreparedOperation {
            job,
            decoder,
            resource,
            ..
        } = prepared;
        let (cancel, start) = control.unwrap_or_else(queue_control);
        Ok(Binding {
            runtime: RuntimeHalf {
                slot: identity.slot,
                identity: identity_fields,
                decoder,
                resource,
                cancel,
            },
            submission: Submission::new(
                identity_fields,
                StdArc::clone(&self.sender),
                start,
                job,
                work_class,
            ),
        })
    }

    /// Binds a [`SendPreparedOperation`] like [`bind`](Registrar::bind) (the same refusals,
    /// rules E2 and E4), keeping its `Send` form: the binding splits into a [`SendRuntimeHalf`],
    /// which may live on any thread.
    ///
    /// [`SendRuntimeHalf`]: crate::SendRuntimeHalf
    pub fn bind_send(
        &self,
        identity: IssuedIdentity,
        prepared: SendPreparedOperation,
    ) -> Result<SendBinding, BindError> {
        // The binding was bound from a `SendPreparedOperation`: `SendBinding`'s invariant.
        self.bind(identity, prepared.into()).map(SendBinding::new)
    }

    /// [`bind_send`](Registrar::bind_send) with the caller's queue cell, as
    /// [`bind_with_control`](Registrar::bind_with_control) does.
    pub fn bind_send_with_control(
        &self,
        identity: IssuedIdentity,
        prepared: SendPreparedOperation,
        control: (CancelHandle, StartToken),
    ) -> Result<SendBinding, BindError> {
        // The binding was bound from a `SendPreparedOperation`: `SendBinding`'s invariant.
        self.bind_with_control(identity, prepared.into(), control)
            .map(SendBinding::new)
    }
}

impl IssuedIdentity {
    /// The kind it was issued for.
    pub fn kind(&self) -> CompletionKind {
        self.kind
    }

    /// The runtime it belongs to.
    pub fn runtime_id(&self) -> RuntimeId {
        self.slot.runtime_id()
    }
}

#[cfg(test)]
impl IssuedIdentity {
    /// Test hook: the wait slot the identity holds.
    pub(crate) fn slot(&self) -> &WaitSlot {
        &self.slot
    }
}

impl Binding {
    /// Splits into the runtime half (stays on the runtime thread) and the submission half
    /// (`Send`, goes to an executor).
    pub fn split(self) -> (RuntimeHalf, Submission) {
        (self.runtime, self.submission)
    }
}

impl RuntimeHalf {
    /// The identity completions for this wait carry.
    pub fn identity(&self) -> CompletionIdentity {
        self.identity
    }

    /// The cancel side of the operation's queue cell.
    pub fn cancel_handle(&self) -> &CancelHandle {
        &self.cancel
    }

    /// The operation's resource class.
    pub fn resource(&self) -> &ResourceClass {
        &self.resource
    }
}

impl fmt::Debug for Registrar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registrar")
            .field("id", &self.id)
            .field("runtime", &self.runtime_id())
            .field("sender", &self.sender)
            .finish()
    }
}

impl fmt::Debug for RuntimeHalf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeHalf")
            .field("identity", &self.identity)
            .field("resource", &self.resource)
            .field("cancel", &self.cancel)
            .finish_non_exhaustive()
    }
}
