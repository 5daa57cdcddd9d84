//! [`Loan`]: one runtime's worker, its background thread, and the `block_on`/`drain_until`
//! entry points that borrow it.

use std::any::Any;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use web_time::Instant;

use crate::background;
use crate::error::LoanError;
use crate::frame::{self, Closure, Frame, Nested, Origin, RuntimeKey, ThreadRole};
use crate::signal::{RootWake, ThreadWake};
use crate::slot::{Borrow, Close, RestWaker, Slot};
use crate::sync::{self, AtomicUsize, Mutex, Ordering, thread};
use crate::worker::{LoanWorker, RunOutcome, TurnOutcome, Unpark};

/// How many dispatch turns `block_on` may run after its root completed (L12), by default.
pub const DEFAULT_DRAIN_TURNS: usize = 16;

/// Settings of a [`Loan`].
#[derive(Clone)]
pub struct LoanConfig {
    /// The background thread's name.
    pub thread_name: String,
    /// The most dispatch turns run after a root completes, while work is runnable (L12).
    pub drain_turns: usize,
    /// Runs first on the background thread, before it touches the worker (e.g. to pin the
    /// thread to a CPU).
    pub on_background_start: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl Default for LoanConfig {
    fn default() -> Self {
        Self {
            thread_name: "baton-loan".into(),
            drain_turns: DEFAULT_DRAIN_TURNS,
            on_background_start: None,
        }
    }
}

impl std::fmt::Debug for LoanConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoanConfig")
            .field("thread_name", &self.thread_name)
            .field("drain_turns", &self.drain_turns)
            .field("on_background_start", &self.on_background_start.is_some())
            .finish()
    }
}

/// Why a [`Loan::drain_until`] returned.
#[must_use = "a drain reports whether its predicate held"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrainOutcome {
    /// The predicate held.
    Satisfied,
    /// The deadline passed first.
    DeadlineReached,
    /// The worker is shutting down.
    ShuttingDown,
    /// The worker could not be borrowed on this thread; nothing ran.
    Unavailable(Unavailable),
}

/// Why the worker could not be borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// Another thread's request or loan is in progress.
    Contended,
    /// The background thread holds live local tasks.
    Refused,
    /// The runtime's loan protocol is closed.
    Closed,
    /// This thread is inside a task poll or is the background thread.
    Busy(ThreadRole),
}

/// Where the worker was when [`Loan::shutdown`] closed the protocol (L8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerDisposal {
    /// `shutdown` dropped it on the calling thread: it sat in the slot, or `shutdown` (called
    /// from outside the runtime) borrowed it before closing.
    DroppedNow,
    /// The background thread held it and dropped it on its way out.
    DroppedByBackground,
    /// A `block_on` had it on loan; it is dropped when that caller gives it back.
    DroppedOnReturn,
    /// The protocol was already closed (an earlier shutdown, the worker retiring itself, or a
    /// background panic).
    AlreadyClosed,
}

/// How the background thread ended, as seen by [`Loan::shutdown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackgroundExit {
    /// It finished and was joined.
    Joined,
    /// It died by panicking (L9); the protocol was closed at that point.
    Panicked,
    /// Not joined: `shutdown` ran on the background thread itself, or it was joined before.
    NotJoined,
}

/// What [`Loan::shutdown`] did.
#[must_use = "a shutdown report tells where the worker was dropped"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Where the worker was.
    pub worker: WorkerDisposal,
    /// How the background thread ended.
    pub background: BackgroundExit,
}

