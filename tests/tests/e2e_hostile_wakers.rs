//! End to end: a waker of another executor that panics when the worker wakes (or drops) it is
//! contained. The operation still retires, the panic is counted, and the runtime keeps
//! running: spawns run, I/O completes, shutdown stays clean.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use baton::net::UnixStream;

/// A waker whose every wake panics, counting the attempts.
struct Hostile(AtomicUsize);

impl Wake for Hostile {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("a foreign executor's waker panics in wake");
    }
}

#[test]
fn a_panicking_foreign_waker_on_a_forwarded_read_leaves_the_runtime_running() {
    let rt = baton::Runtime::new().expect("runtime");
    let handle = rt.handle();
    let (ours, peer) = rt.block_on(async { UnixStream::pair() }).expect("pair");
    let hostile = Arc::new(Hostile(AtomicUsize::new(0)));
    // Poll the read once on a thread that is not the worker's, with the hostile waker: the
    // read is forwarded, and the worker wakes that waker when the bytes arrive.
    let woken = Arc::clone(&hostile);
    let (polled, first_poll_done) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let waker = Waker::from(woken);
        let mut cx = Context::from_waker(&waker);
        let mut read = pin!(ours.read(Vec::with_capacity(8)));
        assert!(read.as_mut().poll(&mut cx).is_pending());
        let _sent = polled.send(());
        let start = std::time::Instant::now();
        loop {
            if let Poll::Ready((res, buf)) = read.as_mut().poll(&mut cx) {
                return buf[..res.expect("the read succeeds")].to_vec();
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the read never completed"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    // The bytes go out only once the read is pending there, so its first poll cannot see them.
    first_poll_done
        .recv_timeout(Duration::from_secs(30))
        .expect("the reader polled once");
    let wrote = rt.block_on(async { peer.write_all(b"ping".to_vec()).await.0 });
    wrote.expect("write");
    assert_eq!(reader.join().expect("reader thread"), b"ping");
    let start = std::time::Instant::now();
    while hostile.0.load(Ordering::SeqCst) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the waker was never woken"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(!handle.is_shutting_down());
    let spawned = handle.spawn(async { 6 * 7 });
    assert_eq!(rt.block_on(spawned).ok(), Some(42), "spawns still run");
    let echoed = rt.block_on(async {
        let (a, b) = UnixStream::pair()?;
        a.write_all(b"pong".to_vec()).await.0?;
        let (res, buf) = b.read(Vec::with_capacity(8)).await;
        res.map(|n| buf[..n].to_vec())
    });
    assert_eq!(echoed.expect("I/O still completes"), b"pong");
    let metrics = rt.metrics();
    assert_eq!(metrics.waker_panics, 1, "{metrics:?}");
    let report = rt.shutdown_timeout(Duration::from_secs(5));
    assert!(report.is_clean(), "{report:?}");
}
