//! [`JoinSet`]: a set of tasks whose results are joined in the order the tasks finish.
//!
//! # How `join_next` finds a finished task without polling every handle
//!
//! Each member (one spawned task) has its own waker, a [`MemberWaker`] that knows the member's
//! slot index and generation. The member's [`JoinHandle`] is polled with that waker once, when
//! the task joins the set, which registers it with the task (baton-task's join handshake: the
//! task wakes the handle's waker once, when it completes). Completing the task therefore pushes
//! `(index, generation)` onto the set's [`ReadyList`] and wakes the set's own waker, the one the
//! last pending `join_next` left there. `join_next` only pops that list and polls the popped
//! member's handle; members whose task is still running are never looked at. Joining `n` tasks
//! costs `O(n)` handle polls in all (two per task: the registration and the join), which the
//! unit tests count.
//!
//! * A member is pushed at most once per wake-up: its waker's `queued` flag is set by the push
//!   and cleared just before the member is polled, so a wake after that poll queues it again.
//! * A popped entry whose generation is not its slot's current one (the member was joined,
//!   detached or replaced in between) is skipped: a stale wake never touches another member.
//! * The ready list and the set's waker sit behind one lock, and no waker code runs under it:
//!   a push takes the set's waker out and wakes it after unlocking, a pending `join_next`
//!   clones its waker before locking to install it and drops the one it replaces after, so a
//!   waker's clone, wake or drop may re-enter the set's list (another member's wake) freely.

use std::collections::VecDeque;
use std::fmt;
use std::future::{Future, Ready};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use crate::handle::Handle;
use crate::task::{JoinError, JoinHandle};

/// A set of tasks spawned on the runtime, joined in the order they finish (tokio's `JoinSet`).
///
/// [`join_next`](JoinSet::join_next) returns the result of *a* finished task — the one that
/// finished first among those not joined yet — or `None` once the set is empty. It does not
/// poll every member on each wake-up: each task's completion queues its member on a ready list
/// and wakes the set, and `join_next` only looks at queued members, so joining `n` tasks costs
/// `O(n)` in all.
///
/// Dropping the set [aborts](JoinSet::abort_all) every task still in it; use
/// [`detach_all`](JoinSet::detach_all) to let them run on instead.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use std::time::Duration;
///
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let mut set = baton::task::JoinSet::new();
///     set.spawn(async {
///         baton::time::sleep(Duration::from_millis(50)).await;
///         "slow"
///     });
///     set.spawn(async { "fast" });
///     assert_eq!(set.len(), 2);
///     // Completion order, not spawn order.
///     assert_eq!(set.join_next().await.and_then(Result::ok), Some("fast"));
///     assert_eq!(set.join_next().await.and_then(Result::ok), Some("slow"));
///     assert!(set.join_next().await.is_none());
/// });
/// # Ok(())
/// # }
/// ```
pub struct JoinSet<T> {
    /// The members by slot; `None` marks a free slot (its index is in `free`).
    slots: Vec<Option<Member<T>>>,
    free: Vec<usize>,
    len: usize,
    /// The generation the next member gets; never reused, so a stale queued entry can never
    /// name a later member of the same slot.
    next_generation: u64,
    ready: Arc<ReadyList>,
    /// Handle polls so far, which the unit tests count to check that joining is linear.
    #[cfg(test)]
    handle_polls: usize,
}

/// One task of the set.
struct Member<T> {
    /// The member's waker: its slot and generation, and its `queued` flag.
    notify: Arc<MemberWaker>,
    waker: Waker,
    state: MemberState<T>,
}

/// A member's task: still running, or already finished when it joined the set (its result
/// waits here to be joined).
enum MemberState<T> {
    Running(JoinHandle<T>),
    Finished(Ready<Result<T, JoinError>>),
}

impl<T> MemberState<T> {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        match self {
            // Task rule T12 is checked by the set as a whole, when it waits
            // (`assert_members_can_finish`), not at each member's registration.
            MemberState::Running(handle) => handle.poll_unchecked(cx),
            MemberState::Finished(result) => Pin::new(result).poll(cx),
        }
    }
}

/// The finished members not joined yet, in completion order, and the waker of the pending
/// `join_next`.
#[derive(Default)]
struct ReadyList {
    inner: Mutex<ReadyInner>,
}

#[derive(Default)]
struct ReadyInner {
    queue: VecDeque<Queued>,
    waker: Option<Waker>,
}

/// A queued member: slot index and generation.
#[derive(Clone, Copy)]
struct Queued {
    index: usize,
    generation: u64,
}

