//! The scheduler's thread-confined part, which the rules call the core: run queues and the task
//! registry (T1, T2, T7, T9).
//!
//! Only the thread holding the core claim (T9) reaches the [`RunQueues`]. Their `RefCell`s
//! are never borrowed across user code: task references are moved out before they are run or
//! dropped.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ptr::NonNull;

use crate::blocks::BlockCache;
use crate::raw::{Header, TaskRef, UNREGISTERED};
use crate::scheduler_state::SchedulerState;
use crate::sync::{Ordering, thread::ThreadId};

/// Runnable local tasks of one owner thread, and how many of its local tasks are live.
#[derive(Debug)]
struct LocalQueue {
    owner: ThreadId,
    ready: VecDeque<TaskRef<SchedulerState>>,
    live: usize,
}

/// Rule T1: one counted reference per unfinished task that has parked, so shutdown can reach
/// tasks that sit idle with their wakers held elsewhere. A task that never parked is always
/// reachable through its queue entry, or is the one being polled ([`RunQueues::polled`]).
#[derive(Default)]
struct Registry {
    slots: Vec<Option<TaskRef<SchedulerState>>>,
    free: Vec<usize>,
}

/// Which queue the fair dispatcher tries first next time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Turn {
    #[default]
    Send,
    Local,
}

/// The thread-confined scheduler state (what the rules call the core): the run queues, the
/// registry and the run loop's own bookkeeping.
///
/// Named for what it holds rather than "core", which every scheduler has; it is one room
/// because one claim (T9) guards all of it, and its methods are the only way in.
#[derive(Default)]
pub(crate) struct RunQueues {
    send_ready: RefCell<VecDeque<TaskRef<SchedulerState>>>,
    locals: RefCell<Vec<LocalQueue>>,
    registry: RefCell<Registry>,
    /// Whether `run_ready` is on the stack (it does not re-enter itself).
    polling: Cell<bool>,
    /// Rule T8: the task `run_ready` is polling right now, if any, whose queue entry's
    /// reference the poller holds until it clears this; shutdown run from inside that poll
    /// reaches it here when it is not in the registry (it never parked).
    polled: Cell<Option<NonNull<Header<SchedulerState>>>>,
    /// The fair dispatcher's next turn, kept across `run_ready` calls (T10).
    turn: Cell<Turn>,
    /// A reusable buffer for draining the injection queue.
    inbox: RefCell<VecDeque<TaskRef<SchedulerState>>>,
    /// The emptied ready queue of the last owner thread whose local tasks all finished, kept
    /// (empty) for the next owner's queue so that a thread that spawns a batch of local tasks,
    /// joins them all and spawns again does not grow a new queue from nothing each time.
    spare_local_ready: RefCell<VecDeque<TaskRef<SchedulerState>>>,
    /// The blocks of freed tasks, for the next spawns on this thread.
    blocks: BlockCache,
    /// Rule T1 (units): task units counted in the scheduler state and not held by any task,
    /// handed to tasks spawned here and taken back from tasks freed here without touching
    /// the shared count; all given back when the claim is released.
    spare_units: Cell<usize>,
}

impl std::fmt::Debug for RunQueues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunQueues")
            .field("polling", &self.polling)
            .finish_non_exhaustive()
    }
}

/// Marks `run_ready` as running on the claim holder's thread until dropped (also on panic).
#[derive(Debug)]
pub(crate) struct Polling<'a>(&'a RunQueues);

impl Drop for Polling<'_> {
    fn drop(&mut self) {
        self.0.polling.set(false);
    }
}

impl RunQueues {
    pub(crate) fn new() -> RunQueues {
        RunQueues::default()
    }

