//! Fixtures shared by the crate's unit tests and loom models.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::{Scheduler, Unpark};

/// An unpark hook that does nothing: these tests drive the scheduler themselves.
#[derive(Debug)]
pub(crate) struct NoPark;

impl Unpark for NoPark {
    fn unpark(&self) {}
}

/// A scheduler whose unpark hook does nothing.
pub(crate) fn scheduler() -> Scheduler {
    Scheduler::new(Arc::new(NoPark))
}

/// Runs the scheduler on this thread until nothing is ready any more.
pub(crate) fn run_all(scheduler: &Scheduler) {
    while scheduler.run_ready(64).more_ready {}
}

/// Polls `future` once with a no-op waker.
pub(crate) fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}
