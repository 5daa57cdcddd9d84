//! Loom models of the loan protocol. They drive the shipped `Loan`, slot, background thread,
//! frames and wakers with the test worker, whose locks, condvars and atomics also come from the
//! `sync` shim. At most four threads each; every thread is joined before asserting.

use std::sync::Arc;

use crate::sync::{self, Mutex, thread};
use crate::tests::support::{
    TestJoin, assert_borrowed_as_root, drop_thread, record_drop_thread, runtime, shut_down_once,
};
use crate::{BackgroundExit, Loan, ThreadRole, WorkerDisposal};

fn request(loan: &Arc<Loan>) -> thread::JoinHandle<ThreadRole> {
    let loan = Arc::clone(loan);
    thread::spawn(move || loan.block_on(async { loan.thread_role() }))
}

/// The slot protocol with the background thread, two requesters and a concurrent shutdown:
/// every requester returns (no deadlock), each either borrowed the worker (`Root`) or fell back
/// (`Outside`), no requester ever sees an answer meant for another ticket (the slot's
/// debug assertions, rules L3–L5), and the worker is dropped exactly once wherever it was when the
/// shutdown happened (no lost worker, rule L8).
#[test]
fn loom_slot_two_requesters_and_shutdown() {
    loom::model(|| {
        let (loan, handle) = runtime();
        let first = request(&loan);
        let second = request(&loan);
        let report = loan.shutdown();
        let roles = [
            first.join().expect("first requester"),
            second.join().expect("second requester"),
        ];
        for role in roles {
            assert!(matches!(role, ThreadRole::Root | ThreadRole::Outside));
        }
        assert!(loan.is_closed());
        assert_eq!(handle.drops(), 1, "{report:?}");
    });
}

/// Two requesters racing the background thread without shutdown: whoever is not served falls
/// back, an offer is only ever taken by its own ticket (a foreign take trips the slot's rule L4
/// assertion in the waiting requester), and after both return the worker is back with the
/// background thread: a third `block_on` borrows it.
#[test]
fn loom_two_requesters_take_only_their_own_offer() {
    loom::model(|| {
        let (loan, handle) = runtime();
        let first = request(&loan);
        let second = request(&loan);
        let _roles = (
            first.join().expect("first requester"),
            second.join().expect("second requester"),
        );
        assert_borrowed_as_root(&loan);
        shut_down_once(&loan, &handle);
    });
}

/// While the background thread holds local tasks, both requesters are refused or contended and
/// return (a refused requester is never left waiting); only the refused ticket acknowledges its
/// refusal (another requester clearing it trips the rule L5 assertion or deadlocks).
#[test]
fn loom_refused_requesters_return() {
    loom::model(|| {
        let (loan, handle) = runtime();
        handle.pretend_local_tasks();
        let first = request(&loan);
        let second = request(&loan);
        let roles = [
            first.join().expect("first requester"),
            second.join().expect("second requester"),
        ];
        assert_eq!(roles, [ThreadRole::Outside; 2]);
        shut_down_once(&loan, &handle);
    });
}

/// The root waker fired from another thread against the worker parking in `run_until` on the
/// caller: the wake is never lost (a lost wake-up leaves every thread blocked, which loom
/// reports as a deadlock), and the root sees the value.
#[test]
fn loom_root_wake_against_park() {
    loom::model(|| {
        let (loan, handle) = runtime();
        let (join, done) = TestJoin::pair();
        let setter = thread::spawn(move || done.set(5));
        let value = loan.block_on(join);
        setter.join().expect("setter");
        assert_eq!(value, 5);
        shut_down_once(&loan, &handle);
    });
}

/// A `block_on` that cannot borrow (the runtime is closed) parks the calling thread on its
/// signal; a wake from another thread against that park is never lost.
#[test]
fn loom_fallback_wake_against_park() {
    loom::model(|| {
        let (loan, handle) = runtime();
        let _report = loan.shutdown();
        let (join, done) = TestJoin::pair();
        let setter = thread::spawn(move || done.set(6));
        assert_eq!(loan.block_on(join), 6);
        setter.join().expect("setter");
        assert_eq!(handle.drops(), 1);
    });
}

