//! Unit tests of containment (crate rule C6).

#![cfg(not(loom))]

use super::support::PanicOnDrop;
use crate::sync::mpsc;
use crate::{ContainedDrop, call_contained};

#[test]
fn quiet_drop_reports_dropped() {
    assert_eq!(
        ContainedDrop::drop_value(vec![1, 2, 3]),
        ContainedDrop::Dropped
    );
}

#[test]
fn panicking_drop_is_caught_with_its_message() {
    assert_eq!(
        ContainedDrop::drop_value(PanicOnDrop),
        ContainedDrop::Panicked {
            message: "hostile destructor".into()
        }
    );
}

#[test]
fn drop_during_unwind_leaks_instead_of_aborting() {
    struct DropsDuringUnwind(Option<PanicOnDrop>, mpsc::Sender<ContainedDrop>);
    impl Drop for DropsDuringUnwind {
        fn drop(&mut self) {
            let hostile = self.0.take().expect("set at construction");
            let _ = self.1.send(ContainedDrop::drop_value(hostile));
        }
    }
    let (tx, rx) = mpsc::channel();
    let outcome = call_contained(move || {
        let _guard = DropsDuringUnwind(Some(PanicOnDrop), tx);
        panic!("first panic");
    });
    assert_eq!(outcome, Err("first panic".to_owned()));
    assert_eq!(rx.recv(), Ok(ContainedDrop::Leaked));
}

#[test]
fn call_contained_returns_value_or_message() {
    assert_eq!(call_contained(|| 7), Ok(7));
    let formatted = call_contained(|| -> u8 { panic!("code {}", 42) });
    assert_eq!(formatted, Err("code 42".to_owned()));
    let odd = call_contained(|| std::panic::panic_any(17_u32));
    assert_eq!(odd, Err("panic with a non-string payload".to_owned()));
}
