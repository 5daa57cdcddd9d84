//! The HTTP/1.1 load generator: plain blocking `std::net` client threads, identical for every
//! contender, so only the server differs between columns.
//!
//! Rules the servers rely on, and what a run checks:
//!
//! Z1. The load makes exactly `connections` connection attempts, split over [`THREADS`]
//!    threads, all before its first request (a failed attempt is an error, not a retry).
//!
//! Z2. Keep-alive, no pipelining: a round writes one request on each of a thread's
//!    connections, then reads each response in full; so with 64 connections the server has 64
//!    requests in flight at once, never more than one per connection.
//!
//! Z3. Every response is checked: status 200, a `Content-Length` equal to the payload's length
//!    (chunked encoding or `Connection: close` is an error), and the body byte for byte against
//!    the payload, every row and every response.
//!
//! Z4. A connection whose request or response fails counts one error and is closed; the other
//!    connections go on. A run with any error, the server's connection errors included, fails
//!    with the count and the first error: never a number.
//!
//! Z5. After untimed warm-up rounds every thread waits at a gate; the coordinator starts the
//!    meter and opens the gate, and exactly `rounds` rounds are timed. The threads allocate
//!    nothing inside the window (an error's message aside) and each measures its own CPU time
//!    there, reported as the sample's `load_cpu`.
//!
//! Z6. Then every connection is closed: end-of-stream on an idle keep-alive connection is the
//!    server's cue to finish.
//!
//! Z7. Every socket call has a generous timeout, so a broken server fails the run, never hangs it.

use std::fmt::Display;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::jobs::HttpJob;
use crate::sample::{Meter, NoSample, Outcome, Sample, expect_count, thread_cpu};

/// Rule Z1: client threads; two, so a server that needs less CPU per request leaves more of
/// the two cores to the load and shows it in throughput, not only in CPU time.
pub(crate) const THREADS: usize = 2;

/// Rule Z7: the longest any single socket call may block before the run is declared failed.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(30);

/// Rule Z5: untimed rounds before the timed window.
const WARMUP_ROUNDS: u64 = 8;

/// Each thread reads into one buffer of this size; a response head must fit in it.
const READ_BUFFER: usize = 64 * 1024;

/// Connection errors seen by one side of a run (rule Z4).
#[derive(Debug, Default)]
pub(crate) struct ConnectionErrors {
    count: u64,
    first: Option<String>,
}

impl ConnectionErrors {
    /// Counts one failed connection; the first one's message is kept for the report.
    pub(crate) fn record(&mut self, what: &str, error: impl Display) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(format!("{what}: {error}"));
        }
    }

    /// Counts `outcome` when it is an error.
    pub(crate) fn check(&mut self, what: &str, outcome: Result<(), impl Display>) {
        if let Err(error) = outcome {
            self.record(what, error);
        }
    }

    fn merge(&mut self, other: ConnectionErrors) {
        self.count += other.count;
        if self.first.is_none() {
            self.first = other.first;
        }
    }
}

/// What the coordinator hands back: the timed sample and every client-side error.
#[derive(Debug)]
struct Load {
    sample: Sample,
    errors: ConnectionErrors,
}

/// A running load generator.
#[derive(Debug)]
pub(crate) struct HttpClient {
    coordinator: JoinHandle<io::Result<Load>>,
}

impl HttpClient {
    /// Starts the coordinator (which starts the client threads) against `addr`.
    pub(crate) fn spawn(job: HttpJob, addr: SocketAddr) -> io::Result<Self> {
        let coordinator = thread::Builder::new()
            .name("http-load".into())
            .spawn(move || coordinate(&job, addr))?;
        Ok(Self { coordinator })
    }

    /// Whether the load is over (its sample is ready for [`join`](Self::join)).
    pub(crate) fn is_finished(&self) -> bool {
        self.coordinator.is_finished()
    }

    /// Waits for the load and returns its sample, or (rule Z4) the failure when the client or
    /// the `server` saw any connection error.
    pub(crate) fn join(self, server: ConnectionErrors) -> Outcome {
        let load = match self.coordinator.join() {
            Ok(Ok(load)) => load,
            Ok(Err(e)) => return Err(NoSample::Failed(format!("HTTP load: {e}"))),
            Err(_) => return Err(NoSample::Failed("HTTP load thread panicked".into())),
        };
        let (client, server_count) = (load.errors.count, server.count);
        let mut errors = load.errors;
        errors.merge(server);
        match errors.first {
            None => Ok(load.sample),
            Some(first) => Err(NoSample::Failed(format!(
                "{} connection errors ({client} client, {server_count} server); first: {first}",
                errors.count
            ))),
        }
    }
}

