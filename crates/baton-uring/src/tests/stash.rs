//! The stash rules over the simulated ring: every ordering of completion, cancel and drop that
//! the kernel can produce leaves a late receive's bytes (or a late accept's connection) in the
//! stash exactly once, in order.

use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use crate::driver::{Driver, Park};
use crate::operation::Operation;
use crate::ops;
use crate::stash::Stash;
use crate::tests::sim::SimRing;
use crate::tests::support::sim_driver;

type Recv<'s> = Operation<'s, (std::io::Result<usize>, Vec<u8>)>;

/// Counts its wakes.
#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (Arc<Counter>, Waker) {
    let counter = Arc::new(Counter::default());
    let waker = Waker::from(Arc::clone(&counter));
    (counter, waker)
}

fn socket() -> Arc<OwnedFd> {
    let (ours, _theirs) = std::os::unix::net::UnixStream::pair().expect("socketpair");
    Arc::new(OwnedFd::from(ours))
}

/// A buffer whose spare capacity already holds `bytes`: the simulated kernel reports a count
/// without writing, so what it "received" is what the buffer held.
fn holding(bytes: &[u8]) -> Vec<u8> {
    let mut buf = bytes.to_vec();
    buf.clear();
    buf
}

/// Registers `op` locally and submits it; returns its `user_data`.
fn submit(driver: &Driver, sim: &SimRing, op: &mut Recv<'_>) -> u64 {
    submit_any(driver, sim, op)
}

/// [`submit`] for any operation.
fn submit_any<T>(driver: &Driver, sim: &SimRing, op: &mut Operation<'_, T>) -> u64 {
    let _entered = driver.enter();
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Pin::new(op).poll(&mut cx).is_pending());
    let _ = driver.turn(Park::Poll);
    *sim.in_flight().last().expect("the receive is in flight")
}

/// Takes what the stash holds for a receive with `capacity` bytes of room.
fn take(stash: &Stash, capacity: usize) -> Poll<Option<Vec<u8>>> {
    let mut buf = Vec::with_capacity(capacity);
    let mut cx = Context::from_waker(Waker::noop());
    stash
        .poll_take_bytes(&mut cx, &mut buf)
        .map(|taken| taken.map(|n| buf[..n].to_vec()))
}

#[test]
fn completed_receive_dropped_before_its_poll_leaves_its_bytes_in_the_stash() {
    let (driver, sim) = sim_driver(8);
    let stash = Arc::new(Stash::new());
    let fd = socket();
    let mut op = ops::recv(fd.clone(), holding(b"early")).stash_late_result(&stash);
    let target = submit(&driver, &sim, &mut op);
    assert!(sim.complete(target, 5));
    {
        let _entered = driver.enter();
        let _ = driver.turn(Park::Poll);
        drop(op);
    }
    assert_eq!(take(&stash, 16), Poll::Ready(Some(b"early".to_vec())));
    assert!(stash.is_idle());
    assert_eq!(take(&stash, 16), Poll::Ready(None));
    assert_eq!(driver.metrics().slots, 0);
    assert_eq!(Arc::strong_count(&fd), 1);
}

#[test]
fn receive_dropped_in_flight_whose_cancel_loses_leaves_its_bytes_in_the_stash() {
    for cancel_first in [false, true] {
        let (driver, sim) = sim_driver(8);
        let stash = Arc::new(Stash::new());
        let mut op = ops::recv(socket(), holding(b"raced")).stash_late_result(&stash);
        let target = submit(&driver, &sim, &mut op);
        let (woken, waker) = counting();
        {
            let _entered = driver.enter();
            drop(op);
            // A reader arriving now must wait: the kernel may still complete the receive.
            let mut buf = Vec::with_capacity(8);
            let polled = stash.poll_take_bytes(&mut Context::from_waker(&waker), &mut buf);
            assert!(
                polled.is_pending(),
                "stash rule S4: wait for the outstanding ticket"
            );
            let _ = driver.turn(Park::Poll);
        }
        assert_eq!(
            sim.pending_cancels(),
            vec![target],
            "the drop sent one cancel"
        );
        assert!(sim.complete(target, 5), "the receive wins the race");
        assert!(sim.resolve_cancel_ordered(target, cancel_first));
        {
            let _entered = driver.enter();
            let _ = driver.turn(Park::Poll);
        }
        assert_eq!(
            woken.0.load(Ordering::SeqCst),
            1,
            "the waiting reader was woken once"
        );
        assert_eq!(take(&stash, 8), Poll::Ready(Some(b"raced".to_vec())));
        assert!(stash.is_idle());
        assert_eq!(driver.metrics().slots, 0);
    }
}

