//! Workspace-level end-to-end tests for Baton.
//!
//! This crate is not published. Its `tests/` folder holds cross-crate scenarios: the blocking
//! pool under a multi-threaded stress load, real files and loopback sockets through the facade,
//! nested `block_on`, and shutdown with work in flight. The library itself only holds small
//! shared helpers for those tests (for example counting open file descriptors).

/// Counts the open file descriptors of this process by listing `/proc/self/fd`.
///
/// Tests compare the count before and after a scenario to prove that nothing leaked.
pub fn open_fd_count() -> std::io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/fd")?.count())
}

/// A fresh directory under the temp dir, removed with everything in it when dropped: the
/// scratch space of the file-system tests (`e2e_fs_*`).
#[derive(Debug)]
pub struct Scratch {
    path: std::path::PathBuf,
}

impl Scratch {
    /// Creates `baton-e2e-<tag>-<pid>-<n>` under the temp dir.
    pub fn new(tag: &str) -> std::io::Result<Scratch> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "baton-e2e-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&path)?;
        Ok(Scratch { path })
    }

    /// The directory itself.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// A path inside the directory.
    pub fn join(&self, name: impl AsRef<std::path::Path>) -> std::path::PathBuf {
        self.path.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
