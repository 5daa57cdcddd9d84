//! Property tests: random sequences of spawn / wake / abort / detach / run / migrate / shutdown
//! keep the counters consistent, drop every future exactly once on an allowed thread, and
//! resolve every handle.

mod support;

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use baton_task::{JoinHandle, Scheduler};
use proptest::prelude::*;
use support::{Gate, poll_once, scheduler};

#[derive(Debug, Clone)]
enum Op {
    SpawnGated,
    SpawnLocalGated,
    SpawnReady,
    Release(usize),
    ForeignRelease(usize),
    Abort(usize),
    Detach(usize),
    Run(usize),
    RunOnOtherThread,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::SpawnGated),
        2 => Just(Op::SpawnLocalGated),
        2 => Just(Op::SpawnReady),
        3 => any::<usize>().prop_map(Op::Release),
        1 => any::<usize>().prop_map(Op::ForeignRelease),
        2 => any::<usize>().prop_map(Op::Abort),
        1 => any::<usize>().prop_map(Op::Detach),
        3 => (1usize..8).prop_map(Op::Run),
        1 => Just(Op::RunOnOtherThread),
    ]
}

/// Counts drops of a task's future.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

struct Tracked {
    id: usize,
    gate: Arc<Gate>,
    drops: Arc<AtomicUsize>,
    handle: Option<JoinHandle<usize>>,
    aborted: bool,
    released: bool,
}

fn check_counters(scheduler: &Scheduler) {
    let counts = scheduler.counts();
    assert_eq!(
        counts.spawned,
        counts.live + counts.completed + counts.panicked + counts.cancelled,
        "{counts:?}"
    );
    assert_eq!(counts.panicked, 0, "a local task ran on a foreign thread");
}

fn run_case(ops: Vec<Op>) {
    let (scheduler, _) = scheduler();
    let mut scheduler = Some(scheduler);
    let mut tasks: Vec<Tracked> = Vec::new();
    let owner = std::thread::current().id();
    for op in ops {
        let s = scheduler.as_ref().expect("scheduler is home between ops");
        let pick = |n: usize| (!tasks.is_empty()).then(|| n % tasks.len());
        match op {
            Op::SpawnGated | Op::SpawnLocalGated | Op::SpawnReady => {
                let id = tasks.len();
                let gate = Gate::new();
                if matches!(op, Op::SpawnReady) {
                    gate.release();
                }
                let drops = Arc::new(AtomicUsize::new(0));
                let guard = DropCount(Arc::clone(&drops));
                let wait = gate.wait();
                let handle = if matches!(op, Op::SpawnLocalGated) {
                    let not_send = Rc::new(id);
                    s.spawn_local(async move {
                        let _guard = guard;
                        assert_eq!(std::thread::current().id(), owner);
                        wait.await;
                        *not_send
                    })
                } else {
                    s.spawn(async move {
                        let _guard = guard;
                        wait.await;
                        id
                    })
                };
                tasks.push(Tracked {
                    id,
                    gate,
                    drops,
                    handle: Some(handle),
                    aborted: false,
                    released: matches!(op, Op::SpawnReady),
                });
            }
            Op::Release(n) => {
                if let Some(i) = pick(n) {
                    tasks[i].gate.release();
                    tasks[i].released = true;
                }
            }
            Op::ForeignRelease(n) => {
                if let Some(i) = pick(n) {
                    let gate = Arc::clone(&tasks[i].gate);
                    std::thread::spawn(move || gate.release()).join().unwrap();
                    tasks[i].released = true;
                }
            }
            Op::Abort(n) => {
                if let Some(i) = pick(n)
                    && let Some(handle) = &tasks[i].handle
                {
                    handle.abort();
                    tasks[i].aborted = true;
                }
            }
            Op::Detach(n) => {
                if let Some(i) = pick(n) {
                    tasks[i].handle = None;
                }
            }
            Op::Run(budget) => {
                let _ = s.run_ready(budget);
            }
            Op::RunOnOtherThread => {
                let away = scheduler.take().expect("home");
                let back = std::thread::spawn(move || {
                    let _ = away.run_ready(16);
                    away
                })
                .join()
                .unwrap();
                scheduler = Some(back);
            }
        }
        let s = scheduler.as_ref().expect("home");
        check_counters(s);
        for task in &tasks {
            assert!(
                task.drops.load(Ordering::SeqCst) <= 1,
                "future dropped twice"
            );
        }
    }
    let s = scheduler.take().expect("home");
    // Everything released and not aborted completes once the scheduler runs dry at home.
    let mut rounds = 0;
    while s.run_ready(64).more_ready {
        rounds += 1;
        assert!(rounds < 1000, "run_ready never ran dry");
    }
    for task in &mut tasks {
        if let Some(handle) = &mut task.handle {
            match poll_once(handle) {
                Poll::Ready(Ok(value)) => {
                    assert_eq!(value, task.id);
                    assert!(task.released);
                }
                Poll::Ready(Err(err)) => {
                    assert!(err.is_cancelled());
                    assert!(task.aborted);
                }
                Poll::Pending => assert!(!task.released && !task.aborted),
            }
            // Consumed results must not be polled again.
            if task.handle.as_ref().is_some_and(JoinHandle::is_finished) {
                task.handle = None;
            }
        }
    }
    let _ = s.shutdown();
    check_counters(&s);
    assert_eq!(s.live_tasks(), 0);
    for task in &mut tasks {
        assert_eq!(
            task.drops.load(Ordering::SeqCst),
            1,
            "task {} drops",
            task.id
        );
        if let Some(handle) = &mut task.handle {
            assert!(matches!(poll_once(handle), Poll::Ready(Err(ref e)) if e.is_cancelled()));
        }
    }
}

proptest! {
    #[test]
    fn prop_random_task_histories_stay_consistent(ops in proptest::collection::vec(op(), 1..40)) {
        run_case(ops);
    }
}
