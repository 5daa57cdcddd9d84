//! The synchronization shim: `std` normally, `loom` under `cfg(loom)`, so the loom models check
//! the shipped queue-control code rather than a copy. Every crate of the workspace re-exports
//! the same globs, so no type can be forgotten; nothing that loom must check names `std::sync`
//! directly.

#[cfg(loom)]
#[cfg_attr(
    not(test),
    expect(
        unused_imports,
        reason = "the shared shape; `thread` serves this crate's tests"
    )
)]
pub(crate) use loom::{sync::atomic::*, sync::*, thread};
#[cfg(not(loom))]
#[cfg_attr(
    not(test),
    expect(
        unused_imports,
        reason = "the shared shape; `thread` serves this crate's tests"
    )
)]
pub(crate) use std::{sync::atomic::*, sync::*, thread};
