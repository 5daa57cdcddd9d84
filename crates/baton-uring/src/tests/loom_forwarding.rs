//! Loom models of forwarding against completion, foreign drop and closure. They drive the
//! shipped driver over the simulated ring; the mailbox, the forwarding cells and the unpark flag
//! use the crate's `sync` shim, so loom explores every interleaving of the foreign thread's
//! mailbox/cell accesses with the owner's turn and closure.
//!
//! A foreign poll runs with a [`WakeCounter`]'s waker. When it returns `Pending`, the models
//! check that the waker was woken by the time the threads joined and the owner turned, before
//! polling again: a poll that finds the result on a re-poll proves nothing about the task that
//! would never have been polled again (a lost wake-up).

use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use crate::driver::{Driver, Park};
use crate::error::Error;
use crate::operation::Op;
use crate::ops;
use crate::sync::{AtomicUsize, Ordering};
use crate::tests::sim::{SimRing, sim_ring};

type ReadOp = Op<(std::io::Result<usize>, Vec<u8>)>;
type ReadOut = (std::io::Result<usize>, Vec<u8>);

/// Counts the wakes of the wakers made from it. The count is a loom atomic: the waker is
/// cloned on the foreign thread and woken on the owner's, so loom must see the accesses.
/// (`Wake` needs a `std` `Arc`; only its reference count is outside loom's view.)
struct WakeCounter(AtomicUsize);

impl WakeCounter {
    fn new() -> StdArc<WakeCounter> {
        StdArc::new(WakeCounter(AtomicUsize::new(0)))
    }

