//! End to end: receives and accepts are cancel-safe. A `timeout` that drops a read or an
//! accept after the kernel completed it (or while the kernel completes it) loses nothing: the
//! socket keeps the bytes or the connection and hands them out, in order, on the next call.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use baton::net::{TcpListener, TcpStream, UnixStream};

/// A small deterministic generator (xorshift64*): the runs are repeatable from their seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// Overall bound of one scenario: a lost byte or connection fails instead of hanging.
const BOUND: Duration = Duration::from_secs(120);

/// What a peer thread sends: one byte at a time, each after the reader's timeout count moved
/// past its value at the previous byte and a random short pause, so every byte races a fresh
/// timeout and the reads are cut off at least once per byte however the threads are scheduled.
fn send_bytes_slowly(
    mut peer: impl Write,
    total: usize,
    seed: u64,
    fired: &AtomicUsize,
) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut sent = Vec::with_capacity(total);
    let start = Instant::now();
    for i in 0..total {
        let seen = fired.load(Ordering::Acquire);
        while fired.load(Ordering::Acquire) == seen {
            assert!(start.elapsed() < BOUND, "the reader stopped timing out");
            std::thread::sleep(Duration::from_micros(5));
        }
        let pause = rng.below(40);
        if pause > 0 {
            std::thread::sleep(Duration::from_micros(pause));
        }
        let byte = (i % 251) as u8;
        if peer.write_all(&[byte]).is_err() {
            break;
        }
        sent.push(byte);
    }
    sent
}

/// Reads with random timeouts of 1–60 µs until the end of the stream, counting each read cut
/// off by its timeout in `fired`; returns every byte read.
async fn read_through_timeouts<R>(mut read: R, seed: u64, fired: &AtomicUsize) -> Vec<u8>
where
    R: AsyncReadOnce,
{
    let mut rng = Rng::new(seed);
    let mut got = Vec::new();
    let start = Instant::now();
    loop {
        assert!(start.elapsed() < BOUND, "the reads did not finish in time");
        let limit = Duration::from_micros(1 + rng.below(60));
        match baton::time::timeout(limit, read.read_once(Vec::with_capacity(8))).await {
            Ok((Ok(0), _)) => return got,
            Ok((Ok(n), buf)) => got.extend_from_slice(&buf[..n]),
            Ok((Err(err), _)) => panic!("read failed: {err}"),
            Err(_elapsed) => {
                fired.fetch_add(1, Ordering::Release);
            }
        }
    }
}

/// The one read the scenarios share, over TCP and Unix streams.
trait AsyncReadOnce {
    fn read_once(
        &mut self,
        buf: Vec<u8>,
    ) -> impl Future<Output = (std::io::Result<usize>, Vec<u8>)>;
}

impl AsyncReadOnce for &TcpStream {
    fn read_once(
        &mut self,
        buf: Vec<u8>,
    ) -> impl Future<Output = (std::io::Result<usize>, Vec<u8>)> {
        self.read(buf)
    }
}

impl AsyncReadOnce for &UnixStream {
    fn read_once(
        &mut self,
        buf: Vec<u8>,
    ) -> impl Future<Output = (std::io::Result<usize>, Vec<u8>)> {
        self.read(buf)
    }
}

#[test]
fn tcp_reads_cut_off_by_timeouts_lose_no_byte() {
    const BYTES: usize = 6_000;
    let rt = baton::Runtime::new().expect("runtime");
    let fired = Arc::new(AtomicUsize::new(0));
    let fired_seen = Arc::clone(&fired);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let writer = std::thread::spawn(move || {
        let (peer, _) = listener.accept().expect("accept");
        let _ = peer.set_nodelay(true);
        let sent = send_bytes_slowly(&peer, BYTES, 7, &fired_seen);
        peer.shutdown(Shutdown::Write)
            .expect("shut down the write side");
        sent
    });
    let got = rt.block_on(async {
        let stream = TcpStream::connect(addr).await.expect("connect");
        read_through_timeouts(&stream, 11, &fired).await
    });
    let sent = writer.join().expect("writer thread");
    assert_eq!(sent.len(), BYTES, "the peer sent every byte");
    let fired = fired.load(Ordering::Acquire);
    assert!(
        fired >= BYTES,
        "a read was cut off before each byte ({fired} were)"
    );
    assert_eq!(got.len(), sent.len(), "every byte sent was read once");
    assert!(got == sent, "the bytes came back in order");
}

