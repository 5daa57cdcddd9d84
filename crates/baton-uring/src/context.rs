//! The thread-local "entered driver" context. An operation is *local* when the polling or
//! dropping thread has its driver entered (it then touches the driver's state directly), and
//! *foreign* otherwise (it goes through the mailbox).

use std::cell::{Cell, RefCell};

use crate::mailbox::Mailbox;
use crate::state::{Deferred, DriverState, Payload, reraise};
use crate::sync::Arc;

/// The part of a driver that entered threads reach through the context.
pub(crate) struct Inner {
    pub(crate) core: RefCell<DriverState>,
    pub(crate) shared: Arc<Mailbox>,
    /// Emptied deferred buffers, swapped with the core's after each borrow so their capacity is
    /// reused instead of allocating per operation. Taken (left `None`) while being released, so
    /// a re-entrant release never shares it (it gets fresh buffers). Boxed, as the core's are,
    /// so a swap moves a pointer rather than six vectors.
    pub(crate) spare: Cell<Option<Box<Deferred>>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("core", &self.core)
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

/// A context entry: the driver's id and its heap-pinned inner state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entered {
    pub(crate) id: u64,
    inner: *const Inner,
}

crate::sync::thread_local! {
    static CURRENT: Cell<Option<Entered>> = const { Cell::new(None) };
}

crate::sync::thread_local! {
    static TOKEN: u64 = next_token();
}

fn next_token() -> u64 {
    // A process-wide counter in a `static`: `std`, as loom cannot model a static (see `sync`).
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A process-unique number for the current thread (never 0).
pub(crate) fn thread_token() -> u64 {
    TOKEN.with(|t| *t)
}

impl Entered {
    pub(crate) fn new(id: u64, inner: &Inner) -> Entered {
        Entered {
            id,
            inner: inner as *const Inner,
        }
    }

    /// The entered driver's state.
    pub(crate) fn inner(&self) -> &Inner {
        // SAFETY: an entry is installed by `Driver::enter` and removed when its guard drops; the
        // guard borrows the driver, whose `Inner` is boxed. A leaked guard cannot outlive the
        // driver either: dropping or entering the driver on another thread while a guard is
        // outstanding aborts the process (see `Driver`'s invariants), so `inner` is live.
        unsafe { &*self.inner }
    }
}

/// The driver entered on this thread, if any.
pub(crate) fn current() -> Option<Entered> {
    CURRENT.with(Cell::get)
}

/// The entered driver if it is the one with `id`.
pub(crate) fn current_for(id: u64) -> Option<Entered> {
    current().filter(|e| e.id == id)
}

/// Installs `entry`, returning the previous one.
pub(crate) fn replace(entry: Option<Entered>) -> Option<Entered> {
    CURRENT.with(|c| c.replace(entry))
}

/// Runs `f` on the borrowed state, then releases everything it deferred *after* the borrow
/// ends (waker hygiene). A panic from a deferred wake or drop is re-raised after all of them
/// ran, unless the thread is already unwinding.
pub(crate) fn with_core<R>(inner: &Inner, f: impl FnOnce(&mut DriverState) -> R) -> R {
    let (result, deferred) = {
        let mut core = inner
            .core
            .try_borrow_mut()
            .expect("driver state is never borrowed while user code runs");
        let result = f(&mut core);
        if core.deferred.is_empty() {
            return result;
        }
        (result, inner.take_deferred(&mut core))
    };
    if let Some(payload) = inner.release(deferred) {
        reraise(payload);
    }
    result
}

impl Inner {
    /// Swaps the state's deferred values for the spare (empty) buffers, so their capacity is
    /// reused instead of allocating per borrow.
    pub(crate) fn take_deferred(&self, core: &mut DriverState) -> Box<Deferred> {
        let mut spare = self.spare.take().unwrap_or_default();
        std::mem::swap(&mut spare, &mut core.deferred);
        spare
    }

    /// Releases what a borrow deferred, after the borrow ended, and keeps the emptied buffers
    /// as the next spare; returns the first panic's payload.
    pub(crate) fn release(&self, mut deferred: Box<Deferred>) -> Option<Payload> {
        let panic = deferred.release();
        self.spare.set(Some(deferred));
        panic
    }
}
