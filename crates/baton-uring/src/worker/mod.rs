//! The [`Worker`]: one [`Driver`], one task [`Scheduler`] and one completion inbox — the unit a
//! runtime owns exactly one of and that the loan driver moves between threads.
//!
//! # Rules (cited as "worker rule W1" ... W11; the turn is drawn below)
//!
//! W1. **Fair turn.** Each turn settles inbox completions (at most `inbox_per_turn`), reaps I/O
//!    and fires timers without blocking, then polls at most `tasks_per_turn` ready tasks (the
//!    scheduler alternates injected, woken and local ones). So a self-waking task cannot starve
//!    I/O, timers, injected tasks or external completions: each gets a look every turn.
//!
//! W2. **Wake after release.** A settled wait's waker is woken only after the wait-table borrow
//!    is released; a panicking waker is caught, every other waker still runs, and the panic
//!    then goes to the driver's [`WakerPanics`](crate::WakerPanics) policy (contained and
//!    counted by default, so the worker keeps running).
//!
//! W3. **No lost wake-up.** A turn parks only when the scheduler, the inbox and the held
//!    completions have nothing runnable. Every wake-up source — an injected spawn or remote
//!    wake (the scheduler's unpark hook), an inbox delivery (inbox rule I2), and
//!    [`WorkerHandle::unpark`] — unparks the driver, whose unpark is a token: a wake between the
//!    checks and the park ends the park at once.
//!
//! W4. **Thread-bound waits.** A `WaitTable` may hold `!Send` decoders and hooks, so each thread
//!    that runs the worker has its own table, only ever touched (and dropped) on that thread;
//!    tables of other threads are leaked at shutdown rather than dropped on the wrong thread.
//!    Waits registered with [`Waits::register_migratable`] (a `SendRuntimeHalf`: everything in
//!    them may live on any thread) go to one table that moves with the worker instead: that is
//!    the path for `Send` tasks, which migrate too.
//!
//! W5. **Routing by full identity.** A completion of another runtime is `Foreign`; one whose
//!    (wait, generation, operation, kind) matches no registered route is `Stale`; both are
//!    counted and dropped, never delivered. A matching one settles in its table, which checks
//!    the identity again and runs the decoder on this thread.
//!
//! W6. **Held completions.** A completion whose wait lives in another thread's table waits
//!    until the worker turns on that thread. [`Worker::has_local_tasks_on_current_thread`]
//!    counts this thread's live waits, so the loan driver keeps the worker where they can
//!    settle.
//!
//! W7. **No re-entrant turn.** A turn started from inside a task poll, a decoder or a waker
//!    does nothing and says so ([`WorkerTurn::reentered`]).
//!
//! W8. **Shutdown order.** Close the inbox (later deliveries report `InboxClosed`), settle what
//!    it accepted, submit the requests tasks registered (so issued writes and syncs are
//!    retained and finish), shut the scheduler down (spawns refused, tasks cancelled; local
//!    tasks of other threads leaked), discard this thread's and the migratable waits, then
//!    close and drain the driver until the deadline. The report says what was settled, cancelled, leaked or left.
//!    [`Worker::close`] runs every step but the drain at once (where the worker is, for
//!    example on a `block_on` caller that keeps polling its root): its driver closure fails
//!    pending polls with `Closed`, cancels in-flight reads and keeps writes and syncs going; a
//!    later [`Worker::shutdown`] skips what `close` did, drains, and reports both.
//!
//! W9. **Quarantine bounds.** A quarantined wait whose bound has a deadline is settled with
//!    `BoundExceeded` (and counted) by the first turn on its thread after the deadline, after
//!    that turn's completions were routed; a park ends just after the next such deadline.
//!
//! W10. **Driver-only turns.** [`Worker::turn_driver_only`] may run where rule W7 refuses a turn
//!     (inside a task poll): it settles the inbox and turns the driver (reap, timers, park)
//!     but polls no task, so a `block_on` nested in a task can wait for its own I/O and
//!     timers without re-entering the scheduler.
//!
//! W11. **Wake listener.** [`Worker::set_wake_listener`] installs one listener, told (after the
//!     driver's unpark) by every wake of rule W3 that comes from another thread: an injected
//!     spawn or remote task wake (the scheduler's unpark hook), [`WorkerHandle::unpark`], and
//!     every driver mailbox message (an operation registered, forwarded, dropped or cancelled
//!     from a foreign thread). So a [dormant](Worker::is_quiescent) worker that nobody drives
//!     learns of its next work there. Inbox deliveries unpark the driver only: a worker with
//!     live waits is not dormant, and a late delivery for a wait already discarded (its handle
//!     dropped after the job started) is routed and dropped at the worker's next turn.
//!
//! ```text
//!  turn(park) ── settle inbox (W5, W6) ── driver.turn(Poll) ── run_ready(budget) ──────┐
//!                                                                                     │
//!   progressed, or work ready, or Park::Poll ─────────────────────────> return report │
//!   idle and Park::Wait(deadline) ──> driver.turn(Wait(deadline)) ────────────────────┘
//!        ends on: CQE │ timer │ deadline │ unpark token (spawn, remote wake, inbox send,
//!                     │       │          │  WorkerHandle::unpark)
//!        then: settle inbox ── run_ready(budget) ──> return report (parked = true)
//!
//!  completion ──runtime id?──no──> Foreign (counted, dropped)
//!      │ yes
//!      └──route (wait, generation, operation, kind)?──none──> Stale (counted, dropped)
//!             │ owner = this thread or migratable  │ owner = other thread
//!             └─> table.settle ─> wake after       └─> held until the worker turns there
//!                 borrows end (W2)
//! ```
//!
//! # Invariants
//!
//! `Worker` is `Send` (it migrates) but not `Sync`. While a [`WorkerGuard`] is outstanding the
//! worker is bound to the guard's thread; a leaked guard makes the worker abort when it is
//! dropped or used on another thread (its driver's invariant), so the thread context never
//! names a dead or foreign worker.

