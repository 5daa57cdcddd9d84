//! Panic hygiene for user values the scheduler drops or wakes (rule 7 of the crate docs).
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct PanicOnDrop;

    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("destructor panics on purpose");
        }
    }

    #[test]
    fn panicking_destructor_is_contained() {
        drop_contained(PanicOnDrop);
    }

    #[test]
    fn value_is_leaked_while_unwinding() {
        struct DropsDuringUnwind;
        impl Drop for DropsDuringUnwind {
            fn drop(&mut self) {
                drop_contained(PanicOnDrop);
            }
        }
        let result = catch_unwind(|| {
            let _guard = DropsDuringUnwind;
            panic!("outer panic");
        });
        assert!(result.is_err(), "the outer panic is the only one reported");
    }

    struct PanicOnWake;

    impl std::task::Wake for PanicOnWake {
        fn wake(self: std::sync::Arc<Self>) {
            panic!("wake panics on purpose");
        }
    }

    #[test]
    fn panicking_wake_is_contained_even_while_unwinding() {
        wake_contained(Waker::from(std::sync::Arc::new(PanicOnWake)));
        struct WakesDuringUnwind;
        impl Drop for WakesDuringUnwind {
            fn drop(&mut self) {
                wake_contained(Waker::from(std::sync::Arc::new(PanicOnWake)));
            }
        }
        let result = catch_unwind(|| {
            let _guard = WakesDuringUnwind;
            panic!("outer panic");
        });
        assert!(result.is_err());
    }
}
