//! The scheduler's thread-confined part: run queues and the task registry (rules 1, 2, 7, 9).
//!
//! Only the thread holding the core claim (rule 9) reaches a `Core`. Its `RefCell`s are never
//! borrowed across user code: task references are moved out before they are run or dropped.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use crate::raw::{TaskRef, UNREGISTERED};
use crate::sync::{Ordering, ThreadId};

/// Runnable local tasks of one owner thread, and how many of its local tasks are live.
#[derive(Debug)]
struct LocalQueue {
    owner: ThreadId,
    ready: VecDeque<TaskRef>,
    live: usize,
}

/// Rule 1: one counted reference per accepted, unfinished task, so shutdown can reach tasks that
/// sit idle with their wakers held elsewhere, and a task is never freed while it runs.
#[derive(Default)]
struct Registry {
    slots: Vec<Option<TaskRef>>,
    free: Vec<usize>,
}

/// Which queue the fair dispatcher tries first next time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Turn {
    #[default]
    Send,
    Local,
}

/// The thread-confined scheduler state.
#[derive(Default)]
pub(crate) struct Core {
    send_ready: RefCell<VecDeque<TaskRef>>,
    locals: RefCell<Vec<LocalQueue>>,
    registry: RefCell<Registry>,
    /// Nesting depth of the core claim on the holder thread (rule 9).
    pub(crate) depth: Cell<usize>,
    /// Whether `run_ready` is on the stack (it does not re-enter itself).
    pub(crate) polling: Cell<bool>,
    /// The fair dispatcher's next turn, kept across `run_ready` calls (rule 10).
    pub(crate) turn: Cell<Turn>,
    /// A reusable buffer for draining the injection queue.
    pub(crate) inbox: RefCell<VecDeque<TaskRef>>,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("depth", &self.depth)
            .field("polling", &self.polling)
            .finish_non_exhaustive()
    }
}

impl Core {
    pub(crate) fn new() -> Core {
        Core::default()
    }

    /// Rule 2 and 7: queue a notified task: `Send` tasks on the shared ready queue, local tasks
    /// on their owner thread's queue.
    pub(crate) fn push_ready(&self, task: TaskRef) {
        match task.header().owner {
            None => self.send_ready.borrow_mut().push_back(task),
            Some(owner) => {
                let mut locals = self.locals.borrow_mut();
                match locals.iter_mut().find(|local| local.owner == owner) {
                    Some(local) => local.ready.push_back(task),
                    None => locals.push(LocalQueue {
                        owner,
                        ready: VecDeque::from([task]),
                        live: 0,
                    }),
                }
            }
        }
    }

    /// Fair dispatch: alternate between `Send` tasks and this thread's local tasks (rule 7: no
    /// other thread's local task is returned).
    pub(crate) fn pop_ready(&self, here: ThreadId, turn: &mut Turn) -> Option<TaskRef> {
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

    /// Rule 1: the registry takes a reference; a local task counts towards its owner's live
    /// local tasks.
    pub(crate) fn register(&self, task: TaskRef) {
        if let Some(owner) = task.header().owner {
            let mut locals = self.locals.borrow_mut();
            match locals.iter_mut().find(|local| local.owner == owner) {
                Some(local) => local.live += 1,
                None => locals.push(LocalQueue {
                    owner,
                    ready: VecDeque::new(),
                    live: 1,
                }),
            }
        }
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

    pub(crate) fn is_registered(task: &TaskRef) -> bool {
        task.header().slot.load(Ordering::Relaxed) != UNREGISTERED
    }

    /// Rule 1: a finished task leaves the registry. The returned reference must be dropped by
    /// the caller, outside any borrow of the core.
    pub(crate) fn unregister(&self, task: &TaskRef) -> Option<TaskRef> {
        let slot = task.header().slot.swap(UNREGISTERED, Ordering::Relaxed);
        if slot == UNREGISTERED {
            return None;
        }
        if let Some(owner) = task.header().owner {
            let mut locals = self.locals.borrow_mut();
            if let Some(index) = locals.iter().position(|local| local.owner == owner) {
                let local = &mut locals[index];
                local.live = local.live.saturating_sub(1);
                if local.live == 0 && local.ready.is_empty() {
                    locals.swap_remove(index);
                }
            }
        }
        let mut registry = self.registry.borrow_mut();
        let removed = registry.slots.get_mut(slot).and_then(Option::take);
        registry.free.push(slot);
        removed
    }

    /// Live local tasks owned by `thread`.
    pub(crate) fn live_local(&self, thread: ThreadId) -> usize {
        self.locals
            .borrow()
            .iter()
            .find(|local| local.owner == thread)
            .map_or(0, |local| local.live)
    }

    /// Rule 8: every registered task, for shutdown (they stay registered until finished).
    pub(crate) fn registered(&self) -> Vec<TaskRef> {
        self.registry
            .borrow()
            .slots
            .iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// Rule 8: empties every run queue; the caller drops the entries outside the borrow.
    pub(crate) fn take_queues(&self) -> Vec<TaskRef> {
        let mut taken: Vec<TaskRef> = self.send_ready.borrow_mut().drain(..).collect();
        for local in self.locals.borrow_mut().iter_mut() {
            taken.extend(local.ready.drain(..));
        }
        taken
    }
}
