//! The per-thread re-entrancy stack (L10–L12) and the RAII [`Frame`] that returns a borrowed
//! worker on every exit path (STYLE 7).
//!
//! Each thread keeps a stack of entries, one per worker-driving frame on it: a `block_on` or
//! `drain_until` holding a worker, or the background thread. While a root is polled (or dropped),
//! its worker sits in its entry, so a nested `block_on` on the same runtime takes it from there
//! and puts it back before the outer poll resumes.

use std::any::Any;
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::slot::{CloseOnLoan, GiveBack, Slot};
use crate::sync::{thread, thread_local};
use crate::worker::{LoanWorker, Pending};

/// Identifies a runtime on a thread's stack: the address of its shared state, unique while the
/// runtime is alive (and entries never outlive the `&Loan` borrow that pushed them).
pub(crate) type RuntimeKey = usize;

/// What the calling thread is doing for a runtime, as far as the loan driver can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadRole {
    /// The thread drives nothing of this runtime: `block_on` will try to borrow the worker.
    Outside,
    /// The thread is polling (or dropping) a root of this runtime with the worker borrowed:
    /// a nested `block_on` drives the same worker.
    Root,
    /// The thread is inside a dispatch turn of this runtime's worker (a task poll): `block_on`
    /// falls back to polling its future directly.
    TaskPoll,
    /// The thread is this runtime's background thread: `block_on` falls back.
    Background,
}

#[derive(Debug)]
struct Entry {
    key: RuntimeKey,
    role: ThreadRole,
    /// The worker while the root is polled; `None` while it turns or is lent to a nested frame.
    worker: Option<Box<dyn LoanWorker>>,
}

thread_local! {
    static STACK: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// The role of the topmost entry for `key` on this thread.
pub(crate) fn role(key: RuntimeKey) -> ThreadRole {
    STACK.with(|stack| {
        stack
            .borrow()
            .iter()
            .rev()
            .find(|entry| entry.key == key)
            .map_or(ThreadRole::Outside, |entry| entry.role)
    })
}

/// What a `block_on` found on this thread's stack for its runtime (L11).
#[must_use = "a worker taken from an outer frame must be given back"]
#[derive(Debug)]
pub(crate) enum Nested {
    /// An outer root of this runtime is being polled: its worker, and the outer entry's index.
    Take(Box<dyn LoanWorker>, usize),
    /// The runtime is busy on this thread (task poll or background thread): fall back.
    Busy(ThreadRole),
    /// Nothing of this runtime on this thread: borrow from the slot.
    Absent,
}

/// Takes the worker from the topmost entry for `key`, when that entry is a root being polled.
pub(crate) fn take_nested(key: RuntimeKey) -> Nested {
    STACK.with(|stack| {
        let mut stack = stack.borrow_mut();
        let Some((index, entry)) = stack
            .iter_mut()
            .enumerate()
            .rev()
            .find(|(_, entry)| entry.key == key)
        else {
            return Nested::Absent;
        };
        if entry.role != ThreadRole::Root {
            return Nested::Busy(entry.role);
        }
        // A root entry without its worker cannot occur while a nested frame runs (it pushes
        // its own entry on top); it means the outer frame is unwinding: fall back.
        entry
            .worker
            .take()
            .map_or(Nested::Busy(ThreadRole::Root), |worker| {
                Nested::Take(worker, index)
            })
    })
}

fn push(key: RuntimeKey, role: ThreadRole) -> usize {
    STACK.with(|stack| {
        let mut stack = stack.borrow_mut();
        stack.push(Entry {
            key,
            role,
            worker: None,
        });
        stack.len() - 1
    })
}

fn pop(index: usize) {
    STACK.with(|stack| {
        let mut stack = stack.borrow_mut();
        debug_assert_eq!(stack.len(), index + 1, "frames nest strictly");
        stack.truncate(index);
    });
}

fn with_entry<R>(index: usize, f: impl FnOnce(&mut Entry) -> R) -> R {
    STACK.with(|stack| f(&mut stack.borrow_mut()[index]))
}

/// Marks the background thread of `key` for as long as the guard lives.
#[derive(Debug)]
pub(crate) struct BackgroundMark {
    index: usize,
}

impl BackgroundMark {
    pub(crate) fn new(key: RuntimeKey) -> Self {
        Self {
            index: push(key, ThreadRole::Background),
        }
    }
}

impl Drop for BackgroundMark {
    fn drop(&mut self) {
        pop(self.index);
    }
}

/// Where a frame's worker came from, and so where it goes back.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Origin {
    /// Borrowed through the slot protocol.
    Slot,
    /// Taken from the entry at this index (an outer root of the same runtime).
    Outer(usize),
}

