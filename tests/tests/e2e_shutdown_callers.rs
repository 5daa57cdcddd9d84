//! End to end: `Runtime::shutdown_timeout` called from each place a caller can be — the thread
//! that owns local tasks, another thread while a `block_on` has the worker on loan, and one of
//! the runtime's own tasks — stops the runtime and reports what it did.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Generous: these bounds only guard against hangs, they never measure speed.
const DEADLINE: Duration = Duration::from_secs(60);

/// How long a `Runtime`'s `Drop` waits for its worker (baton's `DROP_SHUTDOWN_TIMEOUT`).
const DROP_WAIT: Duration = Duration::from_secs(10);

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

/// Another thread whose `block_on` has the worker on loan: it runs `body` with the runtime's
/// handle and a sender to signal once it is where the test wants it, then sends back what
/// `body` returned.
struct Borrower<T> {
    ready: mpsc::Receiver<()>,
    result: mpsc::Receiver<T>,
    thread: std::thread::JoinHandle<()>,
}

impl<T: Send + 'static> Borrower<T> {
    fn spawn(
        handle: baton::Handle,
        body: impl FnOnce(&baton::Handle, mpsc::Sender<()>) -> T + Send + 'static,
    ) -> Borrower<T> {
        let (signal, ready) = mpsc::channel();
        let (send_result, result) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let _sent = send_result.send(body(&handle, signal));
        });
        Borrower {
            ready,
            result,
            thread,
        }
    }

    /// [`Borrower::spawn`] of a body that is one `block_on` of `root(ready)`.
    fn block_on<F: std::future::Future<Output = T>>(
        handle: baton::Handle,
        root: impl FnOnce(mpsc::Sender<()>) -> F + Send + 'static,
    ) -> Borrower<T> {
        Borrower::spawn(handle, |handle, ready| handle.block_on(root(ready)))
    }

    /// Waits (bounded) for the borrower's signal.
    fn wait_ready(&self) -> io::Result<()> {
        self.ready.recv_timeout(DEADLINE).map_err(io::Error::other)
    }

    /// Once the borrower signalled, shuts `rt` down from this thread with `deadline`.
    fn shut_down_when_ready(
        &self,
        rt: baton::Runtime,
        deadline: Duration,
    ) -> io::Result<baton::ShutdownReport> {
        self.wait_ready()?;
        Ok(rt.shutdown_timeout(deadline))
    }

    /// Waits (bounded) for what the borrower's body returned; `what` names it in the error.
    fn result(&self, what: &str) -> io::Result<T> {
        self.result
            .recv_timeout(DEADLINE)
            .map_err(|_| io::Error::other(format!("{what} never resolved")))
    }

    fn join(self) -> io::Result<()> {
        self.thread
            .join()
            .map_err(|_| io::Error::other("borrower panicked"))
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
    let borrower = Borrower::block_on(rt.handle(), |ready| async move {
        let listener = baton::net::TcpListener::bind("127.0.0.1:0")?;
        let _sent = ready.send(());
        listener.accept().await.map(drop)
    });
    let report = borrower.shut_down_when_ready(rt, DEADLINE)?;
    let result = borrower.result("the borrowed accept")?;
    let err = result.expect_err("nobody connected");
    assert!(baton::Error::is_closed(&err), "{err}");
    borrower.join()?;
    assert!(report.worker_on_loan, "{report:?}");
    assert!(report.closed_on_loan, "{report:?}");
    assert!(!report.called_from_runtime, "{report:?}");
    assert!(
        report.worker.is_some(),
        "given back before the deadline: {report:?}"
    );
    assert!(report.is_clean(), "{report:?}");
    Ok(())
}

/// A `timeout` waiting in a borrowed `block_on` when another thread shuts the runtime down
/// reports `Closed`, not `Elapsed`: its timer was cancelled by the closure, not fired.
#[test]
fn a_timeout_pending_in_a_borrowed_block_on_reports_closed_when_the_runtime_shuts_down()
-> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let borrower = Borrower::block_on(rt.handle(), |ready| async move {
        let _sent = ready.send(());
        baton::time::timeout(Duration::from_secs(600), std::future::pending::<()>()).await
    });
    let report = borrower.shut_down_when_ready(rt, DEADLINE)?;
    let result = borrower.result("the timeout")?;
    assert_eq!(result, Err(baton::time::TimeoutError::Closed), "{report:?}");
    borrower.join()
}

