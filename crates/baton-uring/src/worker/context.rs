//! The thread-local "entered worker" context: what [`with_current_waits`] reaches.

use std::cell::Cell;
use std::ptr;

use super::dispatch::WorkerLocal;
use super::waits::Waits;

/// Why [`with_current_waits`] could not run its closure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WaitsError {
    /// No worker is entered on this thread.
    #[error(
        "no Baton worker is entered on this thread; await blocking jobs inside the runtime (in \
         `block_on` or a spawned task)"
    )]
    NotOnWorker,
    /// The wait table is in use further up this thread's stack (a decoder, a waker or a nested
    /// `with_current_waits` call re-entered it).
    #[error(
        "the worker's wait table is already in use on this thread; do not call \
         `with_current_waits` from a decoder, a waker or another `with_current_waits` closure"
    )]
    Busy,
}

crate::sync::thread_local! {
    static CURRENT: Cell<*const WorkerLocal> = const { Cell::new(ptr::null()) };
}

/// Installs `local` as the current thread's worker, returning the previous entry.
pub(crate) fn install(local: &WorkerLocal) -> *const WorkerLocal {
    CURRENT.with(|current| current.replace(local as *const WorkerLocal))
}

/// Restores the entry `install` returned.
pub(crate) fn restore(previous: *const WorkerLocal) {
    CURRENT.with(|current| current.set(previous));
}

/// Runs `f` on the wait table of the worker entered on this thread — the table of *this*
/// thread (worker rule W4). Futures running on the worker use it to register, poll, cancel and
/// discard external waits (for example a blocking job's handle).
///
/// # Errors
///
/// [`WaitsError::NotOnWorker`] when no worker is entered here, [`WaitsError::Busy`] when the
/// table is already in use further up the stack.
pub fn with_current_waits<R>(f: impl FnOnce(&mut Waits<'_>) -> R) -> Result<R, WaitsError> {
    let current = CURRENT.with(Cell::get);
    if current.is_null() {
        return Err(WaitsError::NotOnWorker);
    }
    // SAFETY: a non-null entry was installed by `Worker::enter` and is removed when that guard
    // drops; the guard borrows the worker, whose `WorkerLocal` is boxed, so it is live here. A
    // leaked guard cannot outlive it either: dropping the worker with a guard outstanding
    // aborts, and using it on another thread first enters its driver, which aborts while this
    // thread's leaked guard still names it (see `Worker`'s invariants).
    let local = unsafe { &*current };
    let mut tables = local.waits.try_borrow_mut().map_err(|_| WaitsError::Busy)?;
    Ok(tables.with_here(f))
}
