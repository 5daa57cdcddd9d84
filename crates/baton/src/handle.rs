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
use crate::runtime_worker::RuntimeWorker;
use crate::shared::Shared;
use crate::task::{CancelReason, JoinHandle};

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
    /// The handle's home worker: the one whose thread made it current (0 outside any worker).
    /// Files, sockets and timers made through it submit their requests to that worker's ring
    /// (workers rule Q4).
    pub(crate) worker: usize,
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("runtime", &self.shared.runtime_id())
            .field("worker", &self.worker)
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

    /// Spawns a `Send` task; it runs whether or not anyone is in `block_on` (between calls a
    /// background thread runs worker 0). With several workers it goes to the one with the
    /// fewest live tasks, ties round-robin, and never moves from there
    /// ([`Builder::workers`](crate::Builder::workers)); [`baton::spawn`](crate::spawn) inside a
    /// task keeps to the task's own worker instead. After shutdown the returned handle
    /// resolves to a cancelled [`JoinError`](crate::JoinError) and the future is dropped
    /// unpolled.
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared
            .place()
            .handle()
            .spawn(crate::trace::task(future))
    }

    /// Spawns a `Send` task on worker `index` (0-based), where it stays.
    ///
    /// An index the runtime does not have drops the future unpolled; the handle resolves to a
    /// cancelled [`JoinError`](crate::JoinError) whose reason,
    /// [`CancelReason::NoSuchWorker`](crate::task::CancelReason::NoSuchWorker), names the index
    /// and the number of workers.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Builder::new().workers(2).build()?;
    /// let on_one = rt.handle().spawn_on(1, async { baton::task::worker_index() });
    /// assert_eq!(rt.block_on(on_one).ok(), Some(Some(1)));
    /// let missing = rt.handle().spawn_on(2, async {});
    /// let err = rt.block_on(missing).expect_err("there is no worker 2");
    /// assert!(err.to_string().contains("worker 2"), "{err}");
    /// # Ok(())
    /// # }
    /// ```
    #[track_caller]
    pub fn spawn_on<F>(&self, index: usize, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.shared.worker(index) {
            Some(worker) => worker.handle().spawn(crate::trace::task(future)),
            None => self.shared.primary().handle().spawner().reject(
                future,
                CancelReason::NoSuchWorker {
                    index,
                    workers: self.shared.workers().len(),
                },
            ),
        }
    }

    /// Runs one task per worker: `make(i)` builds the future spawned on worker `i`. The handles
    /// come back in worker order. For per-core loops, such as one accept loop per worker over
    /// [`TcpListener::bind_reuseport`](crate::net::TcpListener::bind_reuseport).
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Builder::new().workers(2).build()?;
    /// let joins = rt.handle().on_each_worker(|i| async move { (i, baton::task::worker_index()) });
    /// let seen: Vec<_> = joins.into_iter().map(|join| rt.block_on(join).ok()).collect();
    /// assert_eq!(seen, [Some((0, Some(0))), Some((1, Some(1)))]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn on_each_worker<M, F>(&self, mut make: M) -> Vec<JoinHandle<F::Output>>
    where
        M: FnMut(usize) -> F,
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared
            .workers()
            .iter()
            .map(|worker| {
                worker
                    .handle()
                    .spawn(crate::trace::task(make(worker.index())))
            })
            .collect()
    }

    /// How many workers the runtime has ([`Builder::workers`](crate::Builder::workers)).
    pub fn worker_count(&self) -> usize {
        self.shared.workers().len()
    }

    /// Spawns on the handle's home worker: where the waits of its blocking jobs live (workers
    /// rule Q4).
    pub(crate) fn spawn_home<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.home().handle().spawn(crate::trace::task(future))
    }

    /// The handle's home worker.
    pub(crate) fn home(&self) -> &RuntimeWorker {
        self.shared
            .worker(self.worker)
            .expect("a handle's home is one of its runtime's workers")
    }

    /// Like [`spawn`](Handle::spawn), but reports a runtime that is shutting down.
    ///
    /// # Errors
    ///
    /// [`Error::ShuttingDown`] once shutdown began; the future is dropped unpolled.
    #[track_caller]
    pub fn try_spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, Error>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if self.shared.is_shutting_down() {
            return Err(Error::ShuttingDown);
        }
        self.shared
            .place()
            .handle()
            .try_spawn(crate::trace::task(future))
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
        // Inside a task poll (or a worker thread's own turn) of this runtime, no loan can lend
        // a worker here; drive the driver of the worker this thread runs (`nested_drive`
        // rules) instead of polling a future whose timers and I/O nobody would complete.
        let primary = self.shared.primary().loan();
        let busy = |role| matches!(role, ThreadRole::TaskPoll | ThreadRole::Background);
        let nested = match primary.thread_role() {
            role if busy(role) => context::runs_worker(self.shared.runtime_id()),
            // Only a thread of worker 1..n has no role for worker 0's loan and still runs a
            // worker of this runtime.
            ThreadRole::Outside if self.shared.workers().len() > 1 => {
                context::current_worker(self.shared.runtime_id()).is_some_and(|running| {
                    busy(self.shared.workers()[running].loan().thread_role())
                })
            }
            _ => false,
        };
        if !nested {
            return primary.block_on(future);
        }
        let mut future = Some(future);
        context::with_worker(self.shared.runtime_id(), |worker| {
            let future = future.take().expect("taken once, here");
            nested_drive::block_on_driver_only(worker, future)
        })
        .unwrap_or_else(|| primary.block_on(future.take().expect("not taken: no worker found")))
    }

    /// Whether shutdown began.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.is_shutting_down()
    }

    /// The runtime's process-unique id.
    pub fn runtime_id(&self) -> RuntimeId {
        self.shared.runtime_id()
    }

    /// The driver that I/O made through this handle binds to: its home worker's. Files bind
    /// here, so every write and sync of one file goes through one driver's durability permits
    /// (a sync there must see the writes made before it).
    pub(crate) fn driver(&self) -> &DriverHandle {
        self.home().handle().driver()
    }

    /// The driver of this runtime's worker that the calling thread is running, else the home
    /// worker's. Sockets bind here: a stream accepted on one worker and served by a task on
    /// another does its I/O on the ring of the worker that polls it, instead of sending every
    /// request to its home worker and having each result forwarded back.
    pub(crate) fn local_driver(&self) -> &DriverHandle {
        crate::context::current_worker(self.shared.runtime_id())
            .and_then(|index| self.shared.worker(index))
            .unwrap_or_else(|| self.home())
            .handle()
            .driver()
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
        // SAFETY: context rule X3 — `this.handle` is borrowed for the whole `block_on`, so it
        // outlives this poll, and `_leave` pops the entry before the poll returns or unwinds.
        unsafe { context::enter(this.handle) };
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
