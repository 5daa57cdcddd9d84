//! Shutdown under failure: a panicking waker or a turn run from `Drop` during a panic must
//! never free memory the kernel may still write (lifecycle rule U8) nor abort the process
//! (SPEC §3/§4); a ring that refuses submits ends the drain instead of spinning; and neither
//! closure nor a late completion may drop a created descriptor as a plain number (U4).

use std::os::fd::{AsRawFd, OwnedFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use web_time::Instant;

use crate::driver::{Driver, Park};
use crate::ops;
use crate::tests::support::{assert_fd_refs, dev_null, sim_driver, sim_driver_with_fd};

/// A waker whose `wake` panics, standing in for user code that misbehaves.
struct PanickingWake;

impl Wake for PanickingWake {
    fn wake(self: Arc<Self>) {
        panic!("user waker panicked on wake");
    }
}

fn panicking_waker() -> Waker {
    Waker::from(Arc::new(PanickingWake))
}

/// Registers a read of `fd` with a panicking waker and lets the simulated kernel own it.
fn read_in_flight(driver: &Driver, fd: &Arc<OwnedFd>) {
    let _entered = driver.enter();
    let waker = panicking_waker();
    let mut cx = Context::from_waker(&waker);
    let mut read = ops::read_at(fd.clone(), crate::tests::sim::zeroed_spare(4), 0);
    assert!(Pin::new(&mut read).poll(&mut cx).is_pending());
    let _ = driver.turn(Park::Poll);
    std::mem::forget(read);
}

#[test]
fn shutdown_with_a_panicking_waker_leaks_the_in_flight_read_and_contains_the_panic() {
    let (driver, sim, fd) = sim_driver_with_fd(4);
    read_in_flight(&driver, &fd);
    assert_eq!(sim.in_flight().len(), 1, "the kernel owns the read");
    let deadline = Instant::now() + Duration::from_millis(20);
    let report = driver.shutdown(Some(deadline));
    assert_eq!(report.waker_panics, 1, "counted, not re-raised: {report:?}");
    assert_eq!((report.drained, report.leaked), (false, 1), "{report:?}");
    assert_fd_refs(&fd, 2, "the read the kernel still owns was leaked, not freed");
}

#[test]
fn shutdown_with_a_panicking_waker_reraises_after_cleanup_when_asked_to() {
    let (driver, sim) = sim_driver(4);
    let driver = driver.propagating_waker_panics();
    let fd = dev_null();
    read_in_flight(&driver, &fd);
    assert_eq!(sim.in_flight().len(), 1, "the kernel owns the read");
    let deadline = Instant::now() + Duration::from_millis(20);
    let outcome = catch_unwind(AssertUnwindSafe(|| driver.shutdown(Some(deadline))));
    assert!(
        outcome.is_err(),
        "the waker's panic is re-raised after cleanup"
    );
    assert_fd_refs(&fd, 2, "the read the kernel still owns was leaked, not freed");
}

/// Turns `driver` from a destructor that runs while the thread unwinds.
struct TurnDuringUnwind<'a>(&'a Driver);

impl Drop for TurnDuringUnwind<'_> {
    fn drop(&mut self) {
        let _entered = self.0.enter();
        let _ = self.0.turn(Park::Poll);
    }
}

#[test]
fn turn_run_while_unwinding_swallows_a_waker_panic_instead_of_aborting() {
    let (driver, sim, fd) = sim_driver_with_fd(4);
    read_in_flight(&driver, &fd);
    let in_flight = sim.in_flight();
    assert!(sim.complete(in_flight[0], 4));
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let _turn = TurnDuringUnwind(&driver);
        panic!("the thread is already unwinding");
    }));
    assert!(outcome.is_err(), "the first panic still propagates");
    assert_eq!(driver.metrics().completed, 1, "the turn reaped the read");
    let report = driver.shutdown(Some(Instant::now() + Duration::from_secs(5)));
    assert!(report.drained, "{report:?}");
}

