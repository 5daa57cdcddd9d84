//! Admission, deadlines, timers and drop semantics on a real ring of one entry.

mod support;

use std::future::Future;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;

use baton_uring::{Error, Park, ops};
use support::{
    Fifo, Probe, TempFile, assert_only_ours, entered_driver, held_place, pair, pending_recv,
    poll_once, ring_file_or_skip, ring_serial, run, turn_until,
};
use web_time::Instant;

/// `make()`'s op, once a first poll (with `waker`) found it waiting. An op whose deadline has
/// passed at its first poll (this thread ran late) times out at once without waiting at all,
/// so it is dropped and another made.
fn waiting<F: Future + Unpin>(waker: &Waker, mut make: impl FnMut() -> F) -> F {
    for _ in 0..1000 {
        let mut op = make();
        if poll_once(&mut op, waker).is_pending() {
            return op;
        }
    }
    panic!("no op was still waiting at its first poll");
}

#[test]
fn queued_request_completes_without_further_polls() {
    entered_driver!(driver = support::driver_limited(1, 1));
    let fifo = Fifo::new("queued");
    let probe_a = Probe::new();
    let probe_b = Probe::new();
    let waker_a = Probe::waker(&probe_a);
    let waker_b = Probe::waker(&probe_b);
    // The open completes on its own, so it holds the one in-flight place until released.
    let mut open = fifo.hold_place(&waker_a);
    let mut nop = ops::nop();
    assert!(poll_once(&mut nop, &waker_b).is_pending());
    let _ = driver.turn(Park::Poll);
    let m = driver.metrics();
    assert_eq!((m.in_flight, m.queued), (1, 1), "{m:?}");
    let _writer = fifo.release().expect("a reader is waiting");
    // The open completes; nobody polls it, yet the nop gets the place and completes.
    turn_until(&driver, || probe_b.wakes() == 1);
    assert_eq!(probe_a.wakes(), 1);
    let m = driver.metrics();
    assert_eq!(
        m.in_flight, 0,
        "an unconsumed result holds no in-flight place: {m:?}"
    );
    assert_eq!(m.slots, 2, "both results wait to be consumed");
    assert!(matches!(poll_once(&mut nop, &waker_b), Poll::Ready(Ok(()))));
    let Poll::Ready(opened) = poll_once(&mut open, &waker_a) else {
        panic!("the open is complete")
    };
    drop(opened.expect("the fifo opened for reading"));
    drop((waker_a, waker_b));
    assert_only_ours(&probe_a, &probe_b);
}

#[test]
fn deadlines_and_sleeps_fire_while_the_in_flight_limit_is_held_by_an_untimed_request() {
    entered_driver!(driver = support::driver_limited(1, 1));
    let file = TempFile::new("timed", b"data");
    let (fifo, probe, waker, untimed) = held_place("untimed");
    let mut timed = waiting(&waker, || {
        ops::read_at(file.fd.clone(), Vec::with_capacity(8), 0)
            .with_deadline(Instant::now() + Duration::from_millis(40))
    });
    let start = Instant::now();
    let sleep = waiting(Waker::noop(), || ops::sleep(Duration::from_millis(20)));
    run(&driver, sleep).expect("sleep fires");
    let Poll::Ready((n, _)) = ({
        turn_until(&driver, || driver.metrics().queued == 0);
        poll_once(&mut timed, &waker)
    }) else {
        panic!("the queued read timed out")
    };
    assert!(Error::is_timeout(&n.expect_err("timeout")));
    assert!(start.elapsed() >= Duration::from_millis(20));
    assert_eq!(
        driver.metrics().in_flight,
        1,
        "the untimed open still holds the place"
    );
    let _writer = fifo.release().expect("the open waits for a writer");
    drop(untimed);
    turn_until(&driver, || driver.metrics().slots == 0);
    Probe::assert_released(&probe, waker);
    assert_eq!(Arc::strong_count(&file.fd), 1);
}

#[test]
fn in_flight_deadline_cancels_and_times_out() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(2);
    let (sock, _peer) = pair();
    // A deadline that passes before the recv is submitted (this thread ran late) times it out
    // in the queue, without a cancel: that attempt proves nothing here, so another is made.
    let (n, buf) = (0..1000)
        .find_map(|_| {
            let cancelled = driver.metrics().cancelled;
            let out = run(
                &driver,
                ops::recv(sock.clone(), Vec::with_capacity(8))
                    .with_deadline(Instant::now() + Duration::from_millis(30)),
            );
            (driver.metrics().cancelled != cancelled).then_some(out)
        })
        .expect("a recv went in flight before its deadline");
    assert!(Error::is_timeout(&n.expect_err("timeout")));
    assert_eq!(
        buf.capacity(),
        8,
        "the buffer comes back after the final completion"
    );
    assert!(buf.is_empty(), "a cancelled recv read nothing into it");
    assert_eq!(driver.metrics().cancelled, 1);
    turn_until(&driver, || driver.metrics().cancels_in_flight == 0);
    assert_eq!(Arc::strong_count(&sock), 1);
}

