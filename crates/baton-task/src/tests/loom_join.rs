//! Loom models of the join handshake (T6): the lock-free join waker slot, whose owner the
//! state word's `JOIN_WAKER` and `COMPLETE` bits name, raced by the completer on another
//! thread. The slot is a loom cell, so the models also fail on any access to it that is not
//! ordered after the previous owner's.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crate::sync::{self, AtomicUsize, Mutex, Ordering};
use crate::tests::support::{run_all, scheduler};
use crate::{JoinHandle, Scheduler};

/// Pending on its first poll (after storing a waker clone in `slot`), ready with 7 afterwards.
struct Parks {
    slot: Arc<Mutex<Option<Waker>>>,
    polled: bool,
}

impl Future for Parks {
    type Output = u32;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        if self.polled {
            return Poll::Ready(7);
        }
        self.polled = true;
        *sync::lock(&self.slot) = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// A joiner's waker: counts its wakes; its `Arc` count says how many clones are alive.
#[derive(Default)]
struct Joiner {
    wakes: AtomicUsize,
}

impl Wake for Joiner {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

impl Joiner {
    fn new() -> (Arc<Joiner>, Waker) {
        let joiner = Arc::new(Joiner::default());
        let waker = Waker::from(Arc::clone(&joiner));
        (joiner, waker)
    }

    fn wakes(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }
}

/// A scheduler with one `Parks` task polled once (parked), its handle, the waker its poll
/// stored, and the references to the scheduler's state before the spawn.
fn parked() -> (Scheduler, usize, JoinHandle<u32>, Waker) {
    let scheduler = scheduler();
    let base = scheduler.state_refs();
    let slot = Arc::new(Mutex::new(None));
    let handle = scheduler.spawn(Parks {
        slot: Arc::clone(&slot),
        polled: false,
    });
    let _ = scheduler.run_ready(1);
    let task_waker = sync::lock(&slot)
        .take()
        .expect("the first poll stored its waker");
    (scheduler, base, handle, task_waker)
}

fn poll_with(handle: &mut JoinHandle<u32>, waker: &Waker) -> Poll<u32> {
    match Pin::new(handle).poll(&mut Context::from_waker(waker)) {
        Poll::Ready(output) => Poll::Ready(output.expect("the task completes")),
        Poll::Pending => Poll::Pending,
    }
}

/// Proves rule T6 for a first registration racing completion: the handle stores its waker and
/// then sets `JOIN_WAKER` while the task completes on another thread. Either the handle sees
/// the output (and keeps no waker alive), or its poll is `Pending` and the completer wakes
/// that waker exactly once, after which the output is there. The slot is never touched by
/// both sides at once, and no waker clone outlives the join.
#[test]
fn loom_join_registration_racing_completion_wakes_once() {
    loom::model(|| {
        let (scheduler, base, mut handle, task_waker) = parked();
        let (joiner, waker) = Joiner::new();
        let joining = loom::thread::spawn(move || {
            let first = poll_with(&mut handle, &waker);
            (handle, waker, first)
        });
        task_waker.wake();
        run_all(&scheduler);
        let (mut handle, waker, first) = joining.join().unwrap();
        match first {
            Poll::Ready(output) => {
                assert_eq!(output, 7);
                assert_eq!(
                    joiner.wakes(),
                    0,
                    "a handle that saw the output is not woken"
                );
            }
            Poll::Pending => {
                assert_eq!(joiner.wakes(), 1, "the registered waker is woken once");
                assert_eq!(poll_with(&mut handle, &waker), Poll::Ready(7));
            }
        }
        drop(waker);
        assert_eq!(
            Arc::strong_count(&joiner),
            1,
            "no waker clone outlives the join"
        );
        drop(handle);
        assert_eq!(scheduler.state_refs(), base, "freed, and only once");
    });
}

/// Proves rule T6 for a handle that moves to another waker while the task completes: the
/// handle published `first`, then polls with `second`, reclaiming the slot unless completion
/// already owns it. If that poll is `Pending`, `second` is woken exactly once and `first`
/// never (it was reclaimed before completion); otherwise the output is returned. Every clone
/// of either waker is released.
#[test]
fn loom_join_waker_replaced_racing_completion_wakes_the_current_one() {
    loom::model(|| {
        let (scheduler, base, mut handle, task_waker) = parked();
        let (old, first) = Joiner::new();
        assert_eq!(poll_with(&mut handle, &first), Poll::Pending);
        drop(first);
        let (new, second) = Joiner::new();
        let joining = loom::thread::spawn(move || {
            let polled = poll_with(&mut handle, &second);
            (handle, second, polled)
        });
        task_waker.wake();
        run_all(&scheduler);
        let (mut handle, second, polled) = joining.join().unwrap();
        match polled {
            Poll::Ready(output) => assert_eq!(output, 7),
            Poll::Pending => {
                assert_eq!(new.wakes(), 1, "the current waker is woken once");
                assert_eq!(old.wakes(), 0, "a replaced waker is not woken");
                assert_eq!(poll_with(&mut handle, &second), Poll::Ready(7));
            }
        }
        assert!(
            old.wakes() + new.wakes() <= 1,
            "one completion, at most one wake"
        );
        drop(second);
        drop(handle);
        assert_eq!(
            Arc::strong_count(&old),
            1,
            "the replaced waker was released"
        );
        assert_eq!(Arc::strong_count(&new), 1, "the current waker was released");
        assert_eq!(scheduler.state_refs(), base, "freed, and only once");
    });
}

/// Proves rule T6 for a handle with a published waker dropped on another thread while the
/// task completes: detach either clears `JOIN_WAKER` first (the handle releases its waker and
/// the completer drops the output) or finds the task complete (the completer took and woke the
/// waker, the handle drops the output). The waker is released exactly once, from whichever
/// side owned the slot, and the task is freed once.
#[test]
fn loom_join_handle_dropped_racing_completion_releases_its_waker() {
    loom::model(|| {
        let (scheduler, base, mut handle, task_waker) = parked();
        let (joiner, waker) = Joiner::new();
        assert_eq!(poll_with(&mut handle, &waker), Poll::Pending);
        drop(waker);
        let dropping = loom::thread::spawn(move || drop(handle));
        task_waker.wake();
        run_all(&scheduler);
        dropping.join().unwrap();
        assert!(joiner.wakes() <= 1);
        assert_eq!(
            Arc::strong_count(&joiner),
            1,
            "the stored waker was released"
        );
        assert_eq!(scheduler.counts().completed, 1);
        assert_eq!(scheduler.state_refs(), base, "freed, and only once");
    });
}

/// Proves rules T1 and T5 for completion releasing the completer's references: with the
/// handle alive and no waker published, the transition that sets `COMPLETE` also drops the
/// queue entry's and the registry's references. The handle, on another thread, waits for
/// `COMPLETE` without publishing a waker, then takes the output and frees the task, possibly
/// before the completer's `run_ready` returns. The completer touches nothing after that
/// transition, so the output is taken once and the task freed once.
#[test]
fn loom_join_output_taken_racing_completion_that_releases_the_completer() {
    loom::model(|| {
        let (scheduler, base, mut handle, task_waker) = parked();
        let joining = loom::thread::spawn(move || {
            while !handle.is_finished() {
                loom::thread::yield_now();
            }
            let output = poll_with(&mut handle, Waker::noop());
            drop(handle);
            output
        });
        task_waker.wake();
        run_all(&scheduler);
        assert_eq!(joining.join().unwrap(), Poll::Ready(7));
        assert_eq!(scheduler.counts().completed, 1);
        assert_eq!(scheduler.state_refs(), base, "freed, and only once");
    });
}
