//! The `Send` forms of a prepared operation and of its runtime half (crate rule E3).
//!
//! A runtime half stays on the runtime thread because its decoder, the value the decoder
//! produces and its cancel hook may be `!Send` (they may hold `Rc`). A runtime that moves its
//! waits between threads (baton-uring's worker, whose migratable wait table travels with it)
//! needs halves for which that is not so, and a type that says it:
//!
//! ```text
//! SendPreparedOperation (SendDecoder, SendInterruptible or a bound)
//!   └─ Registrar::bind_send ─> SendBinding ─ split ─┬─ SendRuntimeHalf (Send) ─> any thread
//!                                                   └─ Submission (Send)      ─> an executor
//! ```
//!
//! Each `Send` form wraps its ordinary form and is built only from `Send` parts, so it can be
//! turned back into the ordinary form (`From`) at any time, never the other way round.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use baton_completion::baton_cancel::HookOutcome;
//! use baton_completion::*;
//! use std::sync::Arc;
//!
//! # #[derive(Debug)] struct Inbox;
//! # impl CompletionSender for Inbox {
//! #     fn deliver(&self, _: ExternalCompletion) -> DeliveryOutcome { DeliveryOutcome::Delivered }
//! # }
//! let allocator = IdentityAllocator::new(RuntimeId::allocate()?);
//! let registrar = Registrar::new(Arc::clone(&allocator), Arc::new(Inbox));
//! let kind = CompletionKind::try_from_raw(1)?;
//! let prepared = SendPreparedOperation::interruptible_blocking(
//!     kind,
//!     from_fn(|| 6 * 7),
//!     SendDecoder::identity(),
//!     SendInterruptible::new("compute", || Ok(HookOutcome::Reaped)),
//! );
//! let (half, _submission) = registrar.bind_send(registrar.issue(kind)?, prepared)?.split();
//! // The half may cross threads; a wait table takes its ordinary form.
//! let half = std::thread::spawn(move || half).join().expect("the thread returns the half");
//! let mut table = WaitTable::new(allocator);
//! let _key = table.register(half.into())?;
//! # Ok(())
//! # }
//! ```

use crate::completion::CompletionIdentity;
use crate::dispatch::Submission;
use crate::identity::CompletionKind;
use crate::prepared::{BlockingJob, Decoder, PreparedOperation, WorkClass};
use crate::registrar::{Binding, RuntimeHalf};
use baton_cancel::{
    CancelHandle, CancelHook, Interruptible, QuarantineBound, ResourceClass, TraceOutcome,
    TraceVisitor,
};
use std::fmt;
use std::future::Future;

/// What every `Send` form here has besides its constructors: it turns back into its ordinary
/// form (`From`, never the other way round), and debug-prints as its name around it.
macro_rules! send_form {
    ($send:ident $(<$generic:ident>)? => $ordinary:ty) => {
        impl$(<$generic>)? From<$send$(<$generic>)?> for $ordinary {
            fn from(send: $send$(<$generic>)?) -> Self {
                send.0
            }
        }

        impl$(<$generic>)? fmt::Debug for $send$(<$generic>)? {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($send)).field(&self.0).finish()
            }
        }
    };
}

/// A [`Decoder`] whose function, tracer and produced value are all `Send`.
///
/// ```compile_fail
/// # use baton_completion::SendDecoder;
/// let local = std::rc::Rc::new(1_u32);
/// let decoder = SendDecoder::<u32>::new(move |n| n + *local); // an `Rc` is not `Send`
/// ```
pub struct SendDecoder<P>(Decoder<P>);

impl<P: Send + 'static> SendDecoder<P> {
    /// A decoder running `f` on the payload; `f` and the value it returns are `Send`.
    pub fn new<T: Send + 'static>(f: impl FnOnce(P) -> T + Send + 'static) -> Self {
        Self(Decoder::new(f))
    }

    /// A decoder that hands the (`Send`) payload over unchanged, allocating nothing
    /// ([`Decoder::identity`]).
    pub fn identity() -> Self {
        Self(Decoder::identity())
    }

    /// Adds a `Send` tracing hook ([`Decoder::with_tracer`]).
    pub fn with_tracer(
        self,
        tracer: impl Fn(&mut dyn TraceVisitor) -> TraceOutcome + Send + 'static,
    ) -> Self {
        Self(self.0.with_tracer(tracer))
    }
}

send_form!(SendDecoder<P> => Decoder<P>);

/// An [`Interruptible`] resource whose cancel hook is `Send`.
///
/// ```compile_fail
/// # use baton_completion::{SendInterruptible, baton_cancel::HookOutcome};
/// let local = std::rc::Rc::new(());
/// let resource = SendInterruptible::new("socket", move || {
///     let _keep = &local; // an `Rc` is not `Send`
///     Ok(HookOutcome::Reaped)
/// });
/// ```
pub struct SendInterruptible(Interruptible);

