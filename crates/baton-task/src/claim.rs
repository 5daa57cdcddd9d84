//! The core claim (T9): the claim word, the run queues only its holder reaches, and the
//! [`ClaimGuard`] that holds it.

use std::cell::Cell;
use std::sync::Arc;

use crate::context::ContextError;
use crate::run_queues::RunQueues;
use crate::scheduler_state::SchedulerState;
use crate::sync::{self, AtomicUsize, Ordering};

/// The result of trying to take the core claim.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// This thread took the claim; the matching release drops it.
    Taken,
    /// This thread already held it (nested enter).
    Nested,
    /// Another thread holds it (an `EnterGuard` was leaked there).
    HeldElsewhere,
}

/// The claim word and what it guards: the run queues, reachable only by the thread whose token
/// is in the word (T9), and that thread's nesting depth.
pub(crate) struct ClaimCell {
    /// Rule T9: the token of the thread holding the core claim, or 0.
    holder: AtomicUsize,
    /// Nesting depth of the claim on the holder thread (T9).
    depth: Cell<usize>,
    queues: RunQueues,
}

// SAFETY: rule T9, `depth` and `queues` are only reached through `ClaimCell::here` (and `enter`
// and `leave`, which check the claim the same way), which hands them out solely to the thread
// whose token is in `holder`; the claim is taken with an acquiring CAS and released with a
// releasing store, so one thread at a time uses them and each sees the previous holder's writes.
unsafe impl Sync for ClaimCell {}
// SAFETY: `RunQueues` owns `Send` task references, plain data, free blocks of memory that no
// task lives in (its block cache) and the address of the task being polled, which is only read
// during that poll, on the polling thread (T8); the claim protocol (T9) moves use of it between
// threads with release/acquire ordering.
unsafe impl Send for ClaimCell {}

impl std::fmt::Debug for ClaimCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaimCell")
            .field("holder", &self.holder)
            .finish_non_exhaustive()
    }
}

impl ClaimCell {
    pub(crate) fn new() -> ClaimCell {
        ClaimCell {
            holder: AtomicUsize::new(0),
            depth: Cell::new(0),
            queues: RunQueues::new(),
        }
    }

    /// Rule T9: take the core claim for this thread.
    fn claim(&self) -> Claim {
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

    /// Rule T9: release a claim this thread took with [`Claim::Taken`].
    fn release(&self) {
        debug_assert_eq!(
            Some(self.holder.load(Ordering::Relaxed)),
            sync::thread_token()
        );
        self.holder.store(0, Ordering::Release);
    }

    /// Rule T9: the run queues, if this thread holds the claim.
    pub(crate) fn here(&self) -> Option<&RunQueues> {
        let me = sync::thread_token()?;
        (self.holder.load(Ordering::Acquire) == me).then_some(&self.queues)
    }

    /// Rule T9: takes the claim (or nests in this thread's) and counts one more level.
    fn enter(&self) -> Result<(), ContextError> {
        match self.claim() {
            Claim::Taken | Claim::Nested => {}
            Claim::HeldElsewhere => return Err(ContextError::EnteredElsewhere),
        }
        assert!(
            self.here().is_some(),
            "rule T9: the claim was just taken by this thread"
        );
        self.depth.set(self.depth.get() + 1);
        Ok(())
    }

    /// Rule T9: one level fewer; the last one releases the claim, after taking the spare task
    /// units out of the queues (rule T1): how many, for the caller to uncount.
    fn leave(&self) -> usize {
        assert!(
            self.here().is_some(),
            "rule T9: a live ClaimGuard means this thread holds the claim"
        );
        let depth = self.depth.get() - 1;
        self.depth.set(depth);
        if depth > 0 {
            return 0;
        }
        let spare = self.queues.take_all_spare_units();
        self.release();
        spare
    }
}

/// Rule T9: holds the core claim for the current thread; releases it on drop (also on panic).
#[derive(Debug)]
pub(crate) struct ClaimGuard {
    state: Arc<SchedulerState>,
}

impl ClaimGuard {
    pub(crate) fn take(state: &Arc<SchedulerState>) -> Result<ClaimGuard, ContextError> {
        state.claim().enter()?;
        Ok(ClaimGuard {
            state: Arc::clone(state),
        })
    }

    /// The state this guard holds the claim of, and keeps alive.
    pub(crate) fn state(&self) -> &Arc<SchedulerState> {
        &self.state
    }

    pub(crate) fn queues(&self) -> &RunQueues {
        self.state
            .claim()
            .here()
            .expect("rule T9: a live ClaimGuard means this thread holds the claim")
    }
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        let spare = self.state.claim().leave();
        if spare > 0 {
            // SAFETY: `sub_units`' contract — the spares were counted units of this state, now
            // ours to give up; our own `Arc` keeps the state alive whatever the units' count
            // does, and the address carries that `Arc`'s provenance, as `sub_units` needs to
            // release the units' strong count through it.
            unsafe { SchedulerState::sub_units(sync::arc_address(&self.state), spare) };
        }
    }
}
