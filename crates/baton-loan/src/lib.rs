//! The current-thread `block_on` loan driver of Baton.
//!
//! # What it is for
//!
//! A runtime has exactly one worker. Between `block_on` calls a background thread runs it, so
//! spawned work keeps progressing (a worker with nothing to do rests in the slot instead, so
//! back-to-back calls hand it over without waking that thread, until outside work or a short
//! grace period sends it back: rule L7); when `block_on` starts, the calling thread borrows the
//! worker, polls its root future in place (no `Send`, no `'static`), nests to any depth, returns
//! the worker on every exit path including panics, and drains briefly and boundedly after the
//! root completes. The driver knows the worker only through the [`LoanWorker`] trait object and
//! its [`Unpark`] handle, so it drives the io_uring worker, a test run queue, or an embedder's
//! scheduler alike. Entry point: [`Loan`].
//!
//! # What it guarantees
//!
//! * The worker is in exactly one place at a time and is dropped exactly once, by whoever holds
//!   it when the protocol closes; no hand-over loses it.
//! * A requester waits only for its own request and never takes another caller's offer; a
//!   `block_on` that cannot borrow the worker (contended, refused, closed, inside a task poll or
//!   on the background thread) polls its future directly: it never deadlocks and never panics.
//! * While the background thread holds live `!Send` local tasks, the worker stays with it.
//! * A borrowed worker comes back on every exit path, panics included (the root's original
//!   payload is re-raised), and `block_on` returns after a bounded drain, whatever its tasks do.
//! * Shutdown closes first, wakes every waiter, and drops the worker outside the slot lock; a
//!   background thread that panics closes the protocol instead of leaving callers waiting.
//!
//! The rules below say how; the code cites them by id (L1 ... L15).
//!
//! # The loan protocol
//!
//! Slot rules (the `slot` and `background` modules; drawn in `docs/protocols/loan.md`):
//!
//! L1. The worker is in exactly one place, named by the slot's phase: *background* (the
//!    background thread runs it; also while a request is *requested* or *refused*), *offered*,
//!    *returned* or *resting* (it sits in the slot), *loaned* (a borrower holds it), or
//!    *closed* (whoever held it drops it).
//!
//! L2. Only a caller that finds *background* may request: it takes the next ticket `t`, sets
//!    *requested(t)* and the attention flag, and unparks the worker. A caller finding a request,
//!    offer, refusal or loan in progress does not wait: it falls back (L11).
//!
//! L3. The background thread answers only at a dispatch boundary (its `run_until` predicate is
//!    the attention flag), under the slot lock, and only it clears the flag, when it answers.
//!
//! L4. The offer belongs to its requester: *offered(t)* is taken only by ticket `t`, which makes
//!    it *loaned(t)*. A requester waits only while its own request is pending.
//!
//! L5. While the background thread holds live `!Send` local tasks it refuses: *refused(t)*, and
//!    keeps running the worker. Only requester `t` acknowledges its refusal (back to
//!    *background*) and falls back; nobody else clears it.
//!
//! L6. Fast path: a *returned* worker not yet resumed, or a *resting* one, is taken by any
//!    caller directly (*loaned*), without waking the background thread.
//!
//! L7. Giving back puts the worker in the slot. With work pending ([`LoanWorker::pending`], asked
//!    before locking), or after its rest waker fired since the background thread last took
//!    the worker, it is *returned* and a waiting background thread is notified; the background
//!    thread takes a *returned* worker and resumes (*background*). With nothing pending it is
//!    *resting*: nobody is woken (unless the background thread waits without a timer). The
//!    rest waker (triggered by the worker on every wake from outside) turns *resting* into
//!    *returned* and notifies; fired while the worker is requested, offered, lent or returned,
//!    it is remembered until the background thread takes the worker. The background thread
//!    also takes a worker it finds *resting* at two looks in a row, one grace period apart,
//!    with no borrow in between (a backstop only: `pending` must report every event the rest
//!    waker announces, since a stream of borrows postpones that look). So a worker with work is
//!    driven promptly, and an idle one stays in the slot for the next `block_on`.
//!
//! L8. Shutdown publishes *closed* first (and the attention flag), wakes every waiter and the
//!    worker, and drops a worker sitting in the slot outside the lock. A worker held by the
//!    background thread is dropped by it when it sees *closed*; a worker on loan is dropped by
//!    its borrower when it gives it back. A worker reporting shutdown retires the same way.
//!    The borrower notices the closure at its next dispatch boundary (the closure unparks the
//!    worker, and the borrower's run predicate includes it): the first of its frames to see it
//!    calls [`LoanWorker::close_on_loan`], once per worker, every frame polls its root once
//!    more, and it keeps driving the worker until its root completes.
//!    Called from a thread outside the runtime, shutdown first borrows the worker like any
//!    requester (L2–L6) and closes while it holds it, so it drops the worker on its own
//!    thread, where that thread's local tasks can be dropped; refused or contended, it only
//!    closes.
//!
//! L9. A background thread that panics closes the protocol on its way out, so callers fall back
//!    instead of waiting.
//!
//! Driving rules (the `loan`, `frame` and `signal` modules):
//!
//! L10. The root is polled in place when its waker fired, then the worker gets one dispatch turn;
//!     otherwise the worker runs until the root waker fires.
//!
//! L11. While the root is polled, the worker sits in the thread's re-entrancy stack: a nested
//!     `block_on` of the same runtime takes it from there and puts it back before the outer poll
//!     resumes. A `block_on` inside a task poll, on the background thread, or one that cannot
//!     borrow (L2, L5, L8) polls its future directly with a thread-parking waker.
//!
//! L12. After the root completes it is dropped in place with the context installed and the
//!     worker available for nesting; then at most `drain_turns` turns run while work is
//!     runnable, never waiting on timers or I/O. A worker that answers nothing pending (L7)
//!     has nothing runnable, so it gets no turn, and that answer is the one it is given back
//!     with.
//!
//! L13. A panic in the root's poll or destructor is caught, the worker is returned, and the
//!     original payload is re-raised (the poll's wins). A panicking dispatch turn is caught too:
//!     the root is still dropped in place in its context, then the turn's payload is re-raised.
//!     A worker whose `enter` or `leave` panics is still returned and its entry popped.
//!
//! L14. The root waker sets its flag, then (if the flag was clear) unparks the worker and
//!     signals the thread; `block_on` clears the flag right before polling, so no wake is lost.
//!     A root that borrowed the worker through the slot uses the loan's one waker, re-armed
//!     for it (only one such root exists at a time, L1); a nested root takes a waker of its
//!     own. A clone of the loan's waker kept from an earlier root can only cause a spare poll.
//!
//! L15. The root is a task for accounting: [`LoanWorker::root_started`] runs before its first
//!     poll and [`LoanWorker::root_finished`] after it was dropped, on every exit path. The
//!     thread holding the worker is the only one counting driven roots, so the count needs no
//!     read-modify-write.
//!
//! # How it is tested
//!
//! The tests live in `src/tests/`, outside the production modules, behind the crate's one
//! `#[cfg(test)] mod tests`. Unit tests drive a small test worker (`tests/support/`: a run queue
//! with wakers, thread-bound local tasks, a park/unpark, and fault injection: panicking
//! `enter`/`leave`/turns, re-entrant destructors) through every behaviour of the loan, with
//! property tests (`prop_*`) over random nesting trees and rest sequences. Loom models
//! (`tests/loom_models.rs`, `loom_*`, the only tests built under `cfg(loom)`) check the shipped
//! slot protocol with a background thread, two requesters and shutdown, the rest against outside
//! wakes, the next `block_on` and shutdown, shutdown from outside against the background thread
//! and a requester, the closure of a worker on loan against a parked borrower, and the root
//! waker's wake against park; every primitive they see comes from the `sync` shim.
//! `examples/loan_bench.rs` measures `block_on` round trips.

mod background;
mod error;
mod frame;
mod loan;
mod signal;
mod slot;
mod sync;
mod worker;

#[cfg(test)]
mod tests;

pub use error::LoanError;
pub use frame::ThreadRole;
pub use loan::{
    BackgroundExit, DEFAULT_DRAIN_TURNS, DrainOutcome, Loan, LoanConfig, ShutdownReport,
    Unavailable, WorkerDisposal,
};
pub use worker::{LoanWorker, Pending, RunOutcome, TurnOutcome, Unpark};