/// A borrowed worker with its context entered. Invariant: the worker is either in `worker` or in
/// this frame's stack entry (while the root runs); `Drop` leaves the context (if `enter`
/// returned) and returns the worker to its origin on every path, unwinding included, even when
/// the worker's own `enter` or `leave` panics (STYLE 7, rule L13).
#[derive(Debug)]
pub(crate) struct Frame<'a> {
    slot: &'a Slot,
    origin: Origin,
    index: usize,
    worker: Option<Box<dyn LoanWorker>>,
    /// Whether `enter` returned, so `Drop` owes the matching `leave`.
    entered: bool,
    /// Rule L8: this frame saw the slot closed (and the worker was closed on loan by it or by
    /// an inner frame).
    closure_seen: bool,
    /// Rule L7: the worker's answer to `pending`, when it was asked after the root was dropped
    /// and nothing ran on the worker since; the give-back uses it instead of asking again.
    pending: Option<Asked>,
}

/// The worker's answer to `pending`, or the payload of its panic (which counts as work).
type Asked = Result<Pending, Box<dyn Any + Send>>;

/// Asks `worker` whether it has work pending (L7), containing a panic.
fn ask_pending(worker: &dyn LoanWorker) -> Asked {
    catch_unwind(AssertUnwindSafe(|| worker.pending()))
}

/// Rule L8: the closure check of a frame's run predicate. A copy, so the predicate does not
/// borrow the frame while it dispatches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClosureWatch<'a> {
    /// The slot to watch; `None` once the frame noticed the closure.
    slot: Option<&'a Slot>,
}

impl ClosureWatch<'_> {
    /// Whether the slot closed and the frame has not noticed it yet: stop and look.
    pub(crate) fn fired(&self) -> bool {
        self.slot.is_some_and(Slot::is_closed)
    }
}

/// What [`Frame::notice_closure`] found (L8).
#[must_use = "a frame that noticed the closure must poll its root again"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Closure {
    /// The slot closed since this frame last looked: the worker is closed on loan now, and the
    /// frame's root must be polled again (closing may drop wakers instead of waking them).
    Noticed,
    /// Nothing new: the slot is open, or this frame already noticed its closure.
    Unchanged,
}

impl<'a> Frame<'a> {
    /// Pushes an entry for `key` and enters the worker's context. The frame owns the worker
    /// before `enter` runs, so a panicking `enter` still pops the entry and returns the worker.
    pub(crate) fn new(
        slot: &'a Slot,
        key: RuntimeKey,
        origin: Origin,
        worker: Box<dyn LoanWorker>,
    ) -> Self {
        let index = push(key, ThreadRole::Root);
        let mut frame = Self {
            slot,
            origin,
            index,
            worker: Some(worker),
            entered: false,
            closure_seen: false,
            pending: None,
        };
        frame.worker().enter();
        frame.entered = true;
        frame
    }

    /// The worker, for a call that is neither a dispatch turn nor a root poll.
    pub(crate) fn worker(&mut self) -> &mut dyn LoanWorker {
        self.worker
            .as_deref_mut()
            .expect("the worker is back in its frame between root polls")
    }

    /// Rule L7, after the root was dropped: whether a worker borrowed through the slot has
    /// nothing pending (so nothing runnable either, and no drain turn to run). The answer is
    /// kept for the give-back, which then needs no second look; it is still a sound answer
    /// there, because every event after it reaches the rest waker, which the slot remembers
    /// during a loan (so the worker is returned, not rested). Frames
    /// nested in an outer root hand their worker back without asking, so they answer `false`.
    pub(crate) fn has_nothing_pending(&mut self) -> bool {
        if !matches!(self.origin, Origin::Slot) {
            return false;
        }
        let asked = ask_pending(self.worker());
        let nothing = matches!(asked, Ok(Pending::Nothing));
        // Work is asked again at the give-back: the drain's turns may change the answer.
        if !matches!(asked, Ok(Pending::Work)) {
            self.pending = Some(asked);
        }
        nothing
    }