/// Rule L7, give-back against a wake from outside: a `block_on` gives the worker back with
/// nothing pending while another thread spawns a task (the test worker's spawn triggers the
/// rest waker, as the real worker's remote spawns and wakes do). Whatever the order — spawn
/// before the request, while the worker is offered or on loan (before or after the borrower
/// asked `pending`), or after it came to rest — the task runs and its output arrives, waited
/// for *without* borrowing the worker: a resting worker whose wake was lost is never driven,
/// which loom reports as a deadlock (loom never ends the grace period's timed wait).
///
/// Planted bugs it caught: `rouse` not marking a loan in progress (`Loaned` → nothing): the
/// borrower asked `pending` before the spawn and rested the worker, deadlock; `rouse` ending a
/// rest without notifying the waiting background thread: deadlock.
#[test]
fn loom_rest_against_outside_wake() {
    loom::model(|| {
        let (loan, handle) = runtime();
        let spawner = {
            let handle = handle.clone();
            thread::spawn(move || handle.spawn(async { 7 }))
        };
        assert_borrowed_as_root(&loan);
        let join = spawner.join().expect("spawner");
        assert_eq!(crate::loan::poll_in_place(join), 7);
        shut_down_once(&loan, &handle);
    });
}

/// Rule L6 and L7, a rest against the next `block_on` and the background thread: two `block_on`s
/// in a row on one thread, while another thread spawns a task. Both borrow the worker (the
/// second from the rest, from `Returned` after the rest waker fired, or through a request once
/// the background thread took it back); no offer or return is ever seen in the wrong phase (the
/// slot's rule L1 and rule L4 assertions); the task's output arrives without borrowing; the
/// worker is dropped exactly once.
///
/// Planted bug it caught: the fast path not taking a `Resting` worker (treated as contended):
/// the second `block_on` fell back (`Outside`).
#[test]
fn loom_rest_against_next_block_on_and_wake() {
    loom::model(|| {
        let (loan, handle) = runtime();
        let spawner = {
            let handle = handle.clone();
            thread::spawn(move || handle.spawn(async { 8 }))
        };
        for _ in 0..2 {
            assert_borrowed_as_root(&loan);
        }
        let join = spawner.join().expect("spawner");
        assert_eq!(crate::loan::poll_in_place(join), 8);
        shut_down_once(&loan, &handle);
    });
}

/// Rules L7 and L8, a rest against a requester on another thread and a shutdown: after a
/// `block_on` rested the worker, another thread's `block_on` races `shutdown`. The requester
/// borrows (from the rest) or falls back, never waits forever; the worker is dropped exactly
/// once, by `shutdown` (it was resting), by the requester (on loan when the slot closed), or by
/// the background thread.
///
/// Planted bug it caught: `close` taking the worker only from `Returned` and `Offered`, not
/// from `Resting`: drop count 0.
#[test]
fn loom_rest_against_requester_and_shutdown() {
    loom::model(|| {
        let (loan, handle) = runtime();
        assert_borrowed_as_root(&loan);
        let requester = request(&loan);
        let report = loan.shutdown();
        let role = requester.join().expect("requester");
        assert!(matches!(role, ThreadRole::Root | ThreadRole::Outside));
        assert_eq!(handle.drops(), 1, "{report:?}");
    });
}

/// Rule L8, shutdown from outside while the background thread runs the worker (a live task keeps
/// it there): whether the request finds the background thread in a turn or parked, shutdown
/// borrows the worker and drops it on its own thread, the background thread is joined, and the
/// worker is dropped exactly once.
///
/// Planted bugs it caught: `shutdown` closing without borrowing first (`DroppedByBackground`);
/// `shutdown` dropping its borrowed worker before closing the slot (reported `DroppedOnReturn`,
/// which `loom_shutdown_from_outside_against_a_requester` also catches: the report names the
/// requester, but the shutdown thread dropped it).
#[test]
fn loom_shutdown_from_outside_takes_the_worker_home() {
    loom::model(|| {
        let (loan, handle) = runtime();
        let dropped_on = record_drop_thread(&handle);
        let _live = handle.spawn(std::future::pending::<()>());
        let report = loan.shutdown();
        assert_eq!(report.worker, WorkerDisposal::DroppedNow, "{report:?}");
        assert_eq!(report.background, BackgroundExit::Joined);
        assert_eq!(*sync::lock(&dropped_on), Some(thread::current().id()));
        assert_eq!(handle.drops(), 1);
    });
}

