//! A lane thread that unwinds mid-job (pool rule P4) is accounted and replaced.

use super::submit_values;
use crate::dispatch::Dispatch;
use crate::executor::{IoExecutor, ShutdownReport};
use crate::pool::{
    BlockingPool, InterruptibleThreads, LaneId, LaneThread, OsThreadSpawner, ThreadSpawner,
};
use crate::sync::{Arc, Mutex};
use crate::tests::support::registrar;
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
    fn spawn(&self, name: String, body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
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
    let spawner = Arc::new(HoldFirst::default());
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
    submit_values(&registrar, &*lease, 0..2);
    // The held body stands for the lane's one thread; play it, unwinding mid-job.
    drop(spawner.held.lock().expect("not poisoned").take());
    let shared = Arc::clone(pool.shared());
    let unwound = std::thread::spawn(move || {
        let mut guard = LaneThread::new(shared, LaneId::Interruptible);
        let Some(Dispatch::Blocking(job)) = guard.next() else {
            panic!("the first job is queued")
        };
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
