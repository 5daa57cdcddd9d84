//! The synchronization shim: `std` normally, `loom` under `cfg(loom)`, so the loom models check
//! the shipped pool and dispatch code rather than a copy.
//!
//! Two `std::sync::Arc`s stay `std` on purpose, because they are ownership handles in public or
//! `std`-trait signatures rather than synchronization the models must explore: the
//! `Arc<IdentityAllocator>` that `Registrar::new` and `WaitTable::new` take from other crates
//! (the allocator's own state is behind this shim's `Mutex` and atomics), and the
//! `std::task::Wake` waker of a pool thread driving a future (`Wake` is implemented for
//! `std::sync::Arc` only; the park/unpark it drives goes through `thread` here).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread;
