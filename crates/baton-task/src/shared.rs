//! State shared by the scheduler, its spawners and every task: the core claim (rule 9), the
//! injection queue (rules 2 and 8), the unpark hook and the counters.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::core::Core;
use crate::raw::TaskRef;
use crate::sync::{self, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};

/// Wakes a parked worker. The scheduler calls it whenever work becomes runnable from a thread
/// that does not hold the scheduler (a remote wake, an injected spawn, a remote abort).
pub trait Unpark: Send + Sync {
    /// Makes the worker's next (or current) park return promptly. Must not block.
    fn unpark(&self);
}

/// Task counts, for metrics and quiescence checks.
///
/// `spawned == live + completed + panicked + aborted` whenever the scheduler is idle. Spawns
/// refused after shutdown are not counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskCounts {
    /// Tasks accepted and not yet finished (queued, idle or running).
    pub live: u64,
    /// Tasks accepted since the scheduler was created.
    pub spawned: u64,
    /// Tasks that returned their output.
    pub completed: u64,
    /// Tasks whose poll panicked.
    pub panicked: u64,
    /// Tasks cancelled by an abort or by shutdown (including leaked local tasks).
    pub aborted: u64,
}

#[derive(Debug, Default)]
struct Counters {
    live: AtomicU64,
    spawned: AtomicU64,
    completed: AtomicU64,
    panicked: AtomicU64,
    aborted: AtomicU64,
}

#[derive(Debug, Default)]
struct Remote {
    queue: VecDeque<TaskRef>,
    /// Rule 8: shutdown closed the queue; nothing (spawn or wake) is pushed any more.
    closed: bool,
    /// Rule 8: new tasks are refused; wakes of accepted ones are still queued.
    refusing: bool,
}

/// What pushing onto the injection queue did.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Injected {
    /// Queued; the worker was unparked if it needed to be.
    Queued,
    /// Rule 8: the scheduler is shut down; nothing was queued.
    Closed,
}

/// How a finished task is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tally {
    Completed,
    Panicked,
    Aborted,
}

/// Everything a scheduler shares with other threads.
pub(crate) struct Shared {
    /// Rule 9: the token of the thread holding the core claim, or 0.
    holder: AtomicUsize,
    core: CoreCell,
    remote: Mutex<Remote>,
    /// Rule 11: set under `remote`'s lock when the injection queue becomes non-empty, cleared
    /// under it when a drain empties it; read without the lock to skip an empty drain.
    injected: AtomicBool,
    /// Rule 8: shutdown closed the injection queue (set under its lock).
    closed: AtomicBool,
    /// Rule 8: spawns are refused, after `refuse_spawns` or shutdown (set under the injection
    /// lock); read without it by spawns on the claim holder's thread.
    refusing: AtomicBool,
    unpark: Arc<dyn Unpark>,
    counters: Counters,
}

/// The core, reachable only by the claim holder (rule 9).
struct CoreCell(Core);

// SAFETY: rule 9, `Core` is only dereferenced through `Shared::core_here`, which hands it out
// solely to the thread whose token is in `holder`; the claim is taken with an acquiring CAS and
// released with a releasing store, so one thread at a time uses it and each sees the previous
// holder's writes.
unsafe impl Sync for CoreCell {}
// SAFETY: `Core` owns `Send` task references and plain data; the claim protocol (rule 9) moves
// use of it between threads with release/acquire ordering.
unsafe impl Send for CoreCell {}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("holder", &self.holder)
            .field("closed", &self.closed)
            .field("refusing", &self.refusing)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

/// The result of trying to take the core claim.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// This thread took the claim; the matching release drops it.
    Taken,
    /// This thread already held it (nested enter).
    Nested,
    /// Another thread holds it (an `EnterGuard` was leaked there).
    HeldElsewhere,
}

impl Shared {
    pub(crate) fn new(unpark: Arc<dyn Unpark>) -> Shared {
        Shared {
            holder: AtomicUsize::new(0),
            core: CoreCell(Core::new()),
            remote: Mutex::new(Remote::default()),
            injected: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            refusing: AtomicBool::new(false),
            unpark,
            counters: Counters::default(),
        }
    }

    /// Rule 9: take the core claim for this thread.
    pub(crate) fn claim(&self) -> Claim {
        let Some(me) = sync::thread_token() else {
            return Claim::HeldElsewhere;
        };
        // Only this thread can store its own token, so a plain read answers the nested case
        // without a read-modify-write.
        if self.holder.load(Ordering::Acquire) == me {
            return Claim::Nested;
        }
        match self
            .holder
            .compare_exchange(0, me, Ordering::Acquire, Ordering::Acquire)
        {
            Ok(_) => Claim::Taken,
            Err(holder) if holder == me => Claim::Nested,
            Err(_) => Claim::HeldElsewhere,
        }
    }

