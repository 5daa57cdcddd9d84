//! Fault injection into the loan driver: a worker whose `enter`, `leave` or dispatch turn
//! panics, root destructors that panic and nest, worker destructors that re-enter shutdown
//! (L8, L13), and the root accounting hooks (L15).

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Weak};
use std::thread;

use crate::sync::Mutex;
use crate::tests::support::{
    Payload, TestHandle, assert_block_on_panics_in, runtime, wait_join, within_on,
};
use crate::{BackgroundExit, Loan, ShutdownReport, ThreadRole, WorkerDisposal};

/// After a fault: the worker was not lost (not dropped, still lendable, still runs tasks).
fn assert_worker_survived(loan: &Loan, handle: &TestHandle) {
    assert_eq!(handle.drops(), 0, "the worker was not dropped");
    assert_eq!(loan.thread_role(), ThreadRole::Outside, "no stale entry");
    let (role, value) =
        loan.block_on(async { (loan.thread_role(), handle.spawn(async { 6 }).await) });
    assert_eq!(
        (role, value),
        (ThreadRole::Root, 6),
        "the worker is lent again"
    );
    assert_eq!(
        wait_join(&handle.spawn(async { 7 })),
        7,
        "background runs it"
    );
}

/// A `block_on` whose worker hook `hook` (`"enter"` or `"leave"`) panics, armed by `arm`:
/// the panic reaches the caller, and the worker survives.
fn panicking_hook_still_returns_the_worker(arm: fn(&TestHandle), hook: &'static str) {
    let (loan, handle) = runtime();
    arm(&handle);
    assert_block_on_panics_in(&loan, hook);
    assert_worker_survived(&loan, &handle);
}

#[test]
fn panicking_enter_still_returns_the_worker() {
    panicking_hook_still_returns_the_worker(TestHandle::panic_on_next_enter, "enter");
}

#[test]
fn panicking_leave_still_returns_the_worker() {
    panicking_hook_still_returns_the_worker(TestHandle::panic_on_next_leave, "leave");
}

#[test]
fn panicking_leave_of_nested_frame_returns_the_worker_to_the_outer_root() {
    let (loan, handle) = runtime();
    let role_after = loan.block_on(async {
        handle.panic_on_next_leave();
        let caught = panic::catch_unwind(AssertUnwindSafe(|| loan.block_on(async { 2 })));
        assert!(caught.is_err(), "the nested leave panicked");
        (loan.thread_role(), handle.spawn(async { 3 }).await)
    });
    assert_eq!(role_after, (ThreadRole::Root, 3));
    assert_worker_survived(&loan, &handle);
}

/// Spawns a task that panics (so the next worker turn panics), then stays pending; its
/// destructor records the role a nested `block_on` saw, then panics.
struct NestThenPanicOnDrop<'a> {
    loan: &'a Loan,
    handle: &'a TestHandle,
    seen: &'a Mutex<Option<ThreadRole>>,
}

impl std::future::Future for NestThenPanicOnDrop<'_> {
    type Output = ();
    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        // Spawned while this thread holds the worker, so the panic happens in this `block_on`.
        drop(self.handle.spawn(async { panic::panic_any(Payload(13)) }));
        std::task::Poll::Pending
    }
}

impl Drop for NestThenPanicOnDrop<'_> {
    fn drop(&mut self) {
        let loan = self.loan;
        let role = loan.block_on(async { loan.thread_role() });
        *self.seen.lock().expect("not poisoned") = Some(role);
        panic::panic_any(Payload(2));
    }
}

#[test]
fn panicking_turn_drops_the_root_in_its_context_and_reraises_the_turn_payload() {
    let (loan, handle) = runtime();
    let seen = Mutex::new(None);
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        loan.block_on(NestThenPanicOnDrop {
            loan: &loan,
            handle: &handle,
            seen: &seen,
        });
    }));
    let payload = caught.expect_err("the worker turn panicked");
    assert_eq!(
        payload.downcast_ref::<Payload>(),
        Some(&Payload(13)),
        "the turn's payload wins over the root destructor's"
    );
    assert_eq!(
        *seen.lock().expect("not poisoned"),
        Some(ThreadRole::Root),
        "the root's destructor nested on the same worker"
    );
    assert_eq!(
        handle.roots(),
        (2, 2),
        "both roots were accounted as finished"
    );
    assert_worker_survived(&loan, &handle);
}

