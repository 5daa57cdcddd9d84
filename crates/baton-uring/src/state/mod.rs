//! The driver's single-threaded state: the request slab (`slots`), the submission and cancel
//! queues (`submission`), the timer heap (`timers`), mailbox messages (`messages`), the
//! durability permits, closure (`closure`) and the values released after each borrow
//! (`deferred`). Only the thread that holds and has entered the driver touches it, through a
//! `RefCell`; user code (waker clone, wake, drop) never runs while it is borrowed — anything
//! that could run user code is pushed to [`Deferred`] and released by the caller after the
//! borrow ends.
//!
//! Request lifecycle rules (drawn in `docs/protocols/uring.md`):
//!
//! U1. Registration inserts a slot under a fresh generation. A closed driver refuses it
//!    (`Closed`), a missing opcode is `Unsupported`, and a deadline already passed is `Timeout`
//!    — all without submitting anything.
//!
//! U2. A registered request is *queued* (or *awaiting its durability permit*, for syncs) until
//!    it can be submitted; queued requests are submitted in order as room frees, with no
//!    further poll needed. Requests that complete on their own (file I/O, syncs, opens, nops)
//!    wait for room under the in-flight limit, which keeps their completion bursts within the
//!    completion queue. Requests that wait on a peer (receive, send, accept, connect) are
//!    never held back by it: they are bounded by the application's sockets, and the kernel
//!    keeps completions that overflow the completion queue (`IORING_FEAT_NODROP`), so idle
//!    connections can never stall a write, an accept or a timer. A completed-but-unconsumed
//!    result is not in flight.
//!
//! U3. Async cancels are pushed before any queued request, and are not limited by the in-flight
//!    limit, so a cancel never waits behind ordinary work. A full SQ is submitted and retried.
//!
//! U4. A final CQE settles the request: the result is stored for a local poll, or moved into
//!    the forwarding cell (forward rule F3), or — when nobody is attached — disposed of (a created
//!    fd is closed).
//!
//! U5. Dropping the handle *detaches* it: a queued, non-retained request is retired at once; an
//!    in-flight read/recv/accept/open/connect gets one async cancel and its slot retires only at
//!    the final CQE; retained requests (writes and sends, syncs, close, shutdown, and the
//!    file-system effects no cancel could undo: mkdir, rename, unlink, link, symlink, truncate,
//!    range sync) run to completion and lose their deadline, so they are neither timed out nor
//!    cancelled. A retained request's stash ticket stays in its slot until its final CQE (S5).
//!
//! U6. A deadline firing on a queued request settles it with `Timeout`; on an in-flight request
//!    it submits an async cancel. The final CQE decides: `-ECANCELED` becomes `Timeout`, any
//!    other result (the request won the race) is returned as is.
//!
//! U7. Closure refuses new requests, retires every slot the kernel does not own (queued
//!    non-retained, sleeping, completed-but-unconsumed; retained ones follow rule U9), detaches
//!    in-flight ones (cancelling the non-retained), settles forwarding cells with `Closed`, and
//!    wakes every local waiter so its next poll returns `Closed`. Once the kernel's completions
//!    are drained the driver holds nothing of anyone's. For a retained request that still runs
//!    (U9), `Closed` means "outcome unknown": the write or sync may have happened; those
//!    that failed are counted in the shutdown report.
//!
//! U8. Everything the kernel can see stays in the slot until the final CQE; shutdown that runs
//!    out of time leaks those slots rather than freeing memory the kernel may still write, and
//!    reports them (and any retained request that never reached the kernel) as not drained.
//!
//! U9. Durability outlives closure: a retained request (write, writev, fsync, fdatasync, close,
//!    shutdown, the file-system effects of U5) still queued or awaiting its durability
//!    permit at closure stays queued, detached and without deadline, and is submitted as slots
//!    free — syncs keep their permit order. Shutdown waits for these as for in-flight requests.
//!    Sends and a pipe's writes are the exception (`Request::outlives_closure`): they
//!    wait on a peer that may never read again, so closure cancels them as it does receives.

mod closure;
mod deferred;
mod lifecycle;
mod messages;
mod slots;
mod submission;
mod timers;

pub(crate) use closure::Undrained;
pub(crate) use deferred::{Deferred, Payload, reraise};
pub(crate) use slots::{Phase, PhaseKind, SlotCounts, Waiter};

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::task::Waker;

use web_time::Instant;

use crate::backend::{Backend, Cqe};
use crate::durability::Durability;
use crate::error::Error;
use crate::key::RequestKey;
use crate::request::{Outcome, Request};
use slots::Slots;

/// A refused registration: the failure plus everything handed in, to drop outside the borrow.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) error: Error,
    pub(crate) data: Request,
}

/// The outcome of a local poll.
#[must_use]
#[derive(Debug)]
pub(crate) enum PollSlot {
    /// Done: the result, the buffers if the kernel is finished with them, and the stored waker
    /// to drop after the borrow.
    Ready(Outcome, Option<Request>, Option<Waker>),
    /// Still pending and the stored waker is equivalent.
    Pending,
    /// Still pending; clone the waker outside the borrow and call `install_waker`.
    NeedWaker,
}