mod context;
mod dispatch;
mod handle;
pub(crate) mod listener;
pub(crate) mod routes;
mod shutdown;
mod waits;

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::Arc;

use baton_completion::{IdentityAllocator, RuntimeId};
use baton_task::{EnterGuard, Scheduler, TaskCounts};

use crate::driver::{Driver, DriverConfig, DriverGuard, DriverMetrics};
use crate::error::SetupError;
use crate::handle::Unparker;
use crate::inbox::{InboxTraffic, inbox};

pub use context::{WaitsError, with_current_waits};
pub use dispatch::{RunUntil, WorkerTurn};
pub use handle::WorkerHandle;
pub use shutdown::{WorkerClose, WorkerShutdownReport};
pub use waits::Waits;

use dispatch::{RouteCounts, WorkerLocal};
use listener::ListenerCell;
use shutdown::Closing;
use waits::WaitTables;

/// How a [`Worker`] is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerConfig {
    driver: DriverConfig,
    tasks_per_turn: usize,
    inbox_per_turn: usize,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            driver: DriverConfig::default(),
            tasks_per_turn: 61,
            inbox_per_turn: 256,
        }
    }
}

impl WorkerConfig {
    /// The defaults: the driver's defaults, 61 task polls and 256 inbox completions per turn.
    pub fn new() -> Self {
        Self::default()
    }

    /// The ring's configuration.
    pub fn driver(mut self, driver: DriverConfig) -> Self {
        self.driver = driver;
        self
    }

    /// At most this many task polls per turn (at least 1) before I/O and timers get a look.
    pub fn tasks_per_turn(mut self, polls: usize) -> Self {
        self.tasks_per_turn = polls;
        self
    }

    /// At most this many inbox completions settled per turn (at least 1).
    pub fn inbox_per_turn(mut self, completions: usize) -> Self {
        self.inbox_per_turn = completions;
        self
    }
}

/// Why [`Worker::new`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerSetupError {
    /// The ring could not be set up.
    #[error(transparent)]
    Ring(#[from] SetupError),
    /// `tasks_per_turn` was zero.
    #[error("tasks_per_turn must be at least 1, or no task would ever run")]
    ZeroTasksPerTurn,
    /// `inbox_per_turn` was zero.
    #[error("inbox_per_turn must be at least 1, or no external completion would ever settle")]
    ZeroInboxPerTurn,
}

/// The scheduler's unpark hook: wakes the driver's park (worker rule W3), then tells the wake
/// listener (W11).
struct WakeDriver {
    unparker: Unparker,
    listener: Arc<ListenerCell>,
}

impl baton_task::Unpark for WakeDriver {
    fn unpark(&self) {
        self.unparker.unpark();
        self.listener.notify();
    }
}

