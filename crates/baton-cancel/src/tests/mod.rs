//! The crate's tests, outside the production modules: unit and property tests of each module
//! (`cfg(not(loom))`) and the loom model of queue control (`cfg(loom)`), sharing the fixtures
//! of [`support`].

mod support;

// Each of these modules is `#![cfg(not(loom))]`.
mod containment;
mod queue_control;
mod resource;
mod trace;

#[cfg(loom)]
mod loom_models;
