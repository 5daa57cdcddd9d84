//! Loom models of the scheduler's cross-thread protocols, run against the shipped code through
//! the crate's `sync` shim (`--cfg loom`).
#![cfg(loom)]

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use baton_task::{CancelReason, JoinHandle, Scheduler};
use loom::sync::Mutex;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use support::{poll_once, scheduler};

/// Completes once `flag` is set; stores its waker first, then checks the flag (the usual
/// register-then-check pattern), so a set-then-wake on another thread may hit any point of the
/// poll.
struct FlagWait {
    flag: Arc<AtomicBool>,
    slot: Arc<Mutex<Option<Waker>>>,
}

impl FlagWait {
    /// A wait, its flag (unset) and the slot where it stores its waker.
    fn new() -> (FlagWait, Arc<AtomicBool>, Arc<Mutex<Option<Waker>>>) {
        let flag = Arc::new(AtomicBool::new(false));
        let slot = Arc::new(Mutex::new(None::<Waker>));
        let wait = FlagWait {
            flag: Arc::clone(&flag),
            slot: Arc::clone(&slot),
        };
        (wait, flag, slot)
    }

    /// A wait spawned on `scheduler` and polled once, so it is parked with its waker stored:
    /// its handle, flag and slot.
    fn parked_on(
        scheduler: &Scheduler,
    ) -> (JoinHandle<()>, Arc<AtomicBool>, Arc<Mutex<Option<Waker>>>) {
        let (wait, flag, slot) = FlagWait::new();
        let handle = scheduler.spawn(wait);
        let _ = scheduler.run_ready(1);
        (handle, flag, slot)
    }

