//! Operations polled and dropped on foreign threads (forward rules F1–F6).

mod support;

use std::io::Write;
use std::sync::Arc;
use std::task::Poll;
use std::thread;

use baton_uring::{Error, Op, Park, ops};
use support::{
    Probe, TempFile, assert_only_ours, block_on_thread, entered_driver, held_place, pair,
    pending_recv, poll_once, ring_serial, turn_until,
};

type Recv = Op<(std::io::Result<usize>, Vec<u8>)>;

/// Polls `op` once on a new thread and hands it back.
fn poll_on_other_thread(op: Recv, probe: &Arc<Probe>) -> Recv {
    let probe = probe.clone();
    thread::spawn(move || {
        let mut op = op;
        let waker = Probe::waker(&probe);
        assert!(poll_once(&mut op, &waker).is_pending());
        op
    })
    .join()
    .expect("poller thread")
}

/// Awaits `op` on a new thread while the owner turns the driver.
fn finish_on_other_thread(
    driver: &baton_uring::Driver,
    op: Recv,
    mut owner_step: impl FnMut(),
) -> (std::io::Result<usize>, Vec<u8>) {
    let handle = thread::spawn(move || block_on_thread(op));
    turn_until(driver, || {
        owner_step();
        handle.is_finished()
    });
    handle.join().expect("awaiting thread")
}

#[derive(Clone, Copy, Debug)]
enum Stage {
    Queued,
    InFlight,
    Completed,
}

/// The three `foreign_poll_*` tests: a receive brought to `stage` here, then polled to its end
/// on another thread; skips (loudly) without io_uring.
fn foreign_poll_completes_there(stage: Stage) {
    entered_driver!(driver = support::driver(2));
    let (sock, mut peer) = pair();
    let (probe, waker) = Probe::with_waker();
    let op = pending_recv(&sock, 4, &waker);
    match stage {
        // Registered, not yet submitted: the next turn would push it into the ring.
        Stage::Queued => assert_eq!(driver.metrics().queued, 1),
        Stage::InFlight | Stage::Completed => {
            let _ = driver.turn(Park::Poll);
            assert_eq!(driver.metrics().in_flight, 1);
            if let Stage::Completed = stage {
                peer.write_all(b"done").expect("write");
                turn_until(&driver, || driver.metrics().in_flight == 0);
            }
        }
    }
    let mut wrote = matches!(stage, Stage::Completed);
    let (n, buf) = finish_on_other_thread(&driver, op, || {
        if !wrote {
            peer.write_all(b"done").expect("write");
            wrote = true;
        }
    });
    assert_eq!(&buf[..n.expect("forwarded recv")], b"done");
    assert!(driver.metrics().forwarded >= 1);
    turn_until(&driver, || driver.metrics().slots == 0);
    Probe::assert_released(&probe, waker);
    assert_eq!(Arc::strong_count(&sock), 1);
}

#[test]
fn foreign_poll_of_a_queued_op_completes_there() {
    foreign_poll_completes_there(Stage::Queued);
}

#[test]
fn foreign_poll_of_an_in_flight_op_completes_there() {
    foreign_poll_completes_there(Stage::InFlight);
}

#[test]
fn foreign_poll_of_a_completed_op_completes_there() {
    foreign_poll_completes_there(Stage::Completed);
}

#[test]
fn op_polled_on_a_foreign_thread_completes_back_on_the_owner() {
    entered_driver!(driver = support::driver(2));
    let (sock, mut peer) = pair();
    let (owner_probe, owner_waker) = Probe::with_waker();
    let foreign_probe = Probe::new();
    let op = pending_recv(&sock, 4, &owner_waker);
    let mut op = poll_on_other_thread(op, &foreign_probe);
    assert!(
        poll_once(&mut op, &owner_waker).is_pending(),
        "polled again on the owner"
    );
    peer.write_all(b"home").expect("write");
    turn_until(&driver, || owner_probe.wakes() >= 1);
    let Poll::Ready((n, buf)) = poll_once(&mut op, &owner_waker) else {
        panic!("the owner sees the result")
    };
    assert_eq!(&buf[..n.expect("recv")], b"home");
    drop((op, owner_waker));
    assert_only_ours(&owner_probe, &foreign_probe);
    assert_eq!(Arc::strong_count(&sock), 1);
}

