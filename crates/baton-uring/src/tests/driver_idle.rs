//! Tests of the driver's idle point (`driver/idle.rs`, forward rule F8) over the simulated
//! ring: which completions end a linger, so that the turn reaps them without a park. The
//! simulated kernel answers every wait at once, so a park shows only in `DriverMetrics::parks`.

use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Duration;

use web_time::Instant;

use crate::driver::{Driver, Park};
use crate::Op;
use crate::ops;
use crate::tests::sim::{SimRing, zeroed_spare};
use crate::tests::support::sim_driver_with_fd;

type Read = Op<(std::io::Result<usize>, Vec<u8>)>;

/// `count` reads of `/dev/null` on `driver`, each polled once (registered, not yet submitted).
fn polled_reads(driver: &Driver, fd: &std::sync::Arc<std::os::fd::OwnedFd>, count: usize) -> Vec<Read> {
    let _entered = driver.enter();
    let mut cx = Context::from_waker(Waker::noop());
    (0..count)
        .map(|_| {
            let mut read = ops::read_at(fd.clone(), zeroed_spare(4), 0);
            assert!(Pin::new(&mut read).poll(&mut cx).is_pending());
            read
        })
        .collect()
}

/// A turn that may block, with a deadline far enough never to end it.
fn waiting_turn(driver: &Driver) -> crate::driver::TurnReport {
    driver.turn(Park::Wait(Some(Instant::now() + Duration::from_secs(10))))
}

/// Completes the oldest request the simulated kernel owns.
fn complete_oldest(sim: &SimRing) {
    let oldest = sim.in_flight()[0];
    assert!(sim.complete(oldest, 4));
}

#[test]
fn a_completion_waiting_at_the_idle_point_ends_the_turn_without_a_park() {
    let (driver, sim, fd) = sim_driver_with_fd(8);
    let _reads = polled_reads(&driver, &fd, 2);
    let _ = driver.turn(Park::Poll);
    complete_oldest(&sim);
    assert_eq!(driver.turn(Park::Poll).completions, 1, "the first read completed");
    complete_oldest(&sim);
    let parks = driver.metrics().parks;
    let report = waiting_turn(&driver);
    assert_eq!(report.completions, 1, "the turn reaped the second read");
    assert_eq!(
        driver.metrics().parks,
        parks,
        "a turn that just completed I/O lingers, and the linger ends on the waiting completion"
    );
}

#[test]
fn what_a_turn_queued_is_submitted_before_it_lingers() {
    let (driver, sim, fd) = sim_driver_with_fd(8);
    let _first = polled_reads(&driver, &fd, 1);
    let _ = driver.turn(Park::Poll);
    complete_oldest(&sim);
    assert_eq!(driver.turn(Park::Poll).completions, 1);
    // Served inline, as a page-cache read is: it completes the moment it is submitted.
    sim.complete_on_submit(Some(4));
    let _second = polled_reads(&driver, &fd, 1);
    let parks = driver.metrics().parks;
    let report = waiting_turn(&driver);
    assert_eq!(report.completions, 1, "the turn reaped the second read");
    assert_eq!(
        driver.metrics().parks,
        parks,
        "the second read went to the kernel before the linger, which found its completion"
    );
}

#[test]
fn a_timed_wait_ended_by_a_completion_rearms_lingering() {
    let (driver, sim, fd) = sim_driver_with_fd(8);
    let _reads = polled_reads(&driver, &fd, 4);
    let _ = driver.turn(Park::Poll);
    complete_oldest(&sim);
    assert_eq!(driver.turn(Park::Poll).completions, 1);
    let parks = driver.metrics().parks;
    // Nothing completes during this linger: it expires, the turn parks, and the policy stops
    // lingering until a timed wait is answered in time.
    let _ = waiting_turn(&driver);
    assert_eq!(driver.metrics().parks, parks + 1, "the unanswered linger was followed by a park");
    complete_oldest(&sim);
    assert_eq!(driver.turn(Park::Poll).completions, 1);
    complete_oldest(&sim);
    let report = waiting_turn(&driver);
    assert_eq!(report.completions, 1, "the timed wait reaped the third read");
    assert_eq!(driver.metrics().parks, parks + 2, "after a missed linger the turn blocks, timed");
    complete_oldest(&sim);
    let report = waiting_turn(&driver);
    assert_eq!(report.completions, 1, "the turn reaped the fourth read");
    assert_eq!(
        driver.metrics().parks,
        parks + 2,
        "the timed wait that a completion ended re-armed lingering, and this linger found the fourth"
    );
}
