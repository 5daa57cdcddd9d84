//! End to end: `Runtime::shutdown_timeout` called from each place a caller can be — the thread
//! that owns local tasks, another thread while a `block_on` has the worker on loan, and one of
//! the runtime's own tasks — stops the runtime and reports what it did.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::mpsc;
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

/// Thread B's `block_on` borrows the worker and waits in `accept` (nobody connects); thread S
/// shuts the runtime down. Shutdown used to return at once (`worker: None`) and leave B's
/// accept pending forever; the borrowed worker must close where it is, B's accept resolve to
/// `Closed`, and the report say so.
#[test]
fn shutdown_from_another_thread_closes_a_borrowed_worker_and_its_accept_resolves_closed()
-> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let (accepting, accept_pending) = mpsc::channel();
    let (accepted, accept_result) = mpsc::channel();
    let borrower = std::thread::spawn(move || {
        let result = handle.block_on(async {
            let listener = baton::net::TcpListener::bind("127.0.0.1:0")?;
            let _sent = accepting.send(());
            listener.accept().await.map(drop)
        });
        let _sent = accepted.send(result);
    });
    accept_pending
        .recv_timeout(DEADLINE)
        .map_err(io::Error::other)?;
    let report = rt.shutdown_timeout(DEADLINE);
    let result = accept_result
        .recv_timeout(DEADLINE)
        .map_err(|_| io::Error::other("the borrowed accept never resolved"))?;
    let err = result.expect_err("nobody connected");
    assert!(baton::Error::is_closed(&err), "{err}");
    borrower
        .join()
        .map_err(|_| io::Error::other("borrower panicked"))?;
    assert!(report.worker_on_loan, "{report:?}");
    assert!(report.closed_on_loan, "{report:?}");
    assert!(
        report.worker.is_some(),
        "given back before the deadline: {report:?}"
    );
    assert!(report.is_clean(), "{report:?}");
    Ok(())
}

/// A borrower busy inside its root's poll when shutdown comes (here: blocked until the test
/// lets it go) cannot close the worker in time: shutdown waits only until its deadline and
/// says the worker was on loan, not closed there, and not reported. Once the borrower moves
/// on, it closes the worker at its next boundary, its accept resolves `Closed`, and the worker
/// is shut down when its `block_on` returns.
#[test]
fn shutdown_waits_for_a_busy_borrower_only_until_its_deadline_and_says_so() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let (busy, borrower_busy) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let (accepted, accept_result) = mpsc::channel();
    let borrower = std::thread::spawn(move || {
        let result = handle.block_on(async {
            let listener = baton::net::TcpListener::bind("127.0.0.1:0")?;
            let _sent = busy.send(());
            // Blocks inside the root's poll: no dispatch boundary until released.
            let _released = released.recv_timeout(DEADLINE);
            listener.accept().await.map(drop)
        });
        let _sent = accepted.send((result, handle.is_shutting_down()));
    });
    borrower_busy
        .recv_timeout(DEADLINE)
        .map_err(io::Error::other)?;
    let report = rt.shutdown_timeout(Duration::from_millis(50));
    assert!(report.worker_on_loan, "{report:?}");
    assert!(!report.closed_on_loan, "{report:?}");
    assert!(report.worker.is_none(), "{report:?}");
    assert!(!report.is_clean(), "{report:?}");
    let _sent = release.send(());
    let (result, shutting_down) = accept_result
        .recv_timeout(DEADLINE)
        .map_err(|_| io::Error::other("the borrowed accept never resolved"))?;
    let err = result.expect_err("nobody connected");
    assert!(baton::Error::is_closed(&err), "{err}");
    assert!(shutting_down);
    borrower
        .join()
        .map_err(|_| io::Error::other("borrower panicked"))
}
