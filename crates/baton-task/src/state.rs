//! The task state word (rules T1–T6 of the crate docs) and its transitions.
//!
//! One `AtomicUsize` per task holds every flag below and, above them, the task's reference
//! count (T1). Each transition is a single atomic read-modify-write (a fresh task's first
//! start is a load, T3) and returns a `#[must_use]` enum naming what the caller must do next.
//! Keeping the count in the same word lets a transition move or release a reference in the
//! same instruction that changes a flag: a wake by value hands the waker's reference to the
//! queue, and going idle releases the queue entry's reference.

use crate::sync::{AtomicUsize, Ordering};

/// In a run queue, or about to be pushed into one by whoever set this bit (T2).
const NOTIFIED: usize = 1 << 0;
/// Being polled (or being claimed for cancellation) by the scheduler (T3).
const RUNNING: usize = 1 << 1;
/// Terminal: the future is gone and the result is published (T5).
const COMPLETE: usize = 1 << 2;
/// Abort requested (by the `JoinHandle` or by shutdown) (T4).
const CANCELLED: usize = 1 << 3;
/// The `JoinHandle` is alive and will take the output (T6).
const JOIN_INTEREST: usize = 1 << 4;
/// The `JoinHandle` stored a waker that completion must wake (T6).
const JOIN_WAKER: usize = 1 << 5;
/// The future was leaked with its allocation instead of dropped (T7).
const LEAKED: usize = 1 << 6;
/// Never polled: the task's first queue entry holds `RUNNING` from the task's creation, so its
/// first start is a load rather than a read-modify-write (T3). Meaningless once `COMPLETE` is set.
const FRESH: usize = 1 << 7;

/// One reference: the count occupies the bits above the flags.
const REF_ONE: usize = 1 << 8;
/// The flag bits.
const FLAGS: usize = REF_ONE - 1;
/// More references than this means a reference leak loop (as `Arc` does, abort rather than
/// let the count wrap into the flags).
const MAX_REFS: usize = (usize::MAX >> 1) & !FLAGS;

/// A new task is queued once, its queue entry holding `RUNNING` for its first poll (T3), and has
/// a `JoinHandle`. Wakes and aborts before that poll find it running: they set their bits and
/// leave the pushing to the poller, as during any poll.
const INITIAL: usize = RUNNING | FRESH | JOIN_INTEREST;

/// The atomic state of one task.
#[derive(Debug)]
pub(crate) struct State(AtomicUsize);

/// What releasing one reference left behind. (Not named `Release`, which is an
/// `Ordering` in the same code.)
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefsLeft {
    /// Other references remain.
    Others,
    /// That was the last reference: the caller frees the task.
    Zero,
}

/// What a wake by reference (or an abort request) asks of the waker.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WakeOutcome {
    /// Rule T2: the task was idle; a new reference was taken for the queue entry, which the
    /// caller now owns and must push.
    Submit,
    /// The task is already queued; this wake merged into that entry.
    Coalesced,
    /// Rule T3: the task is being polled; the poller requeues it when the poll returns.
    DuringPoll,
    /// Rule T5: the task finished; the wake is ignored.
    Complete,
}

/// What a wake by value (which consumes the waker's reference) asks of the waker.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WakeByValue {
    /// Rule T2: the task was idle; the waker's reference became the queue entry's, which the
    /// caller must push.
    Submit,
    /// Queued, running or complete: the wake merged or was ignored, and the waker's reference
    /// was released.
    Released(RefsLeft),
}

/// What the scheduler does with a task it popped from a run queue.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartOutcome {
    /// Poll the future.
    Poll,
    /// Rule T4: an abort won before this poll: drop the future without polling it.
    Cancelled,
    /// The task finished while queued (shutdown claimed it): discard the entry.
    Stale,
}

/// What a task that parks does with its queue entry's reference (T1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParkEntry {
    /// Release it in the parking transition: the registry holds a reference already.
    Release,
    /// Keep it: the task parks for the first time and the reference becomes the registry's.
    Keep,
}

/// What happens after a poll returned `Pending`.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdleOutcome {
    /// Nobody woke it: it waits for a waker. With [`ParkEntry::Release`] the queue entry's
    /// reference was released in the same transition (the poller must not release it again);
    /// with [`ParkEntry::Keep`] it is still the poller's, and `Others` is reported.
    Parked(RefsLeft),
    /// Rule T3: it was woken during the poll: the poller pushes it back into a queue, reusing
    /// the queue entry's reference.
    Requeue,
    /// Rule T4: an abort arrived during the poll: the poller still holds `RUNNING` and drops it.
    Cancel,
}

