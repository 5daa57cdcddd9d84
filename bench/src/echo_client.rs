//! The TCP echo load generator: one plain blocking `std::net` client thread, identical for every
//! contender, so only the server differs between columns.
//!
//! Rules the servers rely on:
//!
//! G1. The client makes exactly `connections` connection attempts, all before its first message.
//!
//! G2. A round writes one message on every connection, then reads every echo in full and checks
//!    its bytes; so with 64 connections the server has 64 messages in flight at once.
//!
//! G3. After a short untimed warm-up, exactly `rounds` rounds are timed; the client allocates
//!    nothing inside the timed window.
//!
//! G4. Then the client closes every connection: end-of-stream is the server's cue to finish.
//!
//! G5. Every socket call has a generous timeout, so a broken server fails the run, never hangs it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::jobs::EchoJob;
use crate::sample::{Meter, NoSample, Sample, join_sample};

/// Rule G5: the longest any single socket call may block before the run is declared failed.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(30);

/// Rule G3: untimed rounds before the timed window.
const WARMUP_ROUNDS: u64 = 16;

/// A running client thread.
#[derive(Debug)]
pub(crate) struct EchoClient {
    thread: JoinHandle<io::Result<Sample>>,
}

impl EchoClient {
    /// Starts the client against `addr`.
    pub(crate) fn spawn(job: EchoJob, addr: SocketAddr) -> io::Result<Self> {
        let thread = thread::Builder::new()
            .name("echo-client".into())
            .spawn(move || run(job, addr))?;
        Ok(Self { thread })
    }

    /// Waits for the client and returns its timed sample.
    pub(crate) fn join(self) -> Result<Sample, NoSample> {
        join_sample(self.thread, "echo client")
    }
}

fn run(job: EchoJob, addr: SocketAddr) -> io::Result<Sample> {
    // Rule G1: every attempt is made even if an earlier one failed, so the server's accept count
    // is met whenever the listener itself works.
    let attempts: Vec<io::Result<TcpStream>> = (0..job.connections)
        .map(|_| TcpStream::connect(addr))
        .collect();
    let mut streams = Vec::with_capacity(job.connections);
    for attempt in attempts {
        streams.push(attempt?);
    }
    for stream in &streams {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(SOCKET_TIMEOUT))?;
        stream.set_write_timeout(Some(SOCKET_TIMEOUT))?;
    }
    let message: Vec<u8> = (0..job.message_len).map(|i| (i % 253) as u8).collect();
    let mut echo = vec![0_u8; job.message_len];
    for _ in 0..WARMUP_ROUNDS.min(job.rounds) {
        round(&mut streams, &message, &mut echo)?;
    }
    let meter = Meter::start();
    for _ in 0..job.rounds {
        round(&mut streams, &message, &mut echo)?;
    }
    let sample = meter.finish(job.ops());
    // Rule G4: closing the connections ends the server's connection tasks.
    drop(streams);
    Ok(sample)
}

/// Rule G2: one message out on every connection, then every echo back in full.
fn round(streams: &mut [TcpStream], message: &[u8], echo: &mut [u8]) -> io::Result<()> {
    for stream in streams.iter_mut() {
        stream.write_all(message)?;
    }
    for stream in streams.iter_mut() {
        stream.read_exact(echo)?;
        if echo != message {
            return Err(io::Error::other("the server echoed different bytes"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A minimal blocking echo server (one thread per connection), to check the client alone.
    fn echo_server(connections: usize) -> (SocketAddr, JoinHandle<io::Result<()>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("loopback bind");
        let addr = listener.local_addr().expect("bound address");
        let server = thread::spawn(move || {
            let mut workers = Vec::new();
            for _ in 0..connections {
                let (mut stream, _) = listener.accept()?;
                workers.push(thread::spawn(move || -> io::Result<()> {
                    let mut buf = [0_u8; 8192];
                    loop {
                        let n = stream.read(&mut buf)?;
                        if n == 0 {
                            return Ok(());
                        }
                        stream.write_all(&buf[..n])?;
                    }
                }));
            }
            for worker in workers {
                worker
                    .join()
                    .map_err(|_| io::Error::other("worker panicked"))??;
            }
            Ok(())
        });
        (addr, server)
    }

    #[test]
    fn client_times_every_message_on_every_connection() {
        let job = EchoJob {
            connections: 3,
            message_len: 4096,
            rounds: 20,
        };
        let (addr, server) = echo_server(job.connections);
        let sample = EchoClient::spawn(job, addr)
            .expect("spawn client")
            .join()
            .expect("the echo run succeeds");
        assert_eq!(sample.ops, 60);
        server
            .join()
            .expect("server thread")
            .expect("server saw every connection close cleanly");
    }

    #[test]
    fn client_fails_when_nothing_listens() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("loopback bind");
        let addr = listener.local_addr().expect("bound address");
        drop(listener);
        let job = EchoJob {
            connections: 1,
            message_len: 64,
            rounds: 1,
        };
        let result = EchoClient::spawn(job, addr).expect("spawn client").join();
        assert!(matches!(result, Err(NoSample::Failed(_))));
    }
}
