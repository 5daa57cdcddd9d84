//! The worker's wait tables: one [`WaitTable`] per thread that ran the worker, and the routes
//! that send each external completion to the table holding its wait (worker rules W4–W6).
//!
//! A `WaitTable` is `!Send` (decoders and cancel hooks may hold `Rc`), while the worker
//! migrates between threads. So, like local tasks, each thread gets its own table, reachable
//! only on that thread ([`ThreadTable`]); a completion for a wait of another thread is held
//! until the worker turns on that thread again. Waits whose decoder, hook and value may live on
//! any thread (a [`SendRuntimeHalf`], registered with [`Waits::register_migratable`]) go to one
//! extra table that moves with the worker, so they settle and are consumed wherever it runs.

use std::any::Any;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::mem::ManuallyDrop;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Waker};

use baton_cancel::{ContainedDrop, HookResult};
use baton_completion::{
    BoundCheck, CancelOutcome, CompletionIdentity, Discarded, ExternalCompletion,
    IdentityAllocator, IdentityError, RegisterError, RuntimeHalf, RuntimeId, SendRuntimeHalf,
    SettleOutcome, WaitError, WaitKey, WaitTable,
};
use web_time::Instant;

use super::routes::{Route, Routes};
use crate::context::thread_token;

/// The route owner of migratable waits (thread tokens are never 0).
pub(super) const MIGRATABLE: u64 = 0;

/// One thread's wait table.
///
/// Invariant: `table` is only touched (used or dropped) on the thread whose token is `owner`;
/// elsewhere it is leaked, never dropped (worker rule W4).
struct ThreadTable {
    owner: u64,
    live: usize,
    table: ManuallyDrop<WaitTable>,
}

// SAFETY: the `!Send` parts of a `WaitTable` (decoders, hooks, decoded values) are only reached
// through `ThreadTable::get`, which checks that the calling thread is `owner`, and the table is
// only dropped on `owner` (leaked elsewhere), so moving the wrapper between threads never lets
// another thread touch them. `owner` and `live` are plain data.
unsafe impl Send for ThreadTable {}

impl ThreadTable {
    fn get(&mut self) -> Option<&mut WaitTable> {
        (self.owner == thread_token()).then_some(&mut *self.table)
    }
}

impl Drop for ThreadTable {
    fn drop(&mut self) {
        if self.owner == thread_token() {
            // SAFETY: we are on the owner thread (the type's invariant) and `table` is never
            // touched again: this is the wrapper's destructor.
            unsafe { ManuallyDrop::drop(&mut self.table) };
        }
    }
}

/// The table of migratable waits.
///
/// Invariant: it only holds runtime halves registered through [`Waits::register_migratable`],
/// which takes a [`SendRuntimeHalf`]: the decoder, the hook and the decoded value may be used
/// and dropped on any thread (that type's invariant). No internal wait goes here.
struct MigratableTable(WaitTable);

// SAFETY: by the type's invariant, every value in the table may be used and dropped on any
// thread; the table itself is only reached through `&mut WaitTables`, one thread at a time.
unsafe impl Send for MigratableTable {}

/// What routing one completion did.
#[must_use]
#[derive(Debug)]
pub(crate) enum Routed {
    /// Settled into its wait; wake this waker after every borrow is released.
    Settled(Option<Waker>),
    /// Stale: its wait was cancelled, settled, discarded or never existed. Dropped.
    Stale,
    /// Another runtime's completion. Dropped.
    Foreign,
    /// Its wait lives in another thread's table: held until the worker runs there.
    Held,
}

/// Every table of one worker, plus the routes and the held completions.
pub(crate) struct WaitTables {
    allocator: StdArc<IdentityAllocator>,
    tables: Vec<ThreadTable>,
    migratable: MigratableTable,
    routes: Routes,
    /// Deadlines of quarantined waits' bounds, with their table's owner (worker rule W9).
    bounds: Bounds,
    held: Vec<(u64, ExternalCompletion)>,
}

type Bounds = BinaryHeap<Reverse<(Instant, u64)>>;

impl std::fmt::Debug for WaitTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitTables")
            .field("runtime", &self.allocator.runtime_id())
            .field("threads", &self.tables.len())
            .field("waits", &self.live())
            .field("routes", &self.routes.len())
            .field("held", &self.held.len())
            .finish()
    }
}

