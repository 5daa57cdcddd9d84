//! Fixtures shared by the crate's own tests: a driver over a fresh simulated ring, and a
//! descriptor whose data does not matter.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use crate::driver::Driver;
use crate::tests::sim::{SimRing, sim_ring};

/// A driver over a fresh simulated ring of `entries` submission places, admitting as many
/// requests in flight, and the ring's control.
pub(crate) fn sim_driver(entries: usize) -> (Driver, SimRing) {
    let (backend, sim) = sim_ring(entries);
    (Driver::with_backend(Box::new(backend), entries, None), sim)
}

/// [`sim_driver`] and a [`dev_null`] descriptor for its requests.
pub(crate) fn sim_driver_with_fd(entries: usize) -> (Driver, SimRing, Arc<OwnedFd>) {
    let (driver, sim) = sim_driver(entries);
    (driver, sim, dev_null())
}

/// Asserts that `count` strong references to `fd` are left (the test's own among them); `why`
/// says who holds the others.
#[track_caller]
pub(crate) fn assert_fd_refs(fd: &Arc<OwnedFd>, count: usize, why: &str) {
    assert_eq!(Arc::strong_count(fd), count, "{why}");
}

/// `/dev/null`, opened for reading: the descriptor of requests whose data does not matter.
pub(crate) fn dev_null() -> Arc<OwnedFd> {
    Arc::new(OwnedFd::from(
        std::fs::File::open("/dev/null").expect("open /dev/null"),
    ))
}