    fn wakes(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for WakeCounter {
    fn wake(self: StdArc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &StdArc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll(op: &mut ReadOp, waker: &Waker) -> Poll<ReadOut> {
    Pin::new(op).poll(&mut Context::from_waker(waker))
}

/// Polls `op` once on a new loom thread with a waker of `counter`, handing both back.
fn poll_on_foreign_thread(
    op: ReadOp,
    counter: &StdArc<WakeCounter>,
) -> loom::thread::JoinHandle<(ReadOp, Poll<ReadOut>)> {
    let waker = Waker::from(StdArc::clone(counter));
    loom::thread::spawn(move || {
        let mut op = op;
        let first = poll(&mut op, &waker);
        (op, first)
    })
}

/// The result of a foreign poll once the threads joined and the owner turned: the first poll's
/// result, or — when it was `Pending` — the result of one more poll, after checking that the
/// pending poll's waker was woken (a missing wake fails the model; a duplicate one does not).
fn result_after_wake(
    first: Poll<ReadOut>,
    op: &mut ReadOp,
    counter: &WakeCounter,
    what: &str,
) -> ReadOut {
    match first {
        Poll::Ready(out) => out,
        Poll::Pending => {
            let wakes = counter.wakes();
            assert!(
                wakes >= 1,
                "lost wake-up: the foreign poll returned Pending and {what}, but its waker was woken {wakes} times"
            );
            match poll(op, Waker::noop()) {
                Poll::Ready(out) => out,
                Poll::Pending => panic!("woken, but the result of {what} was not there"),
            }
        }
    }
}

/// A driver over the simulated ring with one read registered locally and submitted.
fn setup() -> (Driver, SimRing, StdArc<OwnedFd>, ReadOp, u64) {
    let (backend, sim) = sim_ring(4);
    let driver = Driver::with_backend(Box::new(backend), 4, None);
    let fd = StdArc::new(OwnedFd::from(
        std::fs::File::open("/dev/null").expect("open /dev/null"),
    ));
    let mut op = ops::read_at(fd.clone(), crate::tests::sim::zeroed_spare(4), 0);
    {
        let _entered = driver.enter();
        assert!(poll(&mut op, Waker::noop()).is_pending());
    }
    let _ = driver.turn(Park::Poll);
    let in_flight = sim.in_flight();
    assert_eq!(in_flight.len(), 1);
    (driver, sim, fd, op, in_flight[0])
}

/// Completes everything the simulated kernel owns and turns until every slot retired.
fn drain(driver: &Driver, sim: &SimRing) {
    for _ in 0..8 {
        for target in sim.pending_cancels() {
            assert!(sim.resolve_cancel(target));
        }
        for user_data in sim.in_flight() {
            assert!(sim.complete(user_data, 0));
        }
        let _ = driver.turn(Park::Poll);
        if driver.metrics().slots == 0 && sim.in_flight().is_empty() {
            return;
        }
    }
    panic!(
        "the driver did not retire every slot: {:?}",
        driver.metrics()
    );
}

/// Proves forward rules F1–F3: whether the foreign thread's `Forward` reaches the owner before or
/// after the completion is reaped (or while it is being reaped), and whether the foreign poll
/// stores its waker before or after the delivery, a `Pending` foreign poll is woken (no lost
/// wake-up), the foreign handle ends with exactly the kernel's result, and the slot, the fd's
/// `Arc` and every waker clone are released.
#[test]
fn loom_foreign_poll_races_completion() {
    loom::model(|| {
        let (driver, sim, fd, op, user_data) = setup();
        let counter = WakeCounter::new();
        let foreign = poll_on_foreign_thread(op, &counter);
        assert!(sim.complete(user_data, 3));
        let _ = driver.turn(Park::Poll);
        let (mut op, first) = foreign.join().expect("foreign thread");
        let _ = driver.turn(Park::Poll);
        let (n, buf) = result_after_wake(first, &mut op, &counter, "the read completed");
        assert_eq!(n.expect("read"), 3);
        assert_eq!(
            buf.len(),
            3,
            "the read extended the buffer over the 3 bytes read"
        );
        drop(op);
        drain(&driver, &sim);
        drop(driver);
        assert_eq!(StdArc::strong_count(&fd), 1);
        assert_eq!(StdArc::strong_count(&counter), 1, "a waker clone was kept");
    });
}

/// Proves forward rule F4 and lifecycle rule U5 across threads: a handle dropped on a foreign
/// thread while its request completes is cancelled or disposed of exactly once, and nothing
/// (slot, buffer, fd `Arc`) is left behind whichever side wins.
#[test]
fn loom_foreign_drop_races_completion() {
    loom::model(|| {
        let (driver, sim, fd, op, user_data) = setup();
        let foreign = loom::thread::spawn(move || drop(op));
        assert!(sim.complete(user_data, 2));
        let _ = driver.turn(Park::Poll);
        foreign.join().expect("foreign thread");
        drain(&driver, &sim);
        assert!(sim.pending_cancels().is_empty());
        drop(driver);
        assert_eq!(StdArc::strong_count(&fd), 1);
    });
}

/// Proves forward rule F6 and lifecycle rule U7: a foreign poll racing closure never leaves the
/// handle pending forever — a `Pending` poll is woken (no lost wake-up) and the handle
/// resolves to `Closed` — and closure plus draining releases the slot, the fd's `Arc` and every
/// waker clone.
#[test]
fn loom_foreign_poll_races_closure() {
    loom::model(|| {
        let (driver, sim, fd, op, _user_data) = setup();
        let counter = WakeCounter::new();
        let foreign = poll_on_foreign_thread(op, &counter);
        driver.close();
        let (mut op, first) = foreign.join().expect("foreign thread");
        let _ = driver.turn(Park::Poll);
        let (n, _) = result_after_wake(first, &mut op, &counter, "the driver closed");
        assert!(Error::is_closed(&n.expect_err("closed")));
        drop(op);
        drain(&driver, &sim);
        drop(driver);
        assert_eq!(StdArc::strong_count(&fd), 1);
        assert_eq!(StdArc::strong_count(&counter), 1, "a waker clone was kept");
    });
}