#[test]
fn expired_deadline_does_not_consume_ready_data() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(2);
    let (sock, mut peer) = pair();
    peer.write_all(b"keep").expect("write");
    let past = Instant::now() - Duration::from_millis(1);
    let (n, _) = run(
        &driver,
        ops::recv(sock.clone(), Vec::with_capacity(8)).with_deadline(past),
    );
    assert!(Error::is_timeout(&n.expect_err("already expired")));
    assert_eq!(driver.metrics().completed, 0, "nothing was submitted");
    let (n, buf) = run(&driver, ops::recv(sock.clone(), Vec::with_capacity(8)));
    assert_eq!(&buf[..n.expect("recv")], b"keep");
}

#[test]
fn dropping_an_in_flight_recv_cancels_it_and_retires_the_slot_at_the_final_cqe() {
    entered_driver!(driver = support::driver(2));
    let (sock, _peer) = pair();
    let (probe, waker) = Probe::with_waker();
    let recv = pending_recv(&sock, 8, &waker);
    let _ = driver.turn(Park::Poll);
    assert_eq!(driver.metrics().in_flight, 1);
    drop(recv);
    assert_eq!(driver.metrics().slots, 1, "the slot waits for the kernel");
    assert!(
        Arc::strong_count(&sock) > 1,
        "the kernel may still use the fd"
    );
    turn_until(&driver, || driver.metrics().slots == 0);
    let m = driver.metrics();
    assert_eq!(
        (m.cancelled, m.in_flight, m.cancels_in_flight),
        (1, 0, 0),
        "{m:?}"
    );
    assert_eq!(Arc::strong_count(&sock), 1);
    Probe::assert_released(&probe, waker);
}

#[test]
fn dropping_a_queued_request_retires_it_locally() {
    entered_driver!(driver = support::driver_limited(1, 1));
    let file = TempFile::new("queued", b"data");
    let (fifo, _probe, waker, first) = held_place("first");
    let mut queued = ops::read_at(file.fd.clone(), Vec::with_capacity(8), 0);
    assert!(poll_once(&mut queued, &waker).is_pending());
    let _ = driver.turn(Park::Poll);
    assert_eq!(driver.metrics().queued, 1);
    drop(queued);
    let m = driver.metrics();
    assert_eq!((m.queued, m.slots, m.cancelled), (0, 1, 0), "{m:?}");
    let _writer = fifo.release().expect("the open waits for a writer");
    drop(first);
    turn_until(&driver, || driver.metrics().slots == 0);
    assert_eq!(Arc::strong_count(&file.fd), 1);
}

#[test]
fn dropped_write_still_lands_on_disk() {
    entered_driver!(driver = support::driver_limited(1, 1));
    let file = TempFile::new("dropwrite", b"");
    let (_probe, waker) = Probe::with_waker();
    let mut write = ops::write_at(file.fd.clone(), b"durable".to_vec(), 0);
    assert!(poll_once(&mut write, &waker).is_pending());
    drop(write);
    turn_until(&driver, || driver.is_idle() && driver.metrics().slots == 0);
    assert_eq!(std::fs::read(&file.path).expect("read back"), b"durable");
    assert_eq!(
        driver.metrics().cancelled,
        0,
        "writes are retained, never cancelled"
    );
    assert_eq!(Arc::strong_count(&file.fd), 1);
}

#[test]
fn accept_completed_but_unconsumed_then_dropped_has_its_fd_closed() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(4);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let listener = Arc::new(OwnedFd::from(listener));
    let before = support::fd_count();
    {
        let _entered = driver.enter();
        let (probe, waker) = Probe::with_waker();
        let mut accept = ops::accept(listener.clone());
        assert!(poll_once(&mut accept, &waker).is_pending());
        let _ = driver.turn(Park::Poll);
        let client = std::net::TcpStream::connect(addr).expect("connect");
        // The accept completes (its waker fires) before the future is dropped, so the drop
        // finds a created socket nobody will take: the driver must close it. The other order
        // (the cancel racing the completion) is covered in both CQE orders over the simulated
        // ring by `accept_completing_after_its_future_dropped_has_its_fd_closed` in `src/`.
        turn_until(&driver, || probe.wakes() >= 1);
        assert_eq!(
            support::fd_count(),
            before + 2,
            "the client's socket and the accepted one, open until the driver closes it"
        );
        drop(accept);
        turn_until(&driver, || driver.metrics().slots == 0);
        drop(client);
    }
    assert_eq!(
        support::fd_count(),
        before,
        "the late accept's socket was closed"
    );
    assert_eq!(Arc::strong_count(&listener), 1);
}

