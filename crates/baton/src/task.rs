//! Tasks: [`spawn`], [`spawn_local`], [`JoinHandle`], [`yield_now`] — re-exported from
//! `baton-task`, whose scheduler the runtime's worker embeds.
//!
//! `spawn` and `spawn_local` act on the runtime running on the calling thread (inside
//! `Runtime::block_on` or a task); outside one they panic with a message saying to call them
//! there or to use [`Handle::spawn`](crate::Handle::spawn). A local task is only ever polled on
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

pub use baton_task::{
    CancelReason, ContextError, JoinError, JoinHandle, PanicPayload, SpawnError, YieldNow, spawn,
    spawn_local, try_spawn_local, yield_now,
};