#[test]
fn unix_reads_cut_off_by_timeouts_lose_no_byte() {
    const BYTES: usize = 3_000;
    let rt = baton::Runtime::new().expect("runtime");
    let fired = Arc::new(AtomicUsize::new(0));
    let fired_seen = Arc::clone(&fired);
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socketpair");
    let writer = std::thread::spawn(move || {
        let sent = send_bytes_slowly(&theirs, BYTES, 13, &fired_seen);
        theirs
            .shutdown(Shutdown::Write)
            .expect("shut down the write side");
        sent
    });
    let got = rt.block_on(async {
        let stream = UnixStream::from_std(ours).expect("adopt the stream");
        read_through_timeouts(&stream, 17, &fired).await
    });
    let sent = writer.join().expect("writer thread");
    assert_eq!(sent.len(), BYTES, "the peer sent every byte");
    let fired = fired.load(Ordering::Acquire);
    assert!(
        fired >= BYTES,
        "a read was cut off before each byte ({fired} were)"
    );
    assert!(got == sent, "every byte sent was read once, in order");
}

#[test]
fn accepts_cut_off_by_timeouts_lose_no_connection_and_reset_none() {
    const CLIENTS: usize = 200;
    let rt = baton::Runtime::new().expect("runtime");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let fired = Arc::new(AtomicUsize::new(0));
    let fired_seen = Arc::clone(&fired);
    // Each client connects once the server's timeout count moved past its value at the
    // previous client and after a random short pause, so every connection races a fresh
    // timeout however the threads are scheduled; it sends its number and waits for the echo.
    // A connection the server lost would be reset (or never answered).
    let clients = std::thread::spawn(move || {
        let mut rng = Rng::new(19);
        let mut threads = Vec::new();
        let start = Instant::now();
        for id in 0..CLIENTS {
            let seen = fired_seen.load(Ordering::Acquire);
            while fired_seen.load(Ordering::Acquire) == seen {
                assert!(start.elapsed() < BOUND, "the server stopped timing out");
                std::thread::sleep(Duration::from_micros(5));
            }
            std::thread::sleep(Duration::from_micros(rng.below(300)));
            threads.push(std::thread::spawn(move || -> Result<(), String> {
                let mut stream = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
                stream
                    .set_read_timeout(Some(BOUND))
                    .map_err(|e| e.to_string())?;
                let id = (id as u16).to_le_bytes();
                stream.write_all(&id).map_err(|e| format!("write: {e}"))?;
                let mut echo = [0; 2];
                stream
                    .read_exact(&mut echo)
                    .map_err(|e| format!("echo: {e}"))?;
                if echo != id {
                    return Err(format!("echoed {echo:?} for {id:?}"));
                }
                Ok(())
            }));
        }
        threads
            .into_iter()
            .map(|t| t.join().expect("client thread"))
            .collect::<Vec<_>>()
    });
    let accepted = rt.block_on(async {
        let mut rng = Rng::new(23);
        let mut accepted = 0;
        let start = Instant::now();
        let mut echoes = Vec::new();
        while accepted < CLIENTS {
            assert!(
                start.elapsed() < BOUND,
                "only {accepted} of {CLIENTS} connections were accepted"
            );
            let limit = Duration::from_micros(1 + rng.below(60));
            match baton::time::timeout(limit, listener.accept()).await {
                Ok(Ok((stream, _))) => {
                    accepted += 1;
                    echoes.push(baton::spawn(async move {
                        let (res, buf) = stream.read(vec![0; 2]).await;
                        let n = res?;
                        let (res, _) = stream.write_all(buf[..n].to_vec()).await;
                        res
                    }));
                }
                Ok(Err(err)) => panic!("accept failed: {err}"),
                Err(_elapsed) => {
                    fired.fetch_add(1, Ordering::Release);
                }
            }
        }
        for echo in echoes {
            echo.await.expect("echo task").expect("echo");
        }
        accepted
    });
    let outcomes = clients.join().expect("clients");
    assert_eq!(accepted, CLIENTS);
    let fired = fired.load(Ordering::Acquire);
    assert!(
        fired >= CLIENTS,
        "an accept was cut off before each connection ({fired} were)"
    );
    let failed: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(failed.is_empty(), "clients failed: {failed:?}");
}
