//! The synchronization shim: `std` normally, `loom` under `cfg(loom)`, so the loom models check
//! the shipped mailbox, forwarding, stash, inbox and unpark code rather than a copy of it. The
//! re-exports are globs, so no atomic or lock type can be taken from `std` by mistake.
//!
//! What stays `std` on purpose (each says so where it is used): the process-wide id counters in
//! `static`s (loom cannot model a `static`), the guard-leak detectors of `Driver` (they only
//! abort a misused process; no protocol depends on them), the `Arc<OwnedFd>` and `Arc<Stash>`
//! ownership handles of public signatures, the listener's `OnceLock` (set once before any other
//! thread exists), and the `Arc`s `std::task::Wake` needs.

#[cfg(loom)]
pub(crate) use loom::{sync::atomic::*, sync::*};
#[cfg(not(loom))]
pub(crate) use std::{sync::atomic::*, sync::*};

/// Declares one thread-local through `std` or `loom` (loom threads share one OS thread, so a
/// `std` thread-local would leak between modelled threads). A `const { .. }` initializer is
/// kept for `std`, where it saves a lazy-initialization check on every access, and dropped for
/// loom, whose macro has no const form.
macro_rules! shim_thread_local {
    ($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = const { $init:expr };) => {
        #[cfg(not(loom))]
        std::thread_local! { $(#[$attr])* $vis static $name: $ty = const { $init }; }
        #[cfg(loom)]
        loom::thread_local! { $(#[$attr])* $vis static $name: $ty = $init; }
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = $init:expr;) => {
        #[cfg(not(loom))]
        std::thread_local! { $(#[$attr])* $vis static $name: $ty = $init; }
        #[cfg(loom)]
        loom::thread_local! { $(#[$attr])* $vis static $name: $ty = $init; }
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