/// Rules Z1 and Z5: starts the threads, times the window between the gate and their end.
fn coordinate(job: &HttpJob, addr: SocketAddr) -> io::Result<Load> {
    let request: Arc<[u8]> = format!(
        "GET {} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: baton-bench\r\n\r\n",
        job.body.path()
    )
    .into_bytes()
    .into();
    let gate = Arc::new(Barrier::new(THREADS + 1));
    let mut threads = Vec::with_capacity(THREADS);
    for index in 0..THREADS {
        let share = job.connections / THREADS + usize::from(index < job.connections % THREADS);
        let (job, request, gate) = (job.clone(), Arc::clone(&request), Arc::clone(&gate));
        threads.push(
            thread::Builder::new()
                .name(format!("http-load-{index}"))
                .spawn(move || drive(addr, share, &job, &request, &gate))?,
        );
    }
    gate.wait();
    let meter = Meter::start();
    gate.wait();
    let (mut answered, mut load_cpu) = (0, Duration::ZERO);
    let mut errors = ConnectionErrors::default();
    for thread in threads {
        match thread.join() {
            Ok(part) => {
                answered += part.answered;
                load_cpu += part.cpu;
                errors.merge(part.errors);
            }
            Err(_) => errors.record("client thread", "panicked"),
        }
    }
    let mut sample = meter.finish(job.ops());
    sample.load_cpu = Some(load_cpu);
    if errors.count == 0 {
        expect_count("answered requests", answered, job.ops())?;
    }
    Ok(Load { sample, errors })
}

/// One client thread's share of the timed window.
#[derive(Debug)]
struct Part {
    answered: u64,
    errors: ConnectionErrors,
    cpu: Duration,
}

/// One client thread: connects its share, warms up, passes the gate twice on every path (so a
/// failed connection cannot leave the coordinator waiting), runs the timed rounds, closes.
fn drive(addr: SocketAddr, share: usize, job: &HttpJob, request: &[u8], gate: &Barrier) -> Part {
    let mut errors = ConnectionErrors::default();
    let mut conns: Vec<Option<TcpStream>> = (0..share)
        .map(|_| connect(addr).map_err(|e| errors.record("connect", e)).ok())
        .collect();
    let mut buf = vec![0_u8; READ_BUFFER];
    for _ in 0..WARMUP_ROUNDS.min(job.rounds) {
        round(&mut conns, request, &job.payload, &mut buf, &mut errors);
    }
    gate.wait();
    gate.wait();
    let cpu_at_start = thread_cpu();
    let mut answered = 0;
    for _ in 0..job.rounds {
        answered += round(&mut conns, request, &job.payload, &mut buf, &mut errors);
    }
    let cpu = thread_cpu().saturating_sub(cpu_at_start);
    // Rule Z6.
    drop(conns);
    Part {
        answered,
        errors,
        cpu,
    }
}

fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(SOCKET_TIMEOUT))?;
    stream.set_write_timeout(Some(SOCKET_TIMEOUT))?;
    Ok(stream)
}

/// Rules Z2 and Z4: a request out on every live connection, then every response in; returns
/// how many were answered correctly.
fn round(
    conns: &mut [Option<TcpStream>],
    request: &[u8],
    payload: &[u8],
    buf: &mut [u8],
    errors: &mut ConnectionErrors,
) -> u64 {
    for slot in conns.iter_mut() {
        if let Some(stream) = slot.as_mut()
            && let Err(e) = stream.write_all(request)
        {
            errors.record("request", e);
            *slot = None;
        }
    }
    let mut answered = 0;
    for slot in conns.iter_mut() {
        let Some(stream) = slot.as_mut() else {
            continue;
        };
        match read_response(stream, payload, buf) {
            Ok(()) => answered += 1,
            Err(e) => {
                errors.record("response", e);
                *slot = None;
            }
        }
    }
    answered
}

/// Rule Z3: reads one response and checks its head and every byte of its body against
/// `payload`, reading no further than the body's end.
fn read_response(stream: &mut impl Read, payload: &[u8], buf: &mut [u8]) -> io::Result<()> {
    let mut filled = 0;
    let head_end = loop {
        if filled == buf.len() {
            return Err(io::Error::other(
                "response head larger than the read buffer",
            ));
        }
        let n = stream.read(&mut buf[filled..])?;
        if n == 0 {
            return Err(io::Error::other(
                "connection closed before a whole response",
            ));
        }
        // The blank line may straddle two reads.
        let from = filled.saturating_sub(3);
        filled += n;
        if let Some(at) = buf[from..filled].windows(4).position(|w| w == b"\r\n\r\n") {
            break from + at + 4;
        }
    };
    let length = content_length(&buf[..head_end])?;
    if length != payload.len() {
        return Err(io::Error::other(format!(
            "Content-Length {length}, expected {}",
            payload.len()
        )));
    }
    let early = &buf[head_end..filled];
    if early.len() > length {
        return Err(io::Error::other(
            "bytes after the body (nothing was pipelined)",
        ));
    }
    let mut at = early.len();
    if *early != payload[..at] {
        return Err(io::Error::other("the body differs from the payload"));
    }
    while at < length {
        let want = (length - at).min(buf.len());
        let n = stream.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::other(format!(
                "connection closed after {at} of {length} body bytes"
            )));
        }
        if buf[..n] != payload[at..at + n] {
            return Err(io::Error::other(format!(
                "the body differs from the payload in bytes {at}..{}",
                at + n
            )));
        }
        at += n;
    }
    Ok(())
}

