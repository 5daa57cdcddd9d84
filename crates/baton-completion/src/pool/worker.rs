//! A lane thread: takes dispatches from its lane and runs them, blocking jobs in place and
//! async jobs driven to completion on this thread.
//!
//! Dispatches contain every panic of user code (jobs, futures, destructors, the completion
//! sink's `deliver`), so a lane thread should never unwind. If one does anyway, its
//! [`LaneThread`] guard accounts for it (pool rule 4): the job it ran counts as `WorkerPanic`,
//! the thread is uncounted, and the lane's queued work gets a replacement thread or is
//! cancelled.

use super::PoolShared;
use super::lanes::{LaneId, Next};
use crate::completion::DeliveryOutcome;
use crate::dispatch::{AsyncDispatch, Dispatch, RunReport, TerminalClass};
use crate::sync::{Arc, thread};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};

/// The body of every lane thread (pool rule 3).
pub(crate) fn run_lane(shared: Arc<PoolShared>, lane: LaneId) {
    let mut guard = LaneThread {
        shared,
        lane,
        state: ThreadState::Idle,
    };
    loop {
        match guard.shared.core.next(lane) {
            Next::Exit => {
                guard.state = ThreadState::Exited;
                return;
            }
            Next::Run(dispatch) => {
                guard.state = ThreadState::Running;
                let report = match dispatch {
                    Dispatch::Blocking(job) => job.run(),
                    Dispatch::Async(job) => drive(job),
                };
                guard.state = ThreadState::Idle;
                guard.shared.core.finished(lane, report);
            }
        }
    }
}

/// Where a lane thread is, as its guard sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThreadState {
    /// Between jobs: counted as a thread, not running a job.
    Idle,
    /// Running a job the lane counts in `running`.
    Running,
    /// Left through [`Next::Exit`], which already uncounted the thread.
    Exited,
}

/// Accounts for a lane thread that unwinds (pool rule 4): its `Drop` runs on every exit path,
/// and unless the thread left through [`Next::Exit`] it reports the running job (if any) as
/// `WorkerPanic` — with `InboxClosed`, since its delivery cannot be known — uncounts the thread
/// and covers the lane's queued work with a replacement thread or cancels it.
#[derive(Debug)]
pub(crate) struct LaneThread {
    shared: Arc<PoolShared>,
    lane: LaneId,
    state: ThreadState,
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
        };
        let recovery = self.shared.core.thread_lost(self.lane, running);
        PoolShared::recover(&self.shared, self.lane, recovery);
    }
}

/// Wakes the lane thread that parked while driving a future.
struct ThreadWaker(thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

/// Drives an async dispatch to completion on the current thread, parking while it is pending.
///
/// The waker's `Arc` is `std`'s because [`Wake`] is implemented for `std::sync::Arc` only;
/// the park/unpark it drives goes through `crate::sync::thread`.
fn drive(mut dispatch: AsyncDispatch) -> RunReport {
    let waker = Waker::from(std::sync::Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        match Pin::new(&mut dispatch).poll(&mut cx) {
            Poll::Ready(report) => return report,
            Poll::Pending => thread::park(),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::executor::{IoExecutor, ShutdownReport};
    use crate::pool::{BlockingPool, InterruptibleThreads, OsThreadSpawner, ThreadSpawner};
    use crate::prepared::{Decoder, PreparedOperation, from_fn};
    use crate::recording::{kind, registrar};
    use baton_cancel::{HookOutcome, Interruptible};
    use std::sync::Mutex;
    use std::time::Duration;
    use web_time::Instant;

    /// Holds the first thread body instead of starting it (the test plays that thread);
    /// starts later ones as OS threads.
    #[derive(Default)]
    struct HoldFirst {
        held: Mutex<Option<Box<dyn FnOnce() + Send + 'static>>>,
        started: Mutex<usize>,
    }

    impl std::fmt::Debug for HoldFirst {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("HoldFirst").finish_non_exhaustive()
        }
    }

    impl ThreadSpawner for HoldFirst {
        fn spawn(
            &self,
            name: String,
            body: Box<dyn FnOnce() + Send + 'static>,
        ) -> std::io::Result<()> {
            let mut started = self.started.lock().expect("not poisoned");
            *started += 1;
            if *started == 1 {
                *self.held.lock().expect("not poisoned") = Some(body);
                return Ok(());
            }
            OsThreadSpawner.spawn(name, body)
        }
    }

    #[test]
    fn lane_thread_unwinding_mid_job_is_accounted_and_replaced() {
        let spawner = std::sync::Arc::new(HoldFirst::default());
        let pool = BlockingPool::builder()
            .interruptible_threads(InterruptibleThreads::Elastic {
                max: 1,
                keep_alive: Duration::from_secs(3600),
            })
            .thread_spawner(spawner.clone())
            .build()
            .expect("valid pool");
        let (registrar, sink, _allocator) = registrar();
        let lease = pool
            .attach_runtime(registrar.runtime_id())
            .expect("fresh runtime");
        for value in 0..2_u8 {
            let identity = registrar.issue(kind(1)).expect("ids");
            let (_half, submission) = registrar
                .bind(
                    identity,
                    PreparedOperation::interruptible_blocking(
                        kind(1),
                        from_fn(move || value),
                        Decoder::identity(),
                        Interruptible::new("test", || Ok(HookOutcome::Reaped)),
                    ),
                )
                .expect("valid bind")
                .split();
            lease.submit(submission).expect("accepted");
        }
        // The held body stands for the lane's one thread; play it, unwinding mid-job.
        drop(spawner.held.lock().expect("not poisoned").take());
        let shared = Arc::clone(&pool.shared);
        let unwound = std::thread::spawn(move || {
            let mut guard = LaneThread {
                shared: Arc::clone(&shared),
                lane: LaneId::Interruptible,
                state: ThreadState::Idle,
            };
            let Next::Run(Dispatch::Blocking(job)) = shared.core.next(LaneId::Interruptible) else {
                panic!("the first job is queued")
            };
            guard.state = ThreadState::Running;
            let _ = job.run();
            panic!("lane thread unwinds before counting its job");
        })
        .join();
        assert!(unwound.is_err());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while pool.snapshot().finished() < 2 {
            assert!(std::time::Instant::now() < deadline, "the replacement ran");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(*spawner.started.lock().expect("not poisoned"), 2);
        let ShutdownReport::Drained { snapshot } =
            pool.shutdown(Instant::now() + Duration::from_secs(10))
        else {
            panic!("the unwound thread's job is not left counted as running")
        };
        assert!(snapshot.adds_up(), "{snapshot:?}");
        assert_eq!((snapshot.panicked, snapshot.completed), (1, 1));
        assert_eq!(sink.count(), 2);
    }
}
