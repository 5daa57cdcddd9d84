//! Baton: a completion-based io_uring async runtime for Linux — the facade applications depend
//! on.
//!
//! ```no_run
//! use baton::net::{TcpListener, TcpStream};
//!
//! fn main() -> std::io::Result<()> {
//!     let rt = baton::Runtime::new()?;
//!     rt.block_on(async {
//!         let listener = TcpListener::bind("127.0.0.1:8080")?;
//!         loop {
//!             let (stream, _peer) = listener.accept().await?;
//!             baton::spawn(echo(stream));
//!         }
//!     })
//! }
//!
//! async fn echo(stream: TcpStream) -> std::io::Result<()> {
//!     // Owned buffers: a read fills the buffer from its beginning and hands it back with its
//!     // length set to the count, ready to be written back.
//!     let mut buf = Vec::with_capacity(4096);
//!     loop {
//!         let (res, b) = stream.read(buf).await;
//!         if res? == 0 {
//!             return Ok(());
//!         }
//!         let (res, b) = stream.write_all(b).await;
//!         res?;
//!         buf = b;
//!     }
//! }
//! ```
//!
//! # What the facade is
//!
//! It re-exports and glues the lower crates; it re-implements none of them:
//!
//! * [`Runtime`], [`Builder`], [`Handle`] own and reach one io_uring worker (`baton-uring`:
//!   ring, request slab, timers, completion inbox, task scheduler from `baton-task`) and a
//!   blocking pool (`baton-completion`).
//! * [`Runtime::block_on`] goes through the loan driver (`baton-loan`): between calls a
//!   background thread runs the worker, so spawned work keeps progressing; a `block_on` borrows
//!   the worker and polls its root in place (no `Send`, no `'static`), nesting to any depth.
//!   The adapter implementing the loan driver's worker trait for the uring worker lives here
//!   (`worker_adapter.rs`).
//! * [`spawn`], [`spawn_local`], [`task::yield_now`], [`JoinHandle`] come from the scheduler,
//!   and [`task::JoinSet`] joins many of them in completion order;
//!   [`time`] from the driver's timers; [`fs`] and [`net`] are ring requests with owned
//!   buffers ([`io`]: the buffer and stream traits) — `fs` runs `std` on the blocking pool
//!   where the ring has no request or the kernel lacks the opcode; [`blocking`] goes through
//!   the completion registrar, the pool and the worker's inbox.
//!
//! # Guarantees
//!
//! * I/O returns `std::io::Result`; runtime failures (closed, deadline, no runtime, shutting
//!   down) are `io::Error`s whose inner error is an [`Error`].
//! * Buffers and descriptors stay alive until the kernel is done with them, even when a future
//!   is dropped; dropped writes and syncs still complete, and shutdown finishes them.
//! * Calling a runtime-only function outside a runtime fails with a message saying to call it
//!   inside `Runtime::block_on` or a task.
//!
//! # Where Baton differs from tokio
//!
//! * **Owned buffers.** I/O takes the buffer by value and hands it back with the result —
//!   `file.read_at(buf, off).await` is `(io::Result<usize>, B)` for any
//!   [`IoBufMut`](io::IoBufMut) `B` — because the kernel owns it until the request completes
//!   (as in tokio-uring, monoio and compio). A read fills the buffer from its beginning, up to
//!   its capacity, and sets its length to exactly the count; the stream traits are
//!   [`io::AsyncRead`] and [`io::AsyncWrite`] (see [`io`]).
//! * **Empty read buffers are an error.** A read into a buffer with no capacity fails with
//!   [`io::ErrorKind::InvalidInput`](std::io::ErrorKind::InvalidInput) instead of returning
//!   `Ok(0)`, which would be indistinguishable from end of file. A write of nothing is
//!   `Ok(0)`, as std's.
//! * **`bind` is synchronous.** [`net::TcpListener::bind`] and [`net::UnixListener::bind`]
//!   return at once (the socket, bind and listen calls do not block), as in tokio-uring and
//!   monoio; `connect` and `accept` are async.
//! * **Quarantined jobs declare a bound.** [`blocking::spawn_quarantined`] takes
//!   `(bound, f)`: the [`blocking::QuarantineBound`] comes first.
//! * **Cancelling blocking jobs.** [`blocking::BlockingHandle::cancel`] returns what it
//!   achieved ([`blocking::BlockingCancel`]); only a job that has not started can be cancelled.
//! * **`block_on` nests and borrows.** [`Runtime::block_on`] accepts `!Send`, non-`'static`
//!   futures and nests; inside a task it drives I/O and timers but no other task (see its
//!   docs).
//! * **Dropped writes still happen.** Dropping a write or sync future does not cancel it;
//!   shutdown finishes it.
//!
//! ```
//! # fn main() -> std::io::Result<()> {
//! let rt = baton::Runtime::new()?;
//! rt.block_on(async {
//!     let (a, b) = baton::net::UnixStream::pair()?;
//!     let (res, _empty) = b.read(Vec::new()).await; // no room to read into
//!     assert_eq!(res.map_err(|e| e.kind()), Err(std::io::ErrorKind::InvalidInput));
//!     let (res, _sent) = a.write_all(b"owned".to_vec()).await; // the buffer comes back
//!     res?;
//!     let (res, got) = b.read(Vec::with_capacity(16)).await; // filled from the beginning
//!     assert_eq!(&got[..res?], b"owned");
//!     Ok(())
//! })
//! # }
//! ```
//!
//! The facade's own protocols (shutdown order, the worker adapter and loan roles, nested
//! `block_on`, blocking-handle states) are numbered in the files that implement them and drawn
//! in `docs/protocols/facade.md`.
//!
//! # How it is tested
//!
//! Every public type, every free function and the main methods have a doc example
//! that runs as a doc test (builder setters, `OpenOptions` flags and socket accessors are
//! covered by their type's example); unit tests sit next to the code
//! (errors, open flags, buffers), and `src/tests/` drives the file-system calls' blocking-pool
//! fallback through a `cfg(test)` knob; `tests/reexports.rs` checks the re-exports resolve; the
//! workspace `tests/` crate runs end-to-end scenarios (`e2e_*`: thousands of tasks, files larger
//! than the ring's buffers, 64 concurrent loopback echoes, shutdown with writes in flight, use
//! after shutdown, fd leaks, `e2e_fs_*`: every file-system call on real files against `std`);
//! `examples/tour.rs` exercises every crate on real work.
//!
//! # Features
//!
//! * `macros` (off by default): the attributes `#[baton::main]` and `#[baton::test]`, from
//!   `baton-macros` (`examples/main_macro.rs` uses them).
//! * `bytes` (off by default): the buffer traits for `bytes::Bytes` and `bytes::BytesMut`.
//! * `tracing` (off by default): a span per task (`baton::task`: id, spawn site) enclosing the
//!   spans of its I/O requests (`baton::io`: opcode, fd, bytes or error), and events for
//!   shutdown, exceeded quarantine bounds, refused completions and contained waker panics.
//!   Off, none of it is compiled.

