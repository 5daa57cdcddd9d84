//! A lane thread: takes dispatches from its lane and runs them, blocking jobs in place and
//! async jobs driven to completion on this thread.
//!
//! Dispatches contain every panic of user code (jobs, futures, destructors, the completion
//! sink's `deliver`), so a lane thread should never unwind. If one does anyway, its
//! [`LaneThread`] guard accounts for it (pool rule P4): the job it ran counts as `WorkerPanic`,
//! the thread is uncounted, and the lane's queued work gets a replacement thread or is
//! cancelled.

use super::PoolShared;
use super::lane::LaneId;
use super::outcomes::{FinishedJob, Next};
use crate::completion::DeliveryOutcome;
use crate::dispatch::{AsyncDispatch, Dispatch, RunReport, TerminalClass};
use crate::sync::{Arc, StdArc, thread};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// The body of every lane thread (pool rule P3).
pub(crate) fn run_lane(shared: Arc<PoolShared>, lane: LaneId) {
    let mut guard = LaneThread::new(shared, lane);
    while let Some(dispatch) = guard.next() {
        let started = RunClock::start();
        let report = match dispatch {
            Dispatch::Blocking(job) => job.run(),
            Dispatch::Async(job) => drive(job),
        };
        guard.finished(FinishedJob {
            report,
            ran_for: started.elapsed(),
        });
    }
}

/// Times a job for the lane's estimate of its jobs' length (rule P7).
struct RunClock(#[cfg(not(loom))] web_time::Instant);

impl RunClock {
    #[cfg(not(loom))]
    fn start() -> Self {
        Self(web_time::Instant::now())
    }

    #[cfg(not(loom))]
    fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }

    /// Under loom every job is instant, so each execution of a model takes the same
    /// decisions: a wall clock would make the explored protocol differ run to run.
    #[cfg(loom)]
    fn start() -> Self {
        Self()
    }

    #[cfg(loom)]
    fn elapsed(&self) -> Duration {
        Duration::ZERO
    }
}

/// Where a lane thread is, as its guard sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThreadState {
    /// Between jobs: counted as a thread, not running a job.
    Idle,
    /// Running a job the lane counts in `running`.
    Running,
    /// Done with a job the lane still counts in `running`; the next [`LaneThread::next`]
    /// reports it.
    Finished(FinishedJob),
    /// Left through [`Next::Exit`], which already uncounted the thread.
    Exited,
}

/// Accounts for a lane thread that unwinds (pool rule P4): its `Drop` runs on every exit path,
/// and unless the thread left through [`Next::Exit`] it reports the running job (if any) as
/// `WorkerPanic` — with `InboxClosed`, since its delivery cannot be known — uncounts the thread
/// and covers the lane's queued work with a replacement thread or cancels it.
#[derive(Debug)]
pub(crate) struct LaneThread {
    shared: Arc<PoolShared>,
    lane: LaneId,
    state: ThreadState,
}

impl LaneThread {
    /// The guard of a lane thread that just started: idle, counted by its lane.
    pub(crate) fn new(shared: Arc<PoolShared>, lane: LaneId) -> Self {
        Self {
            shared,
            lane,
            state: ThreadState::Idle,
        }
    }

    /// Blocks until the lane hands this thread a dispatch to run (it is then running one) or
    /// tells it to exit (`None`; the lane already uncounted it).
    pub(crate) fn next(&mut self) -> Option<Dispatch> {
        let finished = match self.state {
            ThreadState::Finished(job) => Some(job),
            _ => None,
        };
        // From here the lane has counted the finished job: an unwind must not count it again.
        self.state = ThreadState::Idle;
        match self.shared.lanes.next(self.lane, finished) {
            Next::Exit => {
                self.state = ThreadState::Exited;
                None
            }
            Next::Run(dispatch) => {
                self.state = ThreadState::Running;
                Some(dispatch)
            }
        }
    }

    /// Records the dispatch [`next`](Self::next) handed out as finished; the next `next`
    /// counts it with the same lock that takes the following job.
    fn finished(&mut self, job: FinishedJob) {
        self.state = ThreadState::Finished(job);
    }
}

impl Drop for LaneThread {
    fn drop(&mut self) {
        let running = match self.state {
            ThreadState::Exited => return,
            ThreadState::Idle => None,
            ThreadState::Running => Some(RunReport {
                class: TerminalClass::WorkerPanic,
                delivery: DeliveryOutcome::InboxClosed,
            }),
            ThreadState::Finished(job) => Some(job.report),
        };
        let recovery = self.shared.lanes.thread_lost(self.lane, running);
        PoolShared::recover(&self.shared, self.lane, recovery);
    }
}

/// Wakes the lane thread that parked while driving a future.
struct ThreadWaker(thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: StdArc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &StdArc<Self>) {
        self.0.unpark();
    }
}

/// Drives an async dispatch to completion on the current thread, parking while it is pending.
///
/// The waker's `Arc` is `std`'s because [`Wake`] is implemented for `std::sync::Arc` only;
/// the park/unpark it drives goes through `crate::sync::thread`.
fn drive(mut dispatch: AsyncDispatch) -> RunReport {
    let waker = Waker::from(StdArc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        match Pin::new(&mut dispatch).poll(&mut cx) {
            Poll::Ready(report) => return report,
            Poll::Pending => thread::park(),
        }
    }
}
