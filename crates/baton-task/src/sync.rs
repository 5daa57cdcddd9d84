//! The synchronization shim: `std` normally, `loom` under `cfg(loom)`.
//!
//! Every atomic, mutex and thread-local that the scheduler's protocols rely on comes from here,
//! so the loom models check the shipped code rather than a copy, including a task's reference
//! count, which lives in its state word (rule 1).

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread::{ThreadId, current as current_thread};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread::{ThreadId, current as current_thread};
#[cfg(loom)]
pub(crate) use loom::thread_local;

/// A cell for data that the state protocol hands from thread to thread (a task's stage): a
/// plain `std::cell::UnsafeCell` normally, loom's cell under `cfg(loom)`, so the models also
/// check that every access is ordered after the previous one. Accessed only through
/// `with_mut`, the API both share.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) fn new(value: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a raw pointer to the value; the caller's protocol makes the access
    /// exclusive.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }

    pub(crate) fn into_inner(self) -> T {
        self.0.into_inner()
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Locks `mutex`, ignoring poisoning: every critical section in this crate only moves queue
/// entries and flags, never runs user code, so a poisoned lock still guards consistent data.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

thread_local! {
    static THREAD_TOKEN: usize = next_thread_token();
    static THREAD_ID: ThreadId = current_thread().id();
}

/// A process-wide counter handing each thread a distinct, never reused, non-zero token.
/// It is plain `std` even under loom: it only names threads, it is not a protocol.
fn next_thread_token() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// This thread's token: non-zero, distinct from every other thread's, never reused. `None`
/// while the thread's locals are being destroyed (a waker used from a TLS destructor): such a
/// thread is treated as holding nothing.
pub(crate) fn thread_token() -> Option<usize> {
    THREAD_TOKEN.try_with(|token| *token).ok()
}

/// This thread's id (cached; looked up directly while the thread's locals are being destroyed).
pub(crate) fn thread_id() -> ThreadId {
    THREAD_ID
        .try_with(|id| *id)
        .unwrap_or_else(|_| current_thread().id())
}
