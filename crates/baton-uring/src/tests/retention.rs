//! Retained requests (writes, syncs, close, shutdown) outlive their handles (lifecycle rules U5
//! and U9): dropping the future neither times them out nor cancels them.

use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Duration;

use web_time::Instant;

use crate::driver::Park;
use crate::ops;
use crate::tests::support::sim_driver_with_fd;

#[test]
fn dropped_in_flight_write_with_a_deadline_is_neither_timed_out_nor_cancelled() {
    let (driver, sim, fd) = sim_driver_with_fd(4);
    let _entered = driver.enter();
    let deadline = Instant::now() + Duration::from_millis(10);
    let mut write = ops::write_at(fd.clone(), vec![1; 4], 0).with_deadline(deadline);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Pin::new(&mut write).poll(&mut cx).is_pending());
    let _ = driver.turn(Park::Poll);
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
