//! Tasks: [`spawn`], [`spawn_local`], [`JoinHandle`], [`yield_now`] — from
//! `baton-task`, whose scheduler the runtime's worker embeds.
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

pub use baton_task::{
    CancelReason, ContextError, JoinError, JoinHandle, PanicPayload, SpawnError, YieldNow,
    spawn_local, try_spawn_local, yield_now,
};

use crate::context;
use crate::error::Error;

/// Spawns a `Send` task on the runtime running on this thread.
///
/// # Panics
///
/// Outside a runtime, with a message saying to call it inside `Runtime::block_on` or a task,
/// or to use [`Handle::spawn`](crate::Handle::spawn) from other threads.
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // The scheduler entered here (the worker's thread) first; else the facade's current runtime
    // (a `block_on` polling in place); else there is no runtime.
    if let Ok(spawner) = baton_task::try_current() {
        return spawner.spawn(future);
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
