//! The crate's unit and property tests, outside the production modules (they need crate
//! internals or the fixtures of [`support`]). Tests that the public API suffices for live in
//! the crate's `tests/` directory, and so do its loom models (`tests/loom_*.rs`, `cfg(loom)`).

/// Declares the test modules that build only without loom.
macro_rules! without_loom {
    ($($module:ident),* $(,)?) => {
        $(#[cfg(not(loom))] mod $module;)*
    };
}

without_loom! {
    dispatch, identity, pool, prepared, registrar, support, wait_table,
}