/// One runtime's worker, lent to `block_on` callers and run by a background thread in between
/// whenever it has work (an idle one rests in the slot for the next caller, rule L7).
///
/// `Loan` is `Send + Sync`: any thread may call [`block_on`](Self::block_on); at most one
/// thread (plus its nested frames) drives the worker at a time, the others fall back to polling
/// their futures directly (L11). Dropping a `Loan` shuts it down.
///
/// Invariants: `driven_roots` is written only by the thread that holds the worker (a root is
/// counted there, rule L15, and the slot hands the worker over with release/acquire ordering),
/// so a load and a store update it; `fallback_roots` is written by any thread. `root` is used
/// only by the frame that borrowed the worker through the slot, of which there is at most one
/// (L1); nested frames take a waker of their own (L14).
#[derive(Debug)]
pub struct Loan {
    slot: Arc<Slot>,
    unpark: Arc<dyn Unpark>,
    /// Roots polled with the worker borrowed (rule L15), on the thread that holds it.
    driven_roots: AtomicUsize,
    /// Roots that could not borrow the worker and are polled directly (L11).
    fallback_roots: AtomicUsize,
    /// The waker of the root that borrowed the worker through the slot, made once: re-armed
    /// for each such root instead of being allocated, reset or reference-counted per call.
    root: Arc<RootWake>,
    root_waker: Waker,
    drain_turns: usize,
    background: Mutex<Option<thread::JoinHandle<()>>>,
}

impl Loan {
    /// Starts the background thread running `worker`, with default settings. `unpark` must end
    /// the worker's parks (see [`Unpark`]).
    pub fn new(worker: Box<dyn LoanWorker>, unpark: Arc<dyn Unpark>) -> Result<Self, LoanError> {
        Self::with_config(worker, unpark, LoanConfig::default())
    }

    /// Starts the background thread running `worker`, with `config`.
    pub fn with_config(
        mut worker: Box<dyn LoanWorker>,
        unpark: Arc<dyn Unpark>,
        config: LoanConfig,
    ) -> Result<Self, LoanError> {
        let slot = Arc::new(Slot::new(Arc::clone(&unpark)));
        // Rule L7: the worker ends its own rests in the slot.
        worker.install_rest_waker(Arc::new(RestWaker::new(&slot)));
        let key = Arc::as_ptr(&slot) as RuntimeKey;
        let background_slot = Arc::clone(&slot);
        let on_start = config.on_background_start;
        let handle = thread::Builder::new()
            .name(config.thread_name.clone())
            .spawn(move || {
                if let Some(on_start) = on_start {
                    on_start();
                }
                background::run(background_slot, key, worker)
            })
            .map_err(|source| LoanError::SpawnBackground {
                name: config.thread_name,
                source,
            })?;
        let root = Arc::new(RootWake::new(Arc::clone(&unpark)));
        let root_waker = Waker::from(Arc::clone(&root));
        Ok(Self {
            slot,
            unpark,
            driven_roots: AtomicUsize::new(0),
            fallback_roots: AtomicUsize::new(0),
            root,
            root_waker,
            drain_turns: config.drain_turns,
            background: Mutex::new(Some(handle)),
        })
    }

    fn key(&self) -> RuntimeKey {
        Arc::as_ptr(&self.slot) as RuntimeKey
    }

    /// What the calling thread is doing for this runtime: whether it is the background thread,
    /// inside a task poll, polling a root, or outside.
    pub fn thread_role(&self) -> ThreadRole {
        frame::role(self.key())
    }

    /// How many `block_on` roots of this runtime are running (on any thread, including those
    /// that fell back; a caller still waiting in the slot for the worker is not counted yet).
    /// The runtime is not quiescent while this is non-zero.
    pub fn active_roots(&self) -> usize {
        self.driven_roots.load(Ordering::Acquire) + self.fallback_roots.load(Ordering::Acquire)
    }

    /// Whether the protocol is closed (shutdown, the worker retired, or a background panic).
    pub fn is_closed(&self) -> bool {
        self.slot.is_closed()
    }

