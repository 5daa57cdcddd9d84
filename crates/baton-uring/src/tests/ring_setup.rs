//! Tests of `backend/ring.rs`.

use std::io;

use crate::backend::ring::classify;
use crate::error::SetupError;

fn os(errno: i32) -> io::Error {
    io::Error::from_raw_os_error(errno)
}

#[test]
fn setup_eperm_is_a_policy_refusal_not_a_memlock_shortfall() {
    let outcome = classify(os(libc::EPERM));
    assert!(matches!(outcome, SetupError::Disabled { .. }));
    let message = classify(os(libc::EPERM)).to_string();
    for cause in [
        "seccomp",
        "container",
        "kernel.io_uring_disabled",
        "io_uring_group",
    ] {
        assert!(message.contains(cause), "{message:?} names {cause}");
    }
}

#[test]
fn setup_enomem_is_a_memlock_shortfall() {
    let outcome = classify(os(libc::ENOMEM));
    assert!(matches!(outcome, SetupError::Memlock { .. }));
}

#[test]
fn setup_enosys_and_eacces_are_disabled_and_others_are_os() {
    let outcome = classify(os(libc::ENOSYS));
    assert!(matches!(outcome, SetupError::Disabled { .. }));
    let outcome = classify(os(libc::EACCES));
    assert!(matches!(outcome, SetupError::Disabled { .. }));
    assert!(matches!(classify(os(libc::EFAULT)), SetupError::Os { .. }));
}
