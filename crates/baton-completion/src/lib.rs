//! Completion identities, registrar, exactly-once dispatch, executor traits and the reference
//! blocking pool of Baton.
//!
//! A runtime runs work off its thread (blocking jobs, async jobs on other threads) and waits
//! for the results. This crate guarantees that every such operation's completion reaches the
//! runtime that issued it **exactly once**, that completions with a foreign or stale identity
//! are refused instead of misrouted, and that hostile user code (panicking jobs, futures,
//! destructors) cannot lose a completion or abort the process.
//!
//! The flow, exactly as a runtime uses it:
//!
//! ```text
//! Registrar::issue(kind) ─> IssuedIdentity ─┐
//! PreparedOperation (job, decoder, class) ──┴─ Registrar::bind ─> Binding ─ split ─┐
//!      ┌───────────────────────────────────────────────────────────────────────────┘
//!      ├─ RuntimeHalf ──> WaitTable::register ──> WaitKey ──> poll_wait / cancel
//!      └─ Submission ──> ExecutorLease::submit ──> Dispatch (armed) ──> run
//!                           └─> CompletionSender::deliver(ExternalCompletion)
//!                                 └─> (runtime thread) WaitTable::settle ─> waker
//! ```
//!
//! A runtime that moves its waits between threads binds a [`SendPreparedOperation`] with
//! [`Registrar::bind_send`] instead: its [`SendRuntimeHalf`] is `Send`, because every value in
//! it was `Send` before it was type-erased ([`sendable`]).
//!
//! # Guarantees
//!
//! The numbered rules below are the contract: identities that never repeat and bind once
//! (E1–E4), nothing delivered for an unarmed submission and exactly one completion for an
//! armed dispatch, whatever happens to it (E5–E8), executors behind trait objects that hand
//! a rejected submission back (rule E9, and the pool's own rules in [`pool`]), and a wait table
//! that routes by the full identity, never wakes a waker itself, and runs the cancel state
//! machine (E10–E13). User code never unwinds into the runtime: panics and hostile
//! destructors are contained, and values are leaked rather than dropped during an unwind.
//!
//! # Rules
//!
//! E1. Identities never repeat: [`RuntimeId`] per process; per runtime a ([`WaitId`],
//!    [`WaitGeneration`]) pair and an [`OperationId`]. Exhaustion is an error, never a wrap.
//!    Internal waits and external operations share one [`IdentityAllocator`].
//!
//! E2. An identity is not `Clone` and [`Registrar::bind`] consumes it: it binds once.
//!
//! E3. A prepared operation carries a [`CompletionKind`], a decoder (runtime thread, may be
//!    `!Send`) and a resource class; bind refuses a kind that differs from its identity's.
//!
//! E4. A refused bind destroys the prepared operation: its job never runs, nothing is delivered.
//!
//! E5. A [`Submission`] that was never armed (rejected, rolled back or dropped) delivers
//!    nothing; rolling back destroys the job.
//!
//! E6. An armed [`Dispatch`] delivers exactly once: the result; `Cancelled` if the cancel won
//!    before start (the blocking body never runs, the async future is never constructed), if
//!    the executor discards it ([`Dispatch::cancel`], which first cancels a queue cell that
//!    never started, as a dropped dispatch does, so the requester's cell agrees with the
//!    delivery) or withdraws it on shutdown
//!    ([`Dispatch::withdraw`], which first marks its queue cell withdrawn, `baton-cancel` rule
//!    C7, so the requester can tell that from a cancel of its own), or if the dispatch or
//!    in-flight future is dropped; `WorkerPanic` if the job, the future's construction or a
//!    poll panics.
//!
//! E7. The result is delivered before the job's or future's destructor runs; destructors of
//!    jobs, futures, decoders and hooks are contained (caught, or leaked during an unwind).
//!
//! E8. A run reports its terminal class and delivery outcome, never the payload. Polling a
//!    finished [`AsyncDispatch`] is a bug and panics.
//!
//! E9. Executors are trait objects: [`IoExecutor::attach_runtime`] refuses a duplicate runtime
//!    and a shutting-down executor; [`ExecutorLease::submit`] reserves, then arms and
//!    enqueues, and hands a rejected submission back. The [`BlockingPool`] has its own rules
//!    in [`pool`].
//!
//! E10. [`WaitTable::settle`] routes by the full identity (runtime, wait, generation,
//!     operation, kind): another runtime's completion is `Foreign`; a cancelled, settled,
//!     discarded or older-generation one, or one whose operation or kind differs from the
//!     wait's, is `Stale`; both are counted and dropped.
//!
//! E11. The wait table never wakes a waker itself; it returns it.
//!
//! E12. `WaitTable::cancel` runs the cancel state machine: cancel before start settles the wait
//!     as cancelled (as does finding the job already cancelled or withdrawn: it never runs); a
//!     started interruptible job gets its hook called once; a quarantined job reports its
//!     bound. `WaitTable::discard` does the same for a pending wait and hands a
//!     started interruptible job back as an [`InterruptedJob`] to reap.
//!
//! E13. A quarantined wait still pending after its deadline bound is settled with
//!     `BoundExceeded` and counted, checked against an `Instant` the caller passes in.
//!
//! # Testing
//!
//! Unit tests of every module live in `src/tests/` (one file or folder per module, shared
//! fixtures in `src/tests/support.rs`) and cover every rule: hostile destructors, panicking
//! jobs and futures, never-constructed futures, rollbacks, foreign identities, kind
//! mismatches, the pool's bad inputs and an injected spawn failure. The crate's `tests/`
//! directory holds what the public API suffices for, over `tests/support/`:
//! `tests/end_to_end.rs` runs registrar → pool → inbox → wait table; `tests/hostile_destructors.rs`
//! drops every unarmed owner of user values (prepared operations of each kind, refused binds,
//! bindings and their halves, rejected submissions) normally and, in a child process, during an
//! unwind; and the loom models (`tests/loom_dispatch.rs`, `tests/loom_pool.rs`, `cfg(loom)`)
//! prove exactly-once delivery under run/drop/cancel races and that a shutdown racing a submit
//! never reports *drained* with a job still queued. Property tests `prop_*` check that identity
//! allocators never repeat and that pool counters add up. Shared state goes through the `sync`
//! shim (`std` normally, `loom` under `cfg(loom)`), so the models check the shipped code. The
//! workspace `tests/` crate runs a 100 000-job stress test and a deadline-exceeded shutdown.

