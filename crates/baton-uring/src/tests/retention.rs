//! Retained requests (writes and sends, syncs, close, shutdown) outlive their handles
//! (lifecycle rules U5 and U9): dropping the future neither times them out nor cancels them. A
//! dropped send holds its socket's send-stash ticket until done (S5), and closure cancels it.

use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Duration;

use web_time::Instant;

use crate::driver::{Driver, Park};
use crate::ops;
use crate::tests::sim::SimRing;
use crate::tests::support::sim_driver_with_fd;

#[test]
fn dropped_in_flight_write_with_a_deadline_is_neither_timed_out_nor_cancelled() {
    // The write must be submitted before its deadline, or the deadline may act on it while it
    // still has its handle: an attempt whose thread ran late proves nothing, so another is made.
    let conclusive = (0..100).any(|_| dropped_write_outlives_its_deadline());
    assert!(conclusive, "no write was submitted before its deadline");
}

/// One attempt of the test above on a fresh driver: false, after settling what the simulated
/// kernel holds, if the deadline passed before the write was submitted.
fn dropped_write_outlives_its_deadline() -> bool {
    let (driver, sim, fd) = sim_driver_with_fd(4);
    let _entered = driver.enter();
    let deadline = Instant::now() + Duration::from_millis(10);
    let mut write = ops::write_at(fd.clone(), vec![1; 4], 0).with_deadline(deadline);
    let mut cx = Context::from_waker(Waker::noop());
    let polled = Pin::new(&mut write).poll(&mut cx);
    let _ = driver.turn(Park::Poll);
    if Instant::now() >= deadline {
        drop(write);
        settle(&driver, &sim);
        return false;
    }
    assert!(polled.is_pending());
    assert_eq!(sim.in_flight().len(), 1, "the kernel owns the write");
    drop(write);
    assert_eq!(driver.metrics().timers, 0, "detaching dropped the deadline");
    while Instant::now() < deadline + Duration::from_millis(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = driver.turn(Park::Poll);
    assert!(
        sim.pending_cancels().is_empty(),
        "the write was not cancelled"
    );
    assert_eq!(driver.metrics().timers_fired, 0);
    let in_flight = sim.in_flight();
    assert!(sim.complete(in_flight[0], 4));
    let _ = driver.turn(Park::Poll);
    assert!(driver.is_idle());
    true
}

/// Completes whatever the simulated kernel holds (a write, a cancel of it) until the driver is
/// idle.
fn settle(driver: &Driver, sim: &SimRing) {
    for _ in 0..10 {
        let _ = driver.turn(Park::Poll);
        if driver.is_idle() {
            return;
        }
        for target in sim.pending_cancels() {
            let _ = sim.resolve_cancel(target);
        }
        for request in sim.in_flight() {
            let _ = sim.complete(request, 4);
        }
    }
    panic!("the driver never became idle");
}

#[test]
fn closure_reports_closed_to_a_waiting_write_and_counts_its_failure_in_the_shutdown_report() {
    let (driver, sim, fd) = sim_driver_with_fd(4);
    let mut write = ops::write_at(fd.clone(), vec![1; 4], 0);
    let mut cx = Context::from_waker(Waker::noop());
    {
        let _entered = driver.enter();
        assert!(Pin::new(&mut write).poll(&mut cx).is_pending());
        let _ = driver.turn(Park::Poll);
    }
    driver.close();
    {
        let _entered = driver.enter();
        let std::task::Poll::Ready((result, _)) = Pin::new(&mut write).poll(&mut cx) else {
            panic!("a pending poll after closure resolves")
        };
        let err = result.expect_err("closure hides the write's outcome");
        assert_eq!(crate::Error::from_io(&err), Some(&crate::Error::Closed));
    }
    let in_flight = sim.in_flight();
    assert_eq!(in_flight.len(), 1, "the write still runs");
    assert!(sim.complete(in_flight[0], -libc::EIO));
    let report = driver.shutdown(Some(Instant::now() + Duration::from_secs(5)));
    assert!(report.drained, "{report:?}");
    assert_eq!(
        report.retained_failures, 1,
        "the write's EIO is reported, not lost: {report:?}"
    );
}

/// A four-byte send on `fd` bound to the send stash `sends` (S5), polled once on the entered
/// driver: registered, not yet submitted.
fn registered_send<'s>(
    fd: &std::sync::Arc<std::os::fd::OwnedFd>,
    sends: &'s std::sync::Arc<crate::Stash>,
) -> crate::Operation<'s, (std::io::Result<usize>, Vec<u8>)> {
    let mut send = ops::send(fd.clone(), vec![1; 4]).stash_late_result(sends);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Pin::new(&mut send).poll(&mut cx).is_pending());
    send
}

