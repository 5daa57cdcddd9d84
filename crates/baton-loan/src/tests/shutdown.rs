//! Shutdown (L8) from every place a caller can be: between calls, from the root holding the
//! worker, from a thread outside the runtime with the worker on the background thread, in the
//! slot, or on loan to another thread's `block_on`; and the worker retiring itself.

use std::future::{Future, poll_fn};
use std::sync::Arc;
use std::sync::mpsc;
use std::task::Poll;
use std::thread;
use std::time::Instant;

use crate::tests::support::{
    HANG_GUARD, TestJoin, drop_thread, record_drop_thread, runtime, wait_join, wait_until, within,
    within_on,
};
use crate::{BackgroundExit, DrainOutcome, Loan, ThreadRole, WorkerDisposal};

#[test]
fn shutdown_while_loaned_drops_worker_when_it_comes_back() {
    let (loan, handle) = runtime();
    let (report, drops_inside) = loan.block_on(async { (loan.shutdown(), handle.drops()) });
    assert_eq!(report.worker, WorkerDisposal::DroppedOnReturn);
    assert_eq!(report.background, BackgroundExit::Joined);
    assert_eq!(drops_inside, 0);
    assert_eq!(handle.drops(), 1);
    assert!(loan.is_closed());
    assert_eq!(
        loan.block_on(async { loan.thread_role() }),
        ThreadRole::Outside
    );
    let again = loan.shutdown();
    assert_eq!(again.worker, WorkerDisposal::AlreadyClosed);
}

#[test]
fn shutdown_between_calls_drops_worker_once() {
    let (loan, handle) = runtime();
    assert_eq!(loan.block_on(async { 1 }), 1);
    let report = loan.shutdown();
    assert!(matches!(
        report.worker,
        WorkerDisposal::DroppedByBackground | WorkerDisposal::DroppedNow
    ));
    assert_eq!(report.background, BackgroundExit::Joined);
    assert_eq!(handle.drops(), 1);
    drop(loan);
    assert_eq!(handle.drops(), 1);
}

#[test]
fn worker_retiring_itself_closes_protocol() {
    let (loan, handle) = runtime();
    handle.begin_shutdown();
    wait_until(|| loan.is_closed());
    assert_eq!(handle.drops(), 1);
    assert_eq!(loan.block_on(async { 8 }), 8);
}

/// Rule L8: a shutdown called from a thread outside the runtime, while the background thread
/// runs the worker (a live task keeps it there), borrows the worker and drops it on the calling
/// thread, so the local tasks that thread owns are dropped at home instead of leaked.
#[test]
fn shutdown_from_an_outside_thread_drops_the_worker_on_that_thread() {
    let (loan, handle) = runtime();
    let dropped_on = record_drop_thread(&handle);
    let _live = handle.spawn(std::future::pending::<()>());
    let (report, caller) = within_on(&loan, move |loan| (loan.shutdown(), thread::current().id()));
    assert_eq!(report.worker, WorkerDisposal::DroppedNow, "{report:?}");
    assert_eq!(drop_thread(&dropped_on), caller);
    assert_eq!(handle.drops(), 1);
}

/// Rule L8 with rule L5: a background thread holding its own live local tasks refuses the
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
    let report = within_on(&loan, move |loan| loan.shutdown());
    assert_eq!(
        report.worker,
        WorkerDisposal::DroppedByBackground,
        "{report:?}"
    );
    assert_eq!(drop_thread(&dropped_on), background);
    assert_eq!(handle.drops(), 1);
}

/// Runs `root` in a `block_on` on a new thread, once that thread borrowed the worker: returns
/// the thread, whose result is the root's output.
fn borrower<T: Send + 'static>(
    loan: &Arc<Loan>,
    root: impl Future<Output = T> + Send + 'static,
) -> thread::JoinHandle<T> {
    let (borrowed, on_loan) = mpsc::channel();
    let thread = thread::spawn({
        let loan = Arc::clone(loan);
        move || {
            let inner = Arc::clone(&loan);
            loan.block_on(async move {
                let _sent = borrowed.send(inner.thread_role());
                root.await
            })
        }
    });
    assert_eq!(on_loan.recv_timeout(HANG_GUARD), Ok(ThreadRole::Root));
    thread
}

