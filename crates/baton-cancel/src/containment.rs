//! Containment of hostile user code (crate rule C6).
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
