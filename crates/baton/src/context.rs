//! The facade's thread context: which runtime [`Handle`] the free functions (`spawn`,
//! `time::sleep`, `fs::read`, ...) use on this thread.
//!
//! The worker adapter pushes its runtime's handle when the worker is entered on a thread (a
//! `block_on` frame, a background-thread run, a nested `block_on`) and pops it when the worker
//! leaves, so the stack nests exactly like the loan driver's frames, also across distinct
//! runtimes nested on one thread.

use std::cell::RefCell;
use std::io;

use crate::error::Error;
use crate::handle::Handle;

thread_local! {
    static CURRENT: RefCell<Vec<Handle>> = const { RefCell::new(Vec::new()) };
}

/// Makes `handle` the current thread's runtime until the matching [`leave`].
pub(crate) fn enter(handle: Handle) {
    CURRENT.with(|stack| stack.borrow_mut().push(handle));
}

/// Restores the runtime that was current before the matching [`enter`].
pub(crate) fn leave() {
    let left = CURRENT.with(|stack| stack.borrow_mut().pop());
    debug_assert!(left.is_some(), "leave pairs with an earlier enter");
    drop(left);
}

/// The current thread's runtime, if any.
pub(crate) fn current() -> Option<Handle> {
    CURRENT.with(|stack| stack.borrow().last().cloned())
}

/// The current thread's runtime, or an `io::Error` carrying [`Error::NotInRuntime`] that names
/// `function`.
pub(crate) fn require(function: &'static str) -> io::Result<Handle> {
    current().ok_or_else(|| Error::NotInRuntime { function }.into_io())
}