#[test]
fn closure_closes_a_created_fd_nobody_consumed() {
    let (driver, sim) = sim_driver(4);
    let (reader, writer) = pipe();
    let listener = dev_null();
    let mut accept = ops::accept(listener);
    {
        let _entered = driver.enter();
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut accept).poll(&mut cx).is_pending());
        let _ = driver.turn(Park::Poll);
        let in_flight = sim.in_flight();
        assert_eq!(in_flight.len(), 1);
        // The "accepted connection" is the pipe's only write end.
        let accepted = std::os::fd::IntoRawFd::into_raw_fd(writer);
        assert!(sim.complete(in_flight[0], accepted));
        let _ = driver.turn(Park::Poll);
    }
    driver.close();
    assert!(
        pipe_writers_gone(&reader),
        "the accepted fd was closed at closure"
    );
    std::mem::forget(accept);
    let _ = driver.shutdown(Some(Instant::now() + Duration::from_secs(5)));
}

/// The deterministic form of `tests/admission.rs`'s real-ring check: the accept completes
/// before the drop's cancel resolves (the kernel won the race), in both CQE orders.
#[test]
fn accept_completing_after_its_future_dropped_has_its_fd_closed() {
    for cancel_first in [false, true] {
        let (driver, sim) = sim_driver(4);
        let (reader, writer) = pipe();
        let _entered = driver.enter();
        let target = sim.submit_then_drop(&driver, ops::accept(dev_null()));
        assert_eq!(
            sim.pending_cancels(),
            vec![target],
            "the drop sent one cancel"
        );
        let accepted = std::os::fd::IntoRawFd::into_raw_fd(writer);
        assert!(sim.complete(target, accepted), "the accept wins the race");
        assert!(sim.resolve_cancel_ordered(target, cancel_first));
        let _ = driver.turn(Park::Poll);
        assert_eq!(
            driver.metrics().slots,
            0,
            "the slot retired at its final CQE"
        );
        assert!(
            pipe_writers_gone(&reader),
            "the late accept's fd was closed (cancel first: {cancel_first})"
        );
    }
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes; the result is checked.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just created by pipe2 and have no other owner.
    unsafe {
        (
            std::os::fd::FromRawFd::from_raw_fd(fds[0]),
            std::os::fd::FromRawFd::from_raw_fd(fds[1]),
        )
    }
}

/// Whether reading the (empty, non-blocking) pipe reports end of file: every write end closed.
fn pipe_writers_gone(reader: &OwnedFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: `reader` is an open descriptor and `byte` is valid for one byte.
    let n = unsafe { libc::read(reader.as_raw_fd(), (&raw mut byte).cast(), 1) };
    n == 0
}

#[test]
fn shutdown_stops_draining_when_the_ring_refuses_submits_and_reports_the_errno() {
    let (driver, sim, fd) = sim_driver_with_fd(4);
    let _ = read_in_flight_quiet(&driver, &fd);
    sim.fail_submits(Some(libc::EBADF));
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(driver.shutdown(None));
    });
    let report = receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("shutdown without a deadline returns once submits fail fatally");
    assert_eq!(report.submit_error, Some(libc::EBADF), "{report:?}");
    assert!(!report.drained && report.leaked == 1, "{report:?}");
    assert_eq!(Arc::strong_count(&fd), 2, "the in-flight read was leaked");
}

/// Registers a read of `fd` with a no-op waker and lets the simulated kernel own it.
fn read_in_flight_quiet(driver: &Driver, fd: &Arc<OwnedFd>) -> usize {
    let _entered = driver.enter();
    let mut cx = Context::from_waker(Waker::noop());
    let mut read = ops::read_at(fd.clone(), crate::tests::sim::zeroed_spare(4), 0);
    assert!(Pin::new(&mut read).poll(&mut cx).is_pending());
    let _ = driver.turn(Park::Poll);
    std::mem::forget(read);
    driver.metrics().in_flight
}