    /// Marks `run_ready` as running, or `None` when it already is (called from inside a task's
    /// poll: it does not re-enter itself).
    pub(crate) fn start_polling(&self) -> Option<Polling<'_>> {
        if self.polling.replace(true) {
            None
        } else {
            Some(Polling(self))
        }
    }

    /// Rule T8: remembers the task about to be polled, or forgets it (`None`) once the poll
    /// returned.
    pub(crate) fn set_polled(&self, task: Option<NonNull<Header<SchedulerState>>>) {
        self.polled.set(task);
    }

    /// Rule T8: the task being polled, while its poller holds its queue entry's reference.
    pub(crate) fn polled(&self) -> Option<NonNull<Header<SchedulerState>>> {
        self.polled.get()
    }

    /// Rule T1 (units): takes one spare unit, if any.
    pub(crate) fn take_spare_unit(&self) -> bool {
        let spare = self.spare_units.get();
        if spare == 0 {
            return false;
        }
        self.spare_units.set(spare - 1);
        true
    }

    /// Rule T1 (units): keeps `count` more spare units; returns how many there are now.
    pub(crate) fn add_spare_units(&self, count: usize) -> usize {
        let spare = self.spare_units.get() + count;
        self.spare_units.set(spare);
        spare
    }

    /// Rule T1 (units): gives up `count` spare units (the caller uncounts them).
    pub(crate) fn take_spare_units(&self, count: usize) {
        self.spare_units.set(self.spare_units.get() - count);
    }

    /// Rule T1 (units): gives up every spare unit (the caller uncounts them); how many.
    pub(crate) fn take_all_spare_units(&self) -> usize {
        self.spare_units.replace(0)
    }

    /// The claim holder's recycled task blocks.
    pub(crate) fn blocks(&self) -> &BlockCache {
        &self.blocks
    }

    /// Rule T10: the fair dispatcher's next turn.
    pub(crate) fn turn(&self) -> Turn {
        self.turn.get()
    }

    pub(crate) fn set_turn(&self, turn: Turn) {
        self.turn.set(turn);
    }

    /// The reusable drain buffer (empty); give it back with [`RunQueues::return_inbox`].
    pub(crate) fn take_inbox(&self) -> VecDeque<TaskRef<SchedulerState>> {
        std::mem::take(&mut *self.inbox.borrow_mut())
    }

    pub(crate) fn return_inbox(&self, inbox: VecDeque<TaskRef<SchedulerState>>) {
        *self.inbox.borrow_mut() = inbox;
    }

    /// Rule T2 and T7: queue a notified task: `Send` tasks on the shared ready queue, local tasks
    /// on their owner thread's queue.
    pub(crate) fn push_ready(&self, task: TaskRef<SchedulerState>) {
        match task.header().owner {
            None => self.send_ready.borrow_mut().push_back(task),
            Some(owner) => self.with_local(owner, |local| local.ready.push_back(task)),
        }
    }

    /// Rules T1 and T7: queue a task just accepted on this thread; a local one counts towards
    /// its owner's live local tasks until [`RunQueues::local_finished`].
    pub(crate) fn push_spawned(&self, task: TaskRef<SchedulerState>) {
        match task.header().owner {
            None => self.send_ready.borrow_mut().push_back(task),
            Some(owner) => self.with_local(owner, |local| {
                local.live += 1;
                local.ready.push_back(task);
            }),
        }
    }

    /// Runs `f` on `owner`'s local queue, made (from the kept spare buffer) if it has none.
    fn with_local(&self, owner: ThreadId, f: impl FnOnce(&mut LocalQueue)) {
        let mut locals = self.locals.borrow_mut();
        match locals.iter_mut().find(|local| local.owner == owner) {
            Some(local) => f(local),
            None => {
                let mut local = LocalQueue {
                    owner,
                    ready: self.spare_local_ready(),
                    live: 0,
                };
                f(&mut local);
                locals.push(local);
            }
        }
    }

    /// A local task of `owner` finished: one live local task fewer. A queue left with neither
    /// live tasks nor entries goes, its buffer kept for the next owner.
    pub(crate) fn local_finished(&self, owner: ThreadId) {
        let mut locals = self.locals.borrow_mut();
        let Some(index) = locals.iter().position(|local| local.owner == owner) else {
            return;
        };
        let local = &mut locals[index];
        local.live = local.live.saturating_sub(1);
        if local.live == 0 && local.ready.is_empty() {
            let emptied = locals.swap_remove(index).ready;
            let mut spare = self.spare_local_ready.borrow_mut();
            if emptied.capacity() > spare.capacity() {
                *spare = emptied;
            }
        }
    }

    /// Fair dispatch: alternate between `Send` tasks and this thread's local tasks (rule T7: no
    /// other thread's local task is returned).
    pub(crate) fn pop_ready(
        &self,
        here: ThreadId,
        turn: &mut Turn,
    ) -> Option<TaskRef<SchedulerState>> {
        for _ in 0..2 {
            let popped = match *turn {
                Turn::Send => {
                    *turn = Turn::Local;
                    self.send_ready.borrow_mut().pop_front()
                }
                Turn::Local => {
                    *turn = Turn::Send;
                    self.locals
                        .borrow_mut()
                        .iter_mut()
                        .find(|local| local.owner == here)
                        .and_then(|local| local.ready.pop_front())
                }
            };
            if popped.is_some() {
                return popped;
            }
        }
        None
    }

    pub(crate) fn has_ready_for(&self, here: ThreadId) -> bool {
        !self.send_ready.borrow().is_empty()
            || self
                .locals
                .borrow()
                .iter()
                .any(|local| local.owner == here && !local.ready.is_empty())
    }

    /// Rule T1: the registry takes the reference of a task that parks for the first time.
    pub(crate) fn register(&self, task: TaskRef<SchedulerState>) {
        let mut registry = self.registry.borrow_mut();
        let slot = match registry.free.pop() {
            Some(slot) => slot,
            None => {
                registry.slots.push(None);
                registry.slots.len() - 1
            }
        };
        task.header().slot.store(slot, Ordering::Relaxed);
        registry.slots[slot] = Some(task);
    }

    pub(crate) fn is_registered(task: &TaskRef<SchedulerState>) -> bool {
        task.header().slot.load(Ordering::Relaxed) != UNREGISTERED
    }

    /// Rule T1: a finished task leaves the registry, if it is in it. The returned reference
    /// must be dropped by the caller, outside any borrow of the queues.
    pub(crate) fn unregister(
        &self,
        task: &TaskRef<SchedulerState>,
    ) -> Option<TaskRef<SchedulerState>> {
        // Only the claim holder touches the slot (T9): a load and a store, no read-modify-write.
        let slot = task.header().slot.load(Ordering::Relaxed);
        if slot == UNREGISTERED {
            return None;
        }
        task.header().slot.store(UNREGISTERED, Ordering::Relaxed);
        let mut registry = self.registry.borrow_mut();
        let removed = registry.slots.get_mut(slot).and_then(Option::take);
        registry.free.push(slot);
        removed
    }

    /// An empty ready queue for a new owner thread's local tasks: the kept spare, if any.
    fn spare_local_ready(&self) -> VecDeque<TaskRef<SchedulerState>> {
        std::mem::take(&mut *self.spare_local_ready.borrow_mut())
    }

    /// Live local tasks owned by `thread`.
    pub(crate) fn live_local(&self, thread: ThreadId) -> usize {
        self.locals
            .borrow()
            .iter()
            .find(|local| local.owner == thread)
            .map_or(0, |local| local.live)
    }

    /// Rule T8: every registered task, for shutdown (a task stays registered from its first
    /// park until it finishes).
    pub(crate) fn registered(&self) -> Vec<TaskRef<SchedulerState>> {
        self.registry
            .borrow()
            .slots
            .iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// Rule T8: empties every run queue; the caller drops the entries outside the borrow.
    pub(crate) fn take_queues(&self) -> Vec<TaskRef<SchedulerState>> {
        let mut taken: Vec<TaskRef<SchedulerState>> =
            self.send_ready.borrow_mut().drain(..).collect();
        for local in self.locals.borrow_mut().iter_mut() {
            taken.extend(local.ready.drain(..));
        }
        taken
    }
}