/// One driver, one scheduler and one completion inbox (see the module documentation).
pub struct Worker {
    scheduler: Scheduler,
    /// `Some` until shutdown consumes it.
    driver: Option<Driver>,
    local: Box<WorkerLocal>,
    handle: WorkerHandle,
    config: WorkerConfig,
    entered: Cell<usize>,
    /// Rule W8: what [`Worker::close`] did, until shutdown reports it; `Some` once closed.
    closing: Cell<Option<Closing>>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("runtime", &self.handle.runtime_id)
            .field("driver", &self.driver)
            .field("scheduler", &self.scheduler)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Proof that the worker is entered on this thread (driver, scheduler and worker context);
/// restores the previous context on drop, also when unwinding. Nestable.
pub struct WorkerGuard<'a> {
    worker: &'a Worker,
    previous: *const WorkerLocal,
    scheduler: EnterGuard,
    driver: DriverGuard<'a>,
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for WorkerGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerGuard")
            .field("scheduler", &self.scheduler)
            .field("driver", &self.driver)
            .finish_non_exhaustive()
    }
}

impl Drop for WorkerGuard<'_> {
    fn drop(&mut self) {
        context::restore(self.previous);
        self.worker.entered.set(self.worker.entered.get() - 1);
        // The scheduler guard, then the driver guard, drop next (field order).
    }
}

/// Counters of the completion inbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InboxMetrics {
    /// Deliveries accepted and refused (`InboxClosed`).
    pub traffic: InboxTraffic,
    /// Completions waiting in the channel.
    pub queued: usize,
    /// Completions settled into their waits.
    pub settled: u64,
    /// Stale completions dropped (cancelled, settled, discarded or unknown wait).
    pub stale: u64,
    /// Other runtimes' completions dropped.
    pub foreign: u64,
    /// Completions held for another thread's waits right now (worker rule W6).
    pub held: usize,
    /// Quarantined waits settled with `BoundExceeded` (worker rule W9).
    pub bounds_exceeded: u64,
}

/// The counters of two inboxes together (a runtime with several workers sums theirs).
impl std::ops::Add for InboxMetrics {
    type Output = InboxMetrics;

    fn add(self, other: InboxMetrics) -> InboxMetrics {
        InboxMetrics {
            traffic: self.traffic + other.traffic,
            queued: self.queued + other.queued,
            settled: self.settled + other.settled,
            stale: self.stale + other.stale,
            foreign: self.foreign + other.foreign,
            held: self.held + other.held,
            bounds_exceeded: self.bounds_exceeded + other.bounds_exceeded,
        }
    }
}

/// A snapshot of a worker's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerMetrics {
    /// Task counts.
    pub tasks: TaskCounts,
    /// The driver's counters (ops queued, in flight, timers...).
    pub driver: DriverMetrics,
    /// The inbox's counters.
    pub inbox: InboxMetrics,
    /// Registered waits not consumed yet, on every thread.
    pub waits: usize,
}

impl Worker {
    /// Sets up a ring, a scheduler and an inbox for the runtime `runtime_id`.
    ///
    /// # Errors
    ///
    /// A ring set-up failure naming its cause, or a zero per-turn budget.
    pub fn new(config: WorkerConfig, runtime_id: RuntimeId) -> Result<Worker, WorkerSetupError> {
        if config.tasks_per_turn == 0 {
            return Err(WorkerSetupError::ZeroTasksPerTurn);
        }
        if config.inbox_per_turn == 0 {
            return Err(WorkerSetupError::ZeroInboxPerTurn);
        }
        let driver = Driver::new(config.driver)?;
        let unparker = driver.unparker();
        let listener = Arc::new(ListenerCell::default());
        // Rule W11: a message from another thread (an operation registered, forwarded, dropped
        // or cancelled there) is an outside event too.
        let hook_listener = Arc::clone(&listener);
        let fresh_driver_has_no_hook = driver.set_message_hook(Arc::new(move || {
            hook_listener.notify();
        }));
        debug_assert!(fresh_driver_has_no_hook.is_ok());
        let scheduler = Scheduler::new(Arc::new(WakeDriver {
            unparker: unparker.clone(),
            listener: Arc::clone(&listener),
        }));
        let allocator = IdentityAllocator::new(runtime_id);
        let (sender, receiver) = inbox(unparker);
        let handle = WorkerHandle {
            runtime_id,
            spawner: scheduler.spawner(),
            driver: driver.handle(),
            sender: Arc::clone(&sender),
            allocator: Arc::clone(&allocator),
            listener,
        };
        let local = Box::new(WorkerLocal {
            waits: RefCell::new(WaitTables::new(allocator)),
            inbox: receiver,
            sender,
            turning: Cell::new(false),
            counts: Cell::new(RouteCounts::default()),
            spare_wakers: RefCell::new(Vec::new()),
        });
        Ok(Worker {
            scheduler,
            driver: Some(driver),
            local,
            handle,
            config,
            entered: Cell::new(0),
            closing: Cell::new(None),
        })
    }

