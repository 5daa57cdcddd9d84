//! Prepared operations: a job, the decoder that turns its payload into the runtime-side value,
//! its completion kind and its resource class (crate rule E3).
//!
//! Three shapes exist: an interruptible async job ([`PreparedOperation::interruptible_async`]),
//! an interruptible blocking job ([`PreparedOperation::interruptible_blocking`]) and a
//! quarantined blocking job ([`PreparedOperation::quarantined_blocking`]).

use crate::completion::Payload;
use crate::identity::CompletionKind;
use baton_cancel::{ContainedDrop, Interruptible, QuarantineBound, ResourceClass};
use baton_cancel::{TraceOutcome, TraceVisitor};
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A blocking job run on an executor thread.
///
/// The job object outlives [`BlockingJob::run`]: it is dropped only after the result was
/// delivered, so a panicking destructor of state kept in `self` cannot lose the result (crate
/// rule E7). A closure passed through [`from_fn`] consumes its captures inside the call instead.
pub trait BlockingJob: Send + 'static {
    /// The `Send` value the job produces.
    type Output: Send + 'static;
    /// Runs the job once.
    fn run(&mut self) -> Self::Output;
}

/// A [`BlockingJob`] made from a closure.
pub struct FnJob<F>(Option<F>);

/// Wraps a closure as a [`BlockingJob`].
pub fn from_fn<F, T>(f: F) -> FnJob<F>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    FnJob(Some(f))
}

impl<F, T> BlockingJob for FnJob<F>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    type Output = T;

    fn run(&mut self) -> T {
        let f = self.0.take().expect("a dispatch runs its job at most once");
        f()
    }
}

impl<F> fmt::Debug for FnJob<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnJob")
            .field("consumed", &self.0.is_none())
            .finish()
    }
}

/// A boxed, type-erased future producing a payload.
pub(crate) type PayloadFuture = Pin<Box<dyn Future<Output = Payload> + Send>>;

/// Type-erased blocking job.
pub(crate) trait ErasedBlocking: Send {
    fn run(&mut self) -> Payload;
}

impl<J: BlockingJob> ErasedBlocking for J {
    fn run(&mut self) -> Payload {
        Box::new(BlockingJob::run(self))
    }
}

/// Type-erased async job constructor: building the future happens only after the claim.
pub(crate) trait ErasedAsync: Send {
    fn construct(self: Box<Self>) -> PayloadFuture;
}

struct AsyncConstructor<F>(F);

impl<F, Fut> ErasedAsync for AsyncConstructor<F>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    fn construct(self: Box<Self>) -> PayloadFuture {
        Box::pin(IntoPayload(Box::pin((self.0)())))
    }
}

/// Boxes a future's output as a [`Payload`] without dropping the future when it completes
/// (an `async` block would drop it inside the final poll): the future is destroyed only when
/// the dispatch drops it, after the delivery (E7).
struct IntoPayload<Fut>(Pin<Box<Fut>>);

impl<Fut> Future for IntoPayload<Fut>
where
    Fut: Future,
    Fut::Output: Send + 'static,
{
    type Output = Payload;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Payload> {
        self.0
            .as_mut()
            .poll(cx)
            .map(|value| Box::new(value) as Payload)
    }
}

/// A job, blocking or async.
pub(crate) enum Job {
    Blocking(Box<dyn ErasedBlocking>),
    Async(Box<dyn ErasedAsync>),
}

/// The job of a prepared operation, from preparation until it is armed. It destroys the job
/// through [`ContainedDrop`] itself (E7), so each of its owners — a [`PreparedOperation`]
/// never bound, a refused bind, an unarmed `Submission` — contains a panicking job destructor,
/// and leaks the job while the thread is unwinding; the values next to it (decoder, hook) are
/// then still dropped normally.
///
/// Invariant: `job` is `Some` until [`UnarmedJob::into_job`] or [`UnarmedJob::destroy`] takes it.
pub(crate) struct UnarmedJob {
    job: Option<Job>,
}

impl UnarmedJob {
    fn new(job: Job) -> Self {
        Self { job: Some(job) }
    }