/// A send whose future is dropped while the kernel holds it is retained (U5): no cancel, and
/// its ticket in the socket's send stash stays outstanding until its final completion (S5), so
/// the socket's next send waits for it.
#[test]
fn dropped_in_flight_send_runs_on_and_holds_its_ticket_until_done() {
    let (driver, sim, fd) = sim_driver_with_fd(4);
    let _entered = driver.enter();
    let sends = std::sync::Arc::new(crate::Stash::new());
    let mut cx = Context::from_waker(Waker::noop());
    let send = registered_send(&fd, &sends);
    let _ = driver.turn(Park::Poll);
    assert_eq!(sim.in_flight().len(), 1, "the kernel owns the send");
    drop(send);
    let _ = driver.turn(Park::Poll);
    assert!(sim.pending_cancels().is_empty(), "the send was not cancelled");
    assert!(!sends.is_idle(), "the running send holds a ticket");
    assert!(sends.poll_settled(&mut cx).is_pending());
    let in_flight = sim.in_flight();
    assert!(sim.complete(in_flight[0], 4));
    let _ = driver.turn(Park::Poll);
    assert!(sends.is_idle(), "the final completion ended the ticket");
    assert!(sends.poll_settled(&mut cx).is_ready());
    assert!(driver.is_idle());
}

/// A send dropped before any turn submitted it stays queued and is submitted (U5), its ticket
/// held until its completion.
#[test]
fn dropped_queued_send_is_still_submitted() {
    let (driver, sim, fd) = sim_driver_with_fd(4);
    let _entered = driver.enter();
    let sends = std::sync::Arc::new(crate::Stash::new());
    let send = registered_send(&fd, &sends);
    drop(send);
    assert!(!sends.is_idle());
    let _ = driver.turn(Park::Poll);
    let in_flight = sim.in_flight();
    assert_eq!(in_flight.len(), 1, "the dropped send reached the kernel");
    assert!(sim.complete(in_flight[0], 4));
    let _ = driver.turn(Park::Poll);
    assert!(sends.is_idle());
    assert!(driver.is_idle());
}

/// Closure cancels a dropped send still running (U9's exception): a peer that never reads
/// again must not hold shutdown up, and the cancelled send is not a retained failure.
#[test]
fn closure_cancels_a_dropped_send_and_does_not_count_it_as_a_failure() {
    let (driver, sim, fd) = sim_driver_with_fd(4);
    let sends = std::sync::Arc::new(crate::Stash::new());
    {
        let _entered = driver.enter();
        let send = registered_send(&fd, &sends);
        let _ = driver.turn(Park::Poll);
        drop(send);
        let _ = driver.turn(Park::Poll);
        assert!(sim.pending_cancels().is_empty(), "not cancelled before closure");
    }
    driver.close();
    {
        let _entered = driver.enter();
        let _ = driver.turn(Park::Poll);
    }
    let cancels = sim.pending_cancels();
    assert_eq!(cancels.len(), 1, "closure cancelled the send");
    assert!(sim.resolve_cancel(cancels[0]));
    let report = driver.shutdown(Some(Instant::now() + Duration::from_secs(5)));
    assert!(report.drained, "{report:?}");
    assert_eq!(report.retained_failures, 0, "{report:?}");
    assert!(sends.is_idle(), "the cancelled send's ticket ended");
}
