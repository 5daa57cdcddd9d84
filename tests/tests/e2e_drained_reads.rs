//! End to end: a stream read after a short one starts as a readiness wait on the ring
//! (`IORING_RECVSEND_POLL_FIRST` where the kernel has it). Whether the peer's next bytes are
//! already queued when the read starts or arrive later, the read returns them, in order, and
//! does not wait for more.

use std::io::{self, Write};
use std::net::TcpStream as StdStream;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use baton::io::{BufResult, PollRead};
use baton::net::{TcpListener, TcpStream};

/// Each message is shorter than the read buffer, so every read comes back short and the next
/// one is started as a readiness wait.
const ROUNDS: u8 = 40;
const ROOM: usize = 64;

/// A peer thread that sends message `i` when told `i`; even rounds are sent before the server
/// reads (already queued), odd ones after a pause (the read waits for them).
fn peer(addr: std::net::SocketAddr) -> (mpsc::Sender<u8>, thread::JoinHandle<io::Result<()>>) {
    let (tell, told) = mpsc::channel::<u8>();
    let peer = thread::spawn(move || {
        let mut stream = StdStream::connect(addr)?;
        stream.set_nodelay(true)?;
        for round in told {
            if !round.is_multiple_of(2) {
                thread::sleep(Duration::from_millis(5));
            }
            stream.write_all(&[round; 3])?;
        }
        Ok(())
    });
    (tell, peer)
}

/// Sends the even rounds' bytes and waits for them to be queued at the server before it reads.
fn announce(tell: &mpsc::Sender<u8>, round: u8) {
    tell.send(round).expect("the peer thread runs");
    if round.is_multiple_of(2) {
        thread::sleep(Duration::from_millis(5));
    }
}

/// Runs the peer's rounds against `read`, one read per round, checking each round's bytes.
fn short_reads_in_rounds(
    read: impl AsyncFn(&TcpStream) -> BufResult<usize, Vec<u8>>,
) -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let (tell, peer) = peer(listener.local_addr()?);
        let (stream, _) = listener.accept().await?;
        for round in 0..ROUNDS {
            announce(&tell, round);
            let (got, buf) = read(&stream).await;
            assert_eq!(got?, 3, "round {round}");
            assert_eq!(buf, [round; 3], "round {round}");
        }
        drop(tell);
        peer.join().expect("the peer does not panic")
    })
}

#[test]
fn owned_reads_after_short_reads_get_queued_and_later_bytes() -> io::Result<()> {
    short_reads_in_rounds(async |stream| stream.read(Vec::with_capacity(ROOM)).await)
}

#[test]
fn poll_io_owned_reads_after_short_reads_get_queued_and_later_bytes() -> io::Result<()> {
    short_reads_in_rounds(async |stream| stream.read_owned(Vec::with_capacity(ROOM)).await)
}

/// A read started as a readiness wait and dropped before anything arrived ends cleanly, and
/// the next read gets the bytes sent afterwards.
#[test]
fn a_dropped_read_of_a_drained_socket_loses_nothing() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let (tell, peer) = peer(listener.local_addr()?);
        let (stream, _) = listener.accept().await?;
        announce(&tell, 0);
        let (got, _) = stream.read(Vec::with_capacity(ROOM)).await;
        assert_eq!(got?, 3);
        let waiting = stream.read(Vec::with_capacity(ROOM));
        assert!(
            baton::time::timeout(Duration::from_millis(2), waiting)
                .await
                .is_err(),
            "nothing was sent, so the read is still waiting"
        );
        announce(&tell, 2);
        let (got, buf) = stream.read(Vec::with_capacity(ROOM)).await;
        assert_eq!(got?, 3);
        assert_eq!(buf, [2; 3]);
        drop(tell);
        peer.join().expect("the peer does not panic")
    })
}