/// A pipe's read (`read_stream`, `readv_stream`) keeps its late bytes as a receive does: dropped
/// in flight, its cancel losing to the completion, the bytes are in the stash once.
#[test]
fn pipe_read_dropped_in_flight_whose_cancel_loses_leaves_its_bytes_in_the_stash() {
    for vectored in [false, true] {
        let (driver, sim) = sim_driver(8);
        let stash = Arc::new(Stash::new());
        let (read, _write) = std::io::pipe().expect("a pipe");
        let fd = Arc::new(OwnedFd::from(read));
        let target = if vectored {
            let bufs = vec![holding(b"pi"), holding(b"ped")];
            let mut op = ops::readv_stream(fd.clone(), bufs).stash_late_result(&stash);
            let target = submit_any(&driver, &sim, &mut op);
            let _entered = driver.enter();
            drop(op);
            target
        } else {
            let mut op = ops::read_stream(fd.clone(), holding(b"piped")).stash_late_result(&stash);
            let target = submit(&driver, &sim, &mut op);
            let _entered = driver.enter();
            drop(op);
            target
        };
        {
            let _entered = driver.enter();
            let _ = driver.turn(Park::Poll);
        }
        assert!(sim.complete(target, 5), "the read wins the race");
        assert!(sim.resolve_cancel(target));
        {
            let _entered = driver.enter();
            let _ = driver.turn(Park::Poll);
        }
        assert_eq!(take(&stash, 8), Poll::Ready(Some(b"piped".to_vec())));
        assert!(stash.is_idle());
        assert_eq!(driver.metrics().slots, 0);
        assert_eq!(Arc::strong_count(&fd), 1);
    }
}

#[test]
fn receive_dropped_in_flight_whose_cancel_wins_leaves_the_stash_idle() {
    let (driver, sim) = sim_driver(8);
    let stash = Arc::new(Stash::new());
    let mut op = ops::recv(socket(), holding(b"never")).stash_late_result(&stash);
    let target = submit(&driver, &sim, &mut op);
    {
        let _entered = driver.enter();
        drop(op);
        let _ = driver.turn(Park::Poll);
    }
    assert!(!stash.is_idle(), "the late result is outstanding");
    assert!(sim.resolve_cancel(target));
    {
        let _entered = driver.enter();
        let _ = driver.turn(Park::Poll);
    }
    assert!(
        stash.is_idle(),
        "a cancelled receive ends its ticket with nothing"
    );
    assert_eq!(take(&stash, 8), Poll::Ready(None));
}

#[test]
fn queued_receive_dropped_before_submission_ends_its_ticket_with_nothing() {
    let (driver, _sim) = sim_driver(8);
    let stash = Arc::new(Stash::new());
    let _entered = driver.enter();
    let mut op = ops::recv(socket(), holding(b"x")).stash_late_result(&stash);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Pin::new(&mut op).poll(&mut cx).is_pending());
    drop(op);
    assert!(stash.is_idle());
    assert_eq!(driver.metrics().slots, 0);
}