    /// Rule 9: release a claim this thread took with [`Claim::Taken`].
    pub(crate) fn release(&self) {
        debug_assert_eq!(
            Some(self.holder.load(Ordering::Relaxed)),
            sync::thread_token()
        );
        self.holder.store(0, Ordering::Release);
    }

    /// Rule 9: the core, if this thread holds the claim.
    pub(crate) fn core_here(&self) -> Option<&Core> {
        let me = sync::thread_token()?;
        (self.holder.load(Ordering::Acquire) == me).then_some(&self.core.0)
    }

    /// Rule 8: whether shutdown closed the scheduler.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Rule 8: whether new tasks are refused (after `refuse_spawns` or shutdown).
    pub(crate) fn refuses_spawns(&self) -> bool {
        self.refusing.load(Ordering::Acquire)
    }

    /// Pushes onto the injection queue. When `new_task`, the spawn is counted under the lock so
    /// counters and the refusal check agree (rule 8). A refused task reference is dropped after
    /// the lock is released.
    pub(crate) fn inject(&self, task: TaskRef, new_task: bool) -> Injected {
        let mut remote = sync::lock(&self.remote);
        if remote.closed || (new_task && remote.refusing) {
            drop(remote);
            drop(task);
            return Injected::Closed;
        }
        if new_task {
            self.count_spawn();
        }
        let was_empty = remote.queue.is_empty();
        remote.queue.push_back(task);
        if was_empty {
            // Rule 11: published under the lock, before the unpark below.
            self.injected.store(true, Ordering::Release);
        }
        drop(remote);
        if was_empty {
            // A non-empty queue already has an unpark pending for it: the worker drains the whole
            // queue at once.
            self.unpark.unpark();
        }
        Injected::Queued
    }

    /// Takes everything injected so far into `into`.
    pub(crate) fn drain_remote(&self, into: &mut VecDeque<TaskRef>) {
        // Rule 11: a clear flag means nothing was injected since the last drain; a push racing
        // this read unparks the worker, which drains again.
        if !self.injected.load(Ordering::Acquire) {
            return;
        }
        let mut remote = sync::lock(&self.remote);
        if into.is_empty() {
            std::mem::swap(&mut remote.queue, into);
        } else {
            into.append(&mut remote.queue);
        }
        self.injected.store(false, Ordering::Release);
    }

    /// Rule 11: whether anything was injected since the last drain (without the lock).
    pub(crate) fn has_remote(&self) -> bool {
        self.injected.load(Ordering::Acquire)
    }

    /// Rule 8: refuse all further spawns, from every thread, without taking what is queued
    /// (it runs, or shutdown cancels it) and still queueing wakes of accepted tasks. Returns
    /// whether spawns were accepted until now.
    pub(crate) fn refuse_spawns(&self) -> bool {
        let mut remote = sync::lock(&self.remote);
        let was_accepting = !remote.refusing;
        remote.refusing = true;
        // Published under the injection lock, as `close` does: an injected spawn either queued
        // before this or is refused; a spawn on the claim holder's thread reads the flag.
        self.refusing.store(true, Ordering::Release);
        was_accepting
    }

    /// Rule 8: refuse all further injections and take what is queued.
    pub(crate) fn close(&self) -> VecDeque<TaskRef> {
        let mut remote = sync::lock(&self.remote);
        remote.closed = true;
        remote.refusing = true;
        self.closed.store(true, Ordering::Release);
        self.refusing.store(true, Ordering::Release);
        self.injected.store(false, Ordering::Release);
        std::mem::take(&mut remote.queue)
    }

    pub(crate) fn count_spawn(&self) {
        self.counters.spawned.fetch_add(1, Ordering::Relaxed);
        self.counters.live.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_finish(&self, tally: Tally) {
        let counter = match tally {
            Tally::Completed => &self.counters.completed,
            Tally::Panicked => &self.counters.panicked,
            Tally::Aborted => &self.counters.aborted,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.counters.live.fetch_sub(1, Ordering::Release);
    }

    pub(crate) fn live(&self) -> u64 {
        self.counters.live.load(Ordering::Acquire)
    }

    pub(crate) fn counts(&self) -> TaskCounts {
        TaskCounts {
            live: self.counters.live.load(Ordering::Acquire),
            spawned: self.counters.spawned.load(Ordering::Relaxed),
            completed: self.counters.completed.load(Ordering::Relaxed),
            panicked: self.counters.panicked.load(Ordering::Relaxed),
            aborted: self.counters.aborted.load(Ordering::Relaxed),
        }
    }
}
