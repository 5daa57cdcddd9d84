//! Loom models of forwarding against completion, foreign drop and closure. They drive the
//! shipped driver over the simulated ring; the mailbox, the forwarding cells and the unpark flag
//! use the crate's `sync` shim, so loom explores every interleaving of the foreign thread's
//! mailbox/cell accesses with the owner's turn and closure.

use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Waker};

use crate::backend::sim::{SimRing, sim_ring};
use crate::driver::{Driver, Park};
use crate::error::Error;
use crate::op::Op;
use crate::ops;

type ReadOp = Op<(std::io::Result<usize>, Vec<u8>)>;
type ReadOut = (std::io::Result<usize>, Vec<u8>);

fn poll(op: &mut ReadOp) -> Poll<ReadOut> {
    Pin::new(op).poll(&mut Context::from_waker(Waker::noop()))
}

/// A driver over the simulated ring with one read registered locally and submitted.
fn setup() -> (Driver, SimRing, StdArc<OwnedFd>, ReadOp, u64) {
    let (backend, sim) = sim_ring(4);
    let driver = Driver::with_backend(Box::new(backend), 4, None);
    let fd = StdArc::new(OwnedFd::from(
        std::fs::File::open("/dev/null").expect("open /dev/null"),
    ));
    let mut op = ops::read_at(fd.clone(), crate::backend::sim::zeroed_spare(4), 0);
    {
        let _entered = driver.enter();
        assert!(poll(&mut op).is_pending());
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

/// Proves forward rules 1–3: whether the foreign thread's `Forward` reaches the owner before or
/// after the completion is reaped (or while it is being reaped), the foreign handle ends with
/// exactly the kernel's result, and the slot and the fd's `Arc` are released.
#[test]
fn loom_foreign_poll_races_completion() {
    loom::model(|| {
        let (driver, sim, fd, op, user_data) = setup();
        let foreign = loom::thread::spawn(move || {
            let mut op = op;
            let first = poll(&mut op);
            (op, first)
        });
        assert!(sim.complete(user_data, 3));
        let _ = driver.turn(Park::Poll);
        let (mut op, first) = foreign.join().expect("foreign thread");
        let _ = driver.turn(Park::Poll);
        let (n, buf) = match first {
            Poll::Ready(out) => out,
            Poll::Pending => match poll(&mut op) {
                Poll::Ready(out) => out,
                Poll::Pending => panic!("the forwarded result was lost"),
            },
        };
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
    });
}

/// Proves forward rule 4 and lifecycle rule 5 across threads: a handle dropped on a foreign
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

/// Proves forward rule 6 and lifecycle rule 7: a foreign poll racing closure never leaves the
/// handle pending forever — it resolves to `Closed` — and closure plus draining releases the
/// slot and the fd's `Arc`.
#[test]
fn loom_foreign_poll_races_closure() {
    loom::model(|| {
        let (driver, sim, fd, op, _user_data) = setup();
        let foreign = loom::thread::spawn(move || {
            let mut op = op;
            let first = poll(&mut op);
            (op, first)
        });
        driver.close();
        let (mut op, first) = foreign.join().expect("foreign thread");
        let _ = driver.turn(Park::Poll);
        let (n, _) = match first {
            Poll::Ready(out) => out,
            Poll::Pending => match poll(&mut op) {
                Poll::Ready(out) => out,
                Poll::Pending => panic!("a forward racing closure was never settled"),
            },
        };
        assert!(Error::is_closed(&n.expect_err("closed")));
        drop(op);
        drain(&driver, &sim);
        drop(driver);
        assert_eq!(StdArc::strong_count(&fd), 1);
    });
}