/// The shutdown path's attempt to take a task away from the queues.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShutdownClaim {
    /// The caller now holds `RUNNING` with `CANCELLED` set and must finish the task.
    Claimed,
    /// The task is being polled (shutdown ran from inside a poll); `CANCELLED` is set and the
    /// poller cancels it when its poll returns.
    Running,
    /// Already finished.
    Complete,
}

/// How shutdown reached the task it claims (T8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShutdownReach {
    /// Through a queue entry it took out of a run queue or the injection queue: the entry's
    /// poll right is shutdown's.
    QueueEntry,
    /// Through the registry, after every queue entry was taken.
    Registry,
}

/// What the completer learned when it published completion.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Completed {
    /// Rule T6: the `JoinHandle` is still alive and will take the output.
    pub(crate) join_interest: bool,
    /// Rule T6: a join waker is stored and must be woken.
    pub(crate) join_waker: bool,
}

/// What [`State::complete_releasing`] did.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompleteReleasing {
    /// Completed, and the completer's references are gone: it must not touch the task again.
    Released,
    /// Completed; the completer keeps its references and does what `Completed` says.
    Kept(Completed),
}

/// What the `JoinHandle`'s drop must do.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DetachOutcome {
    /// The task is still running; it now drops its own output when it completes.
    Detached,
    /// The task already completed: the handle drops the stored output.
    OutputIsOurs,
}

/// The result of registering a join waker.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JoinWakerOutcome {
    /// Completion will wake the stored waker.
    Registered,
    /// Completion happened first: read the output now.
    Complete,
}

/// The handle's attempt to take its published join waker back (to replace it).
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReclaimOutcome {
    /// `JOIN_WAKER` was cleared before completion: the waker slot is the handle's again.
    Reclaimed,
    /// Completion happened first and saw the bit: the slot is the completer's; read the output.
    Complete,
}

/// A copy of the state bits, for queries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot(usize);

impl Snapshot {
    pub(crate) fn is_complete(self) -> bool {
        self.0 & COMPLETE != 0
    }

    pub(crate) fn is_leaked(self) -> bool {
        self.0 & LEAKED != 0
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn refs(self) -> usize {
        self.0 / REF_ONE
    }
}

/// Whether the word has neither a queue entry, a poller nor a result: only a wake may queue it.
fn is_idle(word: usize) -> bool {
    word & (NOTIFIED | RUNNING | COMPLETE) == 0
}

impl State {
    /// A new task holding `refs` references (rule T1: its first queue entry, its handle).
    pub(crate) fn new(refs: usize) -> State {
        State(AtomicUsize::new(INITIAL | (refs * REF_ONE)))
    }

    pub(crate) fn load(&self) -> Snapshot {
        Snapshot(self.0.load(Ordering::Acquire))
    }

    /// Rule T1: one more reference. Relaxed, as for `Arc::clone`: the caller already holds a
    /// reference, so the task cannot be freed concurrently, and no data is published.
    pub(crate) fn ref_inc(&self) {
        let previous = self.0.fetch_add(REF_ONE, Ordering::Relaxed);
        if previous > MAX_REFS {
            std::process::abort();
        }
    }

    /// Rule T1: one reference fewer. Release orders this holder's accesses before the free;
    /// acquire makes every other holder's accesses visible to the one that frees.
    pub(crate) fn ref_dec(&self) -> RefsLeft {
        self.release(1)
    }

    /// Rule T1: two references fewer in one step (a finished task's registry entry and its
    /// poller's queue entry); ordered as [`State::ref_dec`].
    pub(crate) fn ref_dec_twice(&self) -> RefsLeft {
        self.release(2)
    }

    /// Rule T1: releases `count` references the caller holds. When they are the only ones left,
    /// nobody else can take another (only a holder can), so an acquiring load that sees them
    /// alone (synchronising with every earlier holder's releasing decrement) lets the caller
    /// free the task without a read-modify-write, as `Arc::get_mut` decides uniqueness.
    fn release(&self, count: usize) -> RefsLeft {
        let ours = count * REF_ONE;
        if self.0.load(Ordering::Acquire) & !FLAGS == ours {
            return RefsLeft::Zero;
        }
        let previous = self.0.fetch_sub(ours, Ordering::AcqRel);
        debug_assert!(
            previous & !FLAGS >= ours,
            "rule T1: released more references than taken"
        );
        if previous & !FLAGS == ours {
            RefsLeft::Zero
        } else {
            RefsLeft::Others
        }
    }