/// A borrower busy inside its root's poll when shutdown comes (here: blocked until the test
/// lets it go) cannot close the worker in time: shutdown waits only until its deadline and
/// says the worker was on loan, not closed there, and not reported. Once the borrower moves
/// on, it closes the worker at its next boundary, its accept resolves `Closed`, and the worker
/// is shut down when its `block_on` returns.
#[test]
fn shutdown_waits_for_a_busy_borrower_only_until_its_deadline_and_says_so() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let (release, released) = mpsc::channel::<()>();
    let borrower = Borrower::spawn(rt.handle(), move |handle, busy| {
        let result = handle.block_on(async {
            let listener = baton::net::TcpListener::bind("127.0.0.1:0")?;
            let _sent = busy.send(());
            // Blocks inside the root's poll: no dispatch boundary until released (or until the
            // test failed and dropped `release`; `result` bounds the wait).
            let _released = released.recv();
            listener.accept().await.map(drop)
        });
        (result, handle.is_shutting_down())
    });
    let report = borrower.shut_down_when_ready(rt, Duration::from_millis(50))?;
    assert!(report.worker_on_loan, "{report:?}");
    assert!(!report.closed_on_loan, "{report:?}");
    assert!(report.worker.is_none(), "{report:?}");
    assert!(!report.is_clean(), "{report:?}");
    let _sent = release.send(());
    let (result, shutting_down) = borrower.result("the borrowed accept")?;
    let err = result.expect_err("nobody connected");
    assert!(baton::Error::is_closed(&err), "{err}");
    assert!(shutting_down);
    borrower.join()
}

/// Spawns from inside the runtime right after it began shutting down: a `Send` task and a
/// local one, each of which records whether it ran.
fn spawn_after_shutdown(ran: &Arc<AtomicBool>) -> [baton::task::JoinHandle<()>; 2] {
    let send = {
        let ran = Arc::clone(ran);
        baton::spawn(async move { ran.store(true, Ordering::SeqCst) })
    };
    let local = {
        let ran = Arc::clone(ran);
        baton::spawn_local(async move { ran.store(true, Ordering::SeqCst) })
    };
    [send, local]
}

/// Asserts that `join` resolved cancelled because it was spawned after shutdown began.
fn assert_refused(join: baton::task::JoinHandle<()>, handle: &baton::Handle) {
    let err = handle
        .block_on(join)
        .expect_err("a spawn after shutdown never runs");
    assert_eq!(
        err.cancel_reason(),
        Some(baton::task::CancelReason::SpawnAfterShutdown),
        "{err}"
    );
}

/// Waits (from outside the runtime, bounded) until a task that was pending when the runtime
/// shut down resolves cancelled: the worker's own shutdown happened.
fn assert_cancelled_by_shutdown(join: baton::task::JoinHandle<()>, handle: &baton::Handle) {
    let handle = handle.clone();
    let (sent, received) = mpsc::channel();
    std::thread::spawn(move || {
        let _sent = sent.send(handle.block_on(join));
    });
    let joined = received
        .recv_timeout(DEADLINE)
        .expect("the pending task resolved once the worker shut down");
    let err = joined.expect_err("pending forever until cancelled");
    assert_eq!(
        err.cancel_reason(),
        Some(baton::task::CancelReason::RuntimeShutdown),
        "{err}"
    );
}

/// Asserts the report of a shutdown called from inside the runtime (it could not wait for the
/// worker its caller runs on), then that both tasks `spawned` after it were refused.
fn assert_shut_down_from_inside(
    report: &baton::ShutdownReport,
    spawned: [baton::task::JoinHandle<()>; 2],
    handle: &baton::Handle,
) {
    assert!(report.called_from_runtime, "{report:?}");
    assert!(!report.worker_on_loan, "{report:?}");
    assert!(report.worker.is_none(), "{report:?}");
    for join in spawned {
        assert_refused(join, handle);
    }
}

/// Asserts that the task `pending` at shutdown was cancelled by it (the worker really stopped)
/// and that no task spawned after shutdown set `ran`.
fn assert_stopped_and_nothing_late_ran(
    pending: baton::task::JoinHandle<()>,
    handle: &baton::Handle,
    ran: &AtomicBool,
) {
    assert_cancelled_by_shutdown(pending, handle);
    assert!(
        !ran.load(Ordering::SeqCst),
        "a task spawned after shutdown ran"
    );
}

