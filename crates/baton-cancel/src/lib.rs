//! The cancel state machine of Baton (SPEC §2): queue control and resource classes.
//!
//! This crate has no I/O and no threads. It answers one question for every external operation:
//! *what does cancelling it mean right now?*
//!
//! * [`queue_control`] is a shared atomic cell with three states (*queued*, *cancelled*,
//!   *running*). The runtime holds the [`CancelHandle`], the executor the [`StartToken`]; a race
//!   between [`CancelHandle::cancel_before_start`] and [`StartToken::claim_for_run`] has exactly
//!   one winner and both sides agree which.
//! * [`ResourceClass`] says what cancelling *started* work means: an [`Interruptible`] resource
//!   calls its [`CancelHook`] (cancel once, reap repeatedly), a quarantined one cannot be
//!   interrupted and only exposes its [`QuarantineBound`] so a runtime can report and enforce it.
//! * [`containment`] runs hostile user code (hooks, destructors) so that a panic is caught and
//!   a value dropped while the thread is already unwinding is leaked instead of aborting.
//! * [`trace`] lets an embedder with a tracing GC visit the references hooks own.
//!
//! # Rules
//!
//! 1. A queue cell starts *queued* and moves at most once: to *cancelled* (the cancel won) or to
//!    *running* (the claim won). Neither terminal state is ever left.
//! 2. `cancel_before_start` on a *queued* cell wins (`CancelledQueued`); on a *cancelled* cell it
//!    reports `AlreadyCancelled`; on a *running* cell `AlreadyRunning`.
//! 3. `claim_for_run` on a *queued* or *running* cell reports `Run`; on a *cancelled* cell
//!    `CompleteCancelled`, and the body must then never run.
//! 4. An interruptible resource calls its hook on the first `cancel()` and returns `None` on
//!    every later one (cancel once); `reap()` calls the hook every time.
//! 5. A quarantined resource is never interrupted: `cancel()` and `reap()` return `None`; its
//!    bound is a copyable descriptor.
//! 6. A hook that panics is reported as [`HookError::Panicked`]; a hook whose destructor panics
//!    is contained; during an unwind it is leaked instead of dropped.
//!
//! # Testing
//!
//! Unit tests sit next to the code (`cancel_then_claim`, `claim_then_cancel`, ...), a property
//! test (`prop_queue_control_matches_model`) drives random operation sequences against a model,
//! and the loom model `loom_cancel_vs_claim` proves rule 1–3 under every interleaving.

pub mod containment;
pub mod queue_control;
pub mod resource;
mod sync;
pub mod trace;

pub use containment::{ContainedDrop, call_contained, panic_message};
pub use queue_control::{
    CancelBeforeStart, CancelHandle, ClaimForRun, QueueState, StartToken, queue_control,
};
pub use resource::{
    CancelHook, HookError, HookOutcome, HookResult, Interruptible, QuarantineBound, ResourceClass,
};
pub use trace::{TraceOutcome, TraceVisitor};
