//! The crate's tests, kept out of the production modules (STYLE 13): unit and property tests of
//! every behaviour of SPEC §5, and the loom models.
//!
//! All of them drive the shipped code (`Loan`, the slot, the background thread, frames and
//! wakers) with the test worker of [`support`], the one home of the shared fixtures. The tests
//! are `cfg(not(loom))`; under `cfg(loom)` only [`support`] and the models in `loom_models`
//! build, so `RUSTFLAGS="--cfg loom" cargo test -p baton-loan --lib` runs the models alone.
//! Private access is limited to what the public API cannot reach: the slot's phase
//! (`Loan::phase`, `Slot`'s methods), one window inside an offer (`Slot::offer_then`), the
//! root waker's spare, and `loan::poll_in_place`.

#[cfg_attr(
    loom,
    allow(
        dead_code,
        unused_imports,
        reason = "the loom models use a subset of the fixtures"
    )
)]
mod support;

/// Declares the test modules that build only without loom.
macro_rules! without_loom {
    ($($module:ident),* $(,)?) => {
        $(#[cfg(not(loom))] mod $module;)*
    };
}

without_loom! {
    block_on, fault, nesting, nesting_props, panics, rest, shutdown, signal, slot,
}

#[cfg(loom)]
mod loom_models;
