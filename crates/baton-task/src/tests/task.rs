//! The task state machine alone (T1–T6), against a scheduler that only records what it is
//! asked to queue: wake, poll, abort, join and drop, without run queues, registry or claim.
//!
//! The test holds what the real scheduler would: the queue entries the recorder collected, and
//! a "registry" reference per task until it finished (T1), so a task is never freed
//! unfinished. Freeing is observed through the count of the recorder's `Arc`, which every task
//! header holds.

#![cfg(not(loom))]

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, RawWakerVTable, Wake, Waker};

use crate::join::Join;
use crate::raw::{self, Finish, RunOutcome, ShutdownOutcome, TaskRef};
use crate::schedule::Schedule;
use crate::state::ShutdownReach;
use crate::sync::{self, AtomicBool, AtomicUsize, Mutex, Ordering};
use crate::task::Task;
use crate::{CancelReason, JoinError, yield_now};

/// A scheduling policy that queues nothing anywhere: it keeps every entry it is handed, in
/// order, for the test to run or drop.
#[derive(Debug, Default)]
struct Recorder {
    queued: Mutex<VecDeque<TaskRef<Recorder>>>,
    closed: AtomicBool,
}

static RECORDER_WAKERS: RawWakerVTable = raw::waker_vtable::<Recorder>();

impl Schedule for Recorder {
    const WAKER_VTABLE: &'static RawWakerVTable = &RECORDER_WAKERS;

    fn schedule(task: TaskRef<Recorder>) {
        let recorder = task.header().scheduler_arc();
        sync::lock(&recorder.queued).push_back(task);
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// The test holds every task's registry reference from its spawn on ([`Spawned`]).
    fn is_registered(_task: &TaskRef<Recorder>) -> bool {
        true
    }
}

impl Recorder {
    fn queued(&self) -> usize {
        sync::lock(&self.queued).len()
    }

    fn pop(&self) -> Option<TaskRef<Recorder>> {
        sync::lock(&self.queued).pop_front()
    }
}

/// One spawned task as the test holds it.
struct Spawned<T> {
    /// Its first queue entry (T1), to run.
    queued: TaskRef<Recorder>,
    /// The reference the real scheduler's registry would hold until the task finished.
    registered: TaskRef<Recorder>,
    join: Join<T, Recorder>,
}

fn spawn<F>(recorder: &Arc<Recorder>, future: F) -> Spawned<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (queued, join) = Task::spawn(future, None, recorder);
    let registered = queued.clone();
    Spawned {
        queued,
        registered,
        join,
    }
}

/// What a [`Probed`] future saw, shared with the test.
#[derive(Debug, Default)]
struct Probe {
    polls: AtomicUsize,
    drops: AtomicUsize,
    /// The future is ready once this is set.
    open: AtomicBool,
    /// A clone of the waker of the latest poll.
    waker: Mutex<Option<Waker>>,
    /// Whether the waker stored by the previous poll `will_wake` the latest poll's.
    will_wake: AtomicBool,
}

impl Probe {
    fn polls(&self) -> usize {
        self.polls.load(Ordering::SeqCst)
    }

    fn drops(&self) -> usize {
        self.drops.load(Ordering::SeqCst)
    }

    fn take_waker(&self) -> Waker {
        sync::lock(&self.waker)
            .take()
            .expect("the task was polled and stored its waker")
    }

    fn clone_waker(&self) -> Waker {
        sync::lock(&self.waker)
            .clone()
            .expect("the task was polled and stored its waker")
    }
}

/// Pending until its probe is opened, storing a waker clone on every poll; counts its polls and
/// its drop.
struct Probed(Arc<Probe>);

