//! The facade's tests that need its internals — the `cfg(test)` knob that makes the file
//! system calls take their blocking-pool fallback on a kernel that has every opcode, and the
//! stash's drained hint that the stream receives keep. Tests
//! that need only the public API live in the workspace's `tests/` crate. `job_cell.rs` here is
//! the job cell's own `tests` module, included by `blocking/job_cell.rs` (`#[path]`) so it can
//! reach the cell's private items.

mod drained_hint;
mod fs_fallback;
mod interval;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory under the temp dir, removed with everything in it when dropped.
pub(crate) struct Scratch {
    pub(crate) path: PathBuf,
}

impl Scratch {
    pub(crate) fn new(tag: &str) -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "baton-unit-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&path).expect("create the scratch directory");
        Scratch { path }
    }

    pub(crate) fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
