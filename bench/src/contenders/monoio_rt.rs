//! monoio 0.2 with its io_uring driver (`RuntimeBuilder::<IoUringDriver>`), thread-per-core
//! style: one runtime on the benchmark thread.
//!
//! * Files: a `monoio::fs::File` opened with monoio's own `OpenOptions`, then `read_at` /
//!   `write_at` with owned buffers; `depth` tasks spawned with `monoio::spawn` share the file
//!   through an `Rc`.
//! * Echo: `monoio::net::TcpListener`, owned-buffer `read` and `write_all`.
//! * Blocking jobs: monoio has no pool by default (`spawn_blocking` panics without one), so its
//!   own `DefaultThreadPool` is attached with [`BLOCKING_THREADS`] threads.
//! * Foreign poll: not possible — operation futures are `!Send` and bound to the thread-local
//!   driver of the runtime's thread.

use std::io;
use std::rc::Rc;

use monoio::blocking::DefaultThreadPool;
use monoio::fs::OpenOptions;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use monoio::{IoUringDriver, Runtime, RuntimeBuilder};

use super::Contender;
use crate::fixture::BLOCK;
use crate::jobs::{CountJob, EchoJob, FileJob, FileOp, ForeignJob, SERVER_BUFFER};
use crate::sample::{Meter, NoSample, Outcome, Sample, expect_len};

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

async fn echo(mut stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(SERVER_BUFFER);
    loop {
        let (read, back) = stream.read(buf).await;
        if read? == 0 {
            return Ok(());
        }
        // `read` set the vector's length to the bytes received; `write_all` sends exactly those.
        let (written, back) = stream.write_all(back).await;
        written?;
        buf = back;
    }
}

impl Contender for Monoio {
    fn name(&self) -> &'static str {
        "monoio"
    }

    fn setup(&self) -> String {
        format!(
            "monoio IoUringDriver, {RING_ENTRIES}-entry ring; DefaultThreadPool of \
             {BLOCKING_THREADS} threads attached for blocking jobs"
        )
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
                lanes.push(monoio::spawn(async move {
                    for _ in 0..ops {
                        let offset = offsets.next_offset();
                        let (result, back) = match op {
                            FileOp::Read => file.read_at(buf, offset).await,
                            FileOp::Write => file.write_at(buf, offset).await,
                        };
                        buf = back;
                        expect_len("monoio file op", result?, BLOCK)?;
                    }
                    Ok::<(), io::Error>(())
                }));
            }
            for lane in lanes {
                lane.await?;
            }
            Ok::<Sample, io::Error>(meter.finish(job.ops))
        })?;
        Ok(sample)
    }

    fn tcp_echo(&mut self, job: &EchoJob) -> Outcome {
        let client = self.rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0")?;
            let client = job.spawn_client(listener.local_addr()?)?;
            let mut conns = Vec::with_capacity(job.connections);
            for _ in 0..job.connections {
                let (stream, _) = listener.accept().await?;
                conns.push(monoio::spawn(echo(stream)));
            }
            for conn in conns {
                conn.await?;
            }
            Ok::<_, io::Error>(client)
        })?;
        client.join()
    }

    fn spawn_join(&mut self, job: &CountJob) -> Outcome {
        let join = |i| {
            let handle = monoio::spawn(async move { i });
            async move { Ok(handle.await) }
        };
        Ok(self.rt.block_on(job.join_batches("joined tasks", join))?)
    }

    fn block_on_round_trip(&mut self, job: &CountJob) -> Outcome {
        Ok(job.block_on_loop(|i| self.rt.block_on(async move { std::hint::black_box(i) }))?)
    }

    fn blocking_jobs(&mut self, job: &CountJob) -> Outcome {
        let join = |i| {
            let handle = monoio::spawn_blocking(move || i);
            async move {
                (handle.await).map_err(|e| io::Error::other(format!("monoio blocking job: {e:?}")))
            }
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
