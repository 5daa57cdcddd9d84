//! The crate's own tests: what needs its internals, above all the deterministic simulated
//! ring (`sim`) that produces every ordering of completion, cancel and forwarding the kernel
//! can. Tests that need only the public API live in `tests/` instead. Loom models (`loom_*`)
//! compile only under `cfg(loom)`, everything else only without it, so `--cfg loom` runs
//! exactly the models.

pub(crate) mod sim;
#[cfg(not(loom))]
mod support;

#[cfg(not(loom))]
mod buf;
#[cfg(not(loom))]
mod durability;
#[cfg(not(loom))]
mod key;
#[cfg(not(loom))]
mod lifecycle_model;
#[cfg(not(loom))]
mod listener;
#[cfg(loom)]
mod loom_forwarding;
#[cfg(loom)]
mod loom_inbox;
#[cfg(loom)]
mod loom_stash;
#[cfg(not(loom))]
mod path_ops;
#[cfg(not(loom))]
mod request;
#[cfg(not(loom))]
mod retention;
#[cfg(not(loom))]
mod ring_setup;
#[cfg(not(loom))]
mod shutdown_unwind;
#[cfg(not(loom))]
mod sleep;
#[cfg(not(loom))]
mod stash;
#[cfg(not(loom))]
mod state;
