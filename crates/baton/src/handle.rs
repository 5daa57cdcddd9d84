//! [`Handle`]: a `Clone + Send + Sync` reference to a runtime, usable from any thread.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use baton_completion::RuntimeId;
use baton_loan::ThreadRole;
use baton_uring::DriverHandle;

use crate::context;
use crate::error::Error;
use crate::nested_drive;
use crate::shared::Shared;
use crate::task::JoinHandle;

/// A handle to a runtime: spawns tasks and blocking jobs from any thread, and runs
/// [`block_on`](Handle::block_on). `Clone + Send + Sync`; cloning is cheap.
///
/// A handle does not keep the runtime running: once the [`Runtime`](crate::Runtime) shut down,
/// spawned tasks resolve to a cancelled [`JoinError`](crate::JoinError), and I/O resolves to
/// [`Error::Closed`].
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let handle = rt.handle();
/// let join = std::thread::spawn(move || handle.spawn(async { 6 * 7 }))
///     .join()
///     .expect("the spawning thread does not panic");
/// assert_eq!(rt.block_on(join).ok(), Some(42));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Handle {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("runtime", &self.shared.runtime_id())
            .field("shutting_down", &self.shared.is_shutting_down())
            .finish_non_exhaustive()
    }
}

impl Handle {
    /// The handle of the runtime running on this thread (inside `block_on` or a task).
    ///
    /// # Panics
    ///
    /// Outside a runtime, with a message saying where to call it instead; see
    /// [`try_current`](Handle::try_current).
    #[track_caller]
    pub fn current() -> Handle {
        match Handle::try_current() {
            Ok(handle) => handle,
            Err(err) => panic!("{err}"),
        }
    }

    /// The handle of the runtime running on this thread, if any.
    ///
    /// # Errors
    ///
    /// [`Error::NotInRuntime`] outside a runtime.
    pub fn try_current() -> Result<Handle, Error> {
        context::current().ok_or(Error::NotInRuntime {
            function: "Handle::current",
        })
    }

    /// Spawns a `Send` task; it runs on the runtime's worker whether or not anyone is in
    /// `block_on` (between calls a background thread runs it). After shutdown the returned
    /// handle resolves to a cancelled [`JoinError`](crate::JoinError) and the future is dropped
    /// unpolled.
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared.worker().spawn(future)
    }

    /// Like [`spawn`](Handle::spawn), but reports a runtime that is shutting down.
    ///
    /// # Errors
    ///
    /// [`Error::ShuttingDown`] once shutdown began; the future is dropped unpolled.
    pub fn try_spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, Error>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if self.shared.is_shutting_down() {
            return Err(Error::ShuttingDown);
        }
        self.shared
            .worker()
            .try_spawn(future)
            .map_err(|_| Error::ShuttingDown)
    }

    /// Runs `future` to completion on the calling thread, borrowing the runtime's worker when
    /// it can (see [`Runtime::block_on`](crate::Runtime::block_on), including its caveat for
    /// calls from inside a task: only I/O and timers progress there, never other tasks). After
    /// shutdown the future is still polled to completion, but its I/O fails with
    /// [`Error::Closed`].
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let future = InContext {
            handle: self,
            future,
        };
        let loan = self.shared.loan();
        match loan.thread_role() {
            // Inside a task poll (or the background thread's turn) the loan driver cannot lend
            // the worker; drive its driver from here (`nested_drive` rules) instead of polling
            // a future whose timers and I/O nobody would complete.
            ThreadRole::TaskPoll | ThreadRole::Background
                if context::runs_worker(self.shared.runtime_id()) =>
            {
                let mut future = Some(future);
                context::with_worker(self.shared.runtime_id(), |worker| {
                    let future = future.take().expect("taken once, here");
                    nested_drive::block_on_driver_only(worker, future)
                })
                .unwrap_or_else(|| {
                    loan.block_on(future.take().expect("not taken when no worker was found"))
                })
            }
            _ => loan.block_on(future),
        }
    }

    /// Whether shutdown began.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.is_shutting_down()
    }

    /// The runtime's process-unique id.
    pub fn runtime_id(&self) -> RuntimeId {
        self.shared.runtime_id()
    }

    /// The driver that I/O of this runtime binds to.
    pub(crate) fn driver(&self) -> &DriverHandle {
        self.shared.worker().driver()
    }

    /// Whether two handles refer to the same runtime.
    pub fn same_runtime(&self, other: &Handle) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// The runtime's signal hub, made with `make` by its first listener.
    pub(crate) fn signal_hub(
        &self,
        make: impl FnOnce() -> std::io::Result<std::sync::Arc<crate::signal::Hub>>,
    ) -> std::io::Result<std::sync::Arc<crate::signal::Hub>> {
        self.shared.signal_hub(make)
    }

    /// The runtime's resolver (run it on the blocking pool).
    pub(crate) fn resolver(&self) -> crate::net::Resolver {
        self.shared.resolver().clone()
    }
}

/// Polls a `block_on` root with its runtime installed as the thread's current one, also when
/// the loan driver could not lend the worker (another thread has it, or the runtime shut
/// down): `Handle::current`, the file and socket constructors and `spawn_blocking` then reach
/// this runtime, and report `Closed` after shutdown instead of "not in a runtime".
///
/// Invariant: `future` is structurally pinned (never moved out, dropped in place).
struct InContext<'h, F> {
    handle: &'h Handle,
    future: F,
}

impl<F: Future> Future for InContext<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `future` is structurally pinned (type invariant): it is only reached through
        // this pinned projection and never moved; `handle` is a plain reference.
        let this = unsafe { self.get_unchecked_mut() };
        context::enter(this.handle.clone());
        let _leave = Leave;
        // SAFETY: see above; `this.future` stays where it is.
        unsafe { Pin::new_unchecked(&mut this.future) }.poll(cx)
    }
}

/// Pops the context pushed by [`InContext::poll`], also when the poll unwinds.
struct Leave;

impl Drop for Leave {
    fn drop(&mut self) {
        context::leave();
    }
}
