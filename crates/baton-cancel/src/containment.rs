//! Containment of hostile user code (crate rule 6).
//!
//! User values (jobs, futures, decoders, hooks) may panic when called or dropped. Baton runs
//! them through these functions so a panic is caught and turned into a value, and so that a
//! value dropped while the thread is already unwinding is *leaked* instead: a second panic
//! during an unwind would abort the process.
//!
//! With `panic = "abort"` everything compiles and behaves the same, minus the catching.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What happened when a user value was dropped through [`ContainedDrop::drop_value`].
#[must_use = "a panicking destructor is worth reporting"]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContainedDrop {
    /// The destructor ran and returned.
    Dropped,
    /// The destructor panicked; the panic was caught.
    Panicked {
        /// The panic message (see [`panic_message`]).
        message: String,
    },
    /// The thread was already unwinding, so the value was leaked rather than dropped.
    Leaked,
}

impl ContainedDrop {
    /// Drops `value`, catching a panicking destructor, or leaks it when the thread is already
    /// unwinding (a second panic would abort the process).
    pub fn drop_value<T>(value: T) -> Self {
        if std::thread::panicking() {
            std::mem::forget(value);
            return Self::Leaked;
        }
        match catch_unwind(AssertUnwindSafe(move || drop(value))) {
            Ok(()) => Self::Dropped,
            Err(payload) => Self::Panicked {
                message: take_panic_message(payload),
            },
        }
    }
}

/// Calls `f`, catching a panic and returning its message instead.
pub fn call_contained<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(take_panic_message)
}

/// The human-readable message of a panic payload (`&str` or `String` payloads), or a note that
/// the payload was of another type.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&'static str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

/// Extracts the message and disposes of the payload; a payload whose own destructor panics is
/// leaked, so disposing of it can never panic.
fn take_panic_message(payload: Box<dyn Any + Send>) -> String {
    let message = panic_message(&*payload);
    if let Err(second) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(second);
    }
    message
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct PanicOnDrop;

    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("hostile destructor");
        }
    }

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
        struct DropsDuringUnwind(Option<PanicOnDrop>, std::sync::mpsc::Sender<ContainedDrop>);
        impl Drop for DropsDuringUnwind {
            fn drop(&mut self) {
                let hostile = self.0.take().expect("set at construction");
                let _ = self.1.send(ContainedDrop::drop_value(hostile));
            }
        }
        let (tx, rx) = std::sync::mpsc::channel();
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
}
