//! Panics of the root's poll and destructor (rule L13: caught, the worker returned, the original
//! payload re-raised, the poll's winning) and of the background thread (rule L9: the protocol
//! closes, callers fall back).

use std::panic::{self, AssertUnwindSafe};

use crate::tests::support::{
    Payload, YieldNow, assert_borrowed_as_root, runtime, wait_join, wait_until, within_on,
};
use crate::{BackgroundExit, Loan, ThreadRole};

/// Asserts that `loan.block_on(root)` panics (`why` says where) with `expected`.
fn assert_block_on_panics_with<F: std::future::Future<Output: std::fmt::Debug>>(
    loan: &Loan,
    root: F,
    expected: Payload,
    why: &str,
) {
    let caught = panic::catch_unwind(AssertUnwindSafe(|| loan.block_on(root)));
    let payload = caught.expect_err(why);
    assert_eq!(payload.downcast_ref::<Payload>(), Some(&expected));
}

#[test]
fn root_panic_is_reraised_and_runtime_stays_usable() {
    let (loan, handle) = runtime();
    let root = async {
        YieldNow { times: 1 }.await;
        panic::panic_any(Payload(42));
    };
    assert_block_on_panics_with(&loan, root, Payload(42), "the root panicked");
    assert_eq!(loan.active_roots(), 0);
    let (role, value) =
        loan.block_on(async { (loan.thread_role(), handle.spawn(async { 5 }).await) });
    assert_eq!((role, value), (ThreadRole::Root, 5));
    assert_eq!(handle.drops(), 0);
}

/// Ready at once; its destructor panics with `Payload(7)`.
struct PanicOnDrop;

impl std::future::Future for PanicOnDrop {
    type Output = u8;
    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<u8> {
        std::task::Poll::Ready(3)
    }
}

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic::panic_any(Payload(7));
    }
}

/// Panics on poll with `Payload(1)` and on drop with `Payload(2)`.
struct PanicTwice;

impl std::future::Future for PanicTwice {
    type Output = ();
    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        panic::panic_any(Payload(1));
    }
}

impl Drop for PanicTwice {
    fn drop(&mut self) {
        panic::panic_any(Payload(2));
    }
}

#[test]
fn panicking_root_destructor_still_returns_worker() {
    let (loan, handle) = runtime();
    assert_block_on_panics_with(&loan, PanicOnDrop, Payload(7), "the destructor panicked");
    assert_borrowed_as_root(&loan);
    let join = handle.spawn(async { 9 });
    assert_eq!(
        wait_join(&join),
        9,
        "the background thread runs the returned worker"
    );
}

#[test]
fn poll_panic_wins_over_destructor_panic() {
    let (loan, _handle) = runtime();
    assert_block_on_panics_with(&loan, PanicTwice, Payload(1), "the root panicked");
    assert_borrowed_as_root(&loan);
}

#[test]
fn background_panic_closes_protocol_so_callers_fall_back() {
    let (loan, handle) = runtime();
    let _boom = handle.spawn(async { panic::panic_any(Payload(13)) });
    wait_until(|| loan.is_closed());
    assert!(loan.background_panicked());
    assert_eq!(handle.drops(), 1);
    let role = within_on(&loan, move |loan| {
        loan.block_on(async { loan.thread_role() })
    });
    assert_eq!(role, ThreadRole::Outside);
    assert_eq!(loan.shutdown().background, BackgroundExit::Panicked);
}