    /// The slot's phase (tests of rule L7).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn phase(&self) -> crate::slot::Phase {
        self.slot.phase()
    }

    /// Whether the background thread died by panicking (L9).
    pub fn background_panicked(&self) -> bool {
        self.slot.background_panicked()
    }

    /// Runs `future` to completion on the calling thread and returns its output.
    ///
    /// The future needs neither `Send` nor `'static`. When the worker can be borrowed (rules
    /// L2–L6, L11) it is polled in place, interleaved with worker turns (L10), dropped in place,
    /// and followed by a bounded drain (L12); otherwise it is polled directly with a waker
    /// that parks this thread. A panic of the future's poll or destructor, or of a worker turn
    /// run for it, is re-raised here with its original payload after the future was dropped and
    /// the worker was returned (L13).
    ///
    /// If the protocol closes while this call has the worker (a shutdown from another thread),
    /// the worker is closed here at the next dispatch boundary ([`LoanWorker::close_on_loan`],
    /// rule L8) and the future is polled once more; the worker is dropped when this call returns.
    ///
    /// A `block_on` inside a task poll of this runtime, or on its background thread, falls back:
    /// it never deadlocks on the slot, but a future that waits for *this* runtime's tasks cannot
    /// make progress there, because the worker is busy running the very task that called it.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        match self.borrow() {
            Ok((origin, worker)) => self.drive(origin, worker, future),
            Err(_) => {
                let _root = FallbackCount::new(&self.fallback_roots);
                poll_in_place(future)
            }
        }
    }

    /// Runs the worker on the calling thread until `until()` holds or `deadline` passes, parking
    /// when idle. Used to drain a runtime before shutdown. If the protocol closes meanwhile, the
    /// worker is closed where it is ([`LoanWorker::close_on_loan`], rule L8) and the drain goes
    /// on; the worker is dropped when it returns.
    pub fn drain_until(&self, deadline: Instant, until: &mut dyn FnMut() -> bool) -> DrainOutcome {
        let (origin, worker) = match self.borrow() {
            Ok(borrowed) => borrowed,
            Err(why) => return DrainOutcome::Unavailable(why),
        };
        let mut frame = Frame::new(&self.slot, self.key(), origin, worker);
        loop {
            let closure = frame.closure_watch();
            let ran = frame.dispatch(|worker| {
                worker.run_until(&mut || until() || closure.fired(), Some(deadline))
            });
            // Rule L8: a closure stopped the run (or raced its end): close the worker where it
            // is, then keep draining until the caller's predicate or deadline.
            if frame.notice_closure() == Closure::Noticed {
                continue;
            }
            return match ran {
                RunOutcome::Satisfied => DrainOutcome::Satisfied,
                RunOutcome::DeadlineReached => DrainOutcome::DeadlineReached,
                RunOutcome::ShuttingDown => DrainOutcome::ShuttingDown,
            };
        }
    }

    /// Borrows the worker from an outer root on this thread, or through the slot (L11).
    fn borrow(&self) -> Result<(Origin, Box<dyn LoanWorker>), Unavailable> {
        match frame::take_nested(self.key()) {
            Nested::Take(worker, outer) => Ok((Origin::Outer(outer), worker)),
            Nested::Busy(role) => Err(Unavailable::Busy(role)),
            Nested::Absent => match self.slot.borrow() {
                Borrow::Loaned(worker) => Ok((Origin::Slot, worker)),
                Borrow::Contended => Err(Unavailable::Contended),
                Borrow::Refused => Err(Unavailable::Refused),
                Borrow::Closed => Err(Unavailable::Closed),
            },
        }
    }

    /// Drives `future` with the borrowed worker (L10, L12, L13, L15).
    fn drive<F: Future>(
        &self,
        origin: Origin,
        worker: Box<dyn LoanWorker>,
        future: F,
    ) -> F::Output {
        // Rule L14: a root that borrowed through the slot is the only one using the loan's
        // waker (L1); a stale clone of it from an earlier root can only cause a spare poll.
        let spare = match origin {
            Origin::Slot => None,
            Origin::Outer(_) => {
                let wake = RootWake::acquire(Arc::clone(&self.unpark));
                let waker = Waker::from(Arc::clone(&wake));
                Some((wake, waker))
            }
        };
        let (wake, waker) = match &spare {
            Some((wake, waker)) => (&**wake, waker),
            None => {
                self.root.rearm();
                (&*self.root, &self.root_waker)
            }
        };
        let mut cx = Context::from_waker(waker);
        // Rule L13: a panicking `enter` unwinds from here; the frame still returns the worker.
        let mut frame = Frame::new(&self.slot, self.key(), origin, worker);
        // Rule L15: the root counts as a task of the worker until it is dropped; only the
        // thread holding the worker writes the count (type invariant).
        frame.worker().root_started();
        let driven = self.driven_roots.load(Ordering::Relaxed);
        self.driven_roots.store(driven + 1, Ordering::Release);
        let mut root = pin!(Some(future));
        // The root's drop, once it ran (L12): right after its completing poll, or below.
        let mut dropped = None;
        // Rule L13: a worker turn may panic too (a wake or drop that fails the runner). That
        // unwind is caught here, so the root is still dropped in place with its context below
        // (never during unwinding, where its panicking destructor would abort the process).
        let ended = panic::catch_unwind(AssertUnwindSafe(|| {
            loop {
                // Rule L8: the slot closed while we hold the worker; close it here, then poll the
                // root again (closing may drop its wakers instead of waking them).
                if frame.notice_closure() == Closure::Noticed {
                    wake.mark();
                }
                if wake.take() {
                    // Rule L10: poll the root in place, its worker parked for nested frames.
                    // Rule L12: a root that completes is dropped in the same parked window, so
                    // the common one-poll `block_on` parks the worker in its entry once.
                    let polled = frame.with_root(|| {
                        let polled = panic::catch_unwind(AssertUnwindSafe(|| {
                            root.as_mut()
                                .as_pin_mut()
                                .expect("the root is present until it completes")
                                .poll(&mut cx)
                        }));
                        if matches!(polled, Ok(Poll::Ready(_))) {
                            dropped = Some(panic::catch_unwind(AssertUnwindSafe(|| {
                                root.set(None);
                            })));
                        }
                        polled
                    });
                    match polled {
                        Ok(Poll::Ready(output)) => break Ok(output),
                        Ok(Poll::Pending) => {}
                        Err(payload) => break Err(payload),
                    }
                    // Rule L10: a self-waking root cannot starve spawned work.
                    let _turn: TurnOutcome = frame.dispatch(|worker| worker.turn());
                } else {
                    let closure = frame.closure_watch();
                    let ran = frame.dispatch(|worker| {
                        worker.run_until(&mut || wake.is_woken() || closure.fired(), None)
                    });
                    if ran == RunOutcome::ShuttingDown {
                        // The worker runs nothing more: wait for the root's own wake.
                        wake.wait();
                    }
                }
            }
        }));
        // A turn's payload and a poll's payload both end the root; they cannot both occur.
        let outcome: Result<F::Output, Box<dyn Any + Send>> = ended.unwrap_or_else(Err);
        // Rule L12: drop the root in place, context installed, worker available for nesting
        // (a root whose poll or turn panicked is still here).
        let dropped = dropped.unwrap_or_else(|| {
            frame.with_root(|| panic::catch_unwind(AssertUnwindSafe(|| root.set(None))))
        });
        let driven = self.driven_roots.load(Ordering::Relaxed);
        self.driven_roots.store(driven - 1, Ordering::Release);
        frame.worker().root_finished();
        if outcome.is_ok() && dropped.is_ok() {
            self.drain(&mut frame);
        }
        drop(frame);
        if let Some((wake, waker)) = spare {
            drop(waker);
            RootWake::recycle(wake);
        }
        // Rule L13: the poll's (or turn's) payload wins over the destructor's.
        match (outcome, dropped) {
            (Err(payload), dropped) => {
                // The losing payload's own destructor may panic: leak it.
                if let Err(lost) = dropped {
                    std::mem::forget(lost);
                }
                panic::resume_unwind(payload)
            }
            (Ok(_), Err(payload)) => panic::resume_unwind(payload),
            (Ok(output), Ok(())) => output,
        }
    }

    /// Rule L12: at most `drain_turns` turns, only while work is runnable; never waits.
    fn drain(&self, frame: &mut Frame<'_>) {
        // Rule L7's question first: a `block_on` that left nothing behind (the common case)
        // then asks the worker once in all.
        if frame.has_nothing_pending() {
            return;
        }
        for _ in 0..self.drain_turns {
            // Asked outside the dispatch: the checks run no task code, so only a turn marks
            // the entry as a task poll (L11).
            let worker = frame.worker();
            if !worker.has_runnable() || worker.is_shutting_down() {
                break;
            }
            let _turn: TurnOutcome = frame.dispatch(|worker| worker.turn());
        }
    }

    /// Closes the protocol (L8) and joins the background thread unless called from it.
    ///
    /// Called from a thread outside the runtime (its role is [`ThreadRole::Outside`]), it first
    /// borrows the worker through the slot like a `block_on` would, closes the slot while
    /// holding it, and drops it on the calling thread, so the local tasks this thread owns are
    /// dropped here rather than leaked. When that borrow is refused (the background thread holds
    /// its own local tasks) or contended (another thread's request or loan is in progress), or
    /// when called from inside the runtime, it just closes: a worker sitting in the slot is
    /// dropped here, the background thread drops one it holds, and a borrower drops one on loan
    /// when it gives it back.
    ///
    /// Idempotent: the first call (off the background thread) claims the join before closing; a
    /// later call returns at once with [`BackgroundExit::NotJoined`], so a thread the background
    /// thread waits for can re-enter shutdown without deadlocking.
    pub fn shutdown(&self) -> ShutdownReport {
        // The join is claimed before the slot closes: closing can run the worker's destructor
        // on the background thread, and a helper thread it waits for may re-enter shutdown. That
        // later call must find the handle gone (and return at once) instead of joining the very
        // thread that is waiting for it. Bound first: a guard in a scrutinee would hold the lock
        // across `join`.
        let role = self.thread_role();
        let join = if role == ThreadRole::Background {
            None
        } else {
            sync::lock(&self.background).take()
        };
        // Rule L8: from outside, take the worker home first (an ordinary request, rules L2-L6). A
        // re-entrant call from the dropped worker's destructor finds the slot closed.
        let borrowed = match role {
            ThreadRole::Outside => match self.slot.borrow() {
                Borrow::Loaned(worker) => Some(worker),
                Borrow::Contended | Borrow::Refused | Borrow::Closed => None,
            },
            ThreadRole::Root | ThreadRole::TaskPoll | ThreadRole::Background => None,
        };
        let worker = match (self.slot.close(), borrowed) {
            // Rule L8: closed while we hold it (`OnLoan`, or `AlreadyClosed` when a concurrent
            // shutdown closed it during our loan); dropped here, outside the slot lock.
            (_, Some(worker)) => {
                drop(worker);
                WorkerDisposal::DroppedNow
            }
            (Close::Taken(worker), None) => {
                drop(worker);
                WorkerDisposal::DroppedNow
            }
            (Close::WithBackground, None) => WorkerDisposal::DroppedByBackground,
            (Close::OnLoan, None) => WorkerDisposal::DroppedOnReturn,
            (Close::AlreadyClosed, None) => WorkerDisposal::AlreadyClosed,
        };
        let background = match join {
            Some(handle) => match handle.join() {
                Ok(()) => BackgroundExit::Joined,
                Err(_) => BackgroundExit::Panicked,
            },
            None => BackgroundExit::NotJoined,
        };
        ShutdownReport { worker, background }
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        let _report = self.shutdown();
    }
}

/// Counts a root polled without the worker (L11); the count drops on every exit path.
struct FallbackCount<'a> {
    count: &'a AtomicUsize,
}

impl<'a> FallbackCount<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self { count }
    }
}

impl Drop for FallbackCount<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Rule L11: polls `future` on the calling thread, parking it between wakes.
pub(crate) fn poll_in_place<F: Future>(future: F) -> F::Output {
    let wake = Arc::new(ThreadWake::new());
    let waker = Waker::from(Arc::clone(&wake));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        wake.wait();
    }
}