    /// Whether the job is async.
    pub(crate) fn is_async(&self) -> bool {
        matches!(self.job, Some(Job::Async(_)))
    }

    /// Hands the job over to its dispatch, which contains its destructor from then on.
    pub(crate) fn into_job(mut self) -> Job {
        self.job
            .take()
            .expect("the job is only taken by into_job or destroy, which consume the body")
    }

    /// Destroys the job now, reporting whether its destructor panicked.
    pub(crate) fn destroy(mut self) -> ContainedDrop {
        match self.job.take() {
            Some(job) => ContainedDrop::drop_value(job),
            None => ContainedDrop::Dropped,
        }
    }
}

impl Drop for UnarmedJob {
    fn drop(&mut self) {
        if let Some(job) = self.job.take() {
            // Rule E7: a hostile job destructor is caught, or leaked during an unwind.
            let _ = ContainedDrop::drop_value(job);
        }
    }
}

impl fmt::Debug for UnarmedJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.job {
            Some(Job::Blocking(_)) => f.write_str("UnarmedJob::Blocking"),
            Some(Job::Async(_)) => f.write_str("UnarmedJob::Async"),
            None => f.write_str("UnarmedJob::Taken"),
        }
    }
}

/// Why a decoder could not produce a value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The payload was not of the type the decoder expects (a misrouted or forged completion).
    #[error("completion payload is not a {expected}")]
    PayloadType {
        /// The type the decoder expects.
        expected: &'static str,
    },
    /// The decoder panicked; the panic was caught.
    #[error("decoder panicked: {message}")]
    Panicked {
        /// The panic message.
        message: String,
    },
}

type DecodeFn = Box<dyn FnOnce(Payload) -> Result<Box<dyn Any>, DecodeError>>;
type TraceFn = Box<dyn Fn(&mut dyn TraceVisitor) -> TraceOutcome>;

/// Turns a job's payload `P` into the runtime-side value, on the runtime thread. It may hold
/// `!Send` state (`Rc`).
pub struct Decoder<P> {
    decode: DecodeFn,
    tracer: Option<TraceFn>,
    payload: PhantomData<fn(P)>,
}

impl<P: Send + 'static> Decoder<P> {
    /// A decoder running `f` on the payload.
    pub fn new<T: 'static>(f: impl FnOnce(P) -> T + 'static) -> Self {
        Self::from_fn(move |payload: Payload| {
            let value = downcast::<P>(payload)?;
            Ok(Box::new(f(*value)) as Box<dyn Any>)
        })
    }

    /// A decoder that hands the payload over unchanged: the box the job's result arrived in
    /// becomes the runtime-side value, so decoding allocates nothing.
    pub fn identity() -> Self {
        Self::from_fn(|payload: Payload| Ok(downcast::<P>(payload)? as Box<dyn Any>))
    }

    fn from_fn(
        decode: impl FnOnce(Payload) -> Result<Box<dyn Any>, DecodeError> + 'static,
    ) -> Self {
        Self {
            decode: Box::new(decode),
            tracer: None,
            payload: PhantomData,
        }
    }

    /// Adds a tracing hook visiting the references the decoder owns.
    pub fn with_tracer(
        mut self,
        tracer: impl Fn(&mut dyn TraceVisitor) -> TraceOutcome + 'static,
    ) -> Self {
        self.tracer = Some(Box::new(tracer));
        self
    }

    pub(crate) fn erase(self) -> ErasedDecoder {
        ErasedDecoder {
            decode: Some(self.decode),
            tracer: self.tracer,
        }
    }
}

/// The payload as the `P` a decoder expects, or the error naming `P`.
fn downcast<P: 'static>(payload: Payload) -> Result<Box<P>, DecodeError> {
    payload
        .downcast::<P>()
        .map_err(|_| DecodeError::PayloadType {
            expected: std::any::type_name::<P>(),
        })
}

impl<P> fmt::Debug for Decoder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decoder")
            .field("payload", &std::any::type_name::<P>())
            .finish_non_exhaustive()
    }
}

