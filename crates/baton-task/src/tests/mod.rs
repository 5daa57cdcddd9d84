//! The crate's unit tests and loom models: what needs its private parts. Behaviour that the
//! public API shows is tested in the crate's `tests/` directory.

mod support;

#[cfg(not(loom))]
mod containment;
#[cfg(not(loom))]
mod raw;
#[cfg(not(loom))]
mod state;
#[cfg(not(loom))]
mod task;

#[cfg(loom)]
mod loom_models;
