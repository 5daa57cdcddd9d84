//! The facade's thread context: which runtime [`Handle`] the free functions (`spawn`,
//! `time::sleep`, `fs::read`, ...) use on this thread, and — while this thread runs the
//! runtime's worker — where that worker is.
//!
//! The worker adapter pushes (a pointer to) its runtime's handle when the worker is entered on a
//! thread (a `block_on` frame, a background-thread run, a nested `block_on`) and pops it when
//! the worker leaves, so the stack nests exactly like the loan driver's frames, also across distinct
//! runtimes nested on one thread. A `block_on` root polled without the worker pushes its handle
//! alone.
//!
//! # Rules
//!
//! X1. An entry carries a worker pointer only while the adapter that pushed it holds that
//!    worker, boxed and in place, on this thread (between its `enter` and `leave`, or for the
//!    span of a turn); the adapter pops the entry before the worker can move or drop.
//!
//! X2. The pointer is used only on this thread and only through shared references: the worker's
//!    own methods that are allowed while a turn runs further up the stack (metrics, the
//!    driver-only turn of worker rule W10).
//!
//! X3. An entry points at its handle instead of holding a clone (two reference-count updates
//!    less per push and pop, which every `block_on` and turn pays): the pusher keeps that
//!    handle alive and in place until the matching [`leave`], which a guard runs also when
//!    unwinding — the root's `InContext` for the span of its poll (its handle is borrowed for
//!    the whole `block_on`), the adapter with its own handle (boxed with it) between its
//!    `enter` and `leave`, or for a turn. A handle read from the stack is cloned before it
//!    leaves this module.

use std::cell::RefCell;
use std::io;
use std::ptr::NonNull;

use baton_completion::RuntimeId;
use baton_uring::Worker;

use crate::error::Error;
use crate::handle::Handle;

/// One frame of this thread's context.
struct Entry {
    /// Rule X3: valid while this entry is on the stack.
    handle: NonNull<Handle>,
    /// Rule X1: valid while this entry is on the stack.
    worker: Option<NonNull<Worker>>,
}

impl Entry {
    /// The entry's handle, borrowed no longer than the borrow of the stack it is read from.
    fn handle(&self) -> &Handle {
        // SAFETY: rule X3 — the pusher keeps the handle alive and in place until this entry is
        // popped, and the entry is still on the stack (it is borrowed from it here).
        unsafe { self.handle.as_ref() }
    }
}

thread_local! {
    static CURRENT: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// Makes `handle` the current thread's runtime until the matching [`leave`].
///
/// # Safety
///
/// Rule X3: `handle` stays alive and in place until the matching [`leave`], which the caller
/// runs also when unwinding.
pub(crate) unsafe fn enter(handle: &Handle) {
    let handle = NonNull::from(handle);
    CURRENT.with(|stack| {
        stack.borrow_mut().push(Entry {
            handle,
            worker: None,
        })
    });
}

/// Like [`enter`], and records that this thread runs `worker` until the matching [`leave`].
///
/// # Safety
///
/// Rule X1: `worker` stays alive and in place, on this thread, until the matching [`leave`];
/// rule X3: so does `handle`.
pub(crate) unsafe fn enter_with_worker(handle: &Handle, worker: &Worker) {
    let handle = NonNull::from(handle);
    let worker = Some(NonNull::from(worker));
    CURRENT.with(|stack| stack.borrow_mut().push(Entry { handle, worker }));
}

/// Restores the runtime that was current before the matching [`enter`].
pub(crate) fn leave() {
    let left = CURRENT.with(|stack| stack.borrow_mut().pop());
    debug_assert!(left.is_some(), "leave pairs with an earlier enter");
}

/// The current thread's runtime, if any.
pub(crate) fn current() -> Option<Handle> {
    CURRENT.with(|stack| stack.borrow().last().map(|entry| entry.handle().clone()))
}

/// Runs `f` with `runtime`'s worker when this thread is running it (further up the stack);
/// `None` otherwise. The context's borrow is released before `f` runs, so `f` may re-enter.
pub(crate) fn with_worker<R>(runtime: RuntimeId, f: impl FnOnce(&Worker) -> R) -> Option<R> {
    let worker = CURRENT.with(|stack| {
        stack
            .borrow()
            .iter()
            .rev()
            .filter(|entry| entry.handle().shared.runtime_id() == runtime)
            .find_map(|entry| entry.worker)
    })?;
    // SAFETY: rule X1 — the entry holding this pointer is still on this thread's stack (only
    // frames above it may have been pushed since), so the worker is alive, in place and on this
    // thread; rule X2 — only a shared reference is made, and `Worker` is built for shared use
    // on its thread (interior mutability, re-entrancy checked by the worker itself).
    let worker = unsafe { worker.as_ref() };
    Some(f(worker))
}

/// Whether this thread is running one of `runtime`'s workers further up its stack.
pub(crate) fn runs_worker(runtime: RuntimeId) -> bool {
    current_worker(runtime).is_some()
}

/// The index of `runtime`'s worker this thread runs further up its stack (the innermost one,
/// the one [`with_worker`] reaches), if any.
pub(crate) fn current_worker(runtime: RuntimeId) -> Option<usize> {
    CURRENT.with(|stack| {
        stack
            .borrow()
            .iter()
            .rev()
            .filter(|entry| entry.handle().shared.runtime_id() == runtime)
            .find(|entry| entry.worker.is_some())
            .map(|entry| entry.handle().worker)
    })
}

/// The index of the worker this thread is running right now (the innermost entry that holds
/// one), of whichever runtime.
pub(crate) fn running_worker_index() -> Option<usize> {
    CURRENT.with(|stack| {
        stack
            .borrow()
            .iter()
            .rev()
            .find(|entry| entry.worker.is_some())
            .map(|entry| entry.handle().worker)
    })
}

/// The current thread's runtime, or an `io::Error` carrying [`Error::NotInRuntime`] that names
/// `function`.
pub(crate) fn require(function: &'static str) -> io::Result<Handle> {
    current().ok_or_else(|| Error::NotInRuntime { function }.into_io())
}
