//! Exactly-once dispatch (crate rules E5–E8).
//!
//! ```text
//!  Submission --arm--> Dispatch --run/poll--> delivered once (result | Cancelled | WorkerPanic)
//!      |                   |
//!   dropped or         dropped before or while running, cancelled, or withdrawn
//!   rolled back            |                    (the queue cell marked withdrawn first)
//!      v                   v
//!  nothing delivered    Cancelled delivered
//! ```
//!
//! The [`Submission`] is the `Send` half of a binding. Until it is armed it delivers nothing,
//! whatever happens to it. [`Submission::arm`] turns it into a [`Dispatch`], which delivers
//! exactly once: it holds the `PendingDelivery` in an `Option` that every path `take`s before
//! delivering, so no path can deliver twice and `Drop` delivers `Cancelled` only when nothing
//! else did.

use crate::completion::{
    CompletionFailure, CompletionIdentity, CompletionSender, DeliveryOutcome, ExternalCompletion,
    Payload,
};
use crate::prepared::{ErasedAsync, ErasedBlocking, Job, PayloadFuture, UnarmedJob, WorkClass};
use crate::sync::StdArc;
use baton_cancel::{ClaimForRun, ContainedDrop, StartToken, call_contained};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Where and how to deliver one completion. Consumed by the delivery, so it happens once.
struct PendingDelivery {
    identity: CompletionIdentity,
    sink: StdArc<dyn CompletionSender>,
}

impl PendingDelivery {
    /// Delivers through the sink, containing a sink that panics (for example when it drops a
    /// refused completion whose payload destructor panics): the completion is then reported
    /// `InboxClosed`, as it did not reach the runtime.
    fn deliver(self, result: Result<Payload, CompletionFailure>) -> DeliveryOutcome {
        let completion = ExternalCompletion::new(self.identity, result);
        call_contained(|| self.sink.deliver(completion)).unwrap_or(DeliveryOutcome::InboxClosed)
    }
}

/// How a dispatch ended, without its payload (which went to the runtime).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TerminalClass {
    /// The job ran and returned its result.
    Completed,
    /// The cancel won before start, or the dispatch was discarded.
    Cancelled,
    /// The job, the future's construction or a poll panicked.
    WorkerPanic,
}

/// What a dispatch did: its terminal class and whether the completion reached the inbox.
#[must_use = "executors count terminal classes and undeliverable completions"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RunReport {
    /// How the dispatch ended.
    pub class: TerminalClass,
    /// Whether the runtime's inbox took the completion.
    pub delivery: DeliveryOutcome,
}

/// The `Send` half of a binding: identity, completion sink, start token and job.
///
/// Dropping an unarmed submission delivers nothing (E5); its `UnarmedJob` destroys the
/// job through [`ContainedDrop`] (E7).
pub struct Submission {
    identity: CompletionIdentity,
    sink: StdArc<dyn CompletionSender>,
    start: StartToken,
    job: UnarmedJob,
    work_class: WorkClass,
}

impl Submission {
    pub(crate) fn new(
        identity: CompletionIdentity,
        sink: StdArc<dyn CompletionSender>,
        start: StartToken,
        job: UnarmedJob,
        work_class: WorkClass,
    ) -> Self {
        Self {
            identity,
            sink,
            start,
            job,
            work_class,
        }
    }

    /// The identity its completion will carry.
    pub fn identity(&self) -> CompletionIdentity {
        self.identity
    }

    /// The lane it needs.
    pub fn work_class(&self) -> WorkClass {
        self.work_class
    }

    /// Whether the job is async (a future driven by the executor).
    pub fn is_async(&self) -> bool {
        self.job.is_async()
    }

    /// Arms the submission: from now on exactly one completion is delivered (E6).
    pub fn arm(self) -> Dispatch {
        let Submission {
            identity,
            sink,
            start,
            job,
            ..
        } = self;
        let delivery = PendingDelivery { identity, sink };
        match job.into_job() {
            Job::Blocking(job) => Dispatch::Blocking(BlockingDispatch {
                delivery: Some(delivery),
                start,
                job: Some(job),
            }),
            Job::Async(construct) => Dispatch::Async(AsyncDispatch {
                delivery: Some(delivery),
                start,
                state: AsyncState::Unstarted(Some(construct)),
            }),
        }
    }

