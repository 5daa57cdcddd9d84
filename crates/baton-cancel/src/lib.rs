//! The cancel state machine of Baton: queue control and resource classes.
//!
//! This crate has no I/O and no threads. It answers one question for every external operation:
//! *what does cancelling it mean right now?*
//!
//! * [`mod@queue_control`] is a shared atomic cell with three states (*queued*, *cancelled*,
//!   *running*); a cancelled cell also says whether the executor withdrew the work
//!   ([`CancelHandle::was_withdrawn`]). The runtime holds the [`CancelHandle`], the executor the
//!   [`StartToken`]; a race between [`CancelHandle::cancel_before_start`],
//!   [`StartToken::claim_for_run`] and [`StartToken::withdraw_before_start`] has exactly one
//!   winner and every side agrees which.
//! * [`ResourceClass`] says what cancelling *started* work means: an [`Interruptible`] resource
//!   calls its [`CancelHook`] (cancel once, reap repeatedly), a quarantined one cannot be
//!   interrupted and only exposes its [`QuarantineBound`] so a runtime can report and enforce it.
//! * [`containment`] runs hostile user code (hooks, destructors) so that a panic is caught and
//!   a value dropped while the thread is already unwinding is leaked instead of aborting.
//! * [`trace`] lets an embedder with a tracing GC visit the references hooks own.
//!
//! # Rules
//!
//! C1. A queue cell starts *queued* and moves at most once: to *cancelled* (the cancel or the
//!    executor's withdrawal won, C7) or to *running* (the claim won). No terminal state is ever
//!    left.
//!
//! C2. `cancel_before_start` on a *queued* cell wins (`CancelledQueued`); on a *cancelled* cell it
//!    reports `AlreadyCancelled` (also when the executor withdrew it); on a *running* cell
//!    `AlreadyRunning`. The requester cancels through its [`CancelHandle`]; an executor that
//!    discards queued work unstarted cancels through its [`StartToken`], the same transition.
//!
//! C3. `claim_for_run` on a *queued* or *running* cell reports `Run`; on a *cancelled* cell
//!    `CompleteCancelled`, and the body must then never run.
//!
//! C4. An interruptible resource calls its hook on the first `cancel()` and returns `None` on
//!    every later one (cancel once); `reap()` calls the hook every time.
//!
//! C5. A quarantined resource is never interrupted: `cancel()` and `reap()` return `None`; its
//!    bound is a copyable descriptor.
//!
//! C6. A hook that panics is reported as [`HookError::Panicked`]; a hook whose destructor panics
//!    is contained; during an unwind it is leaked instead of dropped.
//!
//! C7. `withdraw_before_start` gives queued work up without running it and without anyone
//!    having cancelled it: what an executor's shutdown does through its [`StartToken`] (a host
//!    may do the same through its cell for a runtime that is shutting down). On a *queued* cell
//!    it wins (`Withdrawn`), and the cell is *cancelled* with `was_withdrawn()` true; on a cell
//!    an earlier withdrawal moved it reports `AlreadyWithdrawn`, on one a cancel moved
//!    `AlreadyCancelled`, on a *running* one `AlreadyRunning`. `was_withdrawn()` is how the
//!    requester tells that nobody cancelled the work (a shutdown, not its own cancel).
//!
//! # Guarantees
//!
//! The rules below hold for every caller, on any thread: a queue cell has exactly one winner
//! (C1–C3, C7), an interruptible resource's hook is called once by `cancel` and on every
//! `reap` (C4), a quarantined one is never interrupted (C5), and no hook panic or
//! hostile destructor unwinds into the caller or aborts the process (C6). Every state
//! transition returns a `#[must_use]` enum naming its outcome.
//!
//! # Testing
//!
//! The tests live in `src/tests/`, one file per module, with shared fixtures in
//! `src/tests/support.rs`: unit tests named after what they prove (`cancel_then_claim`,
//! `claim_then_cancel`, ...), a property test (`prop_queue_control_matches_model`) that drives
//! random operation sequences against a model, and, under `cfg(loom)`, the loom models
//! (`src/tests/loom_models.rs`: `loom_cancel_vs_claim`, its hosted variant, and
//! `loom_cancel_vs_claim_vs_withdraw`) that prove rules C1–C3 and C7 under every
//! interleaving. Queue control's atomics go through the `sync` shim (`std` normally, `loom`
//! under `cfg(loom)`), so the model checks the shipped code.

pub mod containment;
pub mod queue_control;
pub mod resource;
mod sync;
#[cfg(test)]
mod tests;
pub mod trace;

pub use containment::{ContainedDrop, call_contained, panic_message};
pub use queue_control::{
    CancelBeforeStart, CancelHandle, ClaimForRun, QueueCell, QueueHost, QueueState, StartToken,
    WithdrawBeforeStart, hosted_queue_control, queue_control,
};
pub use resource::{
    CancelHook, HookError, HookOutcome, HookResult, Interruptible, QuarantineBound, ResourceClass,
};
pub use trace::{TraceOutcome, TraceVisitor};