/// The `Runtime` moved into one of its own tasks (run by the background thread) and shut down
/// there: the call cannot wait for the worker, which is running the caller, but nothing
/// spawned afterwards may run, and the runtime must really stop once the task returns.
#[test]
fn shutdown_from_inside_a_task_refuses_later_spawns_and_the_runtime_stops() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let pending = rt.spawn(std::future::pending::<()>());
    let ran = Arc::new(AtomicBool::new(false));
    let shutter = handle.spawn({
        let ran = Arc::clone(&ran);
        async move {
            let report = rt.shutdown_timeout(DEADLINE);
            (report, spawn_after_shutdown(&ran))
        }
    });
    let (report, spawned) = handle
        .block_on(shutter)
        .map_err(|err| io::Error::other(err.to_string()))?;
    assert_shut_down_from_inside(&report, spawned, &handle);
    assert_refused(handle.spawn(async {}), &handle);
    assert_stopped_and_nothing_late_ran(pending, &handle, &ran);
    Ok(())
}

/// The same from a task run by a `block_on` caller's dispatch turn: the background thread is
/// joined without deadlock, the borrower closes the worker after the turn, and its root (which
/// awaits the task) still completes.
#[test]
fn shutdown_from_a_task_run_by_block_on_refuses_later_spawns_and_the_runtime_stops()
-> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let pending = rt.spawn(std::future::pending::<()>());
    let ran = Arc::new(AtomicBool::new(false));
    let outcome = within_deadline({
        let handle = handle.clone();
        let ran = Arc::clone(&ran);
        move || {
            handle.block_on(async move {
                baton::spawn(async move {
                    let report = rt.shutdown_timeout(Duration::from_secs(600));
                    (report, spawn_after_shutdown(&ran))
                })
                .await
            })
        }
    });
    let (report, spawned) = outcome.map_err(|err| io::Error::other(err.to_string()))?;
    assert_shut_down_from_inside(&report, spawned, &handle);
    assert_stopped_and_nothing_late_ran(pending, &handle, &ran);
    Ok(())
}

/// The `Runtime` moved into the root of a `Handle::block_on` and shut down there: the call
/// returns (it never waits for the worker its own thread holds), and later spawns are refused.
#[test]
fn shutdown_from_a_block_on_root_returns_and_refuses_later_spawns() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let pending = rt.spawn(std::future::pending::<()>());
    let ran = Arc::new(AtomicBool::new(false));
    let (report, spawned) = within_deadline({
        let handle = handle.clone();
        let ran = Arc::clone(&ran);
        move || {
            handle.block_on(async move {
                let report = rt.shutdown_timeout(Duration::from_secs(600));
                (report, spawn_after_shutdown(&ran))
            })
        }
    });
    assert_shut_down_from_inside(&report, spawned, &handle);
    assert_stopped_and_nothing_late_ran(pending, &handle, &ran);
    Ok(())
}

/// Dropping the `Runtime` inside one of its tasks shuts it down the same way: its `Drop` would
/// otherwise wait its whole [`DROP_WAIT`] for a worker that is running the dropping task, so a
/// drop that takes that long fails (the bound is just under it, generous for one that returns
/// at once).
#[test]
fn dropping_the_runtime_inside_its_own_task_returns_and_the_runtime_stops() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let pending = rt.spawn(std::future::pending::<()>());
    let dropper = handle.spawn(async move {
        let started = Instant::now();
        drop(rt);
        started.elapsed()
    });
    let joined = within_deadline({
        let handle = handle.clone();
        move || handle.block_on(dropper)
    });
    let dropping = joined.map_err(|err| io::Error::other(err.to_string()))?;
    assert!(
        dropping < DROP_WAIT - Duration::from_secs(1),
        "the drop waited {dropping:?} for the worker running it"
    );
    assert!(handle.is_shutting_down());
    assert_refused(handle.spawn(async {}), &handle);
    assert_cancelled_by_shutdown(pending, &handle);
    Ok(())
}

/// Runs `f` on its own thread; fails the test if it does not return within [`DEADLINE`].
fn within_deadline<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (sent, received) = mpsc::channel();
    std::thread::spawn(move || {
        let _sent = sent.send(f());
    });
    received
        .recv_timeout(DEADLINE)
        .expect("returned without waiting for the worker its own thread runs")
}
