//! The synchronization shim: `std` normally, `loom` under `cfg(loom)`.
//!
//! Every atomic, mutex and thread-local that the scheduler's protocols rely on comes from here,
//! so the loom models check the shipped code rather than a copy, including a task's reference
//! count, which lives in its state word (T1). The re-exports are globs, so no type can be
//! taken from `std` by mistake because the shim forgot to list it.
//!
//! `Arc` is the one exception the crate makes on purpose: it always uses `std::sync::Arc`
//! (the public API takes `Arc<dyn Unpark>`). No protocol rests on an `Arc`'s count: a task's
//! count is in its state word, and the scheduler's task units (T1) are counted in a shim atomic,
//! whose transitions through zero alone decide when the units take or give up their one
//! strong count of the state.

#[cfg(loom)]
pub(crate) use loom::{sync::atomic::*, sync::*, thread};
#[cfg(not(loom))]
pub(crate) use std::{sync::atomic::*, sync::*, thread};

/// `thread_local!` through the shim: `std::thread_local!` normally, `loom::thread_local!` under
/// `cfg(loom)`. Accepts `static NAME: T = const { EXPR };` (the `const` block is kept for `std`
/// and dropped for loom, which has no const form) and the plain `static NAME: T = EXPR;`.
#[cfg(not(loom))]
macro_rules! shim_thread_local {
    ($($tokens:tt)*) => {
        std::thread_local!($($tokens)*);
    };
}

/// `thread_local!` through the shim: `std::thread_local!` normally, `loom::thread_local!` under
/// `cfg(loom)`. Accepts `static NAME: T = const { EXPR };` (the `const` block is kept for `std`
/// and dropped for loom, which has no const form) and the plain `static NAME: T = EXPR;`.
#[cfg(loom)]
macro_rules! shim_thread_local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = const { $init:expr }; $($rest:tt)*) => {
        loom::thread_local!($(#[$attr])* $vis static $name: $ty = $init);
        $crate::sync::thread_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = const { $init:expr }) => {
        loom::thread_local!($(#[$attr])* $vis static $name: $ty = $init);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = $init:expr; $($rest:tt)*) => {
        loom::thread_local!($(#[$attr])* $vis static $name: $ty = $init);
        $crate::sync::thread_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = $init:expr) => {
        loom::thread_local!($(#[$attr])* $vis static $name: $ty = $init);
    };
}

// Re-exported under `std`'s name (defined under another: a `macro_rules! thread_local` cannot be
// re-exported, its name is ambiguous with the built-in `#[thread_local]` attribute, E0659).
pub(crate) use shim_thread_local as thread_local;

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
    static THREAD_ID: thread::ThreadId = thread::current().id();
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
pub(crate) fn thread_id() -> thread::ThreadId {
    THREAD_ID
        .try_with(|id| *id)
        .unwrap_or_else(|_| thread::current().id())
}

/// The address of `arc`'s value with the provenance of the `Arc` itself, so the address may
/// be turned back into an `Arc` (or have its counts changed) later, which a pointer made from a
/// `&T` to the value may not.
pub(crate) fn arc_address<T>(arc: &std::sync::Arc<T>) -> std::ptr::NonNull<T> {
    // SAFETY: `Arc::as_ptr` points into the `Arc`'s live allocation, so it is never null.
    unsafe { std::ptr::NonNull::new_unchecked(std::sync::Arc::as_ptr(arc).cast_mut()) }
}
