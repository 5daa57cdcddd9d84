//! Tracing (feature `tracing`): a span per I/O request and events for what an operator wants to
//! hear about. Without the feature every item here is an empty inline function or a zero-sized
//! type, so none of it costs anything.
//!
//! The span (`baton::io`, level TRACE) opens when a request registers and closes when its slot
//! retires; its fields are the opcode, the descriptor (−1 for none), the slab key, and — at the
//! final completion — `bytes` (a successful count) or `error`.

#[cfg(feature = "tracing")]
use crate::request::Failure;
use crate::request::{Outcome, Request};

/// A request's span, or nothing without the feature.
#[cfg(feature = "tracing")]
pub(crate) type RequestSpan = tracing::Span;
/// A request's span, or nothing without the feature.
#[cfg(not(feature = "tracing"))]
pub(crate) type RequestSpan = ();

/// The span of a request registering in slot `index` with `generation`.
#[cfg(feature = "tracing")]
pub(crate) fn request_span(data: &Request, index: usize, generation: u32) -> RequestSpan {
    let opcode = data.opcode().map_or("sleep", |(_, name)| name);
    tracing::trace_span!(
        target: "baton::io",
        "io",
        opcode,
        fd = raw_fd(data),
        key = index,
        generation,
        bytes = tracing::field::Empty,
        error = tracing::field::Empty,
    )
}

/// The span of a request registering (nothing without the feature).
#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn request_span(_data: &Request, _index: usize, _generation: u32) -> RequestSpan {}

/// Records a request's final outcome on its span.
#[cfg(feature = "tracing")]
pub(crate) fn settled(span: &RequestSpan, outcome: &Outcome) {
    match outcome {
        Ok(n) => {
            span.record("bytes", *n);
        }
        Err(Failure::Os(errno)) => {
            span.record(
                "error",
                tracing::field::display(std::io::Error::from_raw_os_error(*errno)),
            );
        }
        Err(Failure::Runtime(err)) => {
            span.record("error", tracing::field::display(err));
        }
        Err(Failure::Invalid(reason)) => {
            span.record("error", *reason);
        }
    }
}

/// Records a request's final outcome (nothing without the feature).
#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn settled(_span: &RequestSpan, _outcome: &Outcome) {}

/// The descriptor a request works on, −1 for none (opens, sleeps, path requests).
#[cfg(feature = "tracing")]
fn raw_fd(data: &Request) -> i32 {
    use std::os::fd::AsRawFd;
    match data {
        Request::Read { fd, .. }
        | Request::Write { fd, .. }
        | Request::Readv { fd, .. }
        | Request::Writev { fd, .. }
        | Request::Fsync { fd, .. }
        | Request::Accept { fd, .. }
        | Request::Connect { fd, .. }
        | Request::Send { fd, .. }
        | Request::Recv { fd, .. }
        | Request::SendMsg { fd, .. }
        | Request::RecvMsg { fd, .. }
        | Request::Shutdown { fd, .. }
        | Request::Poll { fd, .. }
        | Request::Ftruncate { fd, .. }
        | Request::SyncRange { fd, .. } => fd.as_raw_fd(),
        Request::Close { fd: Some(fd) } => fd.as_raw_fd(),
        _ => -1,
    }
}

/// A waker panic the driver contained (every one, not only the first).
#[cfg(feature = "tracing")]
pub(crate) fn waker_panic_contained(message: &str, caught: u64) {
    tracing::warn!(target: "baton::driver", caught, "a waker panicked and was contained: {message}");
}

/// A waker panic the driver contained (nothing without the feature).
#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn waker_panic_contained(_message: &str, _caught: u64) {}

/// An external completion refused by its identity check (`stale`: its wait is gone or of
/// another generation; otherwise of another runtime).
#[cfg(feature = "tracing")]
pub(crate) fn completion_refused(stale: bool) {
    let why = if stale { "stale" } else { "foreign" };
    tracing::debug!(target: "baton::inbox", why, "an external completion was refused");
}

/// An external completion refused (nothing without the feature).
#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn completion_refused(_stale: bool) {}

/// The worker finished shutting down.
#[cfg(feature = "tracing")]
pub(crate) fn worker_shut_down(report: &dyn std::fmt::Debug) {
    tracing::info!(target: "baton::worker", report = ?report, "the worker shut down");
}

/// The worker finished shutting down (nothing without the feature).
#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn worker_shut_down(_report: &dyn std::fmt::Debug) {}
