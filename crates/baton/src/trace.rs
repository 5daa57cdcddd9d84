//! Tracing (feature `tracing`): a span per task and events for shutdown and exceeded bounds.
//! Without the feature every item here is an identity or an empty inline function.
//!
//! A task's span (`baton::task`, level TRACE) carries a process-unique `id` and the
//! `spawned_at` source location; it is entered on every poll of the task, so the task's I/O
//! spans (`baton::io`, from `baton-uring`) nest under it.

use std::future::Future;

/// `future` inside a new task span, spawned at the caller's location.
#[cfg(feature = "tracing")]
#[track_caller]
pub(crate) fn task<F: Future>(future: F) -> tracing::instrument::Instrumented<F> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use tracing::Instrument;
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let at = std::panic::Location::caller();
    future.instrument(tracing::trace_span!(
        target: "baton::task",
        "task",
        id,
        spawned_at = %at
    ))
}

/// `future` as it is (no spans without the feature).
#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn task<F: Future>(future: F) -> F {
    future
}

/// The runtime finished shutting down.
#[cfg(feature = "tracing")]
pub(crate) fn runtime_shut_down(report: &crate::ShutdownReport) {
    tracing::info!(
        target: "baton::runtime",
        clean = report.is_clean(),
        io_drained = report.io_drained,
        tasks_cancelled = report.tasks_cancelled,
        tasks_leaked = report.tasks_leaked,
        "the runtime shut down"
    );
}

/// The runtime finished shutting down (nothing without the feature).
#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn runtime_shut_down(_report: &crate::ShutdownReport) {}

/// A quarantined job outlived the bound it declared.
#[cfg(feature = "tracing")]
pub(crate) fn bound_exceeded(bound: &baton_cancel::QuarantineBound) {
    tracing::warn!(
        target: "baton::blocking",
        %bound,
        "a quarantined blocking job outlived its bound and may still be running"
    );
}

/// A quarantined job outlived its bound (nothing without the feature).
#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn bound_exceeded(_bound: &baton_cancel::QuarantineBound) {}
