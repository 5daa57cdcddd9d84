//! Baton (the facade crate, `crates/baton`) with `Runtime::new()`'s documented defaults, in two
//! columns: [`Baton`] (native owned-buffer I/O, and hyper through `baton_compat::hyper`) and
//! [`BatonCompat`] (the echo rows through `baton_compat::Compat` and tokio's I/O traits). Both
//! build their runtime with [`runtime`], the one place a runtime configuration is chosen.
//!
//! * Files: a `baton::fs::File` opened with Baton's own `OpenOptions`, then `read_at` /
//!   `write_at` with owned buffers; `depth` tasks spawned with `baton::spawn` share the file
//!   through an `Arc`, each reusing one buffer for all of its operations.
//! * Echo: `baton::net::TcpListener`, one spawned task per connection, owned-buffer `read` and
//!   `write_all` with one buffer per connection, reused (the facade's `with_capacity` idiom).
//! * HTTP: hyper's http1 connection over `baton_compat::hyper::Io` (a `Compat` inside), one
//!   spawned task per connection.
//! * Compat echo ([`BatonCompat`]): the accepted stream wrapped in `Compat`, echoed with
//!   tokio's `AsyncReadExt::read` / `AsyncWriteExt::write_all` by the very function the tokio
//!   column uses on its own sockets.
//! * Blocking jobs: `baton::blocking::spawn_blocking` on the runtime's own pool (up to 64
//!   threads, started on demand).
//! * Foreign poll: the file is opened on the runtime, then moved to a second thread that polls
//!   each read future with [`park::block_on`](crate::park::block_on) (Baton's operation futures
//!   may be polled on any thread: they are forwarded to the worker). This thread drives the
//!   runtime with `block_on` until the foreign thread signals that it is done ([`Finished`]).

use std::future::poll_fn;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};
use std::thread;

use baton::fs::OpenOptions;
use baton::net::{TcpListener, TcpStream};
use baton_compat::CompatExt;
use baton_compat::hyper::Io;

use super::recipes::{joined, tokio_io_echo};
use super::{BATON, BATON_COMPAT, Contender};
use crate::fixture::BLOCK;
use crate::jobs::{ForeignJob, HttpJob};
use crate::park;
use crate::sample::{Meter, NoSample, Outcome, Sample, expect_len, join_sample};

/// The runtime every Baton column measures: `Runtime::new()`, the documented defaults. The
/// one place its configuration is chosen, so a column with another (more workers, a bigger
/// ring) is a second constructor calling a builder here, not an edit of every method.
fn runtime() -> io::Result<baton::Runtime> {
    baton::Runtime::new()
}

/// [`runtime`] with `workers` workers (`Builder::workers`), otherwise the same defaults.
pub(super) fn runtime_with_workers(workers: usize) -> io::Result<baton::Runtime> {
    baton::Builder::new().workers(workers).build()
}

/// How [`runtime`] is configured, for the report's preamble.
const RUNTIME_SETUP: &str = "Baton Runtime::new() defaults: one worker with a 256-entry \
                             ring, loaned to block_on callers";

/// The Baton runtime, built once.
#[derive(Debug)]
pub(crate) struct Baton {
    rt: baton::Runtime,
}

impl Baton {
    /// Builds the runtime with [`runtime`].
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self { rt: runtime()? })
    }
}

owned_buffer_echo!(stream: TcpStream);

/// The foreign thread's "done" signal to the future driving the runtime: set when the guard
/// held by the foreign thread is dropped (on every path, a panic included).
///
/// Invariant: `done` only ever goes from `false` to `true`, and the waker stored with
/// `done == false` is woken by the guard's drop, so the waiting future cannot miss the signal.
#[derive(Debug, Default)]
struct Finished {
    state: Mutex<(bool, Option<Waker>)>,
}

impl Finished {
    /// Resolves once [`FinishGuard`] has been dropped.
    async fn wait(&self) {
        poll_fn(|cx| {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.0 {
                return Poll::Ready(());
            }
            match &state.1 {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                _ => state.1 = Some(cx.waker().clone()),
            }
            Poll::Pending
        })
        .await;
    }
}

/// Held by the foreign thread; dropping it marks [`Finished`] done and wakes its waiter.
#[derive(Debug)]
struct FinishGuard(Arc<Finished>);

