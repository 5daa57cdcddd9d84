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
