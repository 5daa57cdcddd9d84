//! tokio's current-thread runtime (`enable_all`), used the way its documentation recommends.
//!
//! * Files: tokio's `fs` module runs every file call on the blocking pool (`spawn_blocking`),
//!   and `tokio::fs::File` has no positional read or write; so each 4 KiB operation is
//!   `spawn_blocking(move || file.read_at / write_at)` on a shared `std::fs::File` — exactly the
//!   mechanism `tokio::fs` uses — with `depth` tasks spawned on the runtime.
//! * Echo: `tokio::net::TcpListener`, one spawned task per connection.
//! * HTTP: hyper's http1 connection over hyper-util's `TokioIo`, one spawned task per
//!   connection (what hyper's own tokio examples do).
//! * Blocking jobs: `tokio::task::spawn_blocking` with tokio's default pool (up to 512 threads).
//! * Foreign poll: the runtime is driven by `block_on` on this thread while a second thread,
//!   inside the runtime's context (`Handle::enter`), polls each read's `JoinHandle` with
//!   [`park::block_on`](crate::park::block_on).

use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::thread;

use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Builder, Runtime};

use super::recipes::{joined, tokio_io_echo};
use super::{Contender, TOKIO};
use crate::fixture::BLOCK;
use crate::jobs::{FileJob, FileOp, ForeignJob};
use crate::park;
use crate::sample::{Meter, Outcome, Sample, expect_len, join_sample};

/// A tokio runtime, built once: the current-thread one (the reference column) or the
/// multi-thread one with a fixed number of workers (work stealing; the column multi-worker
/// runtimes are compared with). Every row runs the same code on either.
#[derive(Debug)]
pub(crate) struct Tokio {
    rt: Runtime,
    name: &'static str,
    /// Multi-thread workers; `None` for the current-thread runtime.
    workers: Option<usize>,
}

impl Tokio {
    /// The current-thread runtime with I/O and time drivers enabled.
    pub(crate) fn current_thread() -> io::Result<Self> {
        Ok(Self {
            rt: Builder::new_current_thread().enable_all().build()?,
            name: TOKIO,
            workers: None,
        })
    }

    /// The multi-thread runtime with `workers` worker threads, I/O and time drivers enabled.
    pub(crate) fn multi_thread(name: &'static str, workers: usize) -> io::Result<Self> {
        Ok(Self {
            rt: Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_all()
                .build()?,
            name,
            workers: Some(workers),
        })
    }
}

/// One positional 4 KiB operation on the blocking pool; hands the buffer back.
async fn blocking_file_op(
    file: &Arc<std::fs::File>,
    op: FileOp,
    mut buf: Vec<u8>,
    offset: u64,
) -> io::Result<Vec<u8>> {
    let file = Arc::clone(file);
    let (result, buf) = tokio::task::spawn_blocking(move || {
        let result = match op {
            FileOp::Read => file.read_at(&mut buf, offset),
            FileOp::Write => file.write_at(&buf, offset),
        };
        (result, buf)
    })
    .await
    .map_err(io::Error::other)?;
    expect_len("tokio blocking-pool file op", result?, BLOCK)?;
    Ok(buf)
}

async fn echo(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    tokio_io_echo(stream).await
}

impl Contender for Tokio {
    fn name(&self) -> &'static str {
        self.name
    }

    fn setup(&self) -> String {
        let flavor = match self.workers {
            None => "current-thread runtime".to_owned(),
            Some(workers) => format!("multi-thread runtime with {workers} workers"),
        };
        format!(
            "tokio {flavor} (enable_all); files and blocking jobs on its default blocking pool \
             (up to 512 threads); HTTP: hyper over hyper-util's TokioIo"
        )
    }

    fn file_io(&mut self, job: &FileJob<'_>) -> Outcome {
        let file = Arc::new(job.file.open()?);
        let sample = self.rt.block_on(async {
            file_lanes!(
                job,
                file,
                tokio::spawn,
                |file, op, buf, offset| {
                    buf = blocking_file_op(&file, op, buf, offset).await?;
                },
                |lane| lane.await.map_err(io::Error::other)?,
            )
        })?;
        Ok(sample)
    }

    common_workloads!(
        echo: TcpListener::bind("127.0.0.1:0").await? => tokio::spawn, echo
            => |conn| conn.await.map_err(io::Error::other)?,
        spawn: tokio::spawn
            => |handle| handle.await.map_err(io::Error::other),
        local: tokio::task::spawn_local,
            within |batches| async move { tokio::task::LocalSet::new().run_until(batches).await }
            => |handle| handle.await.map_err(io::Error::other),
        blocking: tokio::task::spawn_blocking
            => |handle| handle.await.map_err(io::Error::other),
    );

    hyper_http!(
        TcpListener::bind("127.0.0.1:0").await? => tokio::spawn,
        |stream| TokioIo::new(stream),
        |conn| joined(conn.await),
    );

    fn foreign_poll(&mut self, job: &ForeignJob<'_>) -> Outcome {
        let file = Arc::new(job.file.open()?);
        let handle = self.rt.handle().clone();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        let (ops, mut offsets) = (job.ops, job.offsets());
        let foreign = thread::Builder::new()
            .name("foreign-poller".into())
            .spawn(move || {
                let _context = handle.enter();
                let result = park::block_on(async {
                    let mut buf = vec![0_u8; BLOCK];
                    let meter = Meter::start();
                    for _ in 0..ops {
                        buf = blocking_file_op(&file, FileOp::Read, buf, offsets.next_offset())
                            .await?;
                    }
                    Ok::<Sample, io::Error>(meter.finish(ops))
                });
                // Dropped on every path (including a panic above), which ends the drive below.
                drop(done_tx);
                result
            })?;
        // Drive the runtime on its owner thread until the foreign thread is done.
        self.rt.block_on(async {
            // An error only means the sender was dropped, which is the completion signal.
            let _ = done_rx.await;
        });
        join_sample(foreign, "tokio foreign poller")
    }
}