#[test]
fn late_bytes_come_out_in_completion_order_across_partial_takes() {
    let (driver, sim) = sim_driver(8);
    let stash = Arc::new(Stash::new());
    let fd = socket();
    let mut first = ops::recv(fd.clone(), holding(b"abcdef")).stash_late_result(&stash);
    let mut second = ops::recv(fd.clone(), holding(b"ghi")).stash_late_result(&stash);
    let a = submit(&driver, &sim, &mut first);
    let b = submit(&driver, &sim, &mut second);
    {
        let _entered = driver.enter();
        drop(first);
        drop(second);
        let _ = driver.turn(Park::Poll);
    }
    assert!(sim.complete(a, 6));
    assert!(sim.complete(b, 3));
    for target in [a, b] {
        assert!(sim.resolve_cancel(target), "each drop sent a cancel");
    }
    {
        let _entered = driver.enter();
        let _ = driver.turn(Park::Poll);
    }
    assert_eq!(take(&stash, 4), Poll::Ready(Some(b"abcd".to_vec())));
    assert_eq!(take(&stash, 4), Poll::Ready(Some(b"ef".to_vec())));
    assert_eq!(take(&stash, 4), Poll::Ready(Some(b"ghi".to_vec())));
    assert_eq!(take(&stash, 4), Poll::Ready(None));
    assert_eq!(take(&stash, 0), Poll::Ready(None), "no room takes nothing");
}

#[test]
fn forwarded_receive_dropped_on_a_foreign_thread_leaves_its_late_bytes_in_the_stash() {
    // Dropped while waiting (the ticket stays in the cell), and dropped after its result
    // reached the cell (the handle deposits it itself).
    for delivered_first in [false, true] {
        let (driver, sim) = sim_driver(8);
        let stash = Arc::new(Stash::new());
        let mut op = ops::recv(socket(), holding(b"afar")).stash_late_result(&stash);
        let target = submit(&driver, &sim, &mut op);
        std::thread::scope(|scope| {
            let mut op = op;
            // A poll here (no driver entered) forwards the handle through the mailbox.
            let handle = scope.spawn(move || {
                let mut cx = Context::from_waker(Waker::noop());
                assert!(Pin::new(&mut op).poll(&mut cx).is_pending());
                op
            });
            let op = handle.join().expect("forwarding thread");
            let _entered = driver.enter();
            let _ = driver.turn(Park::Poll);
            if delivered_first {
                assert!(sim.complete(target, 4));
                let _ = driver.turn(Park::Poll);
            }
            drop(_entered);
            scope
                .spawn(move || drop(op))
                .join()
                .expect("dropping thread");
            let _entered = driver.enter();
            let _ = driver.turn(Park::Poll);
            if !delivered_first {
                assert!(sim.complete(target, 4));
                assert!(sim.resolve_cancel(target));
                let _ = driver.turn(Park::Poll);
            }
        });
        assert_eq!(
            take(&stash, 8),
            Poll::Ready(Some(b"afar".to_vec())),
            "delivered first: {delivered_first}"
        );
        assert!(stash.is_idle());
        assert_eq!(driver.metrics().slots, 0);
    }
}

#[test]
fn accept_completing_after_its_future_dropped_leaves_the_connection_in_the_stash() {
    let (driver, sim) = sim_driver(8);
    let stash = Arc::new(Stash::new());
    let listener = socket();
    let _entered = driver.enter();
    let target = sim.submit_then_drop(&driver, ops::accept(listener).stash_late_result(&stash));
    let mut cx = Context::from_waker(Waker::noop());
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socketpair");
    let accepted = ours.into_raw_fd();
    assert!(sim.complete(target, accepted), "the accept wins the race");
    assert!(sim.resolve_cancel(target));
    let _ = driver.turn(Park::Poll);
    let Poll::Ready(Some((fd, _peer))) = stash.poll_take_connection(&mut cx) else {
        panic!("the late connection is in the stash")
    };
    assert_eq!(fd.as_raw_fd(), accepted, "the same socket, still open");
    drop(theirs);
    assert!(stash.is_idle());
    let outcome = stash.poll_take_connection(&mut cx);
    assert!(matches!(outcome, Poll::Ready(None)));
}

type RecvFrom<'s> = Operation<'s, (std::io::Result<ops::Received>, Vec<u8>)>;

/// Registers a datagram receive locally and submits it; returns its `user_data`.
fn submit_datagram(driver: &Driver, sim: &SimRing, op: &mut RecvFrom<'_>) -> u64 {
    let _entered = driver.enter();
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Pin::new(op).poll(&mut cx).is_pending());
    let _ = driver.turn(Park::Poll);
    *sim.in_flight().last().expect("the receive is in flight")
}