#[test]
fn root_started_and_finished_bracket_every_root_on_the_worker() {
    let (loan, handle) = runtime();
    let inside = loan.block_on(async {
        let outer = handle.roots();
        let nested = loan.block_on(async { handle.roots() });
        (outer, nested, handle.roots())
    });
    assert_eq!(inside, ((1, 0), (2, 0), (2, 1)));
    assert_eq!(handle.roots(), (2, 2));
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        loan.block_on(async { panic::panic_any(Payload(5)) })
    }));
    assert!(caught.is_err());
    assert_eq!(handle.roots(), (3, 3), "a panicking root is finished too");
    let join = handle.spawn(async { 1 });
    let fell_back = handle.spawn({
        let loan = Arc::clone(&loan);
        async move { loan.block_on(async { 4 }) }
    });
    assert_eq!((wait_join(&join), wait_join(&fell_back)), (1, 4));
    assert_eq!(
        handle.roots(),
        (3, 3),
        "a root that falls back does not run on the worker"
    );
}

/// Gives the worker a destructor hook that calls `shutdown` on `loan` and records the report.
fn shutdown_from_worker_drop(
    loan: &Arc<Loan>,
    handle: &TestHandle,
) -> Arc<Mutex<Option<ShutdownReport>>> {
    let inner = Arc::new(Mutex::new(None));
    let weak: Weak<Loan> = Arc::downgrade(loan);
    handle.on_drop({
        let inner = Arc::clone(&inner);
        move || {
            if let Some(loan) = weak.upgrade() {
                *inner.lock().expect("not poisoned") = Some(loan.shutdown());
            }
        }
    });
    inner
}

/// A shutdown re-entered from the worker's destructor: the outer call found the worker as
/// `disposal` and joined the background thread; the destructor's call (recorded in `inner`)
/// found the slot closed and the join claimed.
#[track_caller]
fn assert_reentered_shutdown(
    outer: ShutdownReport,
    disposal: WorkerDisposal,
    inner: &Mutex<Option<ShutdownReport>>,
) {
    assert_eq!(outer.worker, disposal);
    assert_eq!(outer.background, BackgroundExit::Joined);
    let inner = inner
        .lock()
        .expect("not poisoned")
        .expect("the worker's destructor called shutdown");
    assert_eq!(inner.worker, WorkerDisposal::AlreadyClosed);
    assert_eq!(inner.background, BackgroundExit::NotJoined);
}

/// Pins the worker to the background thread (rule L5: it refuses to lend it, also to
/// `shutdown`), so the background thread is the one that drops it.
fn keep_worker_on_background(handle: &TestHandle) {
    let local = handle.clone();
    wait_join(&handle.spawn(async move {
        let _pinned = local.spawn_local(std::future::pending::<()>());
    }));
}

#[test]
fn worker_destructor_reenters_shutdown_when_dropped_by_background() {
    let (loan, handle) = runtime();
    keep_worker_on_background(&handle);
    let inner = shutdown_from_worker_drop(&loan, &handle);
    let outer = within_on(&loan, move |loan| loan.shutdown());
    assert_reentered_shutdown(outer, WorkerDisposal::DroppedByBackground, &inner);
    assert_eq!(handle.drops(), 1);
}

#[test]
fn worker_destructor_reenters_shutdown_when_dropped_on_return() {
    let (loan, handle) = runtime();
    let inner = shutdown_from_worker_drop(&loan, &handle);
    let outer = within_on(&loan, move |loan| loan.block_on(async { loan.shutdown() }));
    assert_reentered_shutdown(outer, WorkerDisposal::DroppedOnReturn, &inner);
    assert_eq!(handle.drops(), 1);
}

/// Rule L8: a shutdown from outside borrows the worker and drops it on its own thread; the
/// destructor's call finds the slot closed and the join claimed, and returns at once.
#[test]
fn worker_destructor_reenters_shutdown_when_dropped_now() {
    let (loan, handle) = runtime();
    let inner = shutdown_from_worker_drop(&loan, &handle);
    assert_eq!(loan.block_on(async { 1 }), 1);
    let outer = within_on(&loan, move |loan| loan.shutdown());
    assert_reentered_shutdown(outer, WorkerDisposal::DroppedNow, &inner);
    assert_eq!(handle.drops(), 1);
}

#[test]
fn worker_destructor_shutting_down_from_another_thread_does_not_deadlock() {
    let (loan, handle) = runtime();
    keep_worker_on_background(&handle);
    let inner = Arc::new(Mutex::new(None));
    let weak = Arc::downgrade(&loan);
    handle.on_drop({
        let inner = Arc::clone(&inner);
        move || {
            // A worker-owned helper thread that shuts the runtime down, joined by the worker's
            // destructor (which runs on the background thread).
            let helper = thread::spawn(move || weak.upgrade().map(|loan| loan.shutdown()));
            *inner.lock().expect("not poisoned") = helper.join().expect("helper finished");
        }
    });
    let outer = within_on(&loan, move |loan| loan.shutdown());
    assert_reentered_shutdown(outer, WorkerDisposal::DroppedByBackground, &inner);
}