    /// Sets `flag`, then wakes the waker the wait stored in `slot`, if it got that far.
    fn release(flag: &AtomicBool, slot: &Mutex<Option<Waker>>) {
        flag.store(true, Ordering::SeqCst);
        let waker = slot.lock().unwrap().take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// Runs `scheduler` until `handle`'s task finished, asserting that a woken task is polled again
/// within two rounds (`lost` says what it means when not).
fn run_until_finished<T>(scheduler: &Scheduler, handle: &JoinHandle<T>, lost: &str) {
    let mut rounds = 0;
    while !handle.is_finished() {
        let _ = scheduler.run_ready(4);
        rounds += 1;
        assert!(rounds <= 2, "{lost}");
    }
}

impl Future for FlagWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        *self.slot.lock().unwrap() = Some(cx.waker().clone());
        if self.flag.load(Ordering::SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// Proves rule T3 (and 2): a wake from a foreign thread racing the task's poll is never lost.
/// Whether the wake lands before the poll, during it (the poller must requeue), or after it
/// (the waker must push onto the injection queue and unpark), once the waking thread is joined
/// the task is either finished or reported ready, and running the scheduler finishes it.
#[test]
fn loom_remote_wake_racing_poll_is_never_lost() {
    loom::model(|| {
        let (scheduler, unpark) = scheduler();
        let (wait, flag, slot) = FlagWait::new();
        let mut handle = scheduler.spawn(wait);
        let waker_thread = loom::thread::spawn(move || {
            FlagWait::release(&flag, &slot);
        });
        let _ = scheduler.run_ready(1);
        waker_thread.join().unwrap();
        let remote = unpark.count();
        assert!(
            handle.is_finished() || scheduler.has_ready_for_current_thread(),
            "the wake was lost"
        );
        run_until_finished(&scheduler, &handle, "the woken task was not polled again");
        assert!(matches!(poll_once(&mut handle), Poll::Ready(Ok(()))));
        assert!(remote <= 1, "one wake unparks at most once");
        assert_eq!(scheduler.live_tasks(), 0);
    });
}

/// Proves rule T8: a spawn from a foreign thread racing `run_ready` + `shutdown` is either run
/// (its handle returns the output) or refused/cancelled (its future never ran), never both and
/// never lost: after both threads finish, the handle is always resolved and the counters add up.
#[test]
fn loom_spawn_racing_shutdown_runs_or_cancels() {
    loom::model(|| {
        let (scheduler, _) = scheduler();
        let spawner = scheduler.spawner();
        let ran = Arc::new(AtomicBool::new(false));
        let spawning = loom::thread::spawn({
            let ran = Arc::clone(&ran);
            move || spawner.spawn(async move { ran.store(true, Ordering::SeqCst) })
        });
        let _ = scheduler.run_ready(2);
        let report = scheduler.shutdown();
        let mut handle = spawning.join().unwrap();
        assert!(handle.is_finished(), "the spawn was lost");
        match poll_once(&mut handle) {
            Poll::Ready(Ok(())) => assert!(ran.load(Ordering::SeqCst)),
            Poll::Ready(Err(err)) => {
                assert!(err.is_cancelled());
                assert!(!ran.load(Ordering::SeqCst), "cancelled but it ran");
            }
            Poll::Pending => panic!("the handle never resolves"),
        }
        let counts = scheduler.counts();
        assert_eq!(counts.live, 0);
        assert_eq!(counts.spawned, counts.completed + counts.cancelled);
        assert_eq!(report.still_running, 0);
    });
}

/// Proves rule T8's refusal: a spawn from one foreign thread racing `refuse_spawns` from
/// another is either accepted (queued, then run) or refused (its handle says
/// `SpawnAfterShutdown`, its future never ran), never lost; and the remote wake of a task
/// accepted before, sent after or during the refusal, still reaches the scheduler: that task
/// completes, and the shutdown afterwards finds nothing left to cancel.
///
/// Planted bug it caught: the injection queue refusing wakes too, not only new tasks (the
/// woken task never ran again).
#[test]
fn loom_spawn_racing_refusal_is_kept_or_refused() {
    loom::model(|| {
        let (scheduler, _) = scheduler();
        let (mut waiting, flag, slot) = FlagWait::parked_on(&scheduler);
        let ran = Arc::new(AtomicBool::new(false));
        let spawning = loom::thread::spawn({
            let spawner = scheduler.spawner();
            let ran = Arc::clone(&ran);
            move || spawner.spawn(async move { ran.store(true, Ordering::SeqCst) })
        });
        let refusing = loom::thread::spawn({
            let spawner = scheduler.spawner();
            move || {
                let _refused = spawner.refuse_spawns();
                FlagWait::release(&flag, &slot);
            }
        });
        let mut spawned = spawning.join().unwrap();
        refusing.join().unwrap();
        let _ = scheduler.run_ready(4);
        assert!(
            matches!(poll_once(&mut waiting), Poll::Ready(Ok(()))),
            "the wake of an accepted task was lost"
        );
        match poll_once(&mut spawned) {
            Poll::Ready(Ok(())) => assert!(ran.load(Ordering::SeqCst)),
            Poll::Ready(Err(err)) => {
                assert_eq!(err.cancel_reason(), Some(CancelReason::SpawnAfterShutdown));
                assert!(!ran.load(Ordering::SeqCst), "refused but it ran");
            }
            Poll::Pending => panic!("an accepted spawn was not run"),
        }
        let report = scheduler.shutdown();
        assert_eq!(report.cancelled + report.leaked + report.still_running, 0);
        let counts = scheduler.counts();
        assert_eq!(counts.live, 0);
        assert_eq!(counts.spawned, counts.completed);
    });
}

/// Proves rule T4: an abort from a foreign thread racing the task's first poll either lets the
/// poll finish first (output returned) or drops the future without it ever completing; the
/// future is dropped exactly once and the handle always resolves.
#[test]
fn loom_abort_racing_poll_drops_exactly_once() {
    struct CountDrop(Arc<AtomicUsize>);
    impl Drop for CountDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    loom::model(|| {
        let (scheduler, _) = scheduler();
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = CountDrop(Arc::clone(&drops));
        let handle = Arc::new(scheduler.spawn(async move {
            let _guard = guard;
            7
        }));
        let aborter = loom::thread::spawn({
            let handle = Arc::clone(&handle);
            move || handle.abort()
        });
        let _ = scheduler.run_ready(1);
        aborter.join().unwrap();
        let _ = scheduler.run_ready(1);
        let mut handle = Arc::into_inner(handle).expect("the aborter thread is joined");
        assert!(handle.is_finished());
        match poll_once(&mut handle) {
            Poll::Ready(Ok(value)) => assert_eq!(value, 7),
            Poll::Ready(Err(err)) => assert!(err.is_cancelled()),
            Poll::Pending => panic!("the handle never resolves"),
        }
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    });
}

/// Proves rule T9 with rule T2: the worker migrating to another thread (the core claim released
/// here, taken there) while this thread wakes the task never loses the wake, and the wake from a
/// thread that no longer holds the claim goes through the injection queue.
#[test]
fn loom_wake_while_worker_migrates_is_never_lost() {
    loom::model(|| {
        let (scheduler, _) = scheduler();
        let (mut handle, flag, slot) = FlagWait::parked_on(&scheduler);
        let worker = loom::thread::spawn(move || {
            let _ = scheduler.run_ready(2);
            scheduler
        });
        FlagWait::release(&flag, &slot);
        let scheduler = worker.join().unwrap();
        run_until_finished(&scheduler, &handle, "the wake was lost during migration");
        assert!(matches!(poll_once(&mut handle), Poll::Ready(Ok(()))));
    });
}

/// Proves rule T11: the lock-free "injected" flag never hides queued work. Two spawns from a
/// foreign thread race a `run_ready` (whose drain may empty the queue between them); once the
/// spawner is joined, the next `run_ready` sees the flag and runs everything still queued, and
/// each push that found the queue empty unparked the worker. Fails if the drain clears the flag
/// after releasing the lock (the second push's flag is then wiped while its task is queued).
#[test]
fn loom_injected_flag_never_hides_queued_work() {
    loom::model(|| {
        let (scheduler, unpark) = scheduler();
        let spawner = scheduler.spawner();
        let spawning =
            loom::thread::spawn(move || (spawner.spawn(async { 1 }), spawner.spawn(async { 2 })));
        let first = scheduler.run_ready(4);
        let (mut one, mut two) = spawning.join().unwrap();
        let unparks = unpark.count();
        assert!(
            unparks >= 1,
            "the first push found the queue empty and must unpark"
        );
        if first.polled < 2 {
            assert!(
                scheduler.has_ready_for_current_thread(),
                "queued work is hidden from the worker"
            );
        }
        let _ = scheduler.run_ready(4);
        assert!(matches!(poll_once(&mut one), Poll::Ready(Ok(1))));
        assert!(matches!(poll_once(&mut two), Poll::Ready(Ok(2))));
        assert_eq!(scheduler.live_tasks(), 0);
    });
}
