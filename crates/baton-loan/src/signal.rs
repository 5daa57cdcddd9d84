//! A thread signal with a stored token, and the wakers built on it: the root waker (L14)
//! and the fallback waker that parks the calling thread (L11).

use std::cell::Cell;
use std::sync::Arc;
use std::task::Wake;

use crate::sync::{self, AtomicBool, AtomicUsize, Condvar, Mutex, Ordering, thread_local};
use crate::worker::Unpark;

const EMPTY: usize = 0;
const PARKED: usize = 1;
const NOTIFIED: usize = 2;

/// Parks one thread until notified. A notification sent while nobody waits is stored as a token,
/// so the next [`wait`](Self::wait) returns at once. Invariant: only one thread waits at a time
/// (the thread that owns the `block_on` using it).
#[derive(Debug)]
pub(crate) struct Signal {
    state: AtomicUsize,
    lock: Mutex<()>,
    cond: Condvar,
}

impl Signal {
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicUsize::new(EMPTY),
            lock: Mutex::new(()),
            cond: Condvar::new(),
        }
    }

    /// Stores a token and wakes the waiter, if any. Lock-free unless a thread is parked.
    pub(crate) fn notify(&self) {
        if self.state.swap(NOTIFIED, Ordering::AcqRel) == PARKED {
            // Taking the lock orders this notify after the waiter's move to PARKED and its
            // condvar wait, so the notification cannot fall between them.
            drop(sync::lock(&self.lock));
            self.cond.notify_one();
        }
    }

    /// Waits until a token is available, then consumes it.
    pub(crate) fn wait(&self) {
        if self
            .state
            .compare_exchange(NOTIFIED, EMPTY, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return;
        }
        let mut guard = sync::lock(&self.lock);
        if self
            .state
            .compare_exchange(EMPTY, PARKED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // A notify slipped in after the fast path: consume it.
            self.state.store(EMPTY, Ordering::Release);
            return;
        }
        loop {
            guard = sync::wait(&self.cond, guard);
            if self
                .state
                .compare_exchange(NOTIFIED, EMPTY, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return;
            }
        }
    }
}

/// The waker of a `block_on` root that drives the worker (L14).
///
/// Invariants: `woken` is set by wakers (and by the owning `block_on` itself after closing the
/// worker on loan, rule L8) and cleared only by the owning `block_on` right before it polls the
/// root, so a wake that lands during a poll schedules another poll. `unpark` is `None`
/// only while the waker sits unshared in its thread's spare slot (see [`RootWake::acquire`]),
/// where no waker can reach it.
pub(crate) struct RootWake {
    woken: AtomicBool,
    unpark: Option<Arc<dyn Unpark>>,
    signal: Signal,
}

thread_local! {
    /// This thread's spare root waker, kept so a `block_on` reuses it instead of allocating.
    /// Empty while a `block_on` on this thread holds it (a nested one then allocates its own).
    static SPARE_ROOT: Cell<Option<Arc<RootWake>>> = const { Cell::new(None) };
}

impl std::fmt::Debug for RootWake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RootWake")
            .field("woken", &self.woken.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl RootWake {
    /// A root waker that starts woken, so the root is polled first.
    pub(crate) fn new(unpark: Arc<dyn Unpark>) -> Self {
        Self {
            woken: AtomicBool::new(true),
            unpark: Some(unpark),
            signal: Signal::new(),
        }
    }

    /// A fresh root waker (starts woken, no stored token): this thread's spare one, reset, if
    /// nothing else holds it; otherwise a new allocation. The spare is taken out of its slot, so
    /// a nested `block_on` never shares the waker of the one it runs inside.
    pub(crate) fn acquire(unpark: Arc<dyn Unpark>) -> Arc<Self> {
        let spare = SPARE_ROOT.try_with(Cell::take).ok().flatten();
        if let Some(mut wake) = spare
            && let Some(unshared) = Arc::get_mut(&mut wake)
        {
            // No other strong or weak reference exists, so no waker can observe the reset.
            *unshared = RootWake::new(unpark);
            return wake;
        }
        Arc::new(RootWake::new(unpark))
    }

    /// Returns a finished `block_on`'s waker to this thread's spare slot, if nothing else holds
    /// it (a waker clone the root leaked elsewhere keeps it out). Its unpark token is released
    /// now, so the spare keeps no runtime alive.
    pub(crate) fn recycle(mut wake: Arc<Self>) {
        if let Some(unshared) = Arc::get_mut(&mut wake) {
            unshared.unpark = None;
            // During thread teardown the slot is gone: the waker is simply freed.
            let _ = SPARE_ROOT.try_with(|spare| spare.set(Some(wake)));
        }
    }

    /// Readies a reused waker for its next root (the loan's own, L14): woken, so the root is
    /// polled first. A token a stale wake left in the signal only ends one wait early, and
    /// [`wait`](Self::wait) looks at the flag again.
    pub(crate) fn rearm(&self) {
        self.woken.store(true, Ordering::Release);
    }

    /// Consumes a pending wake: true if the root must be polled now.
    pub(crate) fn take(&self) -> bool {
        self.woken.swap(false, Ordering::AcqRel)
    }

    /// Schedules another poll of the root from its own `block_on` (rule L8: after closing the
    /// worker on loan), without unparking anything: that `block_on` looks at the flag next.
    pub(crate) fn mark(&self) {
        self.woken.store(true, Ordering::Release);
    }

    /// Whether a wake is pending; the worker's run predicate.
    pub(crate) fn is_woken(&self) -> bool {
        self.woken.load(Ordering::Acquire)
    }

    /// Blocks the thread until the next wake (used once the worker stopped running tasks).
    pub(crate) fn wait(&self) {
        while !self.is_woken() {
            self.signal.wait();
        }
    }
}

impl Wake for RootWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Rule L14: publish the wake, then end any idle wait. A wake that finds the flag already
        // set skips the unpark: whoever set it unparks after setting it, and the flag is only
        // cleared by the poll that will observe this wake's effects.
        if !self.woken.swap(true, Ordering::AcqRel) {
            if let Some(unpark) = &self.unpark {
                unpark.unpark();
            }
            self.signal.notify();
        }
    }
}

/// The waker of a `block_on` that could not borrow the worker: it unparks the calling thread.
#[derive(Debug)]
pub(crate) struct ThreadWake {
    signal: Signal,
}

impl ThreadWake {
    pub(crate) fn new() -> Self {
        Self {
            signal: Signal::new(),
        }
    }

    /// Parks the calling thread until the next wake.
    pub(crate) fn wait(&self) {
        self.signal.wait();
    }
}

impl Wake for ThreadWake {
    fn wake(self: Arc<Self>) {
        self.signal.notify();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.signal.notify();
    }
}
