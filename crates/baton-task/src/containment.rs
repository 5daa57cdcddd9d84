//! Panic hygiene for user values the scheduler drops or wakes (rule T7 of the crate docs).
//!
//! A destructor or waker that panics is caught so it cannot take down the worker. While the
//! thread is already unwinding, values are leaked instead of dropped, so a second panic can never
//! abort the process. With `panic = "abort"` this still compiles; nothing is caught then.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::Waker;

/// Drops `value`, containing a panicking destructor; leaks it while the thread is unwinding.
pub(crate) fn drop_contained<T>(value: T) {
    if std::thread::panicking() {
        std::mem::forget(value);
        return;
    }
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value))) {
        // The payload's own destructor may panic too: leak it rather than risk that.
        std::mem::forget(payload);
    }
}

/// Wakes `waker`, containing a panicking `wake` (and the waker's destructor). The wake is
/// needed for progress, so it runs even while unwinding; a nested panic it raises is caught
/// before it can reach the unwinder.
pub(crate) fn wake_contained(waker: Waker) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || waker.wake())) {
        std::mem::forget(payload);
    }
}