    /// Destroys the job without delivering anything (E5): the rollback of a rejected
    /// submission. Reports whether the job's destructor panicked.
    pub fn rollback(self) -> ContainedDrop {
        self.job.destroy()
    }
}

impl fmt::Debug for Submission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Submission")
            .field("identity", &self.identity)
            .field("work_class", &self.work_class)
            .field("job", &self.job)
            .finish()
    }
}

/// An armed submission: delivers exactly one completion, whatever happens (E6).
#[derive(Debug)]
pub enum Dispatch {
    /// A blocking job: call [`BlockingDispatch::run`].
    Blocking(BlockingDispatch),
    /// An async job: drive the future to completion.
    Async(AsyncDispatch),
}

impl Dispatch {
    /// Discards the dispatch without running it, delivering `Cancelled`; its queue cell, if
    /// still queued, is cancelled first (E6), so the requester's cell agrees.
    pub fn cancel(self) -> RunReport {
        let start = match &self {
            Self::Blocking(dispatch) => &dispatch.start,
            Self::Async(dispatch) => &dispatch.start,
        };
        let _cancelled = start.cancel_before_start();
        match self {
            Self::Blocking(mut dispatch) => dispatch.finish(Err(CompletionFailure::Cancelled)),
            Self::Async(mut dispatch) => dispatch.finish(Err(CompletionFailure::Cancelled)),
        }
    }

    /// What an executor's shutdown does with a dispatch it still holds (E6): withdraws its
    /// queue cell first (`baton-cancel` rule C7), so the requester can tell the executor gave
    /// the job up rather than a cancel of its own, then discards it like
    /// [`cancel`](Self::cancel), delivering `Cancelled` without running it. A cell that a
    /// cancel already won stays cancelled.
    pub fn withdraw(self) -> RunReport {
        let start = match &self {
            Self::Blocking(dispatch) => &dispatch.start,
            Self::Async(dispatch) => &dispatch.start,
        };
        // Whatever won first, the body does not run here: the outcome changes nothing below.
        let _withdrawn = start.withdraw_before_start();
        self.cancel()
    }
}

/// An armed blocking job.
///
/// Invariant: `delivery` is `Some` until the one delivery; `job` is dropped (contained) only
/// after it, so the result is delivered before the job's destructor runs (E7).
pub struct BlockingDispatch {
    delivery: Option<PendingDelivery>,
    start: StartToken,
    job: Option<Box<dyn ErasedBlocking>>,
}

impl BlockingDispatch {
    /// Claims and runs the job, delivering its result, `Cancelled` (the cancel won, the body
    /// never runs) or `WorkerPanic`.
    pub fn run(mut self) -> RunReport {
        match self.start.claim_for_run() {
            ClaimForRun::CompleteCancelled => self.finish(Err(CompletionFailure::Cancelled)),
            ClaimForRun::Run => {
                let job = self
                    .job
                    .as_mut()
                    .expect("the job stays until the dispatch drops (type invariant)");
                match call_contained(|| job.run()) {
                    Ok(payload) => self.finish(Ok(payload)),
                    Err(message) => self.finish(Err(CompletionFailure::WorkerPanic { message })),
                }
            }
        }
    }

    fn finish(&mut self, result: Result<Payload, CompletionFailure>) -> RunReport {
        deliver_once(&mut self.delivery, result)
    }
}

impl Drop for BlockingDispatch {
    fn drop(&mut self) {
        if let Some(delivery) = self.delivery.take() {
            // Rule E6: an armed dispatch dropped unfinished delivers `Cancelled`, its queue
            // cell cancelled first if it never started.
            let _cancelled = self.start.cancel_before_start();
            let _ = delivery.deliver(Err(CompletionFailure::Cancelled));
        }
        if let Some(job) = self.job.take() {
            // Rule E7: after the delivery, contained.
            let _ = ContainedDrop::drop_value(job);
        }
    }
}

impl fmt::Debug for BlockingDispatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockingDispatch")
            .field("identity", &self.delivery.as_ref().map(|d| d.identity))
            .finish_non_exhaustive()
    }
}

