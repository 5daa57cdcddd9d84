//! Baton's task scheduler: the task loop the worker embeds.
//!
//! A [`Scheduler`] is owned by the runtime's single worker and moves with it between threads
//! (a background thread runs it between `block_on` calls; the calling thread borrows it during
//! `block_on`). It runs `Send` tasks spawned from any thread through a [`Spawner`] and local
//! (`!Send`) tasks spawned on the thread running the worker. Each task is one reference-counted
//! allocation holding its header, its future and then its output; a [`JoinHandle`] awaits it.
//!
//! # Guarantees
//!
//! * A local task is only ever polled, and its future only dropped, on the thread that spawned
//!   it. While the worker runs elsewhere it stays queued; shutdown on a foreign thread leaks it.
//! * A wake is never lost, from any thread; a remote wake or injected spawn calls the
//!   [`Unpark`] hook. A spawn racing shutdown either runs or resolves cancelled, never both.
//! * `run_ready` is fair: injected, woken and local tasks all progress.
//! * A panicking task is reported through its handle ([`JoinError::Panicked`]); a panicking
//!   destructor is contained; while unwinding, values are leaked rather than dropped.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//!
//! struct NoPark;
//! impl baton_task::Unpark for NoPark {
//!     fn unpark(&self) {}
//! }
//!
//! let scheduler = baton_task::Scheduler::new(Arc::new(NoPark));
//! let spawner = scheduler.spawner();
//! let remote = std::thread::spawn(move || spawner.spawn(async { 40 })).join().unwrap();
//! let root = scheduler.spawn_local(async move {
//!     let local = baton_task::spawn_local(async { std::rc::Rc::new(2) });
//!     remote.await.unwrap() + *local.await.unwrap()
//! });
//! while !root.is_finished() {
//!     let _ = scheduler.run_ready(64);
//! }
//! let _ = scheduler.shutdown();
//! ```
//!
//! # Decisions
//!
//! * Spawning after shutdown queues nothing: [`Spawner::spawn`] returns a handle that resolves
//!   to [`JoinError::Cancelled`] with [`CancelReason::SpawnAfterShutdown`];
//!   [`Spawner::try_spawn`] reports [`SpawnError::Shutdown`] instead.
//! * [`spawn`] and [`spawn_local`] outside a runtime context panic with a message saying what to
//!   do; [`try_current`] and [`try_spawn_local`] never panic.
//! * Aborting a task that already finished changes nothing: its output is still returned.
//! * [`yield_now`] works under any executor.
//! * The scheduler is `Send` but not `Sync`, and a local task's handle is `Send` only when its
//!   output is:
//!
//! ```compile_fail
//! fn assert_sync<T: Sync>() {}
//! assert_sync::<baton_task::Scheduler>();
//! ```
//!
//! ```compile_fail
//! fn assert_send<T: Send>() {}
//! assert_send::<baton_task::JoinHandle<std::rc::Rc<u8>>>();
//! ```
//!
//! # Protocol rules (cited in the code; drawn in `docs/protocols/tasks.md`)
//!
//! T1. **One allocation, counted references, one of them the registry's.** A task is one heap
//!    allocation (header + future + output) whose references are counted in its state word,
//!    above the flags. Run queue entries, the registry, wakers and the `JoinHandle` each hold
//!    one; the last one to go frees the task. A wake by value hands the waker's reference to
//!    the queue entry, and a poll that ends idle releases the queue entry's reference, each in
//!    the same atomic instruction that changes the flags. The scheduler's registry holds one
//!    reference per unfinished task that has parked, so shutdown can reach tasks that sit idle
//!    while only their wakers are held elsewhere: a task's first park keeps its queue entry's
//!    reference, which becomes the registry's. A task that never parked is in a run queue or
//!    being polled, and its poller's reference keeps it alive, so one that finishes in its
//!    first poll never touches the registry.
//!    A task keeps its scheduler alive with one *unit* of it rather than an `Arc` count: while
//!    any unit is out (held by a task, or spare with the claim holder, which counts them in
//!    batches and gives its spares back when it releases the claim) the units together own one
//!    strong count of the scheduler's state. The holder of the claim hands out and takes back
//!    units without touching the shared count; elsewhere each is counted, and the release that
//!    brings the count to zero gives up that strong count.
//!
//! T2. **One queue entry per notification.** A wake sets `NOTIFIED`; only the waker that found the
//!    task idle (neither notified, running nor complete) pushes it, onto the core's queues when
//!    its thread holds the core (no lock), onto the injection queue otherwise (then unparks).
//!
//! T3. **One poller.** Starting a poll turns `NOTIFIED` into `RUNNING`; only the `RUNNING` holder
//!    touches the future. A wake during the poll only sets `NOTIFIED`; the poller requeues the
//!    task when the poll returns `Pending`, so a wake racing a poll is never lost. A new task is
//!    born `RUNNING | FRESH`, the poll right held by its first queue entry, so its first start
//!    only reads the word; leaving the first poll clears `FRESH`.
//!
//! T4. **Abort is a wake plus `CANCELLED`.** The next start (or the end of the current poll) drops
//!    the future instead of polling it; a task aborted before its first poll is never polled. An
//!    abort after completion changes nothing: the output is still returned.
//!
//! T5. **Completion is terminal.** The `RUNNING` holder drops the future, stores the result, then
//!    sets `COMPLETE`. After that only the `JoinHandle` touches the stored result. A poll that
//!    returns the output takes the task out of the registry first (if it parked); when the
//!    handle is alive and published no waker, the transition that sets `COMPLETE` also releases
//!    the queue entry's reference and the registry's, if any (T1), after which the completer does not touch the
//!    task again (the handle may free it at once).
//!
//! T6. **Join handshake.** The handle stores its waker, then sets `JOIN_WAKER`; completion wakes
//!    the waker only if it saw that bit, and the handle re-checks `COMPLETE` after setting it. A
//!    handle dropped before completion clears `JOIN_INTEREST` and the completer drops the
//!    output; dropped after, the handle drops it. No lock guards the waker slot: the bits name
//!    its owner. With `JOIN_WAKER` clear the handle owns it; set before `COMPLETE`, nobody
//!    touches it (the handle takes it back only by clearing the bit before completion, and
//!    recognises its own published waker by identity, without reading it); set when `COMPLETE`
//!    was set, the completer owns it and takes the waker to wake it. The stored waker is
//!    released, its destructor contained, by whoever can no longer need it: the completer (it
//!    wakes it), the handle on drop or when its registration finds the task complete, and at
//!    the latest the task's free. A handle that took the output owes the task nothing but its
//!    reference.
//!
//! T7. **Local tasks stay home.** A local task is queued per owner thread and only popped by
//!    `run_ready` on that thread. A future that must not be dropped where we are (foreign owner,
//!    or the thread is unwinding) is leaked with its allocation, which is never freed, so its
//!    pinned memory stays valid; its handle resolves cancelled.
//!
//! T8. **Shutdown closes, then claims.** Closing the injection queue and draining it happen under
//!    one lock, so every spawn is either drained (and cancelled) or refused. Shutdown then claims
//!    every queued task through its queue entry (a fresh task's `RUNNING` is its entry's, T3),
//!    then every registered task that is not running, drops (or, by rule T7, leaks) its future
//!    and resolves its handle cancelled; a task being polled (reached through the registry, or
//!    as the task the run loop is polling when it never parked) is cancelled when its poll
//!    returns.
//!    [`Spawner::refuse_spawns`] closes the injection queue to new tasks (and sets the flag
//!    spawns on the scheduler's thread read) under the same lock, from any thread, without
//!    draining it: every later spawn is refused, while what was queued, and wakes of accepted
//!    tasks, stay queued until they run or shutdown drains and cancels them.
//!
//! T9. **The core claim.** The run queues and registry (the core) are reachable only by the thread
//!    whose token is in the claim word: taken by a CAS when a thread enters the scheduler,
//!    released when its last guard drops. A leaked guard keeps the claim forever (the scheduler
//!    then refuses other threads) instead of letting two threads touch the core.
//!
//! T10. **Fairness.** `run_ready` alternates between `Send` tasks and this thread's local tasks,
//!     requeues woken tasks at the back, and drains the injection queue at the start of each
//!     call, whenever the queues run dry, and every 31 polls.
//!
//! T11. **The injected flag.** A flag beside the injection queue is set under its lock whenever
//!     a push makes the queue non-empty and cleared under the lock only by the drain that
//!     empties it, so "flag clear" means "nothing injected since the last drain". The worker
//!     reads it without the lock and skips the lock when it is clear; a push racing that read
//!     is the one that found the queue empty, so it unparks the worker (T2).
//!
//! T12. **A held worker's tasks are not waited for.** While a thread holds its scheduler's
//!     worker without running tasks ([`Spawner::hold_tasks`], a `block_on` inside a task
//!     poll), a
//!     [`JoinHandle`] of an unfinished task of that scheduler polled on that thread panics
//!     instead of returning `Pending` ([`JoinHandle::assert_can_finish`] lets a set of
//!     handles do the same): that task cannot run before the hold ends, so the wait would be
//!     a silent deadlock. Handles of finished tasks, and of other schedulers' tasks,
//!     are unaffected.
//!
//! # Testing
//!
//! `src/tests/` holds what needs the crate's private parts (declared once, as `mod tests`, and
//! run with `cargo test -p baton-task`): the state word's transitions and reference counts
//! (`state.rs`), the recycled task blocks (`blocks.rs`), panic containment (`containment.rs`),
//! the task state machine alone against a
//! scheduler that only records what it is asked to queue (`task.rs`: wake, poll, abort, join,
//! drop), and `raw.rs`, which checks that every way a task ends frees its allocation exactly
//! once, observed through the count of its `Arc<SchedulerState>`. Their fixtures sit in one
//! `support.rs`. The crate's `tests/` directory covers the behaviour end to end through the
//! public API: thousands of tasks, foreign spawners, local tasks across a migrating worker,
//! abort, panics, fairness, shutdown, the thread context. `tests/props.rs`
//! (`prop_random_task_histories_stay_consistent`) runs random histories of spawn / wake / abort
//! / detach / run / migrate and checks counters, exactly-once drops and handle outcomes.
//!
//! Loom models (`--cfg loom`, see `docs/testing.md`) check the shipped code through the `sync`
//! shim: `tests/loom_scheduler.rs` a remote wake racing a poll, a spawn racing shutdown, an
//! abort racing a poll and a wake racing worker migration; `src/tests/loom_models.rs` that a
//! foreign wake by value racing a poll, an idle transition, an abort, shutdown or completion
//! frees the task exactly once; `src/tests/loom_join.rs` the join handshake (T6): a
//! registration, a waker replacement, a handle drop and an output taken each racing
//! completion;
//! `src/tests/loom_units.rs` that a unit released on another thread racing a refill or the
//! claim's release keeps the units' strong count paired. The state word,
//! reference count included, is a loom atomic, and the task's stage (its future, then its
//! output) and its join waker slot are loom cells, so the models also check that every
//! hand-over of either between threads is ordered; the run queues' `RefCell`s are plain `std`
//! (only the thread holding the core claim touches them).
//!
//! # Layout
//!
//! * The task: `state` (the state word and its transitions), `raw` (header, counted
//!   reference, wakers), `task` (the typed allocation), `join` (the handle), over the
//!   scheduling policy `schedule::Schedule`.
//! * The scheduler: `scheduler_state` (what every thread may reach: the `claim`, the
//!   `injector`, the `counts`), `run_queues` (what only the claim holder reaches, with `blocks`,
//!   the freed tasks' memory it recycles for the next spawns on its thread), `spawn` (the
//!   spawn path), `scheduler` (the run loop and shutdown), `spawner`, `context`.
//! * `sync` (the loom shim) and `containment` (panic hygiene).

mod blocks;
mod claim;
mod containment;
mod context;
mod counts;
mod injector;
mod join;
mod raw;
mod run_queues;
mod schedule;
mod scheduler;
mod scheduler_state;
mod spawn;
mod spawner;
mod state;
mod sync;
mod task;
mod yield_now;

#[cfg(test)]
mod tests;

pub use context::{
    ContextError, EnterGuard, TasksHeld, holds_tasks, is_entered, spawn, spawn_local, try_current,
    try_spawn_local,
};
pub use counts::TaskCounts;
pub use injector::Unpark;
pub use join::{CancelReason, JoinError, JoinHandle, PanicPayload};
pub use scheduler::{RunReport, Scheduler, ShutdownReport};
pub use spawner::{RefuseSpawns, SpawnError, Spawner};
pub use yield_now::{YieldNow, yield_now};
