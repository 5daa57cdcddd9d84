//! The crate's tests, outside the production modules: unit and property tests of each module
//! (`cfg(not(loom))`) and the loom model of queue control (`cfg(loom)`), sharing the fixtures
//! of [`support`].

mod support;

#[cfg(not(loom))]
mod containment;
#[cfg(loom)]
mod loom_models;
#[cfg(not(loom))]
mod queue_control;
#[cfg(not(loom))]
mod resource;
#[cfg(not(loom))]
mod trace;