/// The outcome of installing a freshly cloned waker.
#[must_use]
#[derive(Debug)]
pub(crate) enum Install {
    /// Installed; drop the previous waker (if any) after the borrow.
    Installed(Option<Waker>),
    /// The request settled while the waker was being cloned; poll again.
    Settled(Waker),
}

/// Event counters reported by metrics (what the slots add up to is in [`SlotCounts`]).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub(crate) cancels_in_flight: usize,
    pub(crate) completed: u64,
    pub(crate) cancelled: u64,
    pub(crate) timers_fired: u64,
    pub(crate) forwarded: u64,
    pub(crate) stale_messages: u64,
    /// Turns run (each `Driver::turn`, also driver-only ones).
    pub(crate) turns: u64,
    /// Turns that waited in the ring for a completion, a timer or an unpark.
    pub(crate) parks: u64,
    /// Retained requests detached by closure whose real outcome was an error (U7).
    pub(crate) retained_failures: usize,
}

/// The wake-up read kept armed on the unpark eventfd.
#[derive(Debug)]
struct WakeRead {
    fd: Option<i32>,
    buf: Box<u64>,
    armed: bool,
}

/// The driver state.
pub(crate) struct DriverState {
    slots: Slots,
    /// Queued requests that complete on their own, submitted under the in-flight limit.
    submit_queue: VecDeque<RequestKey>,
    /// Queued requests that wait on a peer, submitted as SQ space allows (U2).
    peer_queue: VecDeque<RequestKey>,
    cancel_queue: VecDeque<RequestKey>,
    timers: BinaryHeap<Reverse<(Instant, u32, u32)>>,
    durability: Durability,
    backend: Box<dyn Backend>,
    max_in_flight: usize,
    pub(crate) counts: Counts,
    pub(crate) closed: bool,
    wake: WakeRead,
    cqes: Vec<Cqe>,
    /// Bitmap of supported opcodes, probed once.
    supported: [u64; 4],
    /// The kernel accepts `IORING_RECVSEND_POLL_FIRST` ([`Backend::polls_first`]).
    polls_first: bool,
    unsubmitted: usize,
    /// The errno of the last failed submit (timeouts and interruptions are not failures).
    pub(crate) submit_error: Option<i32>,
    /// Mailbox messages taken so far (see `Mailbox::take_messages`).
    pub(crate) messages_taken: usize,
    pub(crate) deferred: Box<Deferred>,
}

impl std::fmt::Debug for DriverState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverState")
            .field("slots", &self.slots.counts())
            .field("counts", &self.counts)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl DriverState {
    pub(crate) fn new(
        backend: Box<dyn Backend>,
        max_in_flight: usize,
        wake_fd: Option<i32>,
    ) -> DriverState {
        let mut supported = [0u64; 4];
        for code in 0..=u8::MAX {
            if backend.supports(code) {
                supported[usize::from(code) / 64] |= 1 << (code % 64);
            }
        }
        DriverState {
            supported,
            polls_first: backend.polls_first(),
            slots: Slots::default(),
            submit_queue: VecDeque::new(),
            peer_queue: VecDeque::new(),
            cancel_queue: VecDeque::new(),
            timers: BinaryHeap::new(),
            durability: Durability::default(),
            backend,
            max_in_flight,
            counts: Counts::default(),
            closed: false,
            wake: WakeRead {
                fd: wake_fd,
                buf: Box::new(0),
                armed: false,
            },
            cqes: Vec::new(),
            unsubmitted: 0,
            submit_error: None,
            messages_taken: 0,
            deferred: Box::default(),
        }
    }

    /// Durability rule D3: `file` was written outside the driver, so it is dirty again.
    pub(crate) fn note_write(&mut self, file: &std::sync::Arc<std::os::fd::OwnedFd>) {
        self.durability.write_completed(file);
    }

    /// Number of live slots (including completed, unconsumed results).
    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// What the slots' phases and deadlines add up to.
    pub(crate) fn slot_counts(&self) -> SlotCounts {
        self.slots.counts()
    }

    /// Why U1 refuses `data` with `deadline` (at `now`, when it has one), if it does: a closed
    /// driver, a missing opcode, a deadline already passed (not for sleeps). Asked before a
    /// registration, so a refused one clones no waker.
    pub(crate) fn refusal(
        &self,
        data: &Request,
        deadline: Option<Instant>,
        now: Option<Instant>,
    ) -> Option<Error> {
        if self.closed {
            return Some(Error::Closed);
        }
        if let Some((code, name)) = data.opcode()
            && self.supported[usize::from(code) / 64] & (1 << (code % 64)) == 0
        {
            return Some(Error::Unsupported { opcode: name });
        }
        let is_sleep = matches!(data, Request::Sleep);
        if !is_sleep && deadline.is_some_and(|d| Some(d) <= now) {
            return Some(Error::Timeout);
        }
        None
    }
}