    fn driver(&self) -> &Driver {
        self.driver
            .as_ref()
            .expect("the driver lives until shutdown consumes the worker")
    }

    /// A `Clone + Send + Sync` handle.
    pub fn handle(&self) -> WorkerHandle {
        self.handle.clone()
    }

    /// The worker's runtime.
    pub fn runtime_id(&self) -> RuntimeId {
        self.handle.runtime_id
    }

    /// Enters the driver, the scheduler and the worker context on this thread until the guard
    /// drops, so operations, `spawn`/`spawn_local` and [`with_current_waits`] work. Nestable.
    ///
    /// # Panics
    ///
    /// If the scheduler is still entered on another thread (a guard was leaked there).
    pub fn enter(&self) -> WorkerGuard<'_> {
        let driver = self.driver().enter();
        let scheduler = self.scheduler.enter();
        let previous = context::install(&self.local);
        self.entered.set(self.entered.get() + 1);
        WorkerGuard {
            worker: self,
            previous,
            scheduler,
            driver,
            _not_send: PhantomData,
        }
    }

    /// Whether a turn on this thread would find work now: ready tasks (this thread's local
    /// ones included), queued inbox completions, or completions held for this thread.
    ///
    /// It does not enter the worker's context: the scheduler's own claim binds it to this
    /// thread (and panics if another thread holds it, as `enter` would), and the inbox and the
    /// wait tables need no context. Without live tasks it skips the scheduler altogether: only
    /// an unfinished task is ever queued (baton-task rule T2), and each counts as live from its
    /// spawn until it is retired. A spawn racing this check is announced by its own unpark.
    pub fn has_ready_work(&self) -> bool {
        (self.scheduler.has_live_tasks() && self.scheduler.has_ready_for_current_thread())
            || self.ready_besides_tasks()
    }

    /// Installs the wake listener (worker rule W11), at most once.
    ///
    /// # Errors
    ///
    /// A listener is installed already: the new one is handed back, never told anything.
    pub fn set_wake_listener(
        &self,
        listener: Arc<dyn baton_task::Unpark>,
    ) -> Result<(), Arc<dyn baton_task::Unpark>> {
        self.handle.listener.set(listener)
    }

    /// Whether this thread holds live local tasks or live waits of this worker (worker rules W4
    /// and W6): the worker should not leave it.
    pub fn has_local_tasks_on_current_thread(&self) -> bool {
        let _entered = self.enter();
        self.scheduler.live_local_tasks_on_current_thread() > 0
            || self
                .local
                .waits
                .try_borrow()
                .map_or(true, |waits| waits.live_here() > 0)
    }

    /// No live task, no queued or in-flight operation or timer, no message from another thread
    /// waiting to be applied, no wait, no completion queued or held: nothing can progress until
    /// an event from another thread (worker rule W11). Every such event is visible here before
    /// the wake listener hears of it, so an answer of "quiescent" never hides announced work.
    ///
    /// It does not enter the worker's context (nothing it reads needs it), so it is cheap
    /// enough to ask whenever a `block_on` gives the worker back.
    pub fn is_quiescent(&self) -> bool {
        let waits_idle = self
            .local
            .waits
            .try_borrow()
            .is_ok_and(|waits| waits.live() == 0 && waits.held() == 0);
        !self.scheduler.has_live_tasks()
            && self.driver().is_idle()
            && !self.driver().has_messages()
            && waits_idle
            && !self.local.inbox.has_queued()
    }

    /// The worker's counters.
    pub fn metrics(&self) -> WorkerMetrics {
        let _entered = self.enter();
        let counts = self.local.counts.get();
        let (waits, held) = self
            .local
            .waits
            .try_borrow()
            .map_or((0, 0), |waits| (waits.live(), waits.held()));
        WorkerMetrics {
            tasks: self.scheduler.counts(),
            driver: self.driver().metrics(),
            inbox: InboxMetrics {
                traffic: self.local.sender.traffic(),
                queued: self.local.inbox.queued(),
                settled: counts.settled,
                stale: counts.stale,
                foreign: counts.foreign,
                held,
                bounds_exceeded: counts.bounds_exceeded,
            },
            waits,
        }
    }
}
