//! The crate's unit tests and loom models: what needs its private parts. Behaviour that the
//! public API shows is tested in the crate's `tests/` directory.

mod support;

// Each of these modules is `#![cfg(not(loom))]`.
mod blocks;
mod containment;
mod raw;
mod state;
mod task;

#[cfg(loom)]
mod loom_join;
#[cfg(loom)]
mod loom_models;
#[cfg(loom)]
mod loom_units;