impl Drop for FinishGuard {
    fn drop(&mut self) {
        let waker = {
            let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.0 = true;
            state.1.take()
        };
        // Woken outside the lock, so the waiter's poll can take it.
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Contender for Baton {
    fn name(&self) -> &'static str {
        BATON
    }

    fn setup(&self) -> String {
        format!(
            "{RUNTIME_SETUP}; blocking jobs on its own pool (up to 64 threads, started on \
             demand); HTTP: hyper over baton_compat::hyper::Io"
        )
    }

    owned_file_io!(OpenOptions, Arc, baton::spawn, "Baton file op", |lane| lane
        .await
        .map_err(io::Error::other)?,);

    common_workloads!(
        echo: TcpListener::bind("127.0.0.1:0")? => baton::spawn, echo
            => |conn| conn.await.map_err(io::Error::other)?,
        spawn: baton::spawn
            => |handle| handle.await.map_err(io::Error::other),
        local: baton::spawn_local
            => |handle| handle.await.map_err(io::Error::other),
        blocking: baton::blocking::spawn_blocking
            => |handle| handle.await.map_err(io::Error::other),
    );

    hyper_http!(
        TcpListener::bind("127.0.0.1:0")? => baton::spawn,
        |stream| Io::new(stream),
        |conn| joined(conn.await),
    );

    fn foreign_poll(&mut self, job: &ForeignJob<'_>) -> Outcome {
        let file = self
            .rt
            .block_on(OpenOptions::new().read(true).open(job.file.path()))?;
        let finished = Arc::new(Finished::default());
        let guard = FinishGuard(Arc::clone(&finished));
        let (ops, mut offsets) = (job.ops, job.offsets());
        let foreign = thread::Builder::new()
            .name("foreign-poller".into())
            .spawn(move || {
                // Dropped on every path (including a panic below), which ends the drive below.
                let _guard = guard;
                park::block_on(async {
                    let mut buf = vec![0_u8; BLOCK];
                    let meter = Meter::start();
                    for _ in 0..ops {
                        let (result, back) = file.read_at(buf, offsets.next_offset()).await;
                        buf = back;
                        expect_len("Baton foreign read", result?, BLOCK)?;
                    }
                    Ok::<Sample, io::Error>(meter.finish(ops))
                })
            })?;
        // Drive the runtime on its owner thread until the foreign thread is done.
        self.rt.block_on(finished.wait());
        join_sample(foreign, "Baton foreign poller")
    }
}

/// Baton with the echo rows served through `baton_compat::Compat` (its own runtime, built by
/// [`runtime`] like the [`Baton`] column's); every other row is that column's business.
#[derive(Debug)]
pub(crate) struct BatonCompat {
    rt: baton::Runtime,
}

impl BatonCompat {
    /// Builds the runtime with [`runtime`].
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self { rt: runtime()? })
    }
}

/// Why the Compat column has no cell outside the echo rows.
const STREAMS_ONLY: &str = "Compat changes stream I/O only; this row is the Baton column's";

async fn compat_echo(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    tokio_io_echo(stream.compat()).await
}

impl Contender for BatonCompat {
    fn name(&self) -> &'static str {
        BATON_COMPAT
    }

    fn setup(&self) -> String {
        format!(
            "{RUNTIME_SETUP}; echo through baton_compat::Compat with tokio's AsyncReadExt / \
             AsyncWriteExt (the tokio column's echo function)"
        )
    }

    unsupported!(STREAMS_ONLY => file_io, spawn_join, spawn_local_join, block_on_round_trip, blocking_jobs, foreign_poll);

    tcp_echo!(
        TcpListener::bind("127.0.0.1:0")? => baton::spawn, compat_echo
            => |conn| conn.await.map_err(io::Error::other)?,
    );

    fn http(&mut self, _job: &HttpJob) -> Outcome {
        Err(NoSample::Unsupported(
            "the Baton column's hyper already runs through Compat (baton_compat::hyper::Io)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::{FinishGuard, Finished};
    use crate::park;
    use std::sync::Arc;
    use std::thread;

    #[test]
    fn guard_dropped_on_another_thread_wakes_the_waiter() {
        let finished = Arc::new(Finished::default());
        let guard = FinishGuard(Arc::clone(&finished));
        let dropper = thread::spawn(move || drop(guard));
        park::block_on(finished.wait());
        dropper.join().expect("the dropping thread finished");
    }

    #[test]
    fn guard_dropped_by_a_panic_still_signals() {
        let finished = Arc::new(Finished::default());
        let guard = FinishGuard(Arc::clone(&finished));
        let panicked = thread::spawn(move || {
            let _guard = guard;
            panic!("the foreign poller failed");
        })
        .join();
        assert!(panicked.is_err());
        park::block_on(finished.wait());
    }
}
