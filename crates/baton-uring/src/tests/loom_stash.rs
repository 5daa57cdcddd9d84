//! Loom models of the stash rules: a receive dropped on a foreign thread while the owner
//! completes it. The stash's lock and counter, the forwarding cell's lock and the mailbox use
//! the crate's `sync` shim, so loom explores every interleaving of the foreign drop (ticket,
//! abandon, `Drop` message) with the owner's settle of the result.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::driver::{Driver, Park};
use crate::ops;
use crate::stash::Stash;
use crate::tests::sim::{SimRing, sim_ring};

/// A buffer whose spare capacity already holds `bytes`: the simulated kernel reports a count
/// without writing, so what it "received" is what the buffer held.
fn holding(bytes: &[u8]) -> Vec<u8> {
    let mut buf = bytes.to_vec();
    buf.clear();
    buf
}

/// Everything the stash hands out to a reader with room for 16 bytes at a time.
fn drain_stash(stash: &Stash) -> Vec<u8> {
    let mut got = Vec::new();
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        let mut buf = Vec::with_capacity(16);
        match stash.poll_take_bytes(&mut cx, &mut buf) {
            Poll::Ready(Some(n)) => got.extend_from_slice(&buf[..n]),
            Poll::Ready(None) => return got,
            Poll::Pending => panic!("a ticket is still outstanding after the drain"),
        }
    }
}

/// Turns until the driver holds no slot, answering any cancel as lost (the receive already
/// completed in the kernel).
fn settle_all(driver: &Driver, sim: &SimRing) {
    for _ in 0..8 {
        for target in sim.pending_cancels() {
            assert!(sim.resolve_cancel(target));
        }
        let _ = driver.turn(Park::Poll);
        if driver.metrics().slots == 0 {
            return;
        }
    }
    panic!(
        "the driver did not retire the receive: {:?}",
        driver.metrics()
    );
}

/// Proves stash rules S1–S3 with forward rule F7: a forwarded receive dropped on a foreign thread
/// while the owner completes it leaves its bytes in exactly one place — the handle's poll or
/// the stash — whichever of the
/// drop's steps (ticket, abandon, `Drop` message) and the owner's settle of the forwarded
/// result come first — including the interleaving where the result reaches the cell before
/// the abandon (the handle deposits it) and the one where the settle finds the cell abandoned
/// (the driver deposits it with the ticket the handle left in the cell). Afterwards no ticket
/// is outstanding and nothing else holds the stash.
#[test]
fn loom_foreign_drop_of_a_forwarded_receive_races_its_completion() {
    loom::model(|| {
        let (backend, sim) = sim_ring(4);
        let driver = Driver::with_backend(Box::new(backend), 4, None);
        // Loom threads need `'static` captures and the operation borrows its stash.
        let stash: &'static Arc<Stash> = Box::leak(Box::new(Arc::new(Stash::new())));
        let (ours, _theirs) = std::os::unix::net::UnixStream::pair().expect("socketpair");
        let fd = Arc::new(std::os::fd::OwnedFd::from(ours));
        let mut op = ops::recv(fd, holding(b"kept")).stash_late_result(stash);
        {
            let _entered = driver.enter();
            let mut cx = Context::from_waker(Waker::noop());
            assert!(Pin::new(&mut op).poll(&mut cx).is_pending());
        }
        let _ = driver.turn(Park::Poll);
        let target = sim.in_flight()[0];
        let foreign = loom::thread::spawn(move || {
            let mut op = op;
            // No driver is entered here: the poll forwards the handle, then it is dropped. The
            // owner may deliver the result between the two, so the poll may already have it.
            let mut cx = Context::from_waker(Waker::noop());
            let got = match Pin::new(&mut op).poll(&mut cx) {
                Poll::Ready((n, buf)) => buf[..n.expect("the receive succeeds")].to_vec(),
                Poll::Pending => Vec::new(),
            };
            drop(op);
            got
        });
        assert!(sim.complete(target, 4));
        let _ = driver.turn(Park::Poll);
        let mut got = foreign.join().expect("foreign thread");
        settle_all(&driver, &sim);
        got.extend(drain_stash(stash));
        assert_eq!(
            got, b"kept",
            "the bytes reached the handle or the stash, exactly once"
        );
        assert!(stash.is_idle(), "no ticket outstanding, nothing stashed");
        drop(driver);
        assert_eq!(Arc::strong_count(stash), 1, "nothing else holds the stash");
    });
}
