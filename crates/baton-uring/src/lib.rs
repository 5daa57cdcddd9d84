//! The io_uring worker driver of Baton.
//!
//! A [`Driver`] owns one ring, a slab of requests keyed by index + generation
//! ([`RequestKey`]), a submission queue for requests that do not fit in the ring yet, a cancel
//! queue that always goes first, a userspace timer heap for sleeps and deadlines, per-file
//! durability permits for syncs, and a mailbox through which other threads reach it.
//! Operations ([`ops`]) are futures ([`Op`]) that take owned buffers and `Arc<OwnedFd>`s,
//! register lazily on first poll, hand the buffers back with the result, and may be polled or
//! dropped on any thread. An [`Op`] owns its way to the driver; an [`Operation`] bound with
//! [`bind_borrowed`](Operation::bind_borrowed) borrows a [`DriverHandle`] instead, which saves
//! a reference count per operation where the caller holds the handle anyway (a file, a socket).
//!
//! # Guarantees
//!
//! * Everything the kernel can see stays owned by the driver until that request's final
//!   completion; a bounded shutdown leaks rather than frees what the kernel may still write.
//! * Admission never fails for lack of ring space; cancels never wait behind ordinary work.
//! * No waker is cloned, woken or dropped while the driver's state is borrowed.
//! * A stale key never observes a reused slot; a message about a retired slot is ignored.
//! * Dropped reads are cancelled, dropped writes and syncs finish, late-created fds are closed.
//! * After closure every pending operation resolves to [`Error::Closed`].
//!
//! The rules are numbered in the docs of `state/` (request lifecycle, U1 ... U9), `forward.rs`
//! (forwarding, F1 ... F9), `stash.rs` (cancel-safe receives, S1 ... S4), `durability.rs`
//! (permits, D1 ... D4), `inbox.rs` (I1 ... I3) and `worker/` (W1 ... W11), and drawn in
//! `docs/protocols/uring.md`.
//!
//! # The migrating worker
//!
//! The runtime's worker moves between threads, so `Driver` is `Send` but not `Sync`, and
//! "owner thread" means the thread that currently holds the driver and has [entered](Driver::enter)
//! it. Only a [pinned](DriverConfig::pinned) driver uses `IORING_SETUP_SINGLE_ISSUER` and
//! `DEFER_TASKRUN`; the default uses `COOP_TASKRUN | TASKRUN_FLAG` where the kernel accepts
//! them, falling back on `EINVAL` ([`DriverMetrics::flags`] says what took effect).
//!
//! # Testing
//!
//! Unit and real-ring tests sit next to the code and in `tests/`; the state machine also runs
//! over a deterministic simulated ring (`backend::sim`) so a proptest state-machine test
//! (`prop_*`) compares it against a reference model, and loom models (`loom_*`) check
//! forwarding against completion, foreign drop and closure, and the linger (F8) against
//! unparks, through the `sync` shim.
//! `examples/random_reads.rs` (run with `--release`) compares 4 KiB random reads through the
//! driver against a raw `io-uring` loop at queue depths 1, 32 and 128.

mod backend;
pub mod buf;
mod context;
mod driver;
mod durability;
mod error;
mod forward;
mod handle;
mod inbox;
mod key;
mod linger;
mod mailbox;
mod operation;
pub mod ops;
mod request;
mod stash;
mod state;
mod sync;
#[cfg(test)]
mod tests;
mod trace;
mod worker;

pub use backend::RingFlags;
pub use buf::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut, RawBuf, Slice};
pub use driver::{
    Driver, DriverConfig, DriverGuard, DriverMetrics, DriverShutdownReport, Park, TurnReport,
    WakerPanics,
};
pub use error::{Error, SetupError};
pub use handle::{DriverHandle, SyncReceiver, Unparker};
pub use inbox::{InboxSender, InboxTraffic};
pub use key::RequestKey;
pub use operation::{Op, Operation};
pub use stash::{Accepted, Stash};
pub use worker::{
    InboxMetrics, RunUntil, Waits, WaitsError, Worker, WorkerClose, WorkerConfig, WorkerGuard,
    WorkerHandle, WorkerMetrics, WorkerSetupError, WorkerShutdownReport, WorkerTurn,
    with_current_waits,
};