    fn release_of(previous: usize) -> RefsLeft {
        if previous & !FLAGS == REF_ONE {
            RefsLeft::Zero
        } else {
            RefsLeft::Others
        }
    }

    /// Applies `change` to the word until the CAS succeeds; `change` returns the next word (or
    /// `None` to leave the word alone) and the outcome to report.
    fn transition<T>(&self, mut change: impl FnMut(usize) -> (Option<usize>, T)) -> T {
        let mut current = self.0.load(Ordering::Acquire);
        loop {
            let (next, outcome) = change(current);
            let Some(next) = next else {
                return outcome;
            };
            match self
                .0
                .compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return outcome,
                Err(actual) => current = actual,
            }
        }
    }

    /// Rule T2: a wake sets `NOTIFIED`; only the waker that found the task idle pushes it, with a
    /// reference taken for the queue entry in the same transition.
    pub(crate) fn wake(&self) -> WakeOutcome {
        self.wake_setting(NOTIFIED)
    }

    /// Rule T4: an abort is a wake that also sets `CANCELLED`.
    pub(crate) fn abort(&self) -> WakeOutcome {
        self.wake_setting(NOTIFIED | CANCELLED)
    }

    fn wake_setting(&self, bits: usize) -> WakeOutcome {
        self.transition(|current| {
            if current & COMPLETE != 0 {
                (None, WakeOutcome::Complete)
            } else if current & NOTIFIED != 0 {
                (Some(current | bits), WakeOutcome::Coalesced)
            } else if current & RUNNING != 0 {
                (Some(current | bits), WakeOutcome::DuringPoll)
            } else {
                // Rule T2: only the waker that finds the task idle takes a reference here, so
                // at most one such reference is outstanding: the count cannot overflow.
                (Some((current | bits) + REF_ONE), WakeOutcome::Submit)
            }
        })
    }

    /// Rule T2 for a waker consumed by its wake: an idle task's queue entry takes over the
    /// waker's reference; otherwise the wake merges (or is ignored) and the reference goes.
    pub(crate) fn wake_by_value(&self) -> WakeByValue {
        self.transition(|current| {
            if is_idle(current) {
                return (Some(current | NOTIFIED), WakeByValue::Submit);
            }
            debug_assert!(current >= REF_ONE, "rule T1: a waker holds a reference");
            let notified = if current & COMPLETE != 0 {
                current
            } else {
                current | NOTIFIED
            };
            let outcome = WakeByValue::Released(Self::release_of(current));
            (Some(notified - REF_ONE), outcome)
        })
    }

    /// Rule T3: the queue entry is consumed (`NOTIFIED` cleared) and `RUNNING` taken. The entry's
    /// reference stays with the poller. A fresh task's entry already holds `RUNNING`, so its
    /// first start only reads the word: an abort that lands after the read is seen when the poll
    /// returns, as during any poll.
    pub(crate) fn start(&self) -> StartOutcome {
        let current = self.0.load(Ordering::Acquire);
        if current & (FRESH | COMPLETE) == FRESH {
            return if current & CANCELLED != 0 {
                StartOutcome::Cancelled
            } else {
                StartOutcome::Poll
            };
        }
        self.transition(|current| {
            if current & COMPLETE != 0 {
                return (None, StartOutcome::Stale);
            }
            debug_assert!(current & NOTIFIED != 0, "T2: a queued task is notified");
            debug_assert!(current & RUNNING == 0, "T3: one poller at a time");
            let next = (current & !NOTIFIED) | RUNNING;
            if current & CANCELLED != 0 {
                (Some(next), StartOutcome::Cancelled)
            } else {
                (Some(next), StartOutcome::Poll)
            }
        })
    }

    /// Rule T3: release `RUNNING` after a `Pending` poll, unless a wake or abort arrived. A
    /// task that goes to sleep gives up its queue entry's reference in the same transition, or
    /// keeps it for the registry, as `entry` says (T1).
    pub(crate) fn idle(&self, entry: ParkEntry) -> IdleOutcome {
        self.transition(|current| {
            debug_assert!(current & RUNNING != 0, "rule T3: only the poller goes idle");
            if current & CANCELLED != 0 {
                (None, IdleOutcome::Cancel)
            } else if current & NOTIFIED != 0 {
                (Some(current & !(RUNNING | FRESH)), IdleOutcome::Requeue)
            } else {
                let idle = current & !(RUNNING | FRESH);
                match entry {
                    ParkEntry::Release => {
                        let outcome = IdleOutcome::Parked(Self::release_of(current));
                        (Some(idle - REF_ONE), outcome)
                    }
                    ParkEntry::Keep => (Some(idle), IdleOutcome::Parked(RefsLeft::Others)),
                }
            }
        })
    }

