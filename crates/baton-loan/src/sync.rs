//! The synchronization shim: `std` normally, `loom` under `cfg(loom)`.
//!
//! Every primitive the loan protocol relies on (the slot's mutex and condvar, the attention
//! flag, the root waker's flag, the thread signal, the per-thread re-entrancy stack and the
//! background thread itself) is imported from here, so the loom models check the shipped code.
//! The re-exports are globs, so no type can be forgotten: an atomic, a mutex, a condvar, a
//! thread or a thread-local ([`thread_local!`](thread_local)) named anywhere in the crate
//! (tests included) comes from this module.
//!
//! One exception: `Arc` (and `Weak`) stay `std`'s, imported from `std::sync` where they are
//! used. They are ownership handles in public signatures ([`Loan::new`](crate::Loan::new)
//! takes an `Arc<dyn Unpark>`) and in `std::task::Wake` impls, which need `std::sync::Arc`;
//! reference counting is not part of any protocol here.

#[cfg(loom)]
pub(crate) use loom::{sync::atomic::*, sync::*, thread};
#[cfg(not(loom))]
pub(crate) use std::{sync::atomic::*, sync::*, thread};

use std::sync::PoisonError;
use std::time::Duration;

/// Declares thread-locals through the shim: `std::thread_local!` normally, `loom`'s under
/// `cfg(loom)`, so the models see every per-thread slot. Accepts what `std::thread_local!`
/// accepts for a static, one or several, attributes and visibility included:
/// `static NAME: T = const { EXPR };` (expanded with the `const` block normally and without it
/// under loom, whose macro has no `const` form) or `static NAME: T = EXPR;`. Defined as
/// `shim_thread_local` and re-exported as `thread_local`: a plain `use thread_local;` would be
/// ambiguous with the built-in `#[thread_local]` attribute.
macro_rules! shim_thread_local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = const { $init:expr }; $($rest:tt)*) => {
        $crate::sync::thread_local!($(#[$attr])* $vis static $name: $ty = const { $init });
        $crate::sync::thread_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = const { $init:expr }) => {
        #[cfg(not(loom))]
        ::std::thread_local!($(#[$attr])* $vis static $name: $ty = const { $init });
        #[cfg(loom)]
        ::loom::thread_local!($(#[$attr])* $vis static $name: $ty = $init);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = $init:expr; $($rest:tt)*) => {
        $crate::sync::thread_local!($(#[$attr])* $vis static $name: $ty = $init);
        $crate::sync::thread_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = $init:expr) => {
        #[cfg(not(loom))]
        ::std::thread_local!($(#[$attr])* $vis static $name: $ty = $init);
        #[cfg(loom)]
        ::loom::thread_local!($(#[$attr])* $vis static $name: $ty = $init);
    };
}
pub(crate) use shim_thread_local as thread_local;

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
