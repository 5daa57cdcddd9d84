//! The crate's unit tests and loom models: what needs its private parts. Behaviour that the
//! public API shows is tested in the crate's `tests/` directory.

mod support;

/// Declares the test modules that build only without loom.
macro_rules! without_loom {
    ($($module:ident),* $(,)?) => {
        $(#[cfg(not(loom))] mod $module;)*
    };
}

without_loom! {
    containment, raw, state, task,
}

#[cfg(loom)]
mod loom_models;
