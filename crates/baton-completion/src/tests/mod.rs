//! The crate's unit and property tests, outside the production modules (they need crate
//! internals or the fixtures of [`support`]). Tests that the public API suffices for live in
//! the crate's `tests/` directory, and so do its loom models (`tests/loom_*.rs`, `cfg(loom)`).

#[cfg(not(loom))]
mod dispatch;
#[cfg(not(loom))]
mod identity;
#[cfg(not(loom))]
mod pool;
#[cfg(not(loom))]
mod prepared;
#[cfg(not(loom))]
mod registrar;
#[cfg(not(loom))]
mod support;
#[cfg(not(loom))]
mod wait_table;