/// Rule Z3: the `Content-Length` of a response head (status line to the blank line), which
/// must say 200 and keep the connection open.
fn content_length(head: &[u8]) -> io::Result<usize> {
    let head = std::str::from_utf8(head)
        .map_err(|_| io::Error::other("the response head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default();
    if !status.starts_with("HTTP/1.1 200 ") {
        return Err(io::Error::other(format!(
            "status line `{status}`, expected `HTTP/1.1 200 ..`"
        )));
    }
    let mut length = None;
    for line in lines.filter(|line| !line.is_empty()) {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| io::Error::other(format!("malformed header line `{line}`")))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let parsed = value
                .parse()
                .map_err(|_| io::Error::other(format!("Content-Length `{value}`")))?;
            length = Some(parsed);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(io::Error::other(format!(
                "Transfer-Encoding `{value}` instead of a Content-Length"
            )));
        } else if name.eq_ignore_ascii_case("connection") && value.eq_ignore_ascii_case("close") {
            return Err(io::Error::other("`Connection: close` on a keep-alive run"));
        }
    }
    length.ok_or_else(|| io::Error::other("a response without Content-Length"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::HttpBody;
    use std::net::TcpListener;

    /// A blocking keep-alive server (one thread per connection) answering every request with
    /// `payload` after applying `corrupt` to it, to check the client alone.
    fn server(connections: usize, corrupt: fn(&mut Vec<u8>)) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("loopback bind");
        let addr = listener.local_addr().expect("bound address");
        thread::spawn(move || {
            for _ in 0..connections {
                let Ok((mut stream, _)) = listener.accept() else {
                    return;
                };
                thread::spawn(move || {
                    let mut request = Vec::new();
                    let mut byte = [0_u8; 1];
                    while stream.read(&mut byte).is_ok_and(|n| n == 1) {
                        request.push(byte[0]);
                        if request.ends_with(b"\r\n\r\n") {
                            request.clear();
                            let mut body = HttpBody::File { len: 3000 }.bytes().to_vec();
                            corrupt(&mut body);
                            let head = format!(
                                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n",
                                body.len()
                            );
                            let sent = stream
                                .write_all(head.as_bytes())
                                .and_then(|()| stream.write_all(&body));
                            if sent.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    fn job() -> HttpJob {
        HttpJob::new(HttpBody::File { len: 3000 }, 5, 12)
    }

    #[test]
    fn load_times_every_checked_response_on_every_connection() {
        let job = job();
        let client = HttpClient::spawn(job.clone(), server(5, |_| ())).expect("spawn");
        let sample = client
            .join(ConnectionErrors::default())
            .expect("a correct server passes");
        assert_eq!(sample.ops, 60);
        assert!(sample.load_cpu.is_some());
    }

    #[test]
    fn a_wrong_body_fails_the_run_and_counts_every_connection() {
        let client = HttpClient::spawn(job(), server(5, |body| body[2999] ^= 1)).expect("spawn");
        let Err(NoSample::Failed(why)) = client.join(ConnectionErrors::default()) else {
            panic!("a corrupted body must fail the run");
        };
        assert!(
            why.starts_with("5 connection errors (5 client, 0 server)"),
            "{why}"
        );
        assert!(why.contains("the body differs"), "{why}");
    }

    #[test]
    fn server_errors_fail_a_run_the_client_found_clean() {
        let client = HttpClient::spawn(job(), server(5, |_| ())).expect("spawn");
        let mut server = ConnectionErrors::default();
        server.check("serve", Err::<(), _>("reset"));
        server.check("serve", Ok::<(), &str>(()));
        let Err(NoSample::Failed(why)) = client.join(server) else {
            panic!("a server-side error must fail the run");
        };
        assert!(
            why.starts_with("1 connection errors (0 client, 1 server)"),
            "{why}"
        );
    }

    #[test]
    fn heads_without_keep_alive_or_length_are_refused() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 27\r\ndate: x\r\n\r\n";
        assert_eq!(content_length(ok).expect("valid head"), 27);
        for bad in [
            &b"HTTP/1.1 404 Not Found\r\ncontent-length: 3\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ndate: x\r\n\r\n",
        ] {
            assert!(
                content_length(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// A reader that hands out at most 7 bytes per call, as a slow socket might.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(7).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_response_split_over_reads_is_compared_in_full() {
        let payload = HttpBody::File { len: 1000 }.bytes();
        let mut response = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".to_vec();
        response.extend_from_slice(&payload);
        let mut buf = [0_u8; 64];
        read_response(&mut Trickle(&response), &payload, &mut buf).expect("the body matches");
        let mut corrupted = response.clone();
        corrupted[900] ^= 0xFF;
        assert!(read_response(&mut Trickle(&corrupted), &payload, &mut buf).is_err());
        let short = &response[..500];
        let err = read_response(&mut Trickle(short), &payload, &mut buf).expect_err("short");
        assert!(err.to_string().contains("closed after"), "{err}");
    }
}