pub mod completion;
pub mod dispatch;
pub mod executor;
pub mod identity;
pub mod pool;
pub mod prepared;
pub mod registrar;
pub mod sendable;
mod sync;
#[cfg(test)]
mod tests;
pub mod wait_table;

pub use completion::{
    CompletionFailure, CompletionIdentity, CompletionSender, DeliveryOutcome, ExternalCompletion,
    Payload,
};
pub use dispatch::{
    AsyncDispatch, BlockingDispatch, Dispatch, RunReport, Submission, TerminalClass,
};
pub use executor::{
    AttachError, ExecutorLease, ExecutorSnapshot, IoExecutor, RejectReason, Rejected,
    ShutdownReport,
};
pub use identity::{
    CompletionKind, IdentityAllocator, IdentityError, KindError, OperationId, RuntimeId,
    WaitGeneration, WaitId, WaitSlot,
};
pub use pool::{
    BlockingPool, BlockingPoolBuilder, BuildError, InterruptibleThreads, OsThreadSpawner,
    ThreadSpawner,
};
pub use prepared::{
    BlockingJob, DecodeError, Decoder, FnJob, PreparedOperation, WorkClass, from_fn,
};
pub use registrar::{BindError, Binding, IssuedIdentity, Registrar, RuntimeHalf};
pub use sendable::{
    SendBinding, SendDecoder, SendInterruptible, SendPreparedOperation, SendRuntimeHalf,
};
pub use wait_table::{
    BoundCheck, CancelOutcome, Discarded, InterruptedJob, RegisterError, SettleOutcome,
    WaitCounters, WaitError, WaitKey, WaitTable,
};

pub use baton_cancel;
