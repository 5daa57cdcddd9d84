//! The fixtures every test module and loom model shares, each in one place: the test worker and
//! its handle, a runtime built on it, the futures the tests await, the thread a worker was
//! dropped on, panic payloads, and (outside loom) the hang-guarded waits.
//!
//! Everything here but [`wait`] builds under loom too, through the `sync` shim; the models use
//! a subset of it.

mod join;
mod test_worker;
#[cfg(not(loom))]
mod wait;

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use crate::Loan;
use crate::sync::{self, Mutex, thread};

pub(crate) use join::{TestJoin, YieldNow};
pub(crate) use test_worker::{BUDGET, ContextFault, TestHandle, test_worker};
#[cfg(not(loom))]
pub(crate) use wait::{HANG_GUARD, wait_join, wait_until, within, within_on};

/// A runtime on a fresh test worker, and the handle that spawns onto it.
pub(crate) fn runtime() -> (Arc<Loan>, TestHandle) {
    let (worker, unpark, handle) = test_worker();
    let loan = Loan::new(worker, unpark).expect("the background thread starts");
    (Arc::new(loan), handle)
}

/// Asserts that a `block_on` on this thread borrows the worker as its root: the worker is back
/// where any requester can take it.
pub(crate) fn assert_borrowed_as_root(loan: &Loan) {
    assert_eq!(
        loan.block_on(async { loan.thread_role() }),
        crate::ThreadRole::Root
    );
}

/// Shuts `loan` down and asserts that its worker was dropped exactly once.
pub(crate) fn shut_down_once(loan: &Loan, handle: &TestHandle) {
    let _report = loan.shutdown();
    assert_eq!(handle.drops(), 1);
}

/// A panic payload the tests raise and recognise.
#[derive(Debug, PartialEq)]
pub(crate) struct Payload(pub(crate) u32);

/// Runs a ready `block_on` whose worker was primed to panic in `fault` (`enter`, `leave`,
/// `pending`) and asserts that exactly that panic reached the caller.
pub(crate) fn assert_block_on_panics_in(loan: &Loan, fault: &'static str) {
    let caught = panic::catch_unwind(AssertUnwindSafe(|| loan.block_on(async { 1 })));
    let payload = caught.expect_err("the primed worker method panicked");
    assert_eq!(
        payload.downcast_ref::<ContextFault>(),
        Some(&ContextFault(fault))
    );
}

/// Records the thread the worker's destructor runs on (a loom thread under loom).
pub(crate) fn record_drop_thread(handle: &TestHandle) -> Arc<Mutex<Option<thread::ThreadId>>> {
    let dropped_on = Arc::new(Mutex::new(None));
    handle.on_drop({
        let dropped_on = Arc::clone(&dropped_on);
        move || *sync::lock(&dropped_on) = Some(thread::current().id())
    });
    dropped_on
}

/// The thread [`record_drop_thread`] saw the worker dropped on.
pub(crate) fn drop_thread(dropped_on: &Mutex<Option<thread::ThreadId>>) -> thread::ThreadId {
    sync::lock(dropped_on).expect("the worker was dropped")
}