impl WaitTables {
    pub(crate) fn new(allocator: StdArc<IdentityAllocator>) -> WaitTables {
        WaitTables {
            migratable: MigratableTable(WaitTable::new(StdArc::clone(&allocator))),
            allocator,
            tables: Vec::new(),
            routes: Routes::default(),
            bounds: BinaryHeap::new(),
            held: Vec::new(),
        }
    }

    pub(crate) fn runtime_id(&self) -> RuntimeId {
        self.allocator.runtime_id()
    }

    /// The index of the current thread's table, created on first use.
    fn here_index(&mut self) -> usize {
        let token = thread_token();
        match self.tables.iter().position(|t| t.owner == token) {
            Some(index) => index,
            None => {
                self.tables.push(ThreadTable {
                    owner: token,
                    live: 0,
                    table: ManuallyDrop::new(WaitTable::new(StdArc::clone(&self.allocator))),
                });
                self.tables.len() - 1
            }
        }
    }

    /// Runs `f` on the current thread's view.
    pub(crate) fn with_here<R>(&mut self, f: impl FnOnce(&mut Waits<'_>) -> R) -> R {
        let owner = thread_token();
        let index = self.here_index();
        let WaitTables {
            tables,
            migratable,
            routes,
            bounds,
            ..
        } = self;
        let thread = &mut tables[index];
        let table = thread
            .get()
            .expect("worker rule W4: a table is looked up by its owner's token");
        let mut view = Waits {
            table,
            migratable: &mut migratable.0,
            routes,
            bounds,
            owner,
        };
        let result = f(&mut view);
        thread.live = thread.table.len();
        result
    }

    /// Worker rule W5: routes one completion by its full identity.
    pub(crate) fn route(&mut self, completion: ExternalCompletion) -> Routed {
        if completion.runtime_id != self.runtime_id() {
            let _ = ContainedDrop::drop_value(completion);
            return Routed::Foreign;
        }
        let route = self
            .routes
            .get(completion.wait_id, completion.generation)
            .filter(|route| {
                route.operation_id == completion.operation_id && route.kind == completion.kind
            });
        let Some(route) = route else {
            let _ = ContainedDrop::drop_value(completion);
            return Routed::Stale;
        };
        let here = thread_token();
        if route.owner != here && route.owner != MIGRATABLE {
            self.held.push((route.owner, completion));
            return Routed::Held;
        }
        // Exactly one completion carries this identity: the route is used up either way.
        self.routes
            .remove(completion.wait_id, completion.generation);
        let settled = if route.owner == MIGRATABLE {
            self.migratable.0.settle(completion)
        } else {
            self.with_here(|waits| waits.table.settle(completion))
        };
        match settled {
            SettleOutcome::Settled { waker } => Routed::Settled(waker),
            SettleOutcome::Stale => Routed::Stale,
            SettleOutcome::Foreign => Routed::Foreign,
        }
    }

    /// Whether any quarantine bound is armed (worker rule W9); without one a turn need not read
    /// the clock for [`check_due_bounds`](Self::check_due_bounds).
    pub(crate) fn has_bounds(&self) -> bool {
        !self.bounds.is_empty()
    }

    /// Worker rule W9: settles, with `BoundExceeded`, the quarantined waits of this thread and
    /// the migratable ones whose bound passed before `now`. Cheap when none is due.
    pub(crate) fn check_due_bounds(&mut self, now: Instant) -> BoundCheck {
        let here = thread_token();
        let mut due = false;
        let mut elsewhere = Vec::new();
        while let Some(&Reverse((deadline, owner))) = self.bounds.peek() {
            if deadline >= now {
                break;
            }
            self.bounds.pop();
            if owner == here || owner == MIGRATABLE {
                due = true;
            } else {
                elsewhere.push(Reverse((deadline, owner)));
            }
        }
        self.bounds.extend(elsewhere);
        if due {
            self.with_here(|waits| waits.check_bounds(now))
        } else {
            BoundCheck::default()
        }
    }

    /// The earliest bound deadline this thread has to check (worker rule W9).
    pub(crate) fn next_bound_here(&self) -> Option<Instant> {
        let here = thread_token();
        self.bounds
            .iter()
            .filter(|Reverse((_, owner))| *owner == here || *owner == MIGRATABLE)
            .map(|Reverse((deadline, _))| *deadline)
            .min()
    }

    /// Worker rule W6: takes the held completions whose wait lives on the current thread.
    pub(crate) fn take_held_here(&mut self) -> Vec<ExternalCompletion> {
        let here = thread_token();
        if !self.held.iter().any(|(owner, _)| *owner == here) {
            return Vec::new();
        }
        let (mine, others) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|(owner, _)| *owner == here);
        self.held = others;
        mine.into_iter().map(|(_, completion)| completion).collect()
    }

