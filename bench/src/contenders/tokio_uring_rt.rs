//! tokio-uring 0.5: io_uring operations on tokio's current-thread scheduler (a `LocalSet`).
//!
//! * Files: a `tokio_uring::fs::File` opened with tokio-uring's own `OpenOptions`, then
//!   `read_at` / `write_at(..).submit()` with owned buffers; `depth` tasks spawned with
//!   `tokio_uring::spawn` share the file through an `Rc`.
//! * Echo: `tokio_uring::net::TcpListener`, owned-buffer `read` and `write_all`.
//! * Blocking jobs: tokio-uring has no blocking pool of its own; inside its runtime tokio's
//!   `tokio::task::spawn_blocking` works (tokio's pool), and that is what is measured.
//! * Foreign poll: not possible — operation futures are `!Send` and bound to the thread-local
//!   driver of the runtime's thread.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;

use tokio_uring::buf::BoundedBuf;
use tokio_uring::fs::OpenOptions;
use tokio_uring::net::{TcpListener, TcpStream};

use super::Contender;
use crate::fixture::BLOCK;
use crate::jobs::{CountJob, EchoJob, FileJob, FileOp, ForeignJob, SERVER_BUFFER};
use crate::sample::{Meter, NoSample, Outcome, Sample, expect_len};

/// The tokio-uring runtime, built once with its default 256-entry ring.
pub(crate) struct TokioUring {
    rt: tokio_uring::Runtime,
}

impl std::fmt::Debug for TokioUring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokioUring").finish_non_exhaustive()
    }
}

impl TokioUring {
    /// Builds the runtime with tokio-uring's default builder.
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self {
            rt: tokio_uring::Runtime::new(&tokio_uring::builder())?,
        })
    }
}

async fn echo(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = vec![0_u8; SERVER_BUFFER];
    loop {
        let (read, back) = stream.read(buf).await;
        let n = read?;
        if n == 0 {
            return Ok(());
        }
        let (written, slice) = stream.write_all(back.slice(..n)).await;
        written?;
        buf = slice.into_inner();
    }
}

impl Contender for TokioUring {
    fn name(&self) -> &'static str {
        "tokio-uring"
    }

    fn setup(&self) -> String {
        "tokio-uring default builder (256-entry ring) on tokio's current-thread scheduler; \
         blocking jobs on tokio's pool"
            .into()
    }

    fn file_io(&mut self, job: &FileJob<'_>) -> Outcome {
        let sample = self.rt.block_on(async {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(job.file.path())
                .await?;
            let file = Rc::new(file);
            let mut lanes = Vec::with_capacity(job.depth);
            let meter = Meter::start();
            for lane in 0..job.depth {
                let file = Rc::clone(&file);
                let (ops, mut offsets, mut buf, op) = (
                    job.lane_ops(lane),
                    job.lane_offsets(lane),
                    job.buffer(),
                    job.op,
                );
                lanes.push(tokio_uring::spawn(async move {
                    for _ in 0..ops {
                        let offset = offsets.next_offset();
                        let (result, back) = match op {
                            FileOp::Read => file.read_at(buf, offset).await,
                            FileOp::Write => file.write_at(buf, offset).submit().await,
                        };
                        buf = back;
                        expect_len("tokio-uring file op", result?, BLOCK)?;
                    }
                    Ok::<(), io::Error>(())
                }));
            }
            for lane in lanes {
                lane.await.map_err(io::Error::other)??;
            }
            Ok::<Sample, io::Error>(meter.finish(job.ops))
        })?;
        Ok(sample)
    }

    fn tcp_echo(&mut self, job: &EchoJob) -> Outcome {
        let client = self.rt.block_on(async {
            let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
            let client = job.spawn_client(listener.local_addr()?)?;
            let mut conns = Vec::with_capacity(job.connections);
            for _ in 0..job.connections {
                let (stream, _) = listener.accept().await?;
                conns.push(tokio_uring::spawn(echo(stream)));
            }
            for conn in conns {
                conn.await.map_err(io::Error::other)??;
            }
            Ok::<_, io::Error>(client)
        })?;
        client.join()
    }

    fn spawn_join(&mut self, job: &CountJob) -> Outcome {
        let join = |i| {
            let handle = tokio_uring::spawn(async move { i });
            async move { handle.await.map_err(io::Error::other) }
        };
        Ok(self.rt.block_on(job.join_batches("joined tasks", join))?)
    }

    fn block_on_round_trip(&mut self, job: &CountJob) -> Outcome {
        Ok(job.block_on_loop(|i| self.rt.block_on(async move { std::hint::black_box(i) }))?)
    }

    fn blocking_jobs(&mut self, job: &CountJob) -> Outcome {
        let join = |i| {
            let handle = tokio::task::spawn_blocking(move || i);
            async move { handle.await.map_err(io::Error::other) }
        };
        Ok(self
            .rt
            .block_on(job.join_batches("joined blocking jobs", join))?)
    }

    fn foreign_poll(&mut self, _job: &ForeignJob<'_>) -> Outcome {
        Err(NoSample::Unsupported(
            "operation futures are !Send, bound to the runtime thread's thread-local driver",
        ))
    }
}
