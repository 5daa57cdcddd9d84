//! End to end: `Runtime::shutdown_timeout` called from each place a caller can be — the thread
//! that owns local tasks, another thread while a `block_on` has the worker on loan, and one of
//! the runtime's own tasks — stops the runtime and reports what it did.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

/// Generous: these bounds only guard against hangs, they never measure speed.
const DEADLINE: Duration = Duration::from_secs(10);

/// Pending forever; records its drop (on its own thread: the flag is `!Send`).
struct PendingWithDropFlag(Rc<Cell<bool>>);

impl Future for PendingWithDropFlag {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

impl Drop for PendingWithDropFlag {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// Between `block_on` calls the background thread runs the worker (a live local task keeps it
/// from resting), and it used to drop the worker at shutdown, leaking the calling thread's
/// local tasks. Repeated, because it depended on where the worker happened to be.
#[test]
fn shutdown_drops_the_calling_threads_local_tasks_on_that_thread() -> io::Result<()> {
    for run in 0..10 {
        let rt = baton::Runtime::new()?;
        let dropped = Rc::new(Cell::new(false));
        rt.block_on(async {
            drop(baton::spawn_local(PendingWithDropFlag(Rc::clone(&dropped))));
        });
        let report = rt.shutdown_timeout(DEADLINE);
        assert_eq!(report.tasks_leaked, 0, "run {run}: {report:?}");
        assert!(dropped.get(), "run {run}: the local task was never dropped");
        assert!(report.is_clean(), "run {run}: {report:?}");
    }
    Ok(())
}
