//! monoio with two threads, the way monoio scales (thread-per-core): each thread its own
//! `IoUringDriver` runtime and its own `SO_REUSEPORT` listener on one port, the kernel spreading
//! the connections; echo and HTTP rows only. monoio's runtimes are `!Send` and live on their
//! thread, so each run starts its threads and their runtimes before the load starts (outside
//! the timed window, which is the load generator's).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use monoio::io::{AsyncReadRent, AsyncWriteRentExt, IntoPollIo};
use monoio::net::{ListenerOpts, TcpListener, TcpStream};
use monoio::{IoUringDriver, RuntimeBuilder};
use monoio_compat::hyper::MonoioIo;

use super::{Contender, MONOIO_THREADS};
use crate::contenders::hyper_service::Responder;
use crate::http_client::ConnectionErrors;
use crate::jobs::{EchoJob, HttpJob};
use crate::sample::{NoSample, Outcome};

/// Threads (one runtime each) of this column.
pub(crate) const THREADS: usize = 2;

/// Ring entries, as the one-thread monoio column.
const RING_ENTRIES: u32 = 256;

/// Bound on set-up and on waking the accept loops at the end (never a measurement).
const BOUND: Duration = Duration::from_secs(60);

/// Why the other rows are not measured here.
const PER_THREAD_ROWS: &str = "one monoio runtime per thread shares nothing: the monoio column";

/// monoio on [`THREADS`] threads, started per run.
#[derive(Debug, Default)]
pub(crate) struct MonoioThreads;

impl MonoioThreads {
    /// Nothing to build up front: each run starts its threads.
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self)
    }
}

owned_buffer_echo!(mut stream: TcpStream);

/// One thread's part of a run: builds its runtime, binds `addr` with `SO_REUSEPORT` (port 0 for
/// the first thread, whose address comes back through `bound`), then accepts until `total`
/// connections were accepted across the threads, serving each with `serve`; an accept past the
/// total is the coordinator's wake-up and ends the loop. Returns each connection's outcome.
fn serve_thread<S, F>(
    addr: SocketAddr,
    total: usize,
    accepted: Arc<AtomicUsize>,
    bound: mpsc::Sender<io::Result<SocketAddr>>,
    serve: S,
) -> io::Result<Vec<Result<(), String>>>
where
    S: Fn(TcpStream) -> F,
    F: Future<Output = Result<(), String>> + 'static,
{
    let mut rt = RuntimeBuilder::<IoUringDriver>::new()
        .with_entries(RING_ENTRIES)
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind_with_config(addr, &ListenerOpts::new().reuse_port(true))
            .and_then(|listener| Ok((listener.local_addr()?, listener)));
        let listener = match listener {
            Ok((local, listener)) => {
                let _ = bound.send(Ok(local));
                listener
            }
            Err(err) => {
                let _ = bound.send(Err(io::Error::new(err.kind(), err.to_string())));
                return Err(err);
            }
        };
        let mut conns = Vec::new();
        loop {
            let (stream, _) = listener.accept().await?;
            if accepted.fetch_add(1, Ordering::AcqRel) >= total {
                break;
            }
            conns.push(monoio::spawn(serve(stream)));
        }
        let mut outcomes = Vec::with_capacity(conns.len());
        for conn in conns {
            outcomes.push(conn.await);
        }
        Ok(outcomes)
    })
}

/// Runs one measured job over [`THREADS`] threads: `start_load(addr)` once every listener is
/// bound, `finish(load)` for the sample once the load is done; then wakes any thread still in
/// `accept` (a connection past the total) and returns the sample with every connection's
/// outcome.
fn run_threads<S, F, L, T>(
    total: usize,
    serve: S,
    start_load: impl FnOnce(SocketAddr) -> io::Result<L>,
    finish: impl FnOnce(L) -> T,
) -> io::Result<(T, Vec<Result<(), String>>)>
where
    S: Fn(TcpStream) -> F + Clone + Send + 'static,
    F: Future<Output = Result<(), String>> + 'static,
{
    let accepted = Arc::new(AtomicUsize::new(0));
    let (bound_tx, bound) = mpsc::channel();
    let mut threads = Vec::with_capacity(THREADS);
    let mut addr = SocketAddr::from(([127, 0, 0, 1], 0));
    for _ in 0..THREADS {
        let (accepted, bound_tx, serve) = (Arc::clone(&accepted), bound_tx.clone(), serve.clone());
        threads.push(
            thread::Builder::new()
                .name("monoio-worker".into())
                .spawn(move || serve_thread(addr, total, accepted, bound_tx, serve))?,
        );
        // The first thread picks the port; the others bind the same one.
        addr = bound.recv_timeout(BOUND).map_err(io::Error::other)??;
    }
    let sample = finish(start_load(addr)?);
    for _ in 0..1000 {
        if threads.iter().all(thread::JoinHandle::is_finished) {
            break;
        }
        // A connection past the total ends the accept loop that takes it.
        drop(std::net::TcpStream::connect(addr));
        thread::sleep(Duration::from_millis(1));
    }
    let mut outcomes = Vec::with_capacity(total);
    for thread in threads {
        let served = thread
            .join()
            .map_err(|_| io::Error::other("a monoio thread panicked"))??;
        outcomes.extend(served);
    }
    Ok((sample, outcomes))
}

impl Contender for MonoioThreads {
    fn name(&self) -> &'static str {
        MONOIO_THREADS
    }

    fn setup(&self) -> String {
        format!(
            "monoio on {THREADS} threads, one IoUringDriver runtime ({RING_ENTRIES}-entry ring) \
             and one SO_REUSEPORT listener each, started per run; HTTP: hyper over \
             monoio-compat's MonoioIo"
        )
    }

    unsupported!(PER_THREAD_ROWS => file_io, spawn_join, spawn_local_join, block_on_round_trip, blocking_jobs, foreign_poll);

    fn tcp_echo(&mut self, job: &EchoJob) -> Outcome {
        let serve =
            |stream: TcpStream| async move { echo(stream).await.map_err(|e| e.to_string()) };
        let (sample, outcomes) = run_threads(
            job.connections,
            serve,
            |addr| job.spawn_client(addr),
            |client| client.join(),
        )?;
        if let Some(Err(why)) = outcomes.into_iter().find(Result::is_err) {
            return Err(NoSample::Failed(format!("monoio echo connection: {why}")));
        }
        sample
    }

    fn http(&mut self, job: &HttpJob) -> Outcome {
        let responder = Responder::new(job);
        let serve = move |stream: TcpStream| {
            let responder = responder.clone();
            async move {
                stream.set_nodelay(true).map_err(|e| e.to_string())?;
                let io = MonoioIo::new(stream.into_poll_io().map_err(|e| e.to_string())?);
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, responder)
                    .await
                    .map_err(|e| e.to_string())
            }
        };
        // The accept loops are woken only once the load is over.
        let (client, outcomes) = run_threads(
            job.connections,
            serve,
            |addr| job.spawn_client(addr),
            |client| {
                let waited = std::time::Instant::now();
                while !client.is_finished() && waited.elapsed() < BOUND {
                    thread::sleep(Duration::from_millis(1));
                }
                client
            },
        )?;
        let mut errors = ConnectionErrors::default();
        for outcome in outcomes {
            errors.check("serving a connection", outcome);
        }
        client.join(errors)
    }
}
