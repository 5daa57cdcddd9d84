//! compio 0.19 with its io_uring driver (a proactor with a 256-entry ring), thread-per-core
//! style: one runtime on the benchmark thread, as the monoio column.
//!
//! * Files: `compio::fs::File` opened with compio's `OpenOptions`, then the owned-buffer
//!   `AsyncReadAt::read_at` / `AsyncWriteAt::write_at`; `depth` tasks spawned with
//!   `compio::runtime::spawn` share the file through an `Rc`. compio reads into a buffer's
//!   spare capacity, so each read starts from a cleared buffer.
//! * Echo: `compio::net::TcpListener`, owned-buffer `AsyncRead::read` and
//!   `AsyncWriteExt::write_all`.
//! * Blocking jobs: `compio::runtime::spawn_blocking` (its own thread pool).
//! * Local spawn: compio's `spawn` is thread-local already (no `Send` bound).
//! * HTTP and foreign poll: not here — compio's hyper glue is a separate crate not tried, and
//!   its operation futures are `!Send`, bound to the runtime's thread.

use std::io;
use std::rc::Rc;

use compio::BufResult;
use compio::fs::OpenOptions;
use compio::io::{AsyncRead, AsyncReadAt, AsyncWriteAt, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream};
use compio::runtime::Runtime;

use super::Contender;
use super::recipes::THREAD_BOUND;
use crate::fixture::BLOCK;
use crate::jobs::{FileJob, FileOp, ForeignJob, HttpJob, SERVER_BUFFER};
use crate::sample::{NoSample, Outcome, expect_len};

/// Ring entries, as the other io_uring contenders.
const RING_ENTRIES: u32 = 256;

/// The compio runtime, built once.
pub(crate) struct Compio {
    rt: Runtime,
}

impl std::fmt::Debug for Compio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compio").finish_non_exhaustive()
    }
}

impl Compio {
    /// Builds the runtime with a 256-entry ring.
    pub(crate) fn new() -> io::Result<Self> {
        let mut proactor = compio::driver::ProactorBuilder::new();
        proactor.capacity(RING_ENTRIES);
        let rt = Runtime::builder().with_proactor(proactor).build()?;
        Ok(Self { rt })
    }
}

/// A compio task's failure as an `io::Error` (its `JoinError` holds a panic payload, which is
/// not `Sync`, so only its message goes along).
fn join_error(err: compio::runtime::JoinError) -> io::Error {
    io::Error::other(err.to_string())
}

/// Echoes until end-of-stream with one `SERVER_BUFFER`-capacity buffer, reused: compio reads
/// into the spare capacity, so the buffer is cleared before each read.
async fn echo(mut stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(SERVER_BUFFER);
    loop {
        buf.clear();
        let BufResult(read, back) = stream.read(buf).await;
        if read? == 0 {
            return Ok(());
        }
        let BufResult(written, back) = stream.write_all(back).await;
        written?;
        buf = back;
    }
}

impl Contender for Compio {
    fn name(&self) -> &'static str {
        "compio"
    }

    fn setup(&self) -> String {
        format!(
            "compio io_uring proactor, {RING_ENTRIES}-entry ring; blocking jobs on its own \
             thread pool"
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
            file_lanes!(
                job,
                file,
                compio::runtime::spawn,
                |file, op, buf, offset| {
                    let BufResult(result, back) = match op {
                        FileOp::Read => {
                            buf.clear();
                            file.read_at(buf, offset).await
                        }
                        FileOp::Write => (&*file).write_at(buf, offset).await,
                    };
                    buf = back;
                    expect_len("compio file op", result?, BLOCK)?;
                },
                |lane| lane.await.map_err(join_error)?,
            )
        })?;
        Ok(sample)
    }

    common_workloads!(
        echo: TcpListener::bind("127.0.0.1:0").await? => compio::runtime::spawn, echo
            => |conn| conn.await.map_err(join_error)?,
        spawn: compio::runtime::spawn
            => |handle| handle.await.map_err(join_error),
        local: compio::runtime::spawn
            => |handle| handle.await.map_err(join_error),
        blocking: compio::runtime::spawn_blocking
            => |handle| handle.await.map_err(join_error),
    );

    fn foreign_poll(&mut self, _job: &ForeignJob<'_>) -> Outcome {
        Err(NoSample::Unsupported(THREAD_BOUND))
    }

    fn http(&mut self, _job: &HttpJob) -> Outcome {
        Err(NoSample::Unsupported(
            "compio's hyper glue (cyper-core) is not in this build: monoio fills the column",
        ))
    }
}
