//! monoio 0.2 with its io_uring driver (`RuntimeBuilder::<IoUringDriver>`), thread-per-core
//! style: one runtime on the benchmark thread.
//!
//! * Files: a `monoio::fs::File` opened with monoio's own `OpenOptions`, then `read_at` /
//!   `write_at` with owned buffers; `depth` tasks spawned with `monoio::spawn` share the file
//!   through an `Rc`.
//! * Echo: `monoio::net::TcpListener`, owned-buffer `read` and `write_all`.
//! * HTTP: monoio's own hyper glue, as its hyper example does it: each accepted stream is
//!   turned into monoio's poll-based stream (`into_poll_io`, feature `poll-io`: readiness
//!   through the ring) and handed to hyper as `monoio_compat::hyper::MonoioIo`; one spawned
//!   task per connection.
//! * Blocking jobs: monoio has no pool by default (`spawn_blocking` panics without one), so its
//!   own `DefaultThreadPool` is attached with [`BLOCKING_THREADS`] threads.
//! * Foreign poll: not possible — operation futures are `!Send` and bound to the thread-local
//!   driver of the runtime's thread.

use std::io;
use std::rc::Rc;

use monoio::blocking::DefaultThreadPool;
use monoio::fs::OpenOptions;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt, IntoPollIo};
use monoio::net::{TcpListener, TcpStream};
use monoio::{IoUringDriver, Runtime, RuntimeBuilder};
use monoio_compat::hyper::MonoioIo;

use super::Contender;
use super::recipes::THREAD_BOUND;
use crate::jobs::ForeignJob;
use crate::sample::{NoSample, Outcome};

/// Threads in the blocking pool attached to monoio (it has no default pool to compare).
const BLOCKING_THREADS: usize = 4;

/// Ring entries (monoio's own default is 1024; 256 matches the other contenders).
const RING_ENTRIES: u32 = 256;

/// The monoio runtime, built once.
pub(crate) struct Monoio {
    rt: Runtime<IoUringDriver>,
}

impl std::fmt::Debug for Monoio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monoio").finish_non_exhaustive()
    }
}

impl Monoio {
    /// Builds the io_uring runtime with a blocking pool attached.
    pub(crate) fn new() -> io::Result<Self> {
        let rt = RuntimeBuilder::<IoUringDriver>::new()
            .with_entries(RING_ENTRIES)
            .attach_thread_pool(Box::new(DefaultThreadPool::new(BLOCKING_THREADS)))
            .build()?;
        Ok(Self { rt })
    }
}

owned_buffer_echo!(mut stream: TcpStream);

impl Contender for Monoio {
    fn name(&self) -> &'static str {
        "monoio"
    }

    fn setup(&self) -> String {
        format!(
            "monoio IoUringDriver, {RING_ENTRIES}-entry ring; DefaultThreadPool of \
             {BLOCKING_THREADS} threads attached for blocking jobs; HTTP: hyper over \
             monoio-compat's MonoioIo on into_poll_io streams"
        )
    }

    owned_file_io!(OpenOptions, Rc, monoio::spawn, "monoio file op", |lane| {
        lane.await
    },);

    common_workloads!(
        echo: TcpListener::bind("127.0.0.1:0")? => monoio::spawn, echo
            => |conn| conn.await,
        spawn: monoio::spawn
            => |handle| Ok(handle.await),
        local: monoio::spawn
            => |handle| Ok(handle.await),
        blocking: monoio::spawn_blocking
            => |handle| (handle.await)
                .map_err(|e| io::Error::other(format!("monoio blocking job: {e:?}"))),
    );

    hyper_http!(
        TcpListener::bind("127.0.0.1:0")? => monoio::spawn,
        |stream| MonoioIo::new(stream.into_poll_io()?),
        |conn| conn.await,
    );

    fn foreign_poll(&mut self, _job: &ForeignJob<'_>) -> Outcome {
        Err(NoSample::Unsupported(THREAD_BOUND))
    }
}
