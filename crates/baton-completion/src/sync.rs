//! The synchronization shim: `std` normally, `loom` under `cfg(loom)`, so the loom models check
//! the shipped pool and dispatch code rather than a copy. Every crate of the workspace
//! re-exports the same globs, so no type can be forgotten; nothing that loom must check names
//! `std::sync` directly.
//!
//! Two helpers stay `std` under loom too, on purpose, because they are not synchronization the
//! models must explore:
//!
//! * [`StdArc`], the ownership handle in public and `std`-trait signatures: the
//!   `Arc<IdentityAllocator>` that `Registrar::new` and `WaitTable::new` take from other crates
//!   (the allocator's own state is behind this shim's `Mutex` and atomics), the
//!   `Arc<dyn CompletionSender>`, `Arc<dyn ExecutorLease>` and `Arc<dyn ThreadSpawner>` trait
//!   objects, and the `std::task::Wake` waker of a pool thread driving a future (`Wake` is
//!   implemented for `std::sync::Arc` only; the park/unpark it drives goes through `thread`
//!   here).
//! * [`StaticCounter`], the process-wide counters that number runtimes and registrars: they live
//!   in `static`s, where a loom atomic cannot be built, and handing out fresh numbers is no part
//!   of a modelled protocol.

#[cfg(loom)]
pub(crate) use loom::{sync::atomic::*, sync::*, thread};
#[cfg(not(loom))]
pub(crate) use std::{sync::atomic::*, sync::*, thread};

/// `std`'s `Arc`, also under loom: an ownership handle, not modelled synchronization (see the
/// module documentation).
pub(crate) use std::sync::Arc as StdArc;

/// A process-wide counter in a `static`, `std` also under loom (see the module documentation).
pub(crate) type StaticCounter = std::sync::atomic::AtomicU64;