impl ReadyList {
    /// The lock; a panic cannot leave the list half-changed (each change is one `VecDeque` or
    /// `Option` operation), so a poisoned lock is used as it is.
    fn lock(&self) -> MutexGuard<'_, ReadyInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a finished member and wakes the set's waker, outside the lock.
    fn push(&self, queued: Queued) {
        let waker = {
            let mut inner = self.lock();
            inner.queue.push_back(queued);
            inner.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The oldest queued member; when there is none and `waker` is given, leaves it to be
    /// woken by the next push. The waker is cloned outside the lock, and the queue looked at
    /// again under the lock that installs it, so a push in between is popped, not missed.
    fn pop(&self, waker: Option<&Waker>) -> Option<Queued> {
        {
            let mut inner = self.lock();
            if let Some(queued) = inner.queue.pop_front() {
                return Some(queued);
            }
            let waker = waker?;
            if inner.waker.as_ref().is_some_and(|old| old.will_wake(waker)) {
                return None;
            }
        }
        let waker = waker.cloned();
        let (popped, unused) = {
            let mut inner = self.lock();
            match inner.queue.pop_front() {
                Some(queued) => (Some(queued), waker),
                None => (None, std::mem::replace(&mut inner.waker, waker)),
            }
        };
        // The waker left unused or replaced is dropped here, after the lock.
        drop(unused);
        popped
    }

    /// Forgets every queued member (they were all detached); the set's waker stays.
    fn clear(&self) {
        self.lock().queue.clear();
    }
}

/// The waker a member's join handle is polled with: queues the member once per wake-up.
struct MemberWaker {
    ready: Arc<ReadyList>,
    queued_as: Queued,
    queued: AtomicBool,
}

impl Wake for MemberWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // AcqRel: the push is ordered after the task's completion that woke us (the waker is
        // woken after the result is stored), and one push per wake-up.
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.ready.push(self.queued_as);
        }
    }
}

impl<T> Default for JoinSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet").field("len", &self.len).finish()
    }
}

impl<T> JoinSet<T> {
    /// An empty set.
    pub fn new() -> JoinSet<T> {
        JoinSet {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
            next_generation: 0,
            ready: Arc::default(),
            #[cfg(test)]
            handle_polls: 0,
        }
    }

    /// How many tasks are in the set: spawned and not yet joined or detached (a finished task
    /// counts until it is joined).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set has no task.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Requests cancellation of every task in the set, as [`JoinHandle::abort`] does: each is
    /// dropped at its next opportunity, and then joins with a cancelled [`JoinError`]. A task
    /// that had already finished still returns its output. The tasks stay in the set until
    /// joined; [`shutdown`](JoinSet::shutdown) aborts and joins them all.
    pub fn abort_all(&mut self) {
        for member in self.slots.iter().flatten() {
            if let MemberState::Running(handle) = &member.state {
                handle.abort();
            }
        }
    }

    /// Removes every task from the set without cancelling it: each keeps running, and its
    /// output is dropped when it finishes (as when its [`JoinHandle`] is dropped).
    pub fn detach_all(&mut self) {
        self.slots.clear();
        self.free.clear();
        self.len = 0;
        self.ready.clear();
    }

    /// Adds a spawned task to the set. Its handle is polled once here, with the member's
    /// waker, so that its completion queues it (the module docs).
    fn insert(&mut self, mut handle: JoinHandle<T>) {
        let index = self.free.pop().unwrap_or(self.slots.len());
        let generation = self.next_generation;
        self.next_generation += 1;
        let queued_as = Queued { index, generation };
        let notify = Arc::new(MemberWaker {
            ready: Arc::clone(&self.ready),
            queued_as,
            queued: AtomicBool::new(false),
        });
        let waker = Waker::from(Arc::clone(&notify));
        self.count_handle_poll();
        // Registration, not a wait: task rule T12 is the set's to check when it waits.
        let state = match handle.poll_unchecked(&mut Context::from_waker(&waker)) {
            Poll::Pending => MemberState::Running(handle),
            Poll::Ready(result) => {
                notify.queued.store(true, Ordering::Release);
                self.ready.push(queued_as);
                MemberState::Finished(std::future::ready(result))
            }
        };
        let member = Member {
            notify,
            waker,
            state,
        };
        match self.slots.get_mut(index) {
            Some(slot) => *slot = Some(member),
            None => self.slots.push(Some(member)),
        }
        self.len += 1;
    }

