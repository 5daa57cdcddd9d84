//! Readiness: a one-shot poll, for descriptors that signal an event by becoming readable (a
//! pidfd when its process exits, an eventfd) and for sockets driven readiness-style (an adapter
//! to poll-based I/O traits waits for readable or writable, then makes a non-blocking call).

use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use super::unit;
use crate::operation::Op;
use crate::request::Request;

/// Completes once `fd` is readable (`POLLIN`, or an error or hang-up, which a read then
/// reports). It may wait indefinitely, so, like a receive, it is never held back by the
/// in-flight limit; dropping the future cancels it.
pub fn poll_readable(fd: Arc<OwnedFd>) -> Op<io::Result<()>> {
    Op::new(
        Request::Poll {
            fd,
            events: libc::POLLIN as u32,
        },
        unit,
    )
}

/// Completes once `fd` is writable (`POLLOUT`, or an error or hang-up, which a write then
/// reports); otherwise as [`poll_readable`].
pub fn poll_writable(fd: Arc<OwnedFd>) -> Op<io::Result<()>> {
    Op::new(
        Request::Poll {
            fd,
            events: libc::POLLOUT as u32,
        },
        unit,
    )
}
