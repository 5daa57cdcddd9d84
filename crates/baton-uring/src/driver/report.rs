//! What a driver reports: [`TurnReport`] per turn, [`DriverMetrics`] on request and
//! [`DriverShutdownReport`] at shutdown.

use crate::backend::RingFlags;

/// What one turn did.
#[must_use]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnReport {
    /// CQEs reaped.
    pub completions: usize,
    /// Mailbox messages applied.
    pub messages: usize,
    /// Timers and deadlines that fired.
    pub timers_fired: usize,
    /// Wakers woken.
    pub woken: usize,
    /// Whether an unpark ended (or pre-empted) the wait.
    pub unparked: bool,
}

/// A snapshot of the driver's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverMetrics {
    /// Requests waiting for ring space or a durability permit.
    pub queued: usize,
    /// Requests the kernel owns (async cancels not included).
    pub in_flight: usize,
    /// The part of `in_flight` that waits on a peer (receives, sends, accepts, connects): not
    /// under the in-flight limit.
    pub peer_in_flight: usize,
    /// Async cancels the kernel owns.
    pub cancels_in_flight: usize,
    /// Live slots, including completed results not yet consumed.
    pub slots: usize,
    /// Final CQEs reaped.
    pub completed: u64,
    /// Async cancels submitted.
    pub cancelled: u64,
    /// Armed timers (sleeps and deadlines).
    pub timers: usize,
    /// Timers that fired.
    pub timers_fired: u64,
    /// Entries in the timer heap, live and stale (a deadline cleared before it fired leaves a
    /// stale entry until the heap is pruned); stays within about twice `timers` plus 64.
    pub timer_entries: usize,
    /// Results delivered through forwarding cells.
    pub forwarded: u64,
    /// Mailbox messages naming a retired slot (ignored).
    pub stale_messages: u64,
    /// Turns run.
    pub turns: u64,
    /// Turns that waited in the ring (for a completion, a timer or an unpark) because nothing
    /// was ready.
    pub parks: u64,
    /// Ring set-up flags in effect.
    pub flags: RingFlags,
    /// The in-flight limit for requests that complete on their own.
    pub max_in_flight: usize,
    /// Whether the driver is closed.
    pub closed: bool,
    /// The errno of the last failed submit to the ring, if any.
    pub last_submit_error: Option<i32>,
    /// Wakers that panicked when the driver (or its worker) woke or dropped them; contained
    /// under [`WakerPanics::Contain`](crate::WakerPanics::Contain).
    pub waker_panics: u64,
}

/// What shutdown did.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverShutdownReport {
    /// Every outstanding completion arrived and every retained request (write, sync) queued at
    /// closure reached the kernel and completed.
    pub drained: bool,
    /// Requests whose memory was leaked because the kernel might still write it.
    pub leaked: usize,
    /// Retained requests (writes, syncs) still queued in userspace when the deadline passed:
    /// they never reached the kernel, so their effect did not happen.
    pub unsubmitted: usize,
    /// Final CQEs reaped during shutdown.
    pub completed_during_shutdown: u64,
    /// The errno of the last failed submit. A failure other than `ENOMEM` ends the drain at
    /// once: what the kernel still owns is leaked and reported as not drained.
    pub submit_error: Option<i32>,
    /// Retained requests (writes, syncs, close, shutdown) whose handles closure resolved with
    /// `Closed` — "outcome unknown" — and whose real outcome then was an error. Zero means every
    /// write and sync that closure hid from its caller succeeded.
    pub retained_failures: usize,
    /// Wakers that panicked when the driver woke or dropped them, over its whole life
    /// ([`DriverMetrics::waker_panics`]).
    pub waker_panics: u64,
}
