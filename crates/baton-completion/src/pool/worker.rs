//! A lane thread: takes dispatches from its lane and runs them, blocking jobs in place and
//! async jobs driven to completion on this thread.

use super::PoolShared;
use super::core::{LaneId, Next};
use crate::dispatch::{AsyncDispatch, Dispatch, RunReport};
use crate::sync::Arc;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};

/// The body of every lane thread (pool rule 3).
pub(crate) fn run_lane(shared: Arc<PoolShared>, lane: LaneId) {
    loop {
        match shared.core.next(lane) {
            Next::Exit => return,
            Next::Run(dispatch) => {
                let report = match dispatch {
                    Dispatch::Blocking(job) => job.run(),
                    Dispatch::Async(job) => drive(job),
                };
                shared.core.finished(lane, report);
            }
        }
    }
}

/// Wakes the lane thread that parked while driving a future.
struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

/// Drives an async dispatch to completion on the current thread, parking while it is pending.
fn drive(mut dispatch: AsyncDispatch) -> RunReport {
    let waker = Waker::from(std::sync::Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        match Pin::new(&mut dispatch).poll(&mut cx) {
            Poll::Ready(report) => return report,
            Poll::Pending => std::thread::park(),
        }
    }
}
