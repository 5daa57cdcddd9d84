//! End to end: socket writes are retained (SPEC §3, "Cancellation on drop"). A `write` whose
//! future is dropped — by a `timeout` while the peer's window is full, or before the ring even
//! submitted it — still sends its bytes; the stream's next write waits for it, so the bytes keep
//! their order; a shutdown of the write side waits for it too; and a runtime shut down with such
//! a write stuck behind a peer that never reads does not hang.

use std::io::Read;
use std::os::unix::net::UnixStream as StdUnixStream;
use std::time::Duration;

use baton::net::{TcpListener, UnixStream};

/// Fills `a`'s send buffer (and the peer's receive buffer) until the kernel takes no more;
/// returns how many bytes that took.
fn fill(a: &StdUnixStream) -> usize {
    a.set_nonblocking(true).expect("nonblocking");
    let mut filled = 0;
    while let Ok(n) = std::io::Write::write(&mut &*a, &[b'.'; 4096]) {
        filled += n;
    }
    a.set_nonblocking(false).expect("blocking");
    filled
}

/// Reads `b` on a thread until the end of the stream (or a generous quiet period).
fn drain(b: StdUnixStream) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        b.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("read timeout");
        let mut got = Vec::new();
        let _ = (&b).read_to_end(&mut got);
        got
    })
}

#[test]
fn a_write_dropped_by_a_timeout_on_a_full_socket_still_goes_out_in_order() {
    let rt = baton::Runtime::new().expect("runtime");
    let (a, b) = StdUnixStream::pair().expect("pair");
    let filled = fill(&a);
    let got = rt.block_on(async {
        let a = UnixStream::from_std(a).expect("adopt");
        let timed_out =
            baton::time::timeout(Duration::from_millis(20), a.write(b"MARKER".to_vec())).await;
        assert!(
            timed_out.is_err(),
            "the peer reads nothing, so the write waits"
        );
        let reader = drain(b);
        // The next write must not overtake the dropped one.
        let (res, _) = a.write_all(b"-AFTER".to_vec()).await;
        res.expect("write after the dropped one");
        a.shutdown().await.expect("shutdown");
        drop(a);
        baton::blocking::spawn_blocking(move || reader.join().expect("reader"))
            .await
            .expect("join")
    });
    assert_eq!(got.len(), filled + 12, "every byte arrives exactly once");
    assert!(
        got.ends_with(b"MARKER-AFTER"),
        "the dropped write's bytes come before the next write's: {:?}",
        String::from_utf8_lossy(&got[got.len().saturating_sub(12)..])
    );
}

#[test]
fn a_write_dropped_before_it_was_submitted_still_goes_out() {
    let rt = baton::Runtime::new().expect("runtime");
    let (a, b) = StdUnixStream::pair().expect("pair");
    let got = rt.block_on(async {
        let a = UnixStream::from_std(a).expect("adopt");
        let reader = drain(b);
        {
            // Polled once (registered), then dropped before any turn submitted it.
            let write = std::pin::pin!(a.write(b"queued".to_vec()));
            let waker = std::task::Waker::noop();
            let polled = write.poll(&mut std::task::Context::from_waker(waker));
            assert!(
                polled.is_pending(),
                "a ring write is not done at its first poll"
            );
        }
        drop(a);
        baton::blocking::spawn_blocking(move || reader.join().expect("reader"))
            .await
            .expect("join")
    });
    assert_eq!(got, b"queued");
}

#[test]
fn a_tcp_write_all_then_drop_delivers_every_byte() {
    let rt = baton::Runtime::new().expect("runtime");
    let body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let expected = body.clone();
    let got = rt.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let reader = std::thread::spawn(move || {
            let mut peer = std::net::TcpStream::connect(addr).expect("connect");
            peer.set_read_timeout(Some(Duration::from_secs(10)))
                .expect("read timeout");
            // Let the writer find the window full before reading.
            std::thread::sleep(Duration::from_millis(50));
            let mut got = Vec::new();
            let _ = peer.read_to_end(&mut got);
            got
        });
        let (stream, _) = listener.accept().await.expect("accept");
        let (res, _) = stream.write_all(body).await;
        res.expect("write_all");
        drop(stream);
        baton::blocking::spawn_blocking(move || reader.join().expect("reader"))
            .await
            .expect("join")
    });
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "the bytes arrive intact and in order");
}

#[test]
fn shutting_a_runtime_down_cancels_a_retained_write_a_peer_never_reads() {
    let (a, b) = StdUnixStream::pair().expect("pair");
    fill(&a);
    let rt = baton::Runtime::new().expect("runtime");
    rt.block_on(async {
        let a = UnixStream::from_std(a).expect("adopt");
        let timed_out =
            baton::time::timeout(Duration::from_millis(20), a.write(b"stuck".to_vec())).await;
        assert!(
            timed_out.is_err(),
            "the peer reads nothing, so the write waits"
        );
    });
    let report = rt.shutdown_timeout(Duration::from_secs(30));
    assert!(
        report.is_clean(),
        "a send waiting on a peer is cancelled at shutdown, not waited for: {report:?}"
    );
    drop(b);
}
