//! Panic containment alone: destructors and wakes that panic, also while unwinding.

#![cfg(not(loom))]

use std::panic::catch_unwind;
use std::sync::Arc;
use std::task::Waker;

use crate::containment::{drop_contained, wake_contained};

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
    fn wake(self: Arc<Self>) {
        panic!("wake panics on purpose");
    }
}

#[test]
fn panicking_wake_is_contained_even_while_unwinding() {
    wake_contained(Waker::from(Arc::new(PanicOnWake)));
    struct WakesDuringUnwind;
    impl Drop for WakesDuringUnwind {
        fn drop(&mut self) {
            wake_contained(Waker::from(Arc::new(PanicOnWake)));
        }
    }
    let result = catch_unwind(|| {
        let _guard = WakesDuringUnwind;
        panic!("outer panic");
    });
    assert!(result.is_err());
}