    /// Polls the queued member if it is still the slot's occupant; its result when finished
    /// (the member leaves the set).
    fn poll_member(&mut self, queued: Queued) -> Option<Result<T, JoinError>> {
        let member = match self.slots.get_mut(queued.index) {
            Some(Some(member)) if member.notify.queued_as.generation == queued.generation => member,
            _ => return None,
        };
        // Cleared before the poll: a completion from here on queues the member again.
        member.notify.queued.store(false, Ordering::Release);
        let mut cx = Context::from_waker(&member.waker);
        let result = member.state.poll(&mut cx);
        self.count_handle_poll();
        match result {
            Poll::Pending => None,
            Poll::Ready(result) => {
                self.slots[queued.index] = None;
                self.free.push(queued.index);
                self.len -= 1;
                Some(result)
            }
        }
    }

    /// Polls for the next finished task: `Ready(None)` when the set is empty, `Ready(Some)`
    /// with a finished task's result (it leaves the set), or `Pending` with `cx`'s waker left
    /// to be woken when a task finishes. Only the last `cx` given is woken.
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        while self.len > 0 {
            let Some(queued) = self.ready.pop(Some(cx.waker())) else {
                // Task rule T12: a member this thread holds back would never wake the set.
                if baton_task::holds_tasks() {
                    self.assert_members_can_finish();
                }
                return Poll::Pending;
            };
            if let Some(result) = self.poll_member(queued) {
                return Poll::Ready(Some(result));
            }
        }
        Poll::Ready(None)
    }

    /// Task rule T12 (nested-drive rule N4) for the set: panics when no running member can
    /// finish (every one is a task this thread holds back), so the wait could never end. Stops
    /// at the first member that can.
    #[track_caller]
    fn assert_members_can_finish(&self) {
        let mut running = self
            .slots
            .iter()
            .flatten()
            .filter_map(|member| match &member.state {
                MemberState::Running(handle) => Some(handle),
                MemberState::Finished(_) => None,
            });
        let Some(first) = running.next() else {
            return;
        };
        if !first.can_finish() && running.all(|handle| !handle.can_finish()) {
            first.assert_can_finish();
        }
    }

    /// Waits for the next task to finish and returns its result (in completion order), or
    /// `None` when the set is empty.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a result is taken out of the set only in the poll that returns it, so
    /// dropping a pending `join_next` (by `timeout`, `select!`, an abort) loses nothing — a task
    /// that finished meanwhile stays queued and the next call returns it.
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        std::future::poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// The result of a task that has already finished, without waiting; `None` when none has
    /// (or the set is empty).
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        while self.len > 0 {
            let queued = self.ready.pop(None)?;
            if let Some(result) = self.poll_member(queued) {
                return Some(result);
            }
        }
        None
    }

    /// Aborts every task and waits until all of them are joined (their results, cancelled or
    /// not, are dropped); the set is empty afterwards.
    ///
    /// # Cancel safety
    ///
    /// Dropping it midway leaves the remaining tasks aborted, still in the set.
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }

    #[cfg(test)]
    fn count_handle_poll(&mut self) {
        self.handle_polls += 1;
    }

    #[cfg(not(test))]
    fn count_handle_poll(&mut self) {}
}

impl<T: 'static> JoinSet<T> {
    /// Spawns a `Send` task on the runtime running on this thread, as [`spawn`](crate::spawn)
    /// does, and adds it to the set.
    ///
    /// # Panics
    ///
    /// Outside a runtime, exactly as [`spawn`](crate::spawn) does (use
    /// [`spawn_on`](JoinSet::spawn_on) with a [`Handle`] there).
    #[track_caller]
    pub fn spawn<F>(&mut self, future: F)
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        self.insert(crate::spawn(future));
    }

    /// Spawns a `Send` task on `handle`'s runtime, from any thread, and adds it to the set.
    #[track_caller]
    pub fn spawn_on<F>(&mut self, future: F, handle: &Handle)
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        self.insert(handle.spawn(future));
    }

    /// Spawns a `!Send` task on the runtime worker this thread runs, as
    /// [`spawn_local`](crate::spawn_local) does, and adds it to the set.
    ///
    /// # Panics
    ///
    /// Where [`spawn_local`](crate::spawn_local) panics: outside a runtime, or in a `block_on`
    /// that could not borrow the worker.
    #[track_caller]
    pub fn spawn_local<F>(&mut self, future: F)
    where
        F: Future<Output = T> + 'static,
    {
        self.insert(crate::spawn_local(future));
    }
}

impl<T> Drop for JoinSet<T> {
    /// Aborts every task still in the set (their handles are then dropped: the scheduler drops
    /// each future on its own thread).
    fn drop(&mut self) {
        self.abort_all();
    }
}

#[cfg(test)]
mod tests;
