//! Baton with two workers (`Builder::workers(2)`, SPEC §12) on the rows where a server spreads
//! its connections over cores: echo and HTTP. Each worker accepts on a listener of its own
//! over one port (`TcpListener::bind_reuseport`, the kernel spreads the connections), and each
//! connection is a task on the worker that accepted it (`baton::spawn` keeps to the caller's
//! worker). The other rows run on worker 0 alone (`baton::spawn` inside `block_on` stays there),
//! so they are the one-worker column's.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use baton::JoinHandle;
use baton::net::{TcpListener, TcpStream};
use baton_compat::hyper::Io;

use super::baton::runtime_with_workers;
use super::recipes::joined;
use super::{BATON_WORKERS, Contender};
use crate::contenders::hyper_service::Responder;
use crate::http_client::ConnectionErrors;
use crate::jobs::{EchoJob, HttpJob};
use crate::sample::Outcome;

/// Workers of this column's runtime.
pub(crate) const WORKERS: usize = 2;

/// The longest the accept loops may take to accept a run's connections (a bound, never a
/// measurement: the client connects them all before its timed window).
const ACCEPT_BOUND: Duration = Duration::from_secs(60);

/// Why the rows other than echo and HTTP are not measured here.
const ONE_WORKER_ROWS: &str = "inside block_on this work stays on worker 0: the Baton column";

/// Baton with [`WORKERS`] workers, built once.
#[derive(Debug)]
pub(crate) struct BatonWorkers {
    rt: baton::Runtime,
}

impl BatonWorkers {
    /// Builds the runtime with [`runtime_with_workers`].
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self {
            rt: runtime_with_workers(WORKERS)?,
        })
    }

    /// Accepts exactly `total` connections over one `SO_REUSEPORT` listener per worker and
    /// serves each with `serve` in a task on the worker that accepted it; `start_load(addr)`
    /// starts the load once every listener is bound. Returns the load and every connection's
    /// handle, in the order they were accepted.
    fn accept_on_each_worker<L, S, F>(
        &self,
        total: usize,
        start_load: impl FnOnce(SocketAddr) -> io::Result<L>,
        serve: S,
    ) -> io::Result<(L, Vec<JoinHandle<F::Output>>)>
    where
        S: Fn(TcpStream) -> F + Clone + Send + 'static,
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let first = TcpListener::bind_reuseport("127.0.0.1:0")?;
        let addr = first.local_addr()?;
        let mut first = Some(first);
        let accepted = Arc::new(AtomicUsize::new(0));
        let (handles_tx, handles) = mpsc::channel();
        let mut listeners = Vec::with_capacity(WORKERS);
        for _ in 0..WORKERS {
            listeners.push(match first.take() {
                Some(first) => first,
                None => TcpListener::bind_reuseport(addr)?,
            });
        }
        let mut listeners = listeners.into_iter();
        let loops = self.rt.on_each_worker(|_| {
            let listener = listeners.next();
            let (accepted, handles_tx, serve) =
                (Arc::clone(&accepted), handles_tx.clone(), serve.clone());
            async move {
                let listener = listener.ok_or_else(|| io::Error::other("a listener per worker"))?;
                loop {
                    let (stream, _) = listener.accept().await?;
                    if accepted.fetch_add(1, Ordering::AcqRel) >= total {
                        return Err(io::Error::other("more connections than the run makes"));
                    }
                    if handles_tx.send(baton::spawn(serve(stream))).is_err() {
                        return Ok::<(), io::Error>(());
                    }
                }
            }
        });
        drop(handles_tx);
        let load = start_load(addr)?;
        let conns = (0..total)
            .map(|_| handles.recv_timeout(ACCEPT_BOUND).map_err(io::Error::other))
            .collect::<io::Result<Vec<_>>>();
        // Every connection is accepted: the loops wait in `accept` for nothing more.
        for accept_loop in loops {
            accept_loop.abort();
        }
        Ok((load, conns?))
    }
}

owned_buffer_echo!(stream: TcpStream);

impl Contender for BatonWorkers {
    fn name(&self) -> &'static str {
        BATON_WORKERS
    }

    fn setup(&self) -> String {
        format!(
            "Baton Builder::workers({WORKERS}), otherwise the defaults; echo and HTTP accept on \
             one SO_REUSEPORT listener per worker (bind_reuseport), each connection a task on \
             its accepting worker"
        )
    }

    unsupported!(ONE_WORKER_ROWS => file_io, spawn_join, spawn_local_join, block_on_round_trip, blocking_jobs, foreign_poll);

    fn tcp_echo(&mut self, job: &EchoJob) -> Outcome {
        let (client, conns) =
            self.accept_on_each_worker(job.connections, |addr| job.spawn_client(addr), echo)?;
        let sample = client.join();
        for conn in conns {
            self.rt.block_on(conn).map_err(io::Error::other)??;
        }
        sample
    }

    fn http(&mut self, job: &HttpJob) -> Outcome {
        let responder = Responder::new(job);
        let serve = move |stream: TcpStream| {
            let responder = responder.clone();
            async move {
                stream.set_nodelay(true)?;
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(Io::new(stream), responder)
                    .await
                    .map_err(io::Error::other)
            }
        };
        let (client, conns) =
            self.accept_on_each_worker(job.connections, |addr| job.spawn_client(addr), serve)?;
        let mut errors = ConnectionErrors::default();
        for conn in conns {
            errors.check("serving a connection", joined(self.rt.block_on(conn)));
        }
        client.join(errors)
    }
}
