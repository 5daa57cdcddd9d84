//! The `JoinHandle`'s stored waker is released, contained, as soon as the handle stops waiting
//! (T5): on detach and when a poll finds the task complete. A user waker whose destructor
//! panics never escapes the scheduler or the handle, and is not kept alive by a finished task.

mod support;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use support::{Gate, drive, poll_once, scheduler};

thread_local! {
    /// Runs once, from inside the next clone of a `BombWaker` on this thread.
    static ON_CLONE: RefCell<Option<Box<dyn FnOnce()>>> = const { RefCell::new(None) };
}

/// Counts the live clones of a bomb waker; the tests run in parallel, so each has its own.
struct Probe {
    live: AtomicUsize,
}

static DETACH_PROBE: Probe = Probe {
    live: AtomicUsize::new(0),
};
static RACE_PROBE: Probe = Probe {
    live: AtomicUsize::new(0),
};

fn bomb_clone(data: *const ()) -> RawWaker {
    // SAFETY: `data` always points at one of the `'static` probes above.
    let probe = unsafe { &*data.cast::<Probe>() };
    probe.live.fetch_add(1, Ordering::SeqCst);
    if let Some(hook) = ON_CLONE.with(|slot| slot.borrow_mut().take()) {
        hook();
    }
    RawWaker::new(data, &BOMB)
}

fn bomb_noop(_: *const ()) {}

fn bomb_drop(data: *const ()) {
    // SAFETY: `data` always points at one of the `'static` probes above.
    let probe = unsafe { &*data.cast::<Probe>() };
    probe.live.fetch_sub(1, Ordering::SeqCst);
    panic!("waker destructor panics on purpose");
}

fn bomb_wake(data: *const ()) {
    bomb_drop(data);
}

static BOMB: RawWakerVTable = RawWakerVTable::new(bomb_clone, bomb_wake, bomb_noop, bomb_drop);

/// A waker whose clones panic when dropped (or woken). The returned original is never dropped by
/// the tests (it is forgotten), so only clones the scheduler stored can panic.
fn bomb_waker(probe: &'static Probe) -> std::mem::ManuallyDrop<Waker> {
    let raw = RawWaker::new(std::ptr::from_ref(probe).cast(), &BOMB);
    // SAFETY: the vtable functions honour the `RawWaker` contract: the data pointer is
    // `'static` and shared, clone returns a waker over the same data, wake/drop release one
    // clone (the drop then panics, which is the fault under test).
    std::mem::ManuallyDrop::new(unsafe { Waker::from_raw(raw) })
}

#[test]
fn detach_drops_the_stored_waker_contained_and_the_scheduler_keeps_running() {
    let (scheduler, _) = scheduler();
    let gate = Gate::new();
    let mut handle = scheduler.spawn(gate.wait());
    let _ = scheduler.run_ready(16);
    let waker = bomb_waker(&DETACH_PROBE);
    let mut cx = Context::from_waker(&waker);
    assert!(std::pin::Pin::new(&mut handle).poll(&mut cx).is_pending());
    assert_eq!(
        DETACH_PROBE.live.load(Ordering::SeqCst),
        1,
        "the handle stored one clone"
    );
    drop(handle);
    assert_eq!(
        DETACH_PROBE.live.load(Ordering::SeqCst),
        0,
        "a detached handle's waker is released at once"
    );
    gate.release();
    let report = scheduler.run_ready(16);
    assert_eq!(report.polled, 1);
    let next = scheduler.spawn(async { 3 });
    assert_eq!(drive(&scheduler, next).unwrap(), 3);
    assert_eq!(scheduler.live_tasks(), 0);
}

#[test]
fn poll_that_finds_the_task_complete_drops_its_fresh_waker_contained() {
    let (scheduler, _) = scheduler();
    let scheduler = Rc::new(scheduler);
    let gate = Gate::new();
    let mut handle = scheduler.spawn(gate.behind(9));
    let _ = scheduler.run_ready(16);
    // The handle's clone of our waker completes the task before the handle registers it, so
    // the registration finds the task complete (the race this test forces).
    let hook_scheduler = Rc::clone(&scheduler);
    let hook_gate = std::sync::Arc::clone(&gate);
    ON_CLONE.with(|slot| {
        *slot.borrow_mut() = Some(Box::new(move || {
            hook_gate.release();
            let _ = hook_scheduler.run_ready(16);
        }));
    });
    let waker = bomb_waker(&RACE_PROBE);
    let mut cx = Context::from_waker(&waker);
    let polled = std::pin::Pin::new(&mut handle).poll(&mut cx);
    assert!(matches!(polled, Poll::Ready(Ok(9))));
    assert_eq!(
        RACE_PROBE.live.load(Ordering::SeqCst),
        0,
        "a handle that returned its output holds no waker"
    );
    drop(handle);
    let mut next = scheduler.spawn(async { 4 });
    while poll_once(&mut next).is_pending() {
        let _ = scheduler.run_ready(16);
    }
    assert_eq!(scheduler.live_tasks(), 0);
}
