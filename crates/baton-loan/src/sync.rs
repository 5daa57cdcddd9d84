//! The synchronization shim: `std` normally, `loom` under `cfg(loom)`.
//!
//! Every primitive the loan protocol relies on (the slot's mutex and condvar, the attention
//! flag, the root waker's flag, the thread signal, the per-thread re-entrancy stack and the
//! background thread itself) is imported from here, so the loom models check the shipped code.
//! `Arc` stays `std`'s: reference counting is not part of any protocol here, and
//! `std::task::Wake` needs `std::sync::Arc`.

#[cfg(loom)]
pub(crate) use loom::{
    sync::atomic::{AtomicBool, AtomicUsize, Ordering},
    sync::{Condvar, Mutex, MutexGuard},
    thread, thread_local,
};

#[cfg(not(loom))]
pub(crate) use std::{
    sync::atomic::{AtomicBool, AtomicUsize, Ordering},
    sync::{Condvar, Mutex, MutexGuard},
    thread, thread_local,
};

use std::sync::PoisonError;
use std::time::Duration;

/// Locks `mutex`, ignoring poisoning: every critical section in this crate leaves its data
/// consistent before any code that could panic runs, so a poisoned lock holds valid state.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `condvar`, ignoring poisoning for the same reason as [`lock`].
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar.wait(guard).unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `condvar` for at most `timeout`, ignoring poisoning as [`wait`] does. Callers look
/// at their state afterwards rather than at why the wait ended. Under loom the wait never times
/// out (loom does not model time), so models reach the same states through explicit events.
pub(crate) fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> MutexGuard<'a, T> {
    match condvar.wait_timeout(guard, timeout) {
        Ok((guard, _timed_out)) => guard,
        Err(poisoned) => poisoned.into_inner().0,
    }
}