    /// Rule T8: shutdown takes `RUNNING` on any task that is not being polled. A fresh task's
    /// `RUNNING` belongs to its first queue entry (T3): shutdown claims it through that entry
    /// (`reach` is [`ShutdownReach::QueueEntry`]); reached through the registry, a fresh task is
    /// the one in its first poll.
    pub(crate) fn claim_for_shutdown(&self, reach: ShutdownReach) -> ShutdownClaim {
        self.transition(|current| {
            if current & COMPLETE != 0 {
                (None, ShutdownClaim::Complete)
            } else if current & FRESH != 0 && reach == ShutdownReach::QueueEntry {
                (Some(current | CANCELLED), ShutdownClaim::Claimed)
            } else if current & RUNNING != 0 {
                (Some(current | CANCELLED), ShutdownClaim::Running)
            } else {
                (Some(current | RUNNING | CANCELLED), ShutdownClaim::Claimed)
            }
        })
    }

    /// Rule T5: the holder of `RUNNING` publishes completion (with `LEAKED` when rule T7 applied).
    pub(crate) fn complete(&self, leaked: bool) -> Completed {
        let set = if leaked { COMPLETE | LEAKED } else { COMPLETE };
        // Only the `RUNNING` holder gets here, so `RUNNING` is set and `COMPLETE` and `LEAKED`
        // are clear (only it sets them): one addition clears the one and sets the others, and
        // commutes with every other thread's change to the word (other bits, the count).
        let previous = self.0.fetch_add(set - RUNNING, Ordering::AcqRel);
        debug_assert!(
            previous & (COMPLETE | LEAKED) == 0,
            "rule T5: completion is terminal"
        );
        debug_assert!(previous & RUNNING != 0, "rule T5: only RUNNING completes");
        Completed {
            join_interest: previous & JOIN_INTEREST != 0,
            join_waker: previous & JOIN_WAKER != 0,
        }
    }

    /// Rules T5 and T1 for a task whose poll returned its output (its future dropped, not
    /// leaked): publishes completion and, when the completer has nothing left to do (the
    /// handle is alive, so it holds a reference, and published no waker), releases the
    /// completer's `refs` references in the same transition.
    pub(crate) fn complete_releasing(&self, refs: usize) -> CompleteReleasing {
        self.transition(|current| {
            debug_assert!(current & RUNNING != 0, "rule T5: only RUNNING completes");
            let completed = (current & !(RUNNING | FRESH)) | COMPLETE;
            if current & JOIN_INTEREST != 0 && current & JOIN_WAKER == 0 {
                debug_assert!(
                    current & !FLAGS > refs * REF_ONE,
                    "rule T1: the handle holds a reference"
                );
                (
                    Some(completed - refs * REF_ONE),
                    CompleteReleasing::Released,
                )
            } else {
                let kept = Completed {
                    join_interest: current & JOIN_INTEREST != 0,
                    join_waker: current & JOIN_WAKER != 0,
                };
                (Some(completed), CompleteReleasing::Kept(kept))
            }
        })
    }

    /// Rule T6: the handle gives up its interest unless the output is already there.
    pub(crate) fn detach(&self) -> DetachOutcome {
        self.transition(|current| {
            if current & COMPLETE != 0 {
                (None, DetachOutcome::OutputIsOurs)
            } else {
                let next = current & !(JOIN_INTEREST | JOIN_WAKER);
                (Some(next), DetachOutcome::Detached)
            }
        })
    }

    /// Rule T6: the handle takes its published waker slot back unless the task completed (then
    /// the completer owns the slot and the handle must not touch it).
    pub(crate) fn reclaim_join_waker(&self) -> ReclaimOutcome {
        self.transition(|current| {
            if current & COMPLETE != 0 {
                (None, ReclaimOutcome::Complete)
            } else {
                (Some(current & !JOIN_WAKER), ReclaimOutcome::Reclaimed)
            }
        })
    }

    /// Rule T6: published after the waker is stored, so completion either sees the bit or the
    /// handle sees `COMPLETE`.
    pub(crate) fn set_join_waker(&self) -> JoinWakerOutcome {
        let previous = self.0.fetch_or(JOIN_WAKER, Ordering::AcqRel);
        if previous & COMPLETE != 0 {
            JoinWakerOutcome::Complete
        } else {
            JoinWakerOutcome::Registered
        }
    }
}
