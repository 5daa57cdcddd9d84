//! The synchronization shim: `std` normally, `loom` under `cfg(loom)`, so the loom models check
//! the shipped mailbox, forwarding and unpark code rather than a copy of it.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

/// Declares a thread-local through `std` or `loom` (loom threads share one OS thread, so a
/// `std` thread-local would leak between modelled threads).
macro_rules! shim_thread_local {
    ($($tt:tt)*) => {
        #[cfg(not(loom))]
        std::thread_local!($($tt)*);
        #[cfg(loom)]
        loom::thread_local!($($tt)*);
    };
}
pub(crate) use shim_thread_local as thread_local;

/// Locks `mutex`, ignoring poisoning: every critical section in this crate only moves plain data
/// and runs no user code, so a poisoned lock cannot hide a broken invariant.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
