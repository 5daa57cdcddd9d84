//! Rule T1 end to end: every way a task ends frees its allocation exactly once, observed through
//! the count of the scheduler state its header holds.

#![cfg(not(loom))]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::sync::{AtomicUsize, Mutex, Ordering};
use crate::tests::support::{poll_once, run_all, scheduler};

/// Stores a clone of its waker on each of its first `pending` polls, then finishes.
struct Parking {
    wakers: Arc<Mutex<Vec<Waker>>>,
    pending: usize,
    drops: Arc<AtomicUsize>,
}

impl Parking {
    fn new(pending: usize) -> (Parking, Arc<Mutex<Vec<Waker>>>, Arc<AtomicUsize>) {
        let wakers = Arc::default();
        let drops = Arc::default();
        let future = Parking {
            wakers: Arc::clone(&wakers),
            pending,
            drops: Arc::clone(&drops),
        };
        (future, wakers, drops)
    }
}

impl Future for Parking {
    type Output = u8;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u8> {
        if self.pending == 0 {
            return Poll::Ready(7);
        }
        self.pending -= 1;
        self.wakers.lock().unwrap().push(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Parking {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn take_waker(wakers: &Mutex<Vec<Waker>>) -> Waker {
    wakers
        .lock()
        .unwrap()
        .pop()
        .expect("the task stored a waker")
}

/// A fresh scheduler and its count of scheduler-state references before any task exists: the
/// base every task's references are measured against.
fn scheduler_and_base() -> (crate::Scheduler, usize) {
    let scheduler = scheduler();
    let base = scheduler.state_refs();
    (scheduler, base)
}

/// Rule T1: wakes by reference and by value (handing over, merging) move or release exactly
/// the references they should: the task lives while any waker does and is freed by the
/// last one, after it finished.
#[test]
fn wakes_by_value_and_by_reference_free_the_task_with_its_last_waker() {
    let (scheduler, base) = scheduler_and_base();
    let (future, wakers, drops) = Parking::new(2);
    let mut handle = scheduler.spawn(future);
    assert_eq!(scheduler.state_refs(), base + 1, "one allocation per task");
    run_all(&scheduler);
    let stray = take_waker(&wakers);
    stray.wake_by_ref();
    run_all(&scheduler);
    let by_value = take_waker(&wakers);
    let merged = by_value.clone();
    by_value.wake();
    merged.wake();
    run_all(&scheduler);
    assert_eq!(poll_once(&mut handle).map(Result::ok), Poll::Ready(Some(7)));
    drop(handle);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(scheduler.state_refs(), base + 1, "the stray waker keeps it");
    stray.wake_by_ref();
    let clone = stray.clone();
    drop(stray);
    assert_eq!(scheduler.state_refs(), base + 1);
    clone.wake();
    assert_eq!(scheduler.state_refs(), base, "the last waker freed it");
}

/// Rule T1 on the other ways a task ends: aborted while idle, detached, panicked, shut down
/// with a waker still out, and refused after shutdown. Every one is freed once its last
/// reference goes, and every future is dropped exactly once.
#[test]
fn every_way_a_task_ends_frees_it() {
    let (scheduler, base) = scheduler_and_base();
    let (aborted, _, aborted_drops) = Parking::new(5);
    let aborted = scheduler.spawn(aborted);
    let (detached, detached_wakers, detached_drops) = Parking::new(1);
    drop(scheduler.spawn(detached));
    let panicked = scheduler.spawn(async { panic!("on purpose") });
    let (parked, parked_wakers, parked_drops) = Parking::new(5);
    let parked = scheduler.spawn(parked);
    run_all(&scheduler);
    aborted.abort();
    take_waker(&detached_wakers).wake();
    run_all(&scheduler);
    assert!(aborted.is_finished() && panicked.is_finished());
    drop((aborted, panicked));
    let out = take_waker(&parked_wakers);
    assert_eq!(scheduler.shutdown().cancelled, 1);
    drop(parked);
    assert_eq!(scheduler.state_refs(), base + 1, "the waker still holds it");
    out.wake();
    let (refused, _, refused_drops) = Parking::new(0);
    drop(scheduler.spawn(refused));
    for drops in [aborted_drops, detached_drops, parked_drops, refused_drops] {
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
    assert_eq!(scheduler.state_refs(), base);
}

/// Rule T7: a local task shut down on a foreign thread is leaked with its allocation, which
/// stays allocated after its handle is gone.
#[test]
fn leaked_local_task_keeps_its_allocation() {
    let (scheduler, base) = scheduler_and_base();
    let (future, _, drops) = Parking::new(5);
    let handle = scheduler.spawn_local(future);
    run_all(&scheduler);
    let scheduler = std::thread::spawn(move || {
        assert_eq!(scheduler.shutdown().leaked, 1);
        scheduler
    })
    .join()
    .unwrap();
    drop(handle);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "never dropped off its thread"
    );
    assert_eq!(scheduler.state_refs(), base + 1, "never freed");
}

/// Rule T1 while unwinding: a finished task whose last reference goes during a panic (its
/// handle dropped by the unwinding) is still freed, and releases the scheduler's
/// state with it; only its stage (empty by then) is handled as a value that must not panic.
#[test]
fn task_whose_last_reference_goes_while_unwinding_is_freed() {
    let (scheduler, base) = scheduler_and_base();
    let handle = scheduler.spawn(async { 1_u8 });
    run_all(&scheduler);
    assert!(handle.is_finished());
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _handle = handle;
        panic!("unwinds with the task's last reference");
    }));
    assert!(unwound.is_err());
    assert_eq!(scheduler.state_refs(), base, "freed during the unwinding");
}

/// Rule T1 (units): hundreds of tasks spawned and freed on the claim holder's thread move
/// units through its spares (refilled and given back in batches); once the claim is released
/// every unit is uncounted and only the scheduler's own count of its state is left.
#[test]
fn units_of_tasks_freed_on_the_claim_holder_are_all_given_back() {
    let (scheduler, base) = scheduler_and_base();
    let guard = scheduler.enter();
    let mut handles: Vec<_> = (0..300_u32)
        .map(|i| scheduler.spawn(async move { i }))
        .collect();
    run_all(&scheduler);
    for (i, handle) in (0..).zip(handles.iter_mut()) {
        let output = poll_once(handle);
        assert!(matches!(output, Poll::Ready(Ok(value)) if value == i));
    }
    drop(handles);
    assert!(
        scheduler.state_refs() > base,
        "the guard still holds spares"
    );
    drop(guard);
    assert_eq!(scheduler.state_refs(), base);
}