    /// Whether completions are held for any thread's waits.
    pub(crate) fn has_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// Whether completions for this thread's waits are held.
    pub(crate) fn has_held_here(&self) -> bool {
        let here = thread_token();
        self.held.iter().any(|(owner, _)| *owner == here)
    }

    /// Waits registered on this thread (not migratable ones) and not consumed yet.
    pub(crate) fn live_here(&self) -> usize {
        let here = thread_token();
        self.tables
            .iter()
            .find(|t| t.owner == here)
            .map_or(0, |t| t.live)
    }

    /// Waits registered on any thread and not consumed yet.
    pub(crate) fn live(&self) -> usize {
        self.tables.iter().map(|t| t.live).sum::<usize>() + self.migratable.0.len()
    }

    /// Completions held for other threads.
    pub(crate) fn held(&self) -> usize {
        self.held.len()
    }

    /// Shutdown: discards every wait of this thread and every migratable wait (cancelling jobs
    /// that have not started) and drops their tables; leaks the tables of other threads
    /// (worker rule W4) and drops the completions held for them. Returns what it did.
    pub(crate) fn close(&mut self) -> ClosedWaits {
        let here = thread_token();
        let mine: Vec<WaitKey> = self
            .routes
            .iter()
            .filter(|(_, _, route)| route.owner == here || route.owner == MIGRATABLE)
            .map(|(wait_id, generation, _)| WaitKey {
                runtime_id: self.allocator.runtime_id(),
                wait_id,
                generation,
            })
            .collect();
        let mut closed = ClosedWaits::default();
        let discarded = self.with_here(|waits| {
            let mut count = 0;
            for key in mine {
                if let Discarded::Removed { .. } = waits.discard(key) {
                    count += 1;
                }
            }
            count + waits.table.len() + waits.migratable.len()
        });
        let fresh = WaitTable::new(StdArc::clone(&self.allocator));
        drop(std::mem::replace(&mut self.migratable.0, fresh));
        closed.discarded = discarded;
        self.routes.clear();
        self.bounds.clear();
        for thread in std::mem::take(&mut self.tables) {
            if thread.owner != here {
                closed.leaked += thread.live;
            }
            drop(thread);
        }
        for (_, completion) in std::mem::take(&mut self.held) {
            closed.held_dropped += 1;
            let _ = ContainedDrop::drop_value(completion);
        }
        closed
    }
}

/// What closing the wait tables did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClosedWaits {
    pub(crate) discarded: usize,
    pub(crate) leaked: usize,
    pub(crate) held_dropped: usize,
}

/// The current thread's wait table, as futures running on the worker see it (through
/// [`with_current_waits`](crate::with_current_waits)).
///
/// Wakers returned by [`complete_internal`](Waits::complete_internal),
/// [`cancel`](Waits::cancel) and [`check_bounds`](Waits::check_bounds) must be woken after the
/// closure returns (the wait table never wakes itself).
pub struct Waits<'a> {
    table: &'a mut WaitTable,
    migratable: &'a mut WaitTable,
    routes: &'a mut Routes,
    bounds: &'a mut Bounds,
    owner: u64,
}

impl std::fmt::Debug for Waits<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waits").field("table", &self.table).finish()
    }
}

