//! Closure, shutdown and detached syncs.

mod support;

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::task::Poll;

use baton_uring::{Error, Park, ops};
use support::{
    Fifo, Probe, TempFile, block_on_thread, entered_driver, held_place, pending_recv, poll_once,
    ring_serial, run, turn_until,
};
use web_time::Instant;

fn pair() -> (Arc<OwnedFd>, UnixStream) {
    let (a, b) = UnixStream::pair().expect("socketpair");
    (Arc::new(OwnedFd::from(a)), b)
}

#[test]
fn closure_rejects_new_ops_pending_polls_and_detached_syncs_with_closed() {
    entered_driver!(driver = support::driver_limited(1, 1));
    let file = TempFile::new("close", b"data");
    let (sock, _peer) = pair();
    let fifo = Fifo::new("close");
    let (probe, waker) = Probe::with_waker();
    // The receive waits on a peer (never limited); the open holds the one place for requests
    // that complete on their own, so the read and the sync behind it stay queued.
    let mut in_flight = pending_recv(&sock, 4, &waker);
    let mut blocker = fifo.hold_place(&waker);
    let mut queued = ops::read_at(file.fd.clone(), Vec::with_capacity(4), 0);
    assert!(poll_once(&mut queued, &waker).is_pending());
    let queued_sync = driver.start_sync(file.fd.clone(), false);
    let _ = driver.turn(Park::Poll);
    let m = driver.metrics();
    assert_eq!((m.in_flight, m.queued), (2, 2), "{m:?}");
    let wakes_before = probe.wakes();
    driver.close();
    assert!(probe.wakes() > wakes_before, "pending polls are woken");
    let Poll::Ready((n, buf)) = poll_once(&mut in_flight, &waker) else {
        panic!("a pending poll fails after closure")
    };
    assert!(Error::is_closed(&n.expect_err("closed")));
    assert!(buf.is_empty(), "the kernel still owns the in-flight buffer");
    let Poll::Ready((n, buf)) = poll_once(&mut queued, &waker) else {
        panic!("a queued op fails after closure")
    };
    assert!(Error::is_closed(&n.expect_err("closed")));
    assert!(buf.is_empty(), "closure released the queued request");
    let err = block_on_thread(queued_sync).expect_err("queued sync closed");
    assert!(Error::is_closed(&err));
    let err = block_on_thread(driver.start_sync(file.fd.clone(), true)).expect_err("new sync");
    assert!(Error::is_closed(&err));
    let mut fresh = ops::nop();
    let Poll::Ready(out) = poll_once(&mut fresh, &waker) else {
        panic!("a new op is refused at once")
    };
    assert!(Error::is_closed(&out.expect_err("refused")));
    let foreign = driver.handle();
    let out = block_on_thread(ops::nop().bind(&foreign));
    assert!(Error::is_closed(&out.expect_err("refused via the mailbox")));
    let Poll::Ready(opened) = poll_once(&mut blocker, &waker) else {
        panic!("the in-flight open fails after closure")
    };
    assert!(Error::is_closed(&opened.expect_err("closed")));
    // Closure cancelled the open; a writer ends it too, should the cancel lose the race.
    let _writer = fifo.try_release();
    turn_until(&driver, || {
        driver.metrics().in_flight == 0 && driver.metrics().slots == 0
    });
    drop((in_flight, blocker, queued, waker));
    assert_eq!(Arc::strong_count(&probe), 1);
    assert_eq!(
        (Arc::strong_count(&sock), Arc::strong_count(&file.fd)),
        (1, 1)
    );
}

#[test]
fn shutdown_cancels_and_drains_everything_and_releases_every_arc() {
    let Some(_s) = ring_serial() else { return };
    let file = TempFile::new("shutdown", b"");
    let (sock, _peer) = pair();
    let before = support::fd_count();
    let probe = Probe::new();
    let driver = support::driver(4);
    let (recv, write) = {
        let _entered = driver.enter();
        let waker = Probe::waker(&probe);
        let recv = pending_recv(&sock, 4, &waker);
        let mut write = ops::write_at(file.fd.clone(), b"kept".to_vec(), 0);
        assert!(poll_once(&mut write, &waker).is_pending());
        let mut sleep = ops::sleep(std::time::Duration::from_secs(60));
        assert!(poll_once(&mut sleep, &waker).is_pending());
        let _ = driver.turn(Park::Poll);
        (recv, write)
    };
    let report = driver.shutdown(Some(Instant::now() + std::time::Duration::from_secs(5)));
    assert!(report.drained && report.leaked == 0, "{report:?}");
    assert_eq!(
        std::fs::read(&file.path).expect("read back"),
        b"kept",
        "no write lost"
    );
    drop((recv, write));
    assert_eq!(Arc::strong_count(&probe), 1);
    assert_eq!(
        (Arc::strong_count(&sock), Arc::strong_count(&file.fd)),
        (1, 1)
    );
    assert_eq!(support::fd_count(), before, "ring and eventfd closed");
}