#[test]
fn open_dropped_before_completion_leaks_no_fd() {
    ring_file_or_skip!(file, driver = "dropopen", b"x");
    let before = support::fd_count();
    {
        let _entered = driver.enter();
        let (_probe, waker) = Probe::with_waker();
        for _ in 0..16 {
            let mut open = ops::open(&file.path, libc::O_RDONLY, 0);
            assert!(poll_once(&mut open, &waker).is_pending());
            let _ = driver.turn(Park::Poll);
            drop(open);
        }
        turn_until(&driver, || driver.metrics().slots == 0);
    }
    assert_eq!(support::fd_count(), before);
}

#[test]
fn explicit_cancel_after_completion_returns_the_completed_result() {
    entered_driver!(driver = support::driver(2));
    let (sock, mut peer) = pair();
    let (probe, waker) = Probe::with_waker();
    let mut recv = pending_recv(&sock, 8, &waker);
    let _ = driver.turn(Park::Poll);
    peer.write_all(b"won").expect("write");
    turn_until(&driver, || probe.wakes() == 1);
    recv.cancel();
    let Poll::Ready((n, buf)) = poll_once(&mut recv, &waker) else {
        panic!("complete")
    };
    assert_eq!(
        &buf[..n.expect("the completed result survives the cancel")],
        b"won"
    );
}

#[test]
fn explicit_cancel_of_an_in_flight_recv_reports_ecanceled() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(2);
    let (sock, _peer) = pair();
    let mut recv = ops::recv(sock.clone(), Vec::with_capacity(8));
    let out = run(
        &driver,
        std::future::poll_fn(|cx| {
            let polled = std::pin::Pin::new(&mut recv).poll(cx);
            if polled.is_pending() && recv.key().is_some() {
                recv.cancel();
            }
            polled
        }),
    );
    assert_eq!(
        out.0.expect_err("cancelled").raw_os_error(),
        Some(libc::ECANCELED)
    );
}

/// Receives that wait on a peer never hold back requests behind them: with a ring of 8
/// entries (so the default in-flight limit is small), twice as many idle receives as SQ
/// entries stay in flight while a send on another socket, a sleep and a nop still complete.
#[test]
fn idle_receives_beyond_the_ring_size_never_hold_back_a_send_a_sleep_or_a_nop() {
    entered_driver!(driver = support::driver(8));
    let (probe, waker) = Probe::with_waker();
    let sq = 8;
    let pairs: Vec<_> = (0..2 * sq).map(|_| pair()).collect();
    let mut idle: Vec<_> = pairs
        .iter()
        .map(|(sock, _)| ops::recv(sock.clone(), Vec::with_capacity(8)))
        .collect();
    for recv in &mut idle {
        assert!(poll_once(recv, &waker).is_pending());
    }
    let (out, mut out_peer) = pair();
    let mut send = ops::send(out.clone(), b"through".to_vec());
    let mut nop = ops::nop();
    assert!(poll_once(&mut send, &waker).is_pending());
    let mut sleep = waiting(&waker, || ops::sleep(Duration::from_millis(5)));
    assert!(poll_once(&mut nop, &waker).is_pending());
    let mut sent = None;
    let mut slept = false;
    let mut nopped = false;
    turn_until(&driver, || {
        if sent.is_none()
            && let Poll::Ready((res, _)) = poll_once(&mut send, &waker)
        {
            sent = Some(res.expect("send"));
        }
        slept = slept || poll_once(&mut sleep, &waker).is_ready();
        nopped = nopped || poll_once(&mut nop, &waker).is_ready();
        sent.is_some() && slept && nopped
    });
    assert_eq!(sent, Some(7));
    let mut got = [0; 7];
    std::io::Read::read_exact(&mut out_peer, &mut got).expect("the send arrived");
    assert_eq!(&got, b"through");
    let m = driver.metrics();
    assert_eq!(
        m.in_flight,
        2 * sq,
        "every idle receive is in flight: {m:?}"
    );
    assert_eq!(m.queued, 0, "{m:?}");
    drop(idle);
    turn_until(&driver, || driver.metrics().slots == 0);
    drop((send, sleep, nop, waker));
    assert_eq!(Arc::strong_count(&probe), 1);
    for (sock, _) in &pairs {
        assert_eq!(Arc::strong_count(sock), 1);
    }
}
