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
use super::recipes::THREAD_BOUND;
use crate::jobs::{ForeignJob, HttpJob, SERVER_BUFFER};
use crate::sample::{NoSample, Outcome};

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

    owned_file_io!(
        OpenOptions,
        Rc,
        tokio_uring::spawn,
        "tokio-uring file op",
        |lane| lane.await.map_err(io::Error::other)?,
        submit: submit,
    );

    common_workloads!(
        echo: TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?
            => tokio_uring::spawn, echo
            => |conn| conn.await.map_err(io::Error::other)?,
        spawn: tokio_uring::spawn
            => |handle| handle.await.map_err(io::Error::other),
        local: tokio_uring::spawn
            => |handle| handle.await.map_err(io::Error::other),
        blocking: tokio::task::spawn_blocking
            => |handle| handle.await.map_err(io::Error::other),
    );

    fn http(&mut self, _job: &HttpJob) -> Outcome {
        Err(NoSample::Unsupported(
            "no hyper glue: tokio-uring's TcpStream has only owned-buffer methods, no tokio-io \
             or hyper::rt traits",
        ))
    }

    fn foreign_poll(&mut self, _job: &ForeignJob<'_>) -> Outcome {
        Err(NoSample::Unsupported(THREAD_BOUND))
    }
}