#[test]
fn op_polled_on_a_foreign_thread_completes_on_a_third_thread() {
    entered_driver!(driver = support::driver(2));
    let (sock, mut peer) = pair();
    let probe = Probe::new();
    let op = ops::recv(sock.clone(), Vec::with_capacity(4));
    let waker = Probe::waker(&probe);
    let mut op = op;
    assert!(poll_once(&mut op, &waker).is_pending());
    let op = poll_on_other_thread(op, &probe);
    let (n, buf) = finish_on_other_thread(&driver, op, || {
        let _ = peer.write(b"3rd");
    });
    assert_eq!(&buf[..n.expect("recv")], b"3rd");
    Probe::assert_released(&probe, waker);
}

#[test]
fn op_built_on_a_foreign_thread_registers_through_the_mailbox() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(2);
    let file = TempFile::new("foreignreg", b"from afar");
    let handle = driver.handle();
    let fd = file.fd.clone();
    let op = thread::spawn(move || {
        block_on_thread(ops::read_at(fd, Vec::with_capacity(4), 5).bind(&handle))
    });
    turn_until(&driver, || op.is_finished());
    let (n, buf) = op.join().expect("thread");
    assert_eq!(&buf[..n.expect("read")], b"afar");
    assert_eq!(Arc::strong_count(&file.fd), 1);
}

#[test]
fn local_drop_overtakes_a_queued_forward_and_the_slot_is_reused_under_a_new_generation() {
    entered_driver!(driver = support::driver(2));
    let (sock, mut peer) = pair();
    let probe = Probe::new();
    let foreign_probe = Probe::new();
    let waker = Probe::waker(&probe);
    let op = pending_recv(&sock, 4, &waker);
    let old_key = op.key().expect("registered");
    // The foreign poll queues a Forward message; the owner has not turned since.
    let op = poll_on_other_thread(op, &foreign_probe);
    drop(op);
    let mut next = pending_recv(&sock, 4, &waker);
    let new_key = next.key().expect("registered");
    assert_eq!(new_key.index(), old_key.index(), "the slot is reused");
    assert_ne!(new_key.generation(), old_key.generation());
    let stale_before = driver.metrics().stale_messages;
    let _ = driver.turn(Park::Poll);
    assert_eq!(
        driver.metrics().stale_messages,
        stale_before + 1,
        "the forward was ignored"
    );
    peer.write_all(b"new").expect("write");
    turn_until(&driver, || probe.wakes() >= 1);
    let Poll::Ready((n, buf)) = poll_once(&mut next, &waker) else {
        panic!("the new occupant completes normally")
    };
    assert_eq!(&buf[..n.expect("recv")], b"new");
    assert_eq!(
        foreign_probe.wakes(),
        0,
        "the stale handle's waker never fires"
    );
    drop(waker);
    turn_until(&driver, || driver.metrics().slots == 0);
    assert_only_ours(&probe, &foreign_probe);
    assert_eq!(Arc::strong_count(&sock), 1);
}

#[test]
fn write_dropped_on_a_foreign_thread_still_lands_on_disk() {
    entered_driver!(driver = support::driver_limited(1, 1));
    let file = TempFile::new("foreigndrop", b"");
    // The open holds the one in-flight place, so the write stays queued while it is dropped.
    let (fifo, _probe, waker, first) = held_place("foreigndrop");
    let mut write = ops::write_at(file.fd.clone(), b"landed".to_vec(), 0);
    assert!(poll_once(&mut write, &waker).is_pending());
    let _ = driver.turn(Park::Poll);
    assert_eq!(driver.metrics().queued, 1, "the write waits for the place");
    thread::spawn(move || drop(write)).join().expect("dropper");
    let _writer = fifo.release().expect("the open waits for a writer");
    turn_until(&driver, || driver.metrics().completed >= 2);
    assert_eq!(std::fs::read(&file.path).expect("read back"), b"landed");
    drop(first);
    turn_until(&driver, || driver.metrics().slots == 0);
    assert_eq!(Arc::strong_count(&file.fd), 1);
}

#[test]
fn op_that_escaped_its_runner_resolves_to_closed_with_another_executor() {
    let Some(_s) = ring_serial() else { return };
    let (sock, _peer) = pair();
    let escaped = {
        let driver = support::driver(2);
        let _entered = driver.enter();
        let (_probe, waker) = Probe::with_waker();
        let op = pending_recv(&sock, 4, &waker);
        drop(_entered);
        let report = driver.shutdown(None);
        assert!(report.drained, "{report:?}");
        op
    };
    let (n, _) = thread::spawn(move || block_on_thread(escaped))
        .join()
        .expect("thread");
    assert!(Error::is_closed(&n.expect_err("closed")));
    assert_eq!(Arc::strong_count(&sock), 1);
}