enum AsyncState {
    Unstarted(Option<Box<dyn ErasedAsync>>),
    Running(Option<PayloadFuture>),
}

/// An armed async job, itself a future the executor drives. It claims the start on first
/// poll and only then constructs the job's future (a cancelled job never constructs it).
///
/// Invariant: `delivery` is `Some` until the one delivery; the inner future is dropped
/// (contained) only after it. Polling after the delivery is a bug and panics.
pub struct AsyncDispatch {
    delivery: Option<PendingDelivery>,
    start: StartToken,
    state: AsyncState,
}

impl AsyncDispatch {
    fn finish(&mut self, result: Result<Payload, CompletionFailure>) -> RunReport {
        let report = deliver_once(&mut self.delivery, result);
        // Rule E7: the future or constructor is destroyed after the delivery, contained.
        self.drop_state();
        report
    }

    fn drop_state(&mut self) {
        match &mut self.state {
            AsyncState::Unstarted(construct) => {
                if let Some(construct) = construct.take() {
                    let _ = ContainedDrop::drop_value(construct);
                }
            }
            AsyncState::Running(future) => {
                if let Some(future) = future.take() {
                    let _ = ContainedDrop::drop_value(future);
                }
            }
        }
    }
}

impl Future for AsyncDispatch {
    type Output = RunReport;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RunReport> {
        let this = self.get_mut();
        assert!(
            this.delivery.is_some(),
            "AsyncDispatch polled after it finished: a finished dispatch must not be polled again"
        );
        if let AsyncState::Unstarted(construct) = &mut this.state {
            if this.start.claim_for_run() == ClaimForRun::CompleteCancelled {
                return Poll::Ready(this.finish(Err(CompletionFailure::Cancelled)));
            }
            let construct = construct
                .take()
                .expect("an unstarted dispatch holds its constructor");
            match call_contained(move || construct.construct()) {
                Ok(future) => this.state = AsyncState::Running(Some(future)),
                Err(message) => {
                    return Poll::Ready(
                        this.finish(Err(CompletionFailure::WorkerPanic { message })),
                    );
                }
            }
        }
        let AsyncState::Running(Some(future)) = &mut this.state else {
            unreachable!("a started dispatch holds its future until it finishes")
        };
        match call_contained(|| future.as_mut().poll(cx)) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(payload)) => Poll::Ready(this.finish(Ok(payload))),
            Err(message) => {
                Poll::Ready(this.finish(Err(CompletionFailure::WorkerPanic { message })))
            }
        }
    }
}

impl Drop for AsyncDispatch {
    fn drop(&mut self) {
        if let Some(delivery) = self.delivery.take() {
            // Rule E6: dropped before start or while in flight: `Cancelled`, before the future
            // is destroyed (E7); a queue cell that never started is cancelled first.
            let _cancelled = self.start.cancel_before_start();
            let _ = delivery.deliver(Err(CompletionFailure::Cancelled));
        }
        self.drop_state();
    }
}

impl fmt::Debug for AsyncDispatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            AsyncState::Unstarted(_) => "unstarted",
            AsyncState::Running(_) => "running",
        };
        f.debug_struct("AsyncDispatch")
            .field("identity", &self.delivery.as_ref().map(|d| d.identity))
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

/// A dispatch's one delivery (E6): takes `delivery` (a second call is a bug and panics) and
/// delivers `result` through it, reporting the terminal class and what the sink said.
fn deliver_once(
    delivery: &mut Option<PendingDelivery>,
    result: Result<Payload, CompletionFailure>,
) -> RunReport {
    let class = class_of(&result);
    let delivery = delivery
        .take()
        .expect("a dispatch finishes once: run and cancel consume it");
    RunReport {
        class,
        delivery: delivery.deliver(result),
    }
}

fn class_of(result: &Result<Payload, CompletionFailure>) -> TerminalClass {
    match result {
        Ok(_) => TerminalClass::Completed,
        Err(CompletionFailure::WorkerPanic { .. }) => TerminalClass::WorkerPanic,
        Err(_) => TerminalClass::Cancelled,
    }
}
