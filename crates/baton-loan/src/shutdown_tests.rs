//! Shutdown from every place a caller can be (rule 8): from a thread outside the runtime, with
//! the worker on the background thread, in the slot, or on loan to another thread's `block_on`.

use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};

use crate::WorkerDisposal;
use crate::behaviour_tests::{runtime, wait_join, within};
use crate::test_worker::TestHandle;

/// Records the thread the worker's destructor runs on.
fn record_drop_thread(handle: &TestHandle) -> Arc<Mutex<Option<ThreadId>>> {
    let dropped_on = Arc::new(Mutex::new(None));
    handle.on_drop({
        let dropped_on = Arc::clone(&dropped_on);
        move || *dropped_on.lock().expect("not poisoned") = Some(thread::current().id())
    });
    dropped_on
}

fn drop_thread(dropped_on: &Mutex<Option<ThreadId>>) -> ThreadId {
    dropped_on
        .lock()
        .expect("not poisoned")
        .expect("the worker was dropped")
}

/// Rule 8: a shutdown called from a thread outside the runtime, while the background thread
/// runs the worker (a live task keeps it there), borrows the worker and drops it on the calling
/// thread, so the local tasks that thread owns are dropped at home instead of leaked.
#[test]
fn shutdown_from_an_outside_thread_drops_the_worker_on_that_thread() {
    let (loan, handle) = runtime();
    let dropped_on = record_drop_thread(&handle);
    let _live = handle.spawn(std::future::pending::<()>());
    let (report, caller) = within({
        let loan = Arc::clone(&loan);
        move || (loan.shutdown(), thread::current().id())
    });
    assert_eq!(report.worker, WorkerDisposal::DroppedNow, "{report:?}");
    assert_eq!(drop_thread(&dropped_on), caller);
    assert_eq!(handle.drops(), 1);
}

/// Rule 8 with rule 5: a background thread holding its own live local tasks refuses the
/// shutdown's borrow; shutdown then closes, and the background thread drops the worker (its
/// local tasks are at home there).
#[test]
fn shutdown_refused_by_a_background_thread_with_local_tasks_drops_the_worker_there() {
    let (loan, handle) = runtime();
    let dropped_on = record_drop_thread(&handle);
    let local = handle.clone();
    let background = wait_join(&handle.spawn(async move {
        let _pinned = local.spawn_local(std::future::pending::<()>());
        thread::current().id()
    }));
    let report = within({
        let loan = Arc::clone(&loan);
        move || loan.shutdown()
    });
    assert_eq!(
        report.worker,
        WorkerDisposal::DroppedByBackground,
        "{report:?}"
    );
    assert_eq!(drop_thread(&dropped_on), background);
    assert_eq!(handle.drops(), 1);
}
