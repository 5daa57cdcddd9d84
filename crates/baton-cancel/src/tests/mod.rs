//! The crate's tests, outside the production modules: unit and property tests of each module
//! (`cfg(not(loom))`) and the loom model of queue control (`cfg(loom)`), sharing the fixtures
//! of [`support`].

mod support;

/// Declares the test modules that build only without loom.
macro_rules! without_loom {
    ($($module:ident),* $(,)?) => {
        $(#[cfg(not(loom))] mod $module;)*
    };
}

without_loom! {
    containment, queue_control, resource, trace,
}

#[cfg(loom)]
mod loom_models;
