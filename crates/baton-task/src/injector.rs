//! The injection queue: how tasks and wakes reach the scheduler from threads that do not hold
//! its run queues (T2, T8 and T11), and the [`Unpark`] hook it calls.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::counts::Counters;
use crate::raw::TaskRef;
use crate::scheduler_state::SchedulerState;
use crate::spawner::RefuseSpawns;
use crate::sync::{self, AtomicBool, Mutex, Ordering};

/// Wakes a parked worker. The scheduler calls it whenever work becomes runnable from a thread
/// that does not hold the scheduler (a remote wake, an injected spawn, a remote abort).
pub trait Unpark: Send + Sync {
    /// Makes the worker's next (or current) park return promptly. Must not block.
    fn unpark(&self);
}

/// What pushing onto the injection queue did.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Injected {
    /// Queued; the worker was unparked if it needed to be.
    Queued,
    /// Rule T8: the scheduler is shut down; nothing was queued.
    Closed,
}

/// What the injection lock guards.
#[derive(Debug, Default)]
struct Queue {
    tasks: VecDeque<TaskRef<SchedulerState>>,
    /// Rule T8: shutdown closed the queue; nothing (spawn or wake) is pushed any more.
    closed: bool,
    /// Rule T8: new tasks are refused; wakes of accepted ones are still queued.
    refusing: bool,
}

/// The injection queue with the flags read beside it without its lock, and the unpark hook.
///
/// Reachable from every thread (spawners, wakers, the worker); every method takes the lock or
/// reads a flag that is only written under it.
pub(crate) struct Injector {
    queue: Mutex<Queue>,
    /// Rule T11: set under the lock when the injection queue becomes non-empty, cleared when a
    /// drain empties it; read without the lock to skip an empty drain.
    injected: AtomicBool,
    /// Rule T8: shutdown closed the injection queue (set under its lock).
    closed: AtomicBool,
    /// Rule T8: spawns are refused, after `refuse_spawns` or shutdown (set under the injection
    /// lock); read without it by spawns on the claim holder's thread.
    refusing: AtomicBool,
    unpark: Arc<dyn Unpark>,
}

impl std::fmt::Debug for Injector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Injector")
            .field("closed", &self.closed)
            .field("refusing", &self.refusing)
            .finish_non_exhaustive()
    }
}

impl Injector {
    pub(crate) fn new(unpark: Arc<dyn Unpark>) -> Injector {
        Injector {
            queue: Mutex::new(Queue::default()),
            injected: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            refusing: AtomicBool::new(false),
            unpark,
        }
    }

    /// Rule T8: whether shutdown closed the scheduler.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Rule T8: whether new tasks are refused (after `refuse_spawns` or shutdown).
    pub(crate) fn refuses_spawns(&self) -> bool {
        self.refusing.load(Ordering::Acquire)
    }

    /// Rule T2, remote: queues the wake (or abort) of an accepted task, whose queue entry this
    /// reference is.
    pub(crate) fn push_wake(&self, task: TaskRef<SchedulerState>) -> Injected {
        self.push(task, None)
    }

    /// Queues a new task, counted in `counters` under the lock so counters and the refusal
    /// check agree (T8).
    pub(crate) fn push_spawn(
        &self,
        task: TaskRef<SchedulerState>,
        counters: &Counters,
    ) -> Injected {
        self.push(task, Some(counters))
    }

    /// Pushes onto the injection queue; a new task (`spawn` is `Some`) is counted there. A
    /// refused task reference is dropped after the lock is released.
    fn push(&self, task: TaskRef<SchedulerState>, spawn: Option<&Counters>) -> Injected {
        let mut queue = sync::lock(&self.queue);
        if queue.closed || (spawn.is_some() && queue.refusing) {
            drop(queue);
            drop(task);
            return Injected::Closed;
        }
        if let Some(counters) = spawn {
            counters.count_spawn_injected();
        }
        let was_empty = queue.tasks.is_empty();
        queue.tasks.push_back(task);
        if was_empty {
            // Rule T11: published under the lock, before the unpark below.
            self.injected.store(true, Ordering::Release);
        }
        drop(queue);
        if was_empty {
            // A non-empty queue already has an unpark pending for it: the worker drains the whole
            // queue at once.
            self.unpark.unpark();
        }
        Injected::Queued
    }

    /// Takes everything injected so far into `into`.
    pub(crate) fn drain_into(&self, into: &mut VecDeque<TaskRef<SchedulerState>>) {
        // Rule T11: a clear flag means nothing was injected since the last drain; a push racing
        // this read unparks the worker, which drains again.
        if !self.injected.load(Ordering::Acquire) {
            return;
        }
        let mut queue = sync::lock(&self.queue);
        if into.is_empty() {
            std::mem::swap(&mut queue.tasks, into);
        } else {
            into.append(&mut queue.tasks);
        }
        self.injected.store(false, Ordering::Release);
    }

    /// Rule T11: whether anything was injected since the last drain (without the lock).
    pub(crate) fn has_injected(&self) -> bool {
        self.injected.load(Ordering::Acquire)
    }

    /// Rule T8: refuse all further spawns, from every thread, without taking what is queued
    /// (it runs, or shutdown cancels it) and still queueing wakes of accepted tasks.
    pub(crate) fn refuse_spawns(&self) -> RefuseSpawns {
        let mut queue = sync::lock(&self.queue);
        let was_accepting = !queue.refusing;
        queue.refusing = true;
        // Published under the injection lock, as `close` does: an injected spawn either queued
        // before this or is refused; a spawn on the claim holder's thread reads the flag.
        self.refusing.store(true, Ordering::Release);
        if was_accepting {
            RefuseSpawns::Refused
        } else {
            RefuseSpawns::AlreadyRefused
        }
    }

    /// Rule T8: refuse all further injections and take what is queued.
    pub(crate) fn close(&self) -> VecDeque<TaskRef<SchedulerState>> {
        let mut queue = sync::lock(&self.queue);
        queue.closed = true;
        queue.refusing = true;
        self.closed.store(true, Ordering::Release);
        self.refusing.store(true, Ordering::Release);
        self.injected.store(false, Ordering::Release);
        std::mem::take(&mut queue.tasks)
    }
}