impl SendInterruptible {
    /// A resource of the named kind, interrupted by a `Send` `hook` ([`Interruptible::new`]).
    pub fn new(kind: &'static str, hook: impl CancelHook + Send + 'static) -> Self {
        Self(Interruptible::new(kind, hook))
    }

    /// The resource kind name.
    pub fn kind(&self) -> &'static str {
        self.0.kind()
    }
}

send_form!(SendInterruptible => Interruptible);

/// A [`PreparedOperation`] whose decoder, decoded value and resource are all `Send`; bind it
/// with [`Registrar::bind_send`](crate::Registrar::bind_send) to get a [`SendRuntimeHalf`].
///
/// Invariant: the wrapped operation was built only from a [`SendDecoder`] and a
/// [`SendInterruptible`] or a [`QuarantineBound`].
pub struct SendPreparedOperation(PreparedOperation);

impl SendPreparedOperation {
    /// An interruptible blocking job ([`PreparedOperation::interruptible_blocking`]).
    pub fn interruptible_blocking<J: BlockingJob>(
        kind: CompletionKind,
        job: J,
        decoder: SendDecoder<J::Output>,
        resource: SendInterruptible,
    ) -> Self {
        Self(PreparedOperation::interruptible_blocking(
            kind,
            job,
            decoder.into(),
            resource.into(),
        ))
    }

    /// A quarantined blocking job ([`PreparedOperation::quarantined_blocking`]).
    pub fn quarantined_blocking<J: BlockingJob>(
        kind: CompletionKind,
        job: J,
        decoder: SendDecoder<J::Output>,
        bound: QuarantineBound,
    ) -> Self {
        Self(PreparedOperation::quarantined_blocking(
            kind,
            job,
            decoder.into(),
            bound,
        ))
    }

    /// An interruptible async job ([`PreparedOperation::interruptible_async`]).
    pub fn interruptible_async<F, Fut>(
        kind: CompletionKind,
        construct: F,
        decoder: SendDecoder<Fut::Output>,
        resource: SendInterruptible,
    ) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        Self(PreparedOperation::interruptible_async(
            kind,
            construct,
            decoder.into(),
            resource.into(),
        ))
    }

    /// The declared completion kind.
    pub fn kind(&self) -> CompletionKind {
        self.0.kind()
    }

    /// The lane this operation needs.
    pub fn work_class(&self) -> WorkClass {
        self.0.work_class()
    }
}

send_form!(SendPreparedOperation => PreparedOperation);

/// A [`SendPreparedOperation`] bound to its identity, ready to [`split`](SendBinding::split).
///
/// Invariant: the wrapped binding was bound from a [`SendPreparedOperation`].
pub struct SendBinding(Binding);

impl SendBinding {
    /// Only [`Registrar::bind_send`](crate::Registrar::bind_send) wraps a binding, and only one
    /// it bound from a [`SendPreparedOperation`] (the type's invariant).
    pub(crate) fn new(binding: Binding) -> Self {
        Self(binding)
    }

    /// Splits into the `Send` runtime half and the submission half.
    pub fn split(self) -> (SendRuntimeHalf, Submission) {
        let (half, submission) = self.0.split();
        (SendRuntimeHalf(half), submission)
    }
}

send_form!(SendBinding => Binding);

/// The runtime half of a [`SendBinding`]: like [`RuntimeHalf`], but it may be moved to, used
/// and dropped on any thread, and so may the value its decoder produces. Turn it into a
/// [`RuntimeHalf`] to register it in a `WaitTable`.
///
/// Invariant: it wraps the half of a binding bound from a [`SendPreparedOperation`], so its
/// decoder function and tracer, the value the decoder produces, and its cancel hook were all
/// `Send` when they were type-erased; its wait slot and cancel handle are `Send` anyway.
pub struct SendRuntimeHalf(RuntimeHalf);

// SAFETY: by the type's invariant, every value the half owns or will produce was `Send` before
// it was erased into the half's `!Send` boxes, so moving the half to another thread, and using
// or dropping it there, moves only `Send` values.
unsafe impl Send for SendRuntimeHalf {}

impl SendRuntimeHalf {
    /// The identity completions for this wait carry.
    pub fn identity(&self) -> CompletionIdentity {
        self.0.identity()
    }

    /// The cancel side of the operation's queue cell.
    pub fn cancel_handle(&self) -> &CancelHandle {
        self.0.cancel_handle()
    }

    /// The operation's resource class.
    pub fn resource(&self) -> &ResourceClass {
        self.0.resource()
    }
}

send_form!(SendRuntimeHalf => RuntimeHalf);