#[test]
fn detached_sync_returns_at_once_with_a_full_ring_and_clones_no_waker() {
    entered_driver!(driver = support::driver_limited(1, 1));
    let file = TempFile::new("sync", b"");
    let (fifo, probe, waker, blocker) = held_place("sync");
    let _ = driver.turn(Park::Poll);
    assert_eq!(
        driver.metrics().in_flight,
        1,
        "the in-flight limit is reached"
    );
    let clones = probe.clones();
    let receiver = driver.start_sync(file.fd.clone(), false);
    assert_eq!(probe.clones(), clones, "no waker was cloned");
    assert_eq!(driver.metrics().queued, 1, "the sync waits for a slot");
    // Dropping the receiver leaves the sync running.
    drop(receiver);
    let _writer = fifo.release().expect("the open waits for a writer");
    drop(blocker);
    let completed = driver.metrics().completed;
    turn_until(&driver, || driver.metrics().slots == 0);
    assert!(
        driver.metrics().completed >= completed + 2,
        "the open and the sync both reached the kernel"
    );
    Probe::assert_released(&probe, waker);
    assert_eq!(Arc::strong_count(&file.fd), 1);
}

#[test]
fn syncs_of_one_file_serialize_and_a_clean_file_syncs_without_submitting() {
    let Some(_s) = ring_serial() else { return };
    let file = TempFile::new("permit", b"");
    let driver = support::driver(8);
    let (n, _) = run(&driver, ops::write_at(file.fd.clone(), b"abc".to_vec(), 0));
    n.expect("write");
    let completed = driver.metrics().completed;
    let first = driver.start_sync(file.fd.clone(), false);
    let second = driver.start_sync(file.fd.clone(), false);
    {
        let _entered = driver.enter();
        let _ = driver.turn(Park::Poll);
    }
    // The turn submits the first sync; the kernel may finish it before the turn reaps. Either
    // way the two never run together: the second waits for the permit, or (when the first
    // already finished) got it with the file clean and completed without an SQE.
    let m = driver.metrics();
    match (m.in_flight, m.queued) {
        (1, 1) => {}
        (0, 0) => assert_eq!(m.completed, completed + 1, "one fsync ran: {m:?}"),
        _ => panic!("one sync holds the permit, the other waits: {m:?}"),
    }
    run(&driver, first).expect("first sync");
    run(&driver, second).expect("second sync");
    assert_eq!(
        driver.metrics().completed,
        completed + 1,
        "the second sync found the file clean and completed without an SQE"
    );
    let (n, _) = run(&driver, ops::write_at(file.fd.clone(), b"d".to_vec(), 3));
    n.expect("write");
    let completed = driver.metrics().completed;
    run(&driver, ops::fdatasync(file.fd.clone())).expect("sync after a write");
    assert_eq!(
        driver.metrics().completed,
        completed + 1,
        "a dirty file is synced for real"
    );
    drop(driver);
    assert_eq!(Arc::strong_count(&file.fd), 1);
}

#[test]
fn unpark_from_another_thread_ends_a_wait() {
    entered_driver!(driver = support::driver(2));
    let unparker = driver.unparker();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(30));
        unparker.unpark();
    });
    let start = Instant::now();
    let report = driver.turn(Park::Wait(Some(
        Instant::now() + std::time::Duration::from_secs(10),
    )));
    assert!(report.unparked, "{report:?}");
    assert!(start.elapsed() < std::time::Duration::from_secs(9));
    t.join().expect("unparker thread");
    driver.unparker().unpark();
    let report = driver.turn(Park::Wait(None));
    assert!(report.unparked, "an unpark before the turn is not lost");
}
