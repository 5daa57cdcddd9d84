//! Loom models of the reference count in the task state word (T1) racing wakes, aborts,
//! shutdown and completion on other threads.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::sync::{self, AtomicUsize, Mutex, Ordering};
use crate::tests::support::{poll_once, run_all, scheduler};
use crate::{JoinHandle, Scheduler};

/// Pending on its first poll (after storing a waker clone in `slot`), ready afterwards.
/// Counts its polls and its drop.
struct Twice {
    slot: Arc<Mutex<Option<Waker>>>,
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
}

impl Future for Twice {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.polls.fetch_add(1, Ordering::SeqCst) > 0 {
            return Poll::Ready(());
        }
        *sync::lock(&self.slot) = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Twice {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

struct Probe {
    slot: Arc<Mutex<Option<Waker>>>,
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
}

fn twice() -> (Twice, Probe) {
    let probe = Probe {
        slot: Arc::new(Mutex::new(None)),
        polls: Arc::new(AtomicUsize::new(0)),
        drops: Arc::new(AtomicUsize::new(0)),
    };
    let future = Twice {
        slot: Arc::clone(&probe.slot),
        polls: Arc::clone(&probe.polls),
        drops: Arc::clone(&probe.drops),
    };
    (future, probe)
}

/// A scheduler with one `Twice` task spawned (not polled yet), and the number of references
/// to the scheduler's state before the spawn.
fn spawned() -> (Scheduler, usize, JoinHandle<()>, Probe) {
    let scheduler = scheduler();
    let base = scheduler.state_refs();
    let (future, probe) = twice();
    let handle = scheduler.spawn(future);
    (scheduler, base, handle, probe)
}

/// Runs the task's first poll and takes the waker it stored.
fn first_poll_waker(scheduler: &Scheduler, probe: &Probe) -> Waker {
    let _ = scheduler.run_ready(1);
    sync::lock(&probe.slot)
        .take()
        .expect("the first poll stored its waker")
}

/// Rule T1: the future was dropped once and the task freed, once: only the references the
/// scheduler had before the spawn are left.
fn assert_dropped_and_freed_once(scheduler: &Scheduler, base: usize, probe: &Probe) {
    assert_eq!(probe.drops.load(Ordering::SeqCst), 1);
    assert_eq!(scheduler.state_refs(), base, "freed, and only once");
}

/// Proves rule T1 with rules T2 and T5: a foreign wake by value may land while the task is
/// queued, being polled to completion, or already complete (with its handle and every
/// other reference gone, so the waking thread frees it). In every interleaving the task is
/// polled to completion once, its future dropped once, and its allocation freed exactly
/// once: afterwards only the scheduler's own reference to its state is left.
#[test]
fn loom_wake_by_value_racing_completion_frees_exactly_once() {
    loom::model(|| {
        let (scheduler, base, handle, probe) = spawned();
        let waker = first_poll_waker(&scheduler, &probe);
        let local = waker.clone();
        let waking = loom::thread::spawn(move || waker.wake());
        local.wake_by_ref();
        drop(local);
        drop(handle);
        let _ = scheduler.run_ready(1);
        waking.join().unwrap();
        run_all(&scheduler);
        assert_eq!(probe.polls.load(Ordering::SeqCst), 2);
        assert_eq!(probe.drops.load(Ordering::SeqCst), 1);
        assert_eq!(scheduler.counts().completed, 1);
        assert_eq!(scheduler.state_refs(), base, "freed, and only once");
    });
}

/// Proves rules T1 and T3: a foreign wake by value racing the first poll either merges into
/// it (the poller requeues the task with the queue entry's reference) or finds the task
/// idle after its first park handed that reference to the registry (the waker's own becomes
/// the new entry's). Either way the task runs again, finishes, leaves the registry, and is
/// freed exactly once.
#[test]
fn loom_wake_by_value_racing_idle_hands_over_one_reference() {
    loom::model(|| {
        let (scheduler, base, mut handle, probe) = spawned();
        let slot = Arc::clone(&probe.slot);
        let waking = loom::thread::spawn(move || {
            loop {
                if let Some(waker) = sync::lock(&slot).take() {
                    waker.wake();
                    return;
                }
                loom::thread::yield_now();
            }
        });
        let _ = scheduler.run_ready(1);
        waking.join().unwrap();
        run_all(&scheduler);
        let output = poll_once(&mut handle);
        assert!(matches!(output, Poll::Ready(Ok(()))));
        drop(handle);
        assert_eq!(probe.polls.load(Ordering::SeqCst), 2);
        assert_dropped_and_freed_once(&scheduler, base, &probe);
    });
}

/// Proves rules T1 and T4: a foreign abort racing the first poll either lands before `start`
/// (never polled), during the poll (the poller's `idle` sees `CANCELLED`, keeps the queue
/// entry's reference and cancels), or after the first park handed that reference to the
/// registry (the abort takes a new one for its queue entry). The future is dropped once and
/// the task freed once.
#[test]
fn loom_abort_racing_idle_frees_exactly_once() {
    loom::model(|| {
        let (scheduler, base, handle, probe) = spawned();
        let handle = Arc::new(handle);
        let aborting = {
            let handle = Arc::clone(&handle);
            loom::thread::spawn(move || handle.abort())
        };
        let _ = scheduler.run_ready(1);
        aborting.join().unwrap();
        run_all(&scheduler);
        let mut handle = Arc::into_inner(handle).expect("the aborting thread was joined");
        let output = poll_once(&mut handle);
        assert!(matches!(output, Poll::Ready(Err(ref err)) if err.is_cancelled()));
        drop(handle);
        drop(sync::lock(&probe.slot).take());
        assert!(
            probe.polls.load(Ordering::SeqCst) <= 1,
            "never polled after the abort"
        );
        assert_dropped_and_freed_once(&scheduler, base, &probe);
    });
}

/// Proves rules T1 and T8: a foreign wake by value racing shutdown pushes its queue entry
/// before the injection queue closes (shutdown drains and drops it), or is refused by the
/// closed queue (the refused entry's reference is dropped), or finds the task already
/// finished (the waker's reference is released, perhaps the last). The task is cancelled
/// once, never polled again, and freed once.
#[test]
fn loom_wake_by_value_racing_shutdown_frees_exactly_once() {
    loom::model(|| {
        let (scheduler, base, handle, probe) = spawned();
        let waker = first_poll_waker(&scheduler, &probe);
        let waking = loom::thread::spawn(move || waker.wake());
        assert_eq!(scheduler.shutdown().cancelled, 1);
        drop(handle);
        waking.join().unwrap();
        assert_eq!(probe.polls.load(Ordering::SeqCst), 1);
        assert_dropped_and_freed_once(&scheduler, base, &probe);
    });
}

/// Proves rules T1 and T6: the handle dropped on a foreign thread racing the task's
/// completion either detaches first (the completer drops the output) or finds the output
/// published (the handle drops it); whichever side releases the last reference frees the
/// task, once.
#[test]
fn loom_handle_dropped_remotely_racing_completion_frees_exactly_once() {
    loom::model(|| {
        let (scheduler, base, handle, probe) = spawned();
        let waker = first_poll_waker(&scheduler, &probe);
        waker.wake();
        let dropping = loom::thread::spawn(move || drop(handle));
        run_all(&scheduler);
        dropping.join().unwrap();
        assert_eq!(probe.polls.load(Ordering::SeqCst), 2);
        assert_dropped_and_freed_once(&scheduler, base, &probe);
    });
}