#[test]
fn op_built_for_a_dropped_driver_resolves_to_closed() {
    if !support::ring_available() {
        return;
    }
    let driver = support::driver(2);
    let handle = driver.handle();
    drop(driver);
    assert!(handle.is_closed());
    let out = block_on_thread(ops::nop().bind(&handle));
    assert!(Error::is_closed(&out.expect_err("closed")));
}

/// `bind_borrowed` holds no count on the driver, so every path that needs the mailbox (a
/// foreign registration, a forward, a foreign drop of a local or a forwarded operation, an
/// explicit foreign cancel, a foreign registration's deadline) must still reach the driver
/// through the borrowed handle.
#[test]
fn borrowed_binding_registers_forwards_and_cancels_through_the_mailbox() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(4);
    let handle = driver.handle();
    let (sock, mut peer) = pair();
    let probe = Probe::new();
    thread::scope(|scope| {
        // A foreign registration: the operation is built and awaited on another thread.
        let remote = scope.spawn(|| {
            block_on_thread(ops::recv(sock.clone(), Vec::with_capacity(4)).bind_borrowed(&handle))
        });
        peer.write_all(b"far").expect("write");
        turn_until(&driver, || remote.is_finished());
        let (n, buf) = remote.join().expect("remote thread");
        assert_eq!(&buf[..n.expect("recv")], b"far");

        // Registered locally, then finished on another thread through a forward.
        let waker = Probe::waker(&probe);
        let register_here = || {
            let mut op = ops::recv(sock.clone(), Vec::with_capacity(4)).bind_borrowed(&handle);
            let _entered = driver.enter();
            assert!(poll_once(&mut op, &waker).is_pending());
            op
        };
        let op = register_here();
        assert!(op.key().is_some(), "registered locally");
        let finisher = scope.spawn(move || block_on_thread(op));
        peer.write_all(b"fwd").expect("write");
        turn_until(&driver, || finisher.is_finished());
        let (n, buf) = finisher.join().expect("finishing thread");
        assert_eq!(&buf[..n.expect("recv")], b"fwd");

        // Registered locally, dropped on another thread: the cancel retires the slot.
        let op = register_here();
        scope
            .spawn(move || drop(op))
            .join()
            .expect("dropping thread");
        turn_until(&driver, || driver.metrics().slots == 0);

        // Forwarded (polled on one thread), then dropped on another: the forward is abandoned
        // and the request detached through the borrowed handle.
        let mut op = register_here();
        let foreign_waker = Probe::waker(&probe);
        let op = scope
            .spawn(move || {
                assert!(poll_once(&mut op, &foreign_waker).is_pending());
                op
            })
            .join()
            .expect("forwarding thread");
        scope
            .spawn(move || drop(op))
            .join()
            .expect("dropping thread");
        turn_until(&driver, || driver.metrics().slots == 0);

        // An explicit cancel from another thread reaches the driver as a message.
        let op = register_here();
        let cancelled = scope.spawn(move || {
            op.cancel();
            block_on_thread(op)
        });
        turn_until(&driver, || cancelled.is_finished());
        let (res, _) = cancelled.join().expect("cancelling thread");
        assert_eq!(
            res.expect_err("cancelled").raw_os_error(),
            Some(libc::ECANCELED)
        );

        // A deadline on a foreign registration still fires.
        let timed = scope.spawn(|| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_millis(30);
            block_on_thread(
                ops::recv(sock.clone(), Vec::with_capacity(4))
                    .bind_borrowed(&handle)
                    .with_deadline(deadline),
            )
        });
        turn_until(&driver, || timed.is_finished());
        let (res, _) = timed.join().expect("timed thread");
        assert_eq!(
            res.expect_err("timed out").kind(),
            std::io::ErrorKind::TimedOut
        );
        turn_until(&driver, || driver.metrics().slots == 0);
        drop(waker);
    });
    assert_eq!(Arc::strong_count(&probe), 1, "no waker left behind");
    assert_eq!(Arc::strong_count(&sock), 1, "no descriptor left behind");
}