impl Future for Probed {
    type Output = u8;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u8> {
        let probe = &self.0;
        probe.polls.fetch_add(1, Ordering::SeqCst);
        let mut slot = sync::lock(&probe.waker);
        if let Some(stored) = slot.as_ref() {
            probe
                .will_wake
                .store(stored.will_wake(cx.waker()), Ordering::SeqCst);
        }
        let previous = slot.replace(cx.waker().clone());
        drop(slot);
        drop(previous);
        if probe.open.load(Ordering::SeqCst) {
            Poll::Ready(7)
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Probed {
    fn drop(&mut self) {
        self.0.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn probed() -> (Probed, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    (Probed(Arc::clone(&probe)), probe)
}

/// A recorder and a task of a [`probed`] future spawned on it, with the future's probe.
fn probed_task() -> (Arc<Recorder>, Arc<Probe>, Spawned<u8>) {
    let recorder = Arc::new(Recorder::default());
    let (future, probe) = probed();
    let task = spawn(&recorder, future);
    (recorder, probe, task)
}

/// Counts its wakes.
#[derive(Debug, Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll_join<T>(join: &mut Join<T, Recorder>) -> Poll<Result<T, JoinError>> {
    join.poll(&mut Context::from_waker(Waker::noop()))
}

/// The error a finished task's handle resolves to.
fn join_error<T>(join: &mut Join<T, Recorder>) -> JoinError {
    match poll_join(join) {
        Poll::Ready(Err(err)) => err,
        Poll::Ready(Ok(_)) => panic!("expected the task to fail, it returned its output"),
        Poll::Pending => panic!("expected the task to be finished"),
    }
}

/// Rule T1: every task of `recorder` was freed, once: each task header holds one count of the
/// recorder's `Arc` until it is freed.
fn assert_all_freed(recorder: &Arc<Recorder>) {
    assert_eq!(Arc::strong_count(recorder), 1, "freed, and only once");
}

/// Asserts that a task's handle resolves cancelled for `reason`, then that dropping the handle
/// and the registry's reference frees the task.
fn assert_cancelled_then_freed<T>(
    (mut join, registered): (Join<T, Recorder>, TaskRef<Recorder>),
    recorder: &Arc<Recorder>,
    reason: CancelReason,
) {
    let err = join_error(&mut join);
    assert_eq!(err.cancel_reason(), Some(reason));
    drop((join, registered));
    assert_all_freed(recorder);
}

/// Runs one queue entry, expecting the task to finish, and gives up the registry's reference
/// (as the real scheduler's retire does); returns how it finished.
fn run_to_finish(entry: TaskRef<Recorder>, registered: TaskRef<Recorder>) -> Finish {
    match entry.run() {
        RunOutcome::Finished { entry, finish, .. } => {
            drop((entry, registered));
            finish
        }
        other => panic!("expected the task to finish, got {other:?}"),
    }
}

fn expect_parked(outcome: RunOutcome<Recorder>) {
    assert!(
        matches!(outcome, RunOutcome::Parked),
        "expected the task to park, got {outcome:?}"
    );
}

/// Rules T1–T3: a parked task is queued by the first wake only, with one new reference; further
/// wakes merge into that entry; running it polls it again; a wake by value hands the waker's
/// reference to the queue. The stored waker recognises the next poll's (one waker vtable per
/// scheduler type).
#[test]
fn wakes_of_a_parked_task_queue_it_once_and_poll_it_again() {
    let (recorder, probe, mut task) = probed_task();
    expect_parked(task.queued.run());
    assert_eq!((probe.polls(), recorder.queued()), (1, 0));

    let waker = probe.clone_waker();
    waker.wake_by_ref();
    waker.wake_by_ref();
    assert_eq!(
        recorder.queued(),
        1,
        "the second wake merged into the entry"
    );
    expect_parked(recorder.pop().expect("queued by the wake").run());
    assert_eq!(probe.polls(), 2);
    assert!(
        probe.will_wake.load(Ordering::SeqCst),
        "a task's wakers share one vtable"
    );

    probe.open.store(true, Ordering::SeqCst);
    drop(waker);
    probe.take_waker().wake();
    let entry = recorder.pop().expect("queued by the wake by value");
    assert_eq!(run_to_finish(entry, task.registered), Finish::Completed);
    assert!(matches!(poll_join(&mut task.join), Poll::Ready(Ok(7))));
    drop(probe.take_waker());
    drop(task.join);
    assert_eq!(probe.drops(), 1);
    assert_all_freed(&recorder);
}

/// Rule T3: a wake during the poll only sets `NOTIFIED`; the poller gets the task back with the
/// same reference to requeue, and nothing reaches the scheduler.
#[test]
fn wake_during_poll_requeues_without_scheduling() {
    let recorder = Arc::new(Recorder::default());
    let mut task = spawn(&recorder, async {
        yield_now().await;
        5_u8
    });
    let RunOutcome::Requeue(entry) = task.queued.run() else {
        panic!("a task that woke itself is requeued");
    };
    assert_eq!(recorder.queued(), 0);
    assert_eq!(run_to_finish(entry, task.registered), Finish::Completed);
    assert!(matches!(poll_join(&mut task.join), Poll::Ready(Ok(5))));
    drop(task.join);
    assert_all_freed(&recorder);
}

/// Rule T4: an abort before the first poll merges into the first queue entry; running it drops
/// the future unpolled and the handle resolves cancelled (aborted).
#[test]
fn abort_before_first_run_cancels_without_polling() {
    let (recorder, probe, mut task) = probed_task();
    task.join.abort();
    assert_eq!(recorder.queued(), 0, "the task was queued already");
    assert_eq!(
        run_to_finish(task.queued, task.registered),
        Finish::Cancelled
    );
    assert_eq!((probe.polls(), probe.drops()), (0, 1));
    let err = join_error(&mut task.join);
    assert_eq!(err.cancel_reason(), Some(CancelReason::Aborted));
    drop(task.join);
    assert_all_freed(&recorder);
}

/// Rule T4: aborting a parked task queues it like a wake; running the entry cancels it. Once the
/// scheduler is closed, the cancellation reports the shutdown instead.
#[test]
fn abort_of_a_parked_task_queues_it_and_cancels_it() {
    for (closed, reason) in [
        (false, CancelReason::Aborted),
        (true, CancelReason::RuntimeShutdown),
    ] {
        let (recorder, probe, mut task) = probed_task();
        expect_parked(task.queued.run());
        recorder.closed.store(closed, Ordering::SeqCst);
        task.join.abort();
        task.join.abort();
        assert_eq!(recorder.queued(), 1, "one entry for both aborts");
        let entry = recorder.pop().expect("queued by the abort");
        assert_eq!(run_to_finish(entry, task.registered), Finish::Cancelled);
        assert_eq!((probe.polls(), probe.drops()), (1, 1));
        let err = join_error(&mut task.join);
        assert_eq!(err.cancel_reason(), Some(reason));
        drop((task.join, probe.take_waker()));
        assert_all_freed(&recorder);
    }
}

/// Rules T5 and T6: a handle that registered its waker is woken by the completion, once, and then
/// reads the output; an abort after completion changes nothing.
#[test]
fn completion_wakes_the_registered_join_waker() {
    let recorder = Arc::new(Recorder::default());
    let mut task = spawn(&recorder, async { 9_u8 });
    let counting = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counting));
    assert!(
        task.join
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    assert_eq!(
        run_to_finish(task.queued, task.registered),
        Finish::Completed
    );
    assert_eq!(counting.0.load(Ordering::SeqCst), 1);
    task.join.abort();
    assert_eq!(
        recorder.queued(),
        0,
        "a finished task is never queued again"
    );
    assert!(task.join.is_finished());
    assert!(matches!(poll_join(&mut task.join), Poll::Ready(Ok(9))));
    drop(task.join);
    assert_all_freed(&recorder);
}

/// Rule T6: a handle dropped before completion leaves the output to the completer, which drops
/// it when the task finishes.
#[test]
fn detached_task_drops_its_own_output() {
    let recorder = Arc::new(Recorder::default());
    let output = Arc::new(());
    let task = spawn(&recorder, {
        let output = Arc::clone(&output);
        async move { output }
    });
    drop(task.join);
    assert_eq!(
        run_to_finish(task.queued, task.registered),
        Finish::Completed
    );
    assert_eq!(Arc::strong_count(&output), 1, "the completer dropped it");
    assert_all_freed(&recorder);
}

/// A panicking poll finishes the task as panicked; the handle gets the payload.
#[test]
fn panicking_poll_finishes_as_panicked() {
    let recorder = Arc::new(Recorder::default());
    let mut task = spawn(&recorder, async { panic!("on purpose") });
    assert_eq!(
        run_to_finish(task.queued, task.registered),
        Finish::Panicked
    );
    let err = join_error(&mut task.join);
    assert!(err.is_panic());
    drop(task.join);
    assert_all_freed(&recorder);
}

/// Rule T8: shutdown claims a parked task and cancels it; a queue entry left behind is then
/// stale, and a second shutdown finds the task complete.
#[test]
fn shutdown_claims_a_parked_task_and_leaves_its_entries_stale() {
    let (recorder, probe, task) = probed_task();
    expect_parked(task.queued.run());
    probe.take_waker().wake();
    assert_eq!(
        task.registered.shut_down(ShutdownReach::Registry),
        ShutdownOutcome::Cancelled
    );
    assert_eq!(
        task.registered.shut_down(ShutdownReach::Registry),
        ShutdownOutcome::Complete
    );
    assert_eq!(probe.drops(), 1);
    let entry = recorder.pop().expect("queued by the wake");
    assert!(matches!(entry.run(), RunOutcome::Stale));
    assert_cancelled_then_freed(
        (task.join, task.registered),
        &recorder,
        CancelReason::RuntimeShutdown,
    );
}

/// Rule T8: a refused spawn is cancelled where it was made, never polled, and reports why.
#[test]
fn refused_spawn_is_cancelled_unpolled() {
    let (recorder, probe, task) = probed_task();
    task.join.refuse(CancelReason::SpawnAfterShutdown);
    assert_eq!((probe.polls(), probe.drops()), (0, 1));
    assert!(matches!(task.queued.run(), RunOutcome::Stale));
    assert_cancelled_then_freed(
        (task.join, task.registered),
        &recorder,
        CancelReason::SpawnAfterShutdown,
    );
}

/// Rule T1: a finished task lives while any reference does, whichever goes last: the handle, a
/// waker, or a queue entry that is stale by now.
#[test]
fn finished_task_is_freed_by_whichever_reference_goes_last() {
    for last in ["handle", "waker", "stale entry"] {
        let (recorder, probe, task) = probed_task();
        expect_parked(task.queued.run());
        let waker = probe.take_waker();
        waker.wake_by_ref();
        let entry = recorder.pop().expect("queued by the wake");
        assert_eq!(
            task.registered.shut_down(ShutdownReach::Registry),
            ShutdownOutcome::Cancelled,
            "claimed while queued"
        );
        drop(task.registered);
        let mut held: Vec<Box<dyn Send>> =
            vec![Box::new(task.join), Box::new(waker), Box::new(entry)];
        let index = ["handle", "waker", "stale entry"]
            .iter()
            .position(|name| *name == last)
            .expect("one of the three");
        let last_one = held.remove(index);
        drop(held);
        assert_eq!(Arc::strong_count(&recorder), 2, "{last} still holds it");
        drop(last_one);
        assert_eq!(Arc::strong_count(&recorder), 1, "{last} freed it");
        assert_eq!(probe.drops(), 1);
    }
}