impl Waits<'_> {
    /// The worker's runtime.
    pub fn runtime_id(&self) -> RuntimeId {
        self.table.runtime_id()
    }

    /// Registers a binding's runtime half in this thread's table: its completion settles, and
    /// its value is consumed, only on this thread (worker rules W4–W6). Its decoder and hook may
    /// be `!Send`.
    pub fn register(&mut self, half: RuntimeHalf) -> Result<WaitKey, RegisterError> {
        let identity = half.identity();
        let bound = bound_deadline(&half);
        let key = self.table.register(half)?;
        self.route(identity, bound, self.owner);
        Ok(key)
    }

    /// Registers a binding's `Send` runtime half (from
    /// [`Registrar::bind_send`](baton_completion::Registrar::bind_send)) in the table that
    /// moves with the worker: its completion settles, and its value can be polled, on whichever
    /// thread runs the worker. Use it for waits polled by `Send` tasks, which may move between
    /// threads.
    pub fn register_migratable(&mut self, half: SendRuntimeHalf) -> Result<WaitKey, RegisterError> {
        // `MigratableTable`'s invariant: only a `SendRuntimeHalf` enters it.
        let half = RuntimeHalf::from(half);
        let identity = half.identity();
        let bound = bound_deadline(&half);
        let key = self.migratable.register(half)?;
        self.route(identity, bound, MIGRATABLE);
        Ok(key)
    }

    fn route(&mut self, identity: CompletionIdentity, bound: Option<Instant>, owner: u64) {
        if let Some(deadline) = bound {
            self.bounds.push(Reverse((deadline, owner)));
        }
        self.routes.insert(
            identity.wait_id,
            identity.generation,
            Route {
                owner,
                operation_id: identity.operation_id,
                kind: identity.kind,
            },
        );
    }

    /// Registers an internal wait (settled by [`complete_internal`](Waits::complete_internal)).
    pub fn register_internal(&mut self) -> Result<WaitKey, IdentityError> {
        self.table.register_internal()
    }

    /// Settles an internal wait.
    pub fn complete_internal(&mut self, key: WaitKey, value: Box<dyn Any>) -> SettleOutcome {
        self.table.complete_internal(key, value)
    }

    /// Polls a wait (of this thread or migratable) for the value its decoder produces; see
    /// [`WaitTable::poll_wait`]. A wait of another thread is `UnknownWait` here.
    pub fn poll_wait<T: 'static>(
        &mut self,
        key: WaitKey,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, WaitError>> {
        // A key lives in at most one table, and an unknown key has no side effect.
        match self.table.poll_wait(key, cx) {
            Poll::Ready(Err(WaitError::UnknownWait { .. })) => self.migratable.poll_wait(key, cx),
            polled => polled,
        }
    }

    /// Cancels a wait through the cancel state machine; see [`WaitTable::cancel`].
    pub fn cancel(&mut self, key: WaitKey) -> CancelOutcome {
        match self.table.cancel(key) {
            CancelOutcome::Unknown => self.migratable.cancel(key),
            outcome => outcome,
        }
    }

    /// Calls an interruptible wait's hook again; see [`WaitTable::reap`].
    pub fn reap(&mut self, key: WaitKey) -> Option<HookResult> {
        self.table.reap(key).or_else(|| self.migratable.reap(key))
    }

    /// Removes a wait whatever its state; a later completion is counted stale.
    pub fn discard(&mut self, key: WaitKey) -> Discarded {
        let discarded = match self.table.discard(key) {
            Discarded::Unknown => self.migratable.discard(key),
            removed => removed,
        };
        if let Discarded::Removed { .. } = discarded {
            self.routes.remove(key.wait_id, key.generation);
        }
        discarded
    }

    /// Settles quarantined waits (of this thread and migratable ones) past their bound; see
    /// [`WaitTable::check_bounds`].
    pub fn check_bounds(&mut self, now: Instant) -> BoundCheck {
        let mut check = self.table.check_bounds(now);
        let migratable = self.migratable.check_bounds(now);
        check.exceeded += migratable.exceeded;
        check.wakers.extend(migratable.wakers);
        check
    }

    /// This thread's table, read-only (counters, length, tracing).
    pub fn table(&self) -> &WaitTable {
        self.table
    }

    /// The migratable table, read-only.
    pub fn migratable_table(&self) -> &WaitTable {
        self.migratable
    }
}

/// The deadline of a quarantined half's bound, if it has one.
fn bound_deadline(half: &RuntimeHalf) -> Option<Instant> {
    half.resource().bound().and_then(|bound| bound.deadline())
}
