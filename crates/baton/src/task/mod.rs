//! Tasks: [`spawn`], [`spawn_local`], [`JoinHandle`], [`yield_now`] — from
//! `baton-task`, whose scheduler the runtime's worker embeds — and [`JoinSet`], a set of tasks
//! joined in completion order.
//!
//! `spawn` and `spawn_local` act on the runtime running on the calling thread (inside
//! `Runtime::block_on` or a task); outside one they panic with a message saying to call them
//! there or to use [`Handle::spawn`](crate::Handle::spawn). `spawn` also works in a `block_on`
//! that could not borrow the worker (another thread has it): the task goes to that runtime's
//! injection queue. A local task is only ever polled on
//! the thread that spawned it, so it may hold `!Send` data:
//!
//! ```
//! # fn main() -> std::io::Result<()> {
//! use std::rc::Rc;
//! let rt = baton::Runtime::new()?;
//! let out = rt.block_on(async {
//!     let shared = Rc::new(20);
//!     let local = baton::spawn_local({
//!         let shared = Rc::clone(&shared);
//!         async move { *shared + 1 }
//!     });
//!     let send = baton::spawn(async { 21 });
//!     baton::task::yield_now().await;
//!     local.await.ok().zip(send.await.ok()).map(|(a, b)| a + b)
//! });
//! assert_eq!(out, Some(42));
//! # Ok(())
//! # }
//! ```

use std::future::Future;

mod join_set;

pub use join_set::JoinSet;

pub use baton_task::{
    CancelReason, ContextError, JoinError, JoinHandle, PanicPayload, SpawnError, TaskCounts,
    YieldNow, try_spawn_local, yield_now,
};

use crate::context;
use crate::error::Error;

/// Spawns a `!Send` task on the runtime worker this thread runs; it is only ever polled on this
/// thread (see the module example).
///
/// # Panics
///
/// Outside a runtime, with a message saying where to call it. Inside a `block_on` that could
/// not borrow the worker (another thread is running it, or the call is nested in a task), with
/// a message saying so: a local task could never be polled there. Use [`spawn`] with a `Send`
/// future instead, or [`try_spawn_local`] to get the error as a value.
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    match try_spawn_local(crate::trace::task(future)) {
        Ok(join) => join,
        Err(_) if context::current().is_some() => panic!(
            "baton::spawn_local: this thread is inside `block_on`, but the runtime's worker runs \
             on another thread (a concurrent `block_on` or the background thread holds it, or \
             this call is nested in a task), so a local task could never be polled here; use \
             `baton::spawn` with a `Send` future, or call `spawn_local` from a `block_on` that \
             holds the worker (one thread at a time per runtime, not inside a task)"
        ),
        Err(err) => panic!("{err}"),
    }
}

/// Spawns a `Send` task on the runtime running on this thread.
///
/// # Panics
///
/// Outside a runtime, with a message saying to call it inside `Runtime::block_on` or a task,
/// or to use [`Handle::spawn`](crate::Handle::spawn) from other threads.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let out = rt.block_on(async { baton::spawn(async { 2 + 2 }).await });
/// assert_eq!(out.ok(), Some(4));
/// # Ok(())
/// # }
/// ```
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // Workers rule Q2: the scheduler entered here (this worker's thread) first; else the facade's current runtime
    // (a `block_on` polling in place); else there is no runtime.
    if baton_task::is_entered() {
        return baton_task::spawn(crate::trace::task(future));
    }
    match context::current() {
        Some(handle) => handle.spawn(future),
        None => panic!(
            "{}",
            Error::NotInRuntime {
                function: "baton::spawn"
            }
        ),
    }
}

/// The index of the worker running the calling task or `block_on` root (0 for a root that
/// borrowed the runtime's worker), or `None` when this thread runs no worker — outside a
/// runtime, or in a `block_on` that could not borrow one. A task never changes workers, so the
/// answer is the same at every await of a task.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Builder::new().workers(2).build()?;
/// assert_eq!(rt.block_on(async { baton::task::worker_index() }), Some(0));
/// assert_eq!(baton::task::worker_index(), None);
/// # Ok(())
/// # }
/// ```
pub fn worker_index() -> Option<usize> {
    context::running_worker_index()
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::mpsc;

    #[test]
    fn spawn_local_in_a_block_on_without_the_worker_explains_why() {
        let rt = crate::Runtime::new().expect("a runtime with default settings builds");
        let (holding_tx, holding) = mpsc::channel::<()>();
        let (release_tx, release) = mpsc::channel::<()>();
        let message = std::thread::scope(|scope| {
            // This thread borrows the worker and keeps it while the other one calls.
            let rt = &rt;
            scope.spawn(move || {
                rt.block_on(async {
                    let _ = holding_tx.send(());
                    let _ = release.recv();
                });
            });
            holding.recv().expect("the holding thread starts");
            let caught = rt.block_on(async {
                catch_unwind(AssertUnwindSafe(|| super::spawn_local(async {})))
            });
            let _ = release_tx.send(());
            let payload = caught.expect_err("spawn_local cannot work without the worker");
            payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        });
        assert!(message.contains("another thread"), "{message}");
        assert!(message.contains("baton::spawn"), "{message}");
    }
}