    /// What this frame's run predicates check for a closure it has not noticed yet (L8).
    pub(crate) fn closure_watch(&self) -> ClosureWatch<'a> {
        ClosureWatch {
            slot: (!self.closure_seen).then_some(self.slot),
        }
    }

    /// Rule L8, at a dispatch boundary: if the slot closed since this frame last looked, close
    /// the worker on loan (the first frame to see it, once per worker), as a dispatch (its
    /// task destructors may call `block_on`, rule L11).
    pub(crate) fn notice_closure(&mut self) -> Closure {
        if !self.closure_watch().fired() {
            return Closure::Unchanged;
        }
        self.closure_seen = true;
        if self.slot.claim_close_on_loan() == CloseOnLoan::Due {
            self.dispatch(|worker| worker.close_on_loan());
        }
        Closure::Noticed
    }

    /// Runs `f` on the worker while the entry says "task poll" (rule L11: a `block_on` from a
    /// task falls back). The entry says "root" again afterwards, even if `f` unwinds.
    pub(crate) fn dispatch<R>(&mut self, f: impl FnOnce(&mut dyn LoanWorker) -> R) -> R {
        let index = self.index;
        let worker = self.worker();
        with_entry(index, |entry| entry.role = ThreadRole::TaskPoll);
        let _restore = RootRoleOnDrop { index };
        f(worker)
    }

    /// Runs `f` (a root poll or drop) with the worker parked in the entry, so a nested
    /// `block_on` can take it (L11). The worker comes back even if `f` unwinds.
    pub(crate) fn with_root<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let worker = self.worker.take();
        with_entry(self.index, |entry| entry.worker = worker);
        let parked = ParkedInEntry { frame: self };
        let out = f();
        drop(parked);
        out
    }
}

/// Marks the entry at `index` as a root again when a dispatch turn ends, returns or unwinds.
struct RootRoleOnDrop {
    index: usize,
}

impl Drop for RootRoleOnDrop {
    fn drop(&mut self) {
        with_entry(self.index, |entry| entry.role = ThreadRole::Root);
    }
}

/// Moves the worker from the entry back into its frame on drop.
struct ParkedInEntry<'f, 'a> {
    frame: &'f mut Frame<'a>,
}

impl Drop for ParkedInEntry<'_, '_> {
    fn drop(&mut self) {
        let worker = with_entry(self.frame.index, |entry| entry.worker.take());
        debug_assert!(
            worker.is_some(),
            "rule L11: nested frames hand the worker back before the outer poll resumes"
        );
        self.frame.worker = worker;
    }
}

impl Drop for Frame<'_> {
    fn drop(&mut self) {
        let worker = self
            .worker
            .take()
            .or_else(|| with_entry(self.index, |entry| entry.worker.take()));
        // Pops the entry and returns the worker when it drops, also if `leave` unwinds.
        let mut home = Homecoming {
            slot: self.slot,
            origin: self.origin,
            index: self.index,
            worker,
            pending: self.pending.take(),
        };
        if let (true, Some(worker)) = (self.entered, home.worker.as_deref_mut()) {
            if thread::panicking() {
                // A second panic escaping a drop during unwinding would abort the process: the
                // first payload is already on its way, so this one is contained and discarded.
                if let Err(payload) = catch_unwind(AssertUnwindSafe(|| worker.leave())) {
                    std::mem::forget(payload);
                }
            } else {
                worker.leave();
            }
        }
    }
}

/// Pops a frame's entry and returns its worker to its origin, on every path.
struct Homecoming<'a> {
    slot: &'a Slot,
    origin: Origin,
    index: usize,
    worker: Option<Box<dyn LoanWorker>>,
    /// The frame's kept answer to `pending`, if it has one (L7).
    pending: Option<Asked>,
}

impl Drop for Homecoming<'_> {
    fn drop(&mut self) {
        pop(self.index);
        let Some(worker) = self.worker.take() else {
            return;
        };
        match self.origin {
            Origin::Outer(outer) => with_entry(outer, |entry| entry.worker = Some(worker)),
            Origin::Slot => {
                // Rule L7: ask before locking. A panicking answer counts as work; its payload is
                // re-raised once the worker is back (discarded if we are already unwinding).
                let asked = self.pending.take().unwrap_or_else(|| ask_pending(&*worker));
                let pending = asked.as_ref().map_or(Pending::Work, |pending| *pending);
                match self.slot.give_back(worker, pending) {
                    GiveBack::Returned | GiveBack::Resting => {}
                    // Rule L8: closed while on loan; drop it here, outside the slot lock.
                    GiveBack::Closed(worker) => drop(worker),
                }
                if let Err(payload) = asked {
                    if thread::panicking() {
                        std::mem::forget(payload);
                    } else {
                        resume_unwind(payload);
                    }
                }
            }
        }
    }
}
