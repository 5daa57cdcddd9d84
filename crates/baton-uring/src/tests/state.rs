//! Unit tests of the driver state over the simulated ring: the timer heap, the wake-up read,
//! closure and the bounded-shutdown leak.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use web_time::Instant;

use crate::backend::Wait;
use crate::driver::{Driver, Park};
use crate::key::RequestKey;
use crate::ops;
use crate::request::Request;
use crate::state::{DriverState, Waiter};
use crate::tests::sim::sim_ring;
use crate::tests::support::{assert_fd_refs, dev_null, sim_driver_with_fd};

fn read_of(fd: &Arc<OwnedFd>) -> Request {
    Request::Read {
        fd: fd.clone(),
        buf: crate::buf::RawBuf::new_mut(crate::tests::sim::zeroed_spare(4)),
        offset: 0,
    }
}

#[test]
fn many_sleeps_dropped_early_keep_the_timer_heap_small() {
    let (backend, _sim) = sim_ring(4);
    let driver = crate::driver::Driver::with_backend(Box::new(backend), 4, None);
    let _entered = driver.enter();
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for _ in 0..10_000 {
        let mut sleep = crate::ops::sleep(std::time::Duration::from_secs(3600));
        assert!(std::pin::Pin::new(&mut sleep).poll(&mut cx).is_pending());
    }
    let metrics = driver.metrics();
    assert_eq!(metrics.timers, 0, "every sleep was dropped");
    assert!(
        metrics.timer_entries <= 200,
        "stale heap entries are pruned: {metrics:?}"
    );
}

#[test]
fn wake_read_is_armed_even_when_cancels_cannot_be_pushed() {
    let (backend, sim) = sim_ring(1);
    let fd = Arc::new(OwnedFd::from(
        std::fs::File::open("/dev/null").expect("open /dev/null"),
    ));
    let mut core = DriverState::new(Box::new(backend), 4, Some(fd.as_raw_fd()));
    let mut keys = Vec::new();
    for _ in 0..2 {
        match core.register(read_of(&fd), None, Waiter::None) {
            Ok(key) => keys.push(key),
            Err(_) => panic!("an open core admits the read"),
        }
    }
    assert!(core.flush().is_ok());
    assert!(core.submit(Wait::No).is_ok());
    assert_eq!(sim.in_flight().len(), 3, "the wake read and both reads");
    assert!(sim.complete(RequestKey::WAKE_USER_DATA, 8));
    let _ = core.reap();
    assert!(!core.wake_armed());
    sim.stall(true);
    for key in keys {
        core.cancel(key);
    }
    assert!(core.flush().is_ok());
    assert!(
        core.wake_armed(),
        "a stalled SQ still leaves the unpark path armed for the next wait"
    );
    sim.stall(false);
    assert!(core.flush().is_ok());
    assert!(core.submit(Wait::No).is_ok());
    assert_eq!(
        sim.pending_cancels().len(),
        2,
        "both cancels went out later"
    );
}

/// Registers `n` writes on `driver` (entered) and drops their futures.
fn drop_writes(driver: &Driver, fd: &Arc<OwnedFd>, n: usize) {
    let _entered = driver.enter();
    let mut cx = Context::from_waker(Waker::noop());
    for i in 0..n {
        let mut write = ops::write_at(fd.clone(), vec![1; 4], i as u64 * 4);
        assert!(std::pin::Pin::new(&mut write).poll(&mut cx).is_pending());
    }
    let _ = driver.turn(Park::Poll);
}

#[test]
fn core_dropped_without_shutdown_leaks_the_in_flight_read() {
    let (backend, sim) = sim_ring(4);
    let mut core = DriverState::new(Box::new(backend), 4, None);
    let fd = dev_null();
    let data = crate::request::Request::Read {
        fd: fd.clone(),
        buf: crate::buf::RawBuf::new_mut(crate::tests::sim::zeroed_spare(4)),
        offset: 0,
    };
    let registered = core.register(data, None, Waiter::None);
    assert!(registered.is_ok(), "an open core admits the read");
    assert!(core.flush().is_ok());
    assert!(core.submit(crate::backend::Wait::No).is_ok());
    assert_eq!(sim.in_flight().len(), 1, "the kernel owns the read");
    drop(core);
    assert_fd_refs(&fd, 2, "the read the kernel still owns was leaked, not freed");
}

#[test]
fn shutdown_past_deadline_reports_in_flight_and_unsubmitted_writes_as_not_drained() {
    let (driver, sim, fd) = sim_driver_with_fd(1);
    drop_writes(&driver, &fd, 3);
    assert_eq!(sim.in_flight().len(), 1, "one write owned by the kernel");
    let report = driver.shutdown(Some(Instant::now() + Duration::from_millis(20)));
    assert!(!report.drained, "{report:?}");
    assert_eq!((report.leaked, report.unsubmitted), (1, 2), "{report:?}");
    assert_fd_refs(&fd, 2, "only the leaked in-flight write keeps the file; unsubmitted ones were released");
}

#[test]
fn closure_submits_queued_writes_as_the_kernel_completes_earlier_ones() {
    let (driver, sim, fd) = sim_driver_with_fd(1);
    drop_writes(&driver, &fd, 3);
    driver.close();
    let mut completed = Vec::new();
    for _ in 0..3 {
        let in_flight = sim.in_flight();
        assert_eq!(in_flight.len(), 1, "the next queued write was submitted");
        assert!(sim.complete(in_flight[0], 4));
        completed.push(in_flight[0]);
        let _entered = driver.enter();
        let _ = driver.turn(Park::Poll);
    }
    completed.dedup();
    assert_eq!(
        completed.len(),
        3,
        "three distinct writes reached the kernel"
    );
    let report = driver.shutdown(Some(Instant::now() + Duration::from_secs(5)));
    assert!(report.drained && report.unsubmitted == 0, "{report:?}");
    assert_eq!(Arc::strong_count(&fd), 1);
}

#[test]
fn closure_still_retires_queued_reads_with_closed() {
    let (driver, sim, fd) = sim_driver_with_fd(1);
    let _entered = driver.enter();
    let mut cx = Context::from_waker(Waker::noop());
    let mut first = ops::read_at(fd.clone(), crate::tests::sim::zeroed_spare(4), 0);
    let mut queued = ops::read_at(fd.clone(), crate::tests::sim::zeroed_spare(4), 4);
    assert!(std::pin::Pin::new(&mut first).poll(&mut cx).is_pending());
    assert!(std::pin::Pin::new(&mut queued).poll(&mut cx).is_pending());
    let _ = driver.turn(Park::Poll);
    driver.close();
    assert_eq!(driver.metrics().queued, 0, "the queued read was retired");
    let Poll::Ready((result, _)) = std::pin::Pin::new(&mut queued).poll(&mut cx) else {
        panic!("a queued read resolves at closure")
    };
    assert!(crate::Error::is_closed(&result.expect_err("closed")));
    let cancels = sim.pending_cancels();
    assert_eq!(cancels.len(), 1, "the in-flight read is cancelled");
    assert!(sim.resolve_cancel(cancels[0]));
    let _ = driver.turn(Park::Poll);
    drop((first, queued));
    assert!(driver.is_idle());
    assert_eq!(driver.metrics().slots, 0);
    assert_eq!(Arc::strong_count(&fd), 1);
}