pub mod blocking;
mod builder;
mod context;
mod error;
pub mod fs;
mod handle;
pub mod io;
mod metrics;
mod nested_drive;
pub mod net;
pub mod process;
mod runtime;
mod runtime_worker;
mod shared;
pub mod signal;
pub mod task;
#[cfg(test)]
mod tests;
pub mod time;
mod trace;
mod worker_adapter;

pub use builder::Builder;
pub use error::{BlockingError, Error};
pub use handle::Handle;
pub use metrics::{RuntimeMetrics, WorkerMetrics};
pub use runtime::{Runtime, ShutdownReport};
pub use task::{JoinError, JoinHandle, TaskCounts, spawn, spawn_local};

/// Runs an `async fn main` on a new runtime (feature `macros`): the function becomes a
/// synchronous `main` that builds a runtime with [`Builder`] (the arguments `ring_entries`,
/// `blocking_threads` and `workers` call the setters of those names) and runs the body with
/// [`Runtime::block_on`].
///
/// ```
/// #[baton::main(ring_entries = 64)]
/// async fn main() -> std::io::Result<()> {
///     let (a, b) = baton::net::UnixStream::pair()?;
///     let (res, _sent) = a.write_all(b"hello".to_vec()).await;
///     res?;
///     let (res, got) = b.read(Vec::with_capacity(8)).await;
///     assert_eq!(&got[..res?], b"hello");
///     Ok(())
/// }
/// ```
#[cfg(feature = "macros")]
pub use baton_macros::main;

/// Runs an `async fn` test on a new runtime and marks it `#[test]` (feature `macros`); same
/// arguments as [`main`](macro@main), and `#[should_panic]` and `Result` return types work as
/// on a plain test.
///
/// ```
/// #[baton::test(blocking_threads = 2)]
/// async fn a_blocking_job_runs() -> Result<(), baton::BlockingError> {
///     let answer = baton::blocking::spawn_blocking(|| 6 * 7).await?;
///     assert_eq!(answer, 42);
///     Ok(())
/// }
/// # fn main() {}
/// ```
#[cfg(feature = "macros")]
pub use baton_macros::test;

/// The blocking executor's counters ([`RuntimeMetrics::blocking`], [`ShutdownReport::blocking`]).
pub use baton_completion::ExecutorSnapshot;
/// The runtime's process-unique id ([`Handle::runtime_id`]).
pub use baton_completion::RuntimeId;
/// What the worker's own shutdown did ([`ShutdownReport::worker`]).
pub use baton_uring::WorkerShutdownReport;

/// The README's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// The owned-buffer operation future of the driver, for embedders that build their own
/// requests with [`baton_uring::ops`]; [`Operation`] is its form bound to a borrowed driver
/// handle (`Op::bind_borrowed`).
pub use baton_uring::{Op, Operation};
