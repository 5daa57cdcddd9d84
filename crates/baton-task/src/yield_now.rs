//! `yield_now`: let other ready tasks run before continuing.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Returns `Pending` exactly once, after waking its own task, so the scheduler runs the other
/// ready tasks (the task goes to the back of its queue) before resuming this one.
///
/// Works under any executor; it needs no runtime context.
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// The future returned by [`yield_now`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
