//! The synchronization shim: `std` normally, `loom` under `cfg(loom)`, so the loom models check
//! the shipped queue-control code rather than a copy.

#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU8, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU8, Ordering};