/// Takes (or, with `peek`, looks at) the oldest stashed datagram with `capacity` bytes of room.
fn take_datagram(stash: &Stash, capacity: usize, peek: bool) -> Poll<Option<Vec<u8>>> {
    let mut buf = Vec::with_capacity(capacity);
    let mut cx = Context::from_waker(Waker::noop());
    stash
        .poll_take_datagram(&mut cx, &mut buf, peek)
        .map(|taken| taken.map(|(n, _from)| buf[..n].to_vec()))
}

#[test]
fn late_datagrams_keep_their_boundaries_an_empty_one_included_and_truncate_like_the_kernel() {
    let (driver, sim) = sim_driver(8);
    let stash = Arc::new(Stash::for_datagrams());
    let fd = socket();
    let mut first = ops::recv_from(fd.clone(), holding(b"hello")).stash_late_result(&stash);
    let mut empty = ops::recv_from(fd.clone(), Vec::with_capacity(4)).stash_late_result(&stash);
    let mut last = ops::recv_from(fd.clone(), holding(b"bye")).stash_late_result(&stash);
    let targets = [
        (submit_datagram(&driver, &sim, &mut first), 5),
        (submit_datagram(&driver, &sim, &mut empty), 0),
        (submit_datagram(&driver, &sim, &mut last), 3),
    ];
    {
        let _entered = driver.enter();
        drop((first, empty, last));
        let _ = driver.turn(Park::Poll);
    }
    for (target, n) in targets {
        assert!(sim.complete(target, n));
        assert!(sim.resolve_cancel(target), "each drop sent a cancel");
    }
    {
        let _entered = driver.enter();
        let _ = driver.turn(Park::Poll);
    }
    assert_eq!(
        take_datagram(&stash, 3, true),
        Poll::Ready(Some(b"hel".to_vec())),
        "a peek looks without taking"
    );
    assert_eq!(
        take_datagram(&stash, 3, false),
        Poll::Ready(Some(b"hel".to_vec())),
        "a datagram larger than the buffer is truncated; its rest is discarded"
    );
    assert_eq!(
        take_datagram(&stash, 8, false),
        Poll::Ready(Some(Vec::new())),
        "an empty datagram is a datagram, not the end of a stream"
    );
    assert_eq!(take_datagram(&stash, 0, false), Poll::Ready(None));
    assert_eq!(
        take_datagram(&stash, 8, false),
        Poll::Ready(Some(b"bye".to_vec()))
    );
    assert!(stash.is_idle());
    assert_eq!(driver.metrics().slots, 0);
    assert_eq!(Arc::strong_count(&fd), 1);
}

#[test]
fn a_late_peek_leaves_nothing_in_the_stash() {
    let (driver, sim) = sim_driver(8);
    let stash = Arc::new(Stash::for_datagrams());
    let mut peek: RecvFrom<'_> =
        ops::peek_from(socket(), holding(b"still queued")).stash_late_result(&stash);
    let target = submit_datagram(&driver, &sim, &mut peek);
    assert!(sim.complete(target, 12));
    {
        let _entered = driver.enter();
        let _ = driver.turn(Park::Poll);
        drop(peek);
    }
    assert!(
        stash.is_idle(),
        "the kernel still holds the datagram it peeked at"
    );
    assert_eq!(take_datagram(&stash, 16, false), Poll::Ready(None));
}

/// The drained hint follows the last noted stream receive: short marks it, full clears it;
/// a datagram socket is never drained by it.
#[test]
fn a_short_stream_receive_marks_the_socket_drained_and_a_full_one_clears_it() {
    let stream = Stash::new();
    assert!(!stream.is_drained(), "nothing received yet");
    stream.note_received(3, 8);
    assert!(stream.is_drained());
    stream.note_received(8, 8);
    assert!(!stream.is_drained());
    let datagrams = Stash::for_datagrams();
    datagrams.note_received(3, 8);
    assert!(!datagrams.is_drained());
}