/// Rule L8 with rules L2 and L4, shutdown from outside racing another thread's `block_on`: the
/// shutdown borrows the worker, or finds the other request or loan in progress and only closes.
/// Either way the requester returns, the worker is dropped exactly once, and the report names
/// the thread that dropped it: the shutdown's (`DroppedNow`), the requester's
/// (`DroppedOnReturn`) or the background thread's.
#[test]
fn loom_shutdown_from_outside_against_a_requester() {
    loom::model(|| {
        let (loan, handle) = runtime();
        let dropped_on = record_drop_thread(&handle);
        let requester = {
            let loan = Arc::clone(&loan);
            thread::spawn(move || {
                let role = loan.block_on(async { loan.thread_role() });
                (role, thread::current().id())
            })
        };
        let report = loan.shutdown();
        let (role, requester_id) = requester.join().expect("requester");
        assert!(matches!(role, ThreadRole::Root | ThreadRole::Outside));
        assert_eq!(handle.drops(), 1, "{report:?}");
        let dropped_on = drop_thread(&dropped_on);
        match report.worker {
            WorkerDisposal::DroppedNow => assert_eq!(dropped_on, thread::current().id()),
            WorkerDisposal::DroppedOnReturn => assert_eq!(dropped_on, requester_id),
            WorkerDisposal::DroppedByBackground => {
                assert_ne!(dropped_on, thread::current().id());
                assert_ne!(dropped_on, requester_id);
            }
            WorkerDisposal::AlreadyClosed => panic!("nothing else closed the slot: {report:?}"),
        }
    });
}

/// Rule L8, shutdown from outside against a borrower whose root only the worker's closure can
/// end: another thread's `block_on` waits on a join that `close_on_loan` completes. Whether
/// the shutdown comes before the borrower's request (it then falls back, and the shutdown
/// thread completes the join itself), during it, or during the loan while the borrower turns
/// or parks, the borrower returns; when the report says the worker was on loan, the borrower
/// closed it there exactly once (a closure it missed leaves it parked: deadlock) and dropped
/// it when the root completed.
///
/// Planted bugs it caught: the borrower's run predicate ignoring the closure (deadlock: the
/// closure's unpark ends the park, the predicate sends it back to park); `close` publishing
/// `Closed` without setting the lock-free flag (deadlock).
#[test]
fn loom_close_on_loan_against_a_parked_borrower() {
    loom::model(|| {
        let (loan, handle) = runtime();
        let (join, done) = TestJoin::pair();
        let done = Arc::new(Mutex::new(Some(done)));
        let complete = {
            let done = Arc::clone(&done);
            move || {
                let done = sync::lock(&done).take();
                if let Some(done) = done {
                    done.set(());
                }
            }
        };
        handle.on_close_on_loan(complete.clone());
        let borrower = {
            let loan = Arc::clone(&loan);
            thread::spawn(move || loan.block_on(join))
        };
        let report = loan.shutdown();
        if report.worker != WorkerDisposal::DroppedOnReturn {
            // The borrower did not hold the worker when the slot closed: nothing closes it on
            // loan, so the join is completed from here.
            complete();
        }
        borrower.join().expect("borrower");
        let closes = if report.worker == WorkerDisposal::DroppedOnReturn {
            1
        } else {
            0
        };
        assert_eq!(handle.closes_on_loan(), closes, "{report:?}");
        assert_eq!(handle.drops(), 1, "{report:?}");
    });
}
