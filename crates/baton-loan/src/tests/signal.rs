//! The root waker's per-thread spare (L14): a finished `block_on`'s waker is reused reset,
//! never while someone else holds it, and never by two nested `block_on`s at once.

use std::sync::Arc;
use std::task::Waker;

use crate::signal::RootWake;
use crate::sync::{AtomicUsize, Ordering};
use crate::worker::Unpark;

#[derive(Debug, Default)]
struct CountingUnpark(AtomicUsize);

impl Unpark for CountingUnpark {
    fn unpark(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn unpark() -> Arc<CountingUnpark> {
    Arc::new(CountingUnpark::default())
}

#[test]
fn recycled_root_wake_is_reused_reset_and_holds_no_unpark() {
    let first_unpark = unpark();
    let first = RootWake::acquire(first_unpark.clone());
    assert!(first.take(), "a fresh root waker starts woken");
    Waker::from(Arc::clone(&first)).wake();
    let address = Arc::as_ptr(&first);
    RootWake::recycle(first);
    assert_eq!(
        Arc::strong_count(&first_unpark),
        1,
        "the spare released its unpark"
    );

    let second_unpark = unpark();
    let second = RootWake::acquire(second_unpark.clone());
    assert_eq!(Arc::as_ptr(&second), address, "the spare was reused");
    assert!(second.take(), "the reused waker starts woken");
    assert!(!second.take());
    Waker::from(Arc::clone(&second)).wake_by_ref();
    assert_eq!(
        second_unpark.0.load(Ordering::Relaxed),
        1,
        "wakes reach the new unpark"
    );
    assert_eq!(
        first_unpark.0.load(Ordering::Relaxed),
        1,
        "and not the old one"
    );
    second.wait();
    RootWake::recycle(second);
}

/// Asserts that `wake` is not the allocation at `address`; `why` says why it must not be.
#[track_caller]
fn assert_elsewhere(wake: &Arc<RootWake>, address: *const RootWake, why: &str) {
    assert_ne!(Arc::as_ptr(wake), address, "{why}");
}

#[test]
fn shared_root_wake_is_not_recycled() {
    let first = RootWake::acquire(unpark());
    let leaked = Waker::from(Arc::clone(&first));
    let address = Arc::as_ptr(&first);
    RootWake::recycle(first);
    let second = RootWake::acquire(unpark());
    assert_elsewhere(&second, address, "a waker someone holds is never reset");
    drop(leaked);
    RootWake::recycle(second);
}

#[test]
fn nested_acquires_get_distinct_wakes() {
    RootWake::recycle(RootWake::acquire(unpark()));
    let outer = RootWake::acquire(unpark());
    let inner = RootWake::acquire(unpark());
    assert!(!Arc::ptr_eq(&outer, &inner));
    let inner_address = Arc::as_ptr(&inner);
    RootWake::recycle(inner);
    RootWake::recycle(outer);
    let again = RootWake::acquire(unpark());
    assert_elsewhere(&again, inner_address, "the outer level's waker wins the slot");
    RootWake::recycle(again);
}