/// A type-erased decoder. Invariant: `decode` is `Some` until it runs or the value drops; both
/// the closure and the tracer are dropped through [`ContainedDrop`].
pub(crate) struct ErasedDecoder {
    decode: Option<DecodeFn>,
    tracer: Option<TraceFn>,
}

impl ErasedDecoder {
    /// Runs the decoder once, catching a panic.
    pub(crate) fn decode(&mut self, payload: Payload) -> Result<Box<dyn Any>, DecodeError> {
        let decode = self.decode.take().expect("a wait is decoded at most once");
        match baton_cancel::call_contained(move || decode(payload)) {
            Ok(result) => result,
            Err(message) => Err(DecodeError::Panicked { message }),
        }
    }

    pub(crate) fn trace(&self, visitor: &mut dyn TraceVisitor) -> TraceOutcome {
        match &self.tracer {
            Some(tracer) => tracer(visitor),
            None => TraceOutcome::Complete,
        }
    }
}

impl Drop for ErasedDecoder {
    fn drop(&mut self) {
        if let Some(decode) = self.decode.take() {
            let _ = ContainedDrop::drop_value(decode);
        }
        if let Some(tracer) = self.tracer.take() {
            let _ = ContainedDrop::drop_value(tracer);
        }
    }
}

impl fmt::Debug for ErasedDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ErasedDecoder")
            .field("decoded", &self.decode.is_none())
            .finish()
    }
}

/// Which lane of work a submission needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkClass {
    /// Interruptible work (blocking or async).
    Interruptible,
    /// Quarantined blocking work, run on its own lane so it cannot starve interruptible work.
    Quarantined(QuarantineBound),
}

/// An operation ready to be bound to an identity.
///
/// Dropping one that was never bound destroys its job, decoder and hook without running them;
/// a panicking destructor of any of them is caught, and while the thread is already unwinding
/// they are leaked instead (E7).
pub struct PreparedOperation {
    pub(crate) kind: CompletionKind,
    pub(crate) job: UnarmedJob,
    pub(crate) decoder: ErasedDecoder,
    pub(crate) resource: ResourceClass,
}

impl PreparedOperation {
    fn new(
        kind: CompletionKind,
        job: Job,
        decoder: ErasedDecoder,
        resource: ResourceClass,
    ) -> Self {
        Self {
            kind,
            job: UnarmedJob::new(job),
            decoder,
            resource,
        }
    }

    /// An interruptible blocking job.
    pub fn interruptible_blocking<J: BlockingJob>(
        kind: CompletionKind,
        job: J,
        decoder: Decoder<J::Output>,
        resource: Interruptible,
    ) -> Self {
        Self::new(
            kind,
            Job::Blocking(Box::new(job)),
            decoder.erase(),
            ResourceClass::Interruptible(resource),
        )
    }

    /// A quarantined blocking job: it cannot be interrupted once started and declares `bound`.
    pub fn quarantined_blocking<J: BlockingJob>(
        kind: CompletionKind,
        job: J,
        decoder: Decoder<J::Output>,
        bound: QuarantineBound,
    ) -> Self {
        Self::new(
            kind,
            Job::Blocking(Box::new(job)),
            decoder.erase(),
            ResourceClass::Quarantined(bound),
        )
    }

    /// An interruptible async job. `construct` builds the future on the executor's thread,
    /// only after the start was claimed: a job cancelled before start never builds it.
    pub fn interruptible_async<F, Fut>(
        kind: CompletionKind,
        construct: F,
        decoder: Decoder<Fut::Output>,
        resource: Interruptible,
    ) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        Self::new(
            kind,
            Job::Async(Box::new(AsyncConstructor(construct))),
            decoder.erase(),
            ResourceClass::Interruptible(resource),
        )
    }

    /// The declared completion kind.
    pub fn kind(&self) -> CompletionKind {
        self.kind
    }

    /// The lane this operation needs.
    pub fn work_class(&self) -> WorkClass {
        match self.resource.bound() {
            Some(bound) => WorkClass::Quarantined(bound),
            None => WorkClass::Interruptible,
        }
    }
}

impl fmt::Debug for PreparedOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedOperation")
            .field("kind", &self.kind)
            .field("job", &self.job)
            .field("resource", &self.resource)
            .finish()
    }
}
