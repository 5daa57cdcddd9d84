//! Retained requests (writes, syncs, close, shutdown) outlive their handles (lifecycle rules U5
//! and U9): dropping the future neither times them out nor cancels them.

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