/// Rule L8: a shutdown from another thread while a `block_on` has the worker on loan closes the
/// worker there, at the borrower's next dispatch boundary (here: its park, which the closure
/// ends), so a root waiting on the worker learns of it; the borrower drops the worker when its
/// root completes.
#[test]
fn shutdown_from_another_thread_closes_a_borrowed_worker_on_its_borrower() {
    let (loan, handle) = runtime();
    let dropped_on = record_drop_thread(&handle);
    let (join, done) = TestJoin::pair();
    handle.on_close_on_loan(move || done.set("closed on loan"));
    let borrower = borrower(&loan, join);
    let borrower_id = borrower.thread().id();
    let report = within_on(&loan, move |loan| loan.shutdown());
    assert_eq!(report.worker, WorkerDisposal::DroppedOnReturn, "{report:?}");
    let out = within(move || borrower.join().expect("the borrower does not panic"));
    assert_eq!(out, "closed on loan");
    assert_eq!(handle.closes_on_loan(), 1);
    assert_eq!(handle.drops(), 1);
    assert_eq!(drop_thread(&dropped_on), borrower_id);
}

/// Rule L8: after closing the worker on loan, every root on the borrowing thread is polled once
/// more (a closure may drop wakers instead of waking them), and the worker is closed once even
/// though two frames — a nested `block_on` and its outer root — see the closure.
#[test]
fn closure_on_loan_polls_every_root_again_and_closes_the_worker_once() {
    let (loan, handle) = runtime();
    let closed = {
        let handle = handle.clone();
        move || handle.closes_on_loan() > 0
    };
    // Neither root stores its waker: only the polls the closure owes them end them. The
    // nested root sees the closure first (its frame closes the worker); the outer root is
    // pending once more after it, so only its own frame's look at the closure polls it again.
    let nested_loan = Arc::clone(&loan);
    let borrower = borrower(&loan, async move {
        nested_loan.block_on(poll_fn(move |_| {
            if closed() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }));
        let mut polled = false;
        poll_fn(|_| {
            if std::mem::replace(&mut polled, true) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        nested_loan.thread_role()
    });
    let _report = within_on(&loan, move |loan| loan.shutdown());
    let role = within(move || borrower.join().expect("the borrower does not panic"));
    assert_eq!(role, ThreadRole::Root);
    assert_eq!(handle.closes_on_loan(), 1);
    assert_eq!(handle.drops(), 1);
}

/// Rule L8: a `drain_until` notices the closure at its next boundary too, closes the worker on
/// loan, and keeps running it until its predicate holds.
#[test]
fn drain_until_closes_the_worker_on_loan_when_the_slot_closes() {
    let (loan, handle) = runtime();
    let (started, drained) = mpsc::channel();
    let drainer = thread::spawn({
        let loan = Arc::clone(&loan);
        let handle = handle.clone();
        move || {
            let mut first = Some(started);
            loan.drain_until(Instant::now() + HANG_GUARD, &mut || {
                if let Some(started) = first.take() {
                    let _sent = started.send(());
                }
                handle.closes_on_loan() > 0
            })
        }
    });
    assert_eq!(drained.recv_timeout(HANG_GUARD), Ok(()));
    let report = within_on(&loan, move |loan| loan.shutdown());
    assert_eq!(report.worker, WorkerDisposal::DroppedOnReturn, "{report:?}");
    let outcome = within(move || drainer.join().expect("the drainer does not panic"));
    assert_eq!(outcome, DrainOutcome::Satisfied);
    assert_eq!(handle.closes_on_loan(), 1);
    assert_eq!(handle.drops(), 1);
}
