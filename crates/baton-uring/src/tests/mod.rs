//! The crate's own tests: what needs its internals, above all the deterministic simulated
//! ring (`sim`) that produces every ordering of completion, cancel and forwarding the kernel
//! can. Tests that need only the public API live in `tests/` instead. Loom models (`loom_*`)
//! compile only under `cfg(loom)`, everything else only without it, so `--cfg loom` runs
//! exactly the models.

pub(crate) mod sim;
/// Declares the test modules that build only without loom.
macro_rules! without_loom {
    ($($module:ident),* $(,)?) => {
        $(#[cfg(not(loom))] mod $module;)*
    };
}

without_loom! {
    support, buf, driver_idle, durability, key, lifecycle_model, linger, listener, path_ops, request, retention,
    ring_setup, routes, shutdown_unwind, sleep, stash, state,
}

#[cfg(loom)]
mod loom_forwarding;
#[cfg(loom)]
mod loom_inbox;
#[cfg(loom)]
mod loom_linger;
#[cfg(loom)]
mod loom_stash;
