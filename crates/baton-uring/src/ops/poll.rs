//! Readiness: a one-shot poll, for descriptors that signal an event by becoming readable (a
//! pidfd when its process exits, an eventfd).

use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use super::unit;
use crate::operation::Op;
use crate::request::Request;

/// Completes once `fd` is readable (`POLLIN`). It may wait indefinitely, so, like a receive,
/// it is never held back by the in-flight limit; dropping the future cancels it.
pub fn poll_readable(fd: Arc<OwnedFd>) -> Op<io::Result<()>> {
    Op::new(Request::PollReadable { fd }, unit)
}
