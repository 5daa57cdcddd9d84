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

/// A turn that may block, with a deadline far enough never to end it: how many completions it
/// reaped, and whether it parked.
fn waiting_turn(driver: &Driver) -> (usize, bool) {
    let parks = driver.metrics().parks;
    let report = driver.turn(Park::Wait(Some(Instant::now() + Duration::from_secs(10))));
    (report.completions, driver.metrics().parks > parks)
}

/// Completes the oldest request the simulated kernel owns.
fn complete_oldest(sim: &SimRing) {
    let oldest = sim.in_flight()[0];
    assert!(sim.complete(oldest, 4));
}

/// Completes the oldest request and reaps it in a turn that does not wait: a fresh delivery,
/// after which the linger policy lingers (unless a linger went unanswered since).
fn deliver_one(driver: &Driver, sim: &SimRing) {
    complete_oldest(sim);
    assert_eq!(driver.turn(Park::Poll).completions, 1, "the completion was reaped");
}

#[test]
fn a_completion_waiting_at_the_idle_point_ends_the_turn_without_a_park() {
    let (driver, sim, fd) = sim_driver_with_fd(8);
    let _reads = polled_reads(&driver, &fd, 2);
    let _ = driver.turn(Park::Poll);
    deliver_one(&driver, &sim);
    complete_oldest(&sim);
    assert_eq!(
        waiting_turn(&driver),
        (1, false),
        "a turn that just completed I/O lingers, and the linger ends on the waiting completion"
    );
}

#[test]
fn what_a_turn_queued_is_submitted_before_it_lingers() {
    let (driver, sim, fd) = sim_driver_with_fd(8);
    let _first = polled_reads(&driver, &fd, 1);
    let _ = driver.turn(Park::Poll);
    deliver_one(&driver, &sim);
    // Served inline, as a page-cache read is: it completes the moment it is submitted.
    sim.complete_on_submit(Some(4));
    let _second = polled_reads(&driver, &fd, 1);
    assert_eq!(
        waiting_turn(&driver),
        (1, false),
        "the second read went to the kernel before the linger, which found its completion"
    );
}

#[test]
fn a_timed_wait_ended_by_a_completion_rearms_lingering() {
    let (driver, sim, fd) = sim_driver_with_fd(8);
    let _reads = polled_reads(&driver, &fd, 4);
    let _ = driver.turn(Park::Poll);
    deliver_one(&driver, &sim);
    // Nothing completes during this linger: it expires, the turn parks, and the policy stops
    // lingering until a timed wait is answered in time.
    assert_eq!(waiting_turn(&driver), (0, true), "the unanswered linger, then a park");
    deliver_one(&driver, &sim);
    complete_oldest(&sim);
    assert_eq!(
        waiting_turn(&driver),
        (1, true),
        "after a missed linger the turn blocks (timed), and the wait reaps the third read"
    );
    complete_oldest(&sim);
    assert_eq!(
        waiting_turn(&driver),
        (1, false),
        "the timed wait that a completion ended re-armed lingering, and this linger found the fourth"
    );
}
