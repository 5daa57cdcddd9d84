//! The driver's single-threaded state: the request slab, the submission and cancel queues, the
//! timer heap and the durability permits. Only the thread that holds and has entered the driver
//! touches it, through a `RefCell`; user code (waker clone, wake, drop) never runs while it is
//! borrowed — anything that could run user code is pushed to [`Deferred`] and released by the
//! caller after the borrow ends.
//!
//! Request lifecycle rules (drawn in `docs/protocols/uring.md`, cited as "lifecycle rule N"):
//!
//! 1. Registration inserts a slot under a fresh generation. A closed driver refuses it
//!    (`Closed`), a missing opcode is `Unsupported`, and a deadline already passed is `Timeout`
//!    — all without submitting anything.
//! 2. A registered request is *queued* (or *awaiting its durability permit*, for syncs) until
//!    it can be submitted; queued requests are submitted in order as room frees, with no
//!    further poll needed. Requests that complete on their own (file I/O, syncs, opens, nops)
//!    wait for room under the in-flight limit, which keeps their completion bursts within the
//!    completion queue. Requests that wait on a peer (receive, send, accept, connect) are
//!    never held back by it: they are bounded by the application's sockets, and the kernel
//!    keeps completions that overflow the completion queue (`IORING_FEAT_NODROP`), so idle
//!    connections can never stall a write, an accept or a timer. A completed-but-unconsumed
//!    result is not in flight.
//! 3. Async cancels are pushed before any queued request, and are not limited by the in-flight
//!    limit, so a cancel never waits behind ordinary work. A full SQ is submitted and retried.
//! 4. A final CQE settles the request: the result is stored for a local poll, or moved into
//!    the forwarding cell (forward rule 3), or — when nobody is attached — disposed of (a created
//!    fd is closed).
//! 5. Dropping the handle *detaches* it: a queued, non-retained request is retired at once; an
//!    in-flight read/recv/accept/open/connect gets one async cancel and its slot retires only at
//!    the final CQE; retained requests (writes, syncs, close, shutdown) run to completion and
//!    lose their deadline, so they are neither timed out nor cancelled.
//! 6. A deadline firing on a queued request settles it with `Timeout`; on an in-flight request
//!    it submits an async cancel. The final CQE decides: `-ECANCELED` becomes `Timeout`, any
//!    other result (the request won the race) is returned as is.
//! 7. Closure refuses new requests, retires every slot the kernel does not own (queued
//!    non-retained, sleeping, completed-but-unconsumed; retained ones follow rule 9), detaches
//!    in-flight ones (cancelling the non-retained), settles forwarding cells with `Closed`, and
//!    wakes every local waiter so its next poll returns `Closed`. Once the kernel's completions
//!    are drained the driver holds nothing of anyone's. For a retained request that still runs
//!    (rule 9), `Closed` means "outcome unknown": the write or sync may have happened; those
//!    that failed are counted in the shutdown report.
//! 8. Everything the kernel can see stays in the slot until the final CQE; shutdown that runs
//!    out of time leaks those slots rather than freeing memory the kernel may still write, and
//!    reports them (and any retained request that never reached the kernel) as not drained.
//! 9. Durability outlives closure: a retained request (write, writev, fsync, fdatasync, close,
//!    shutdown) still queued or awaiting its durability permit at closure stays queued,
//!    detached and without deadline, and is submitted as slots free — syncs keep their permit
//!    order. Shutdown waits for these as for in-flight requests.

mod closure;
mod submission;

pub(crate) use closure::Undrained;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::task::Waker;

use slab::Slab;
use web_time::Instant;

use crate::backend::{Backend, Cqe};
use crate::durability::{Durability, Grant};
use crate::error::Error;
use crate::forward::{Delivery, ForwardCell};
use crate::key::{GENERATION_MASK, RequestKey};
use crate::mailbox::Msg;
use crate::request::{Failure, Outcome, Request, close_orphan_fd};
use crate::stash::StashTicket;
use crate::sync::Arc;

/// Where a request is in its lifecycle.
#[derive(Debug)]
pub(crate) enum Phase {
    Queued,
    AwaitingPermit,
    InFlight,
    Sleeping,
    Completed(Outcome),
}

/// Who wants the result.
#[derive(Debug)]
pub(crate) enum Waiter {
    None,
    Local(Waker),
    Forward(Arc<ForwardCell>),
}

/// A copyable view of [`Phase`], to decide while the slot is not borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PhaseKind {
    Queued,
    AwaitingPermit,
    InFlight,
    Sleeping,
    Completed,
}

impl PhaseKind {
    fn of(phase: &Phase) -> PhaseKind {
        match phase {
            Phase::Queued => PhaseKind::Queued,
            Phase::AwaitingPermit => PhaseKind::AwaitingPermit,
            Phase::InFlight => PhaseKind::InFlight,
            Phase::Sleeping => PhaseKind::Sleeping,
            Phase::Completed(_) => PhaseKind::Completed,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CancelState {
    None,
    Queued,
    Submitted,
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    data: Request,
    phase: Phase,
    waiter: Waiter,
    /// A handle or forwarding cell still wants the result.
    attached: bool,
    cancel: CancelState,
    deadline: Option<Instant>,
    timed_out: bool,
    /// The detached handle's stash ticket: the final result goes to its stash (stash rule 2).
    late: Option<StashTicket>,
}

/// Values whose release may run user code, released after the core's borrow ends.
#[derive(Debug, Default)]
pub(crate) struct Deferred {
    pub(crate) wake: Vec<Waker>,
    pub(crate) drop_wakers: Vec<Waker>,
    pub(crate) drop_cells: Vec<Arc<ForwardCell>>,
    pub(crate) drop_data: Vec<Request>,
    /// Late results for their stashes, and tickets ending with nothing (stash rule 3).
    pub(crate) deposits: Vec<(StashTicket, Outcome, Option<Request>)>,
    pub(crate) drop_tickets: Vec<StashTicket>,
}

impl Deferred {
    pub(crate) fn is_empty(&self) -> bool {
        self.wake.is_empty()
            && self.drop_wakers.is_empty()
            && self.drop_cells.is_empty()
            && self.drop_data.is_empty()
            && self.deposits.is_empty()
            && self.drop_tickets.is_empty()
    }

    /// Ends `ticket` with nothing, after the borrow (stash rule 3).
    pub(crate) fn drop_ticket(&mut self, ticket: Option<StashTicket>) {
        self.drop_tickets.extend(ticket);
    }

    pub(crate) fn drop_waiter(&mut self, waiter: Waiter) {
        match waiter {
            Waiter::None => {}
            Waiter::Local(w) => self.drop_wakers.push(w),
            Waiter::Forward(c) => self.drop_cells.push(c),
        }
    }
}

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

/// Counters reported by metrics.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub(crate) queued: usize,
    /// Requests the kernel owns, of both kinds (lifecycle rule 2).
    pub(crate) in_flight: usize,
    /// The part of `in_flight` that waits on a peer and so is not under the in-flight limit.
    pub(crate) peer_in_flight: usize,
    pub(crate) cancels_in_flight: usize,
    pub(crate) live_timers: usize,
    pub(crate) completed: u64,
    pub(crate) cancelled: u64,
    pub(crate) timers_fired: u64,
    pub(crate) forwarded: u64,
    pub(crate) stale_messages: u64,
    /// Retained requests detached by closure whose real outcome was an error (rule 7).
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
    slab: Slab<Slot>,
    generations: Vec<u32>,
    /// Queued requests that complete on their own, submitted under the in-flight limit.
    submit_queue: VecDeque<RequestKey>,
    /// Queued requests that wait on a peer, submitted as SQ space allows (lifecycle rule 2).
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
    unsubmitted: usize,
    /// The errno of the last failed submit (timeouts and interruptions are not failures).
    pub(crate) submit_error: Option<i32>,
    /// Mailbox messages taken so far (see `Mailbox::take_messages`).
    pub(crate) messages_taken: usize,
    pub(crate) deferred: Deferred,
}

impl std::fmt::Debug for DriverState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverState")
            .field("slots", &self.slab.len())
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
            slab: Slab::new(),
            generations: Vec::new(),
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
            deferred: Deferred::default(),
        }
    }

    fn slot(&self, key: RequestKey) -> Option<&Slot> {
        self.slab
            .get(key.index as usize)
            .filter(|s| s.generation == key.generation)
    }

    fn slot_mut(&mut self, key: RequestKey) -> Option<&mut Slot> {
        self.slab
            .get_mut(key.index as usize)
            .filter(|s| s.generation == key.generation)
    }

    /// Number of live slots (including completed, unconsumed results).
    pub(crate) fn slots(&self) -> usize {
        self.slab.len()
    }

    /// Why lifecycle rule 1 refuses `data` with `deadline` (at `now`, when it has one), if it
    /// does: a closed driver, a missing opcode, a deadline already passed (not for sleeps).
    /// Asked before a registration, so a refused one clones no waker.
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

    /// Lifecycle rule 1.
    pub(crate) fn register(
        &mut self,
        data: Request,
        deadline: Option<Instant>,
        waiter: Waiter,
    ) -> Result<RequestKey, (Refusal, Waiter)> {
        let now = deadline.map(|_| Instant::now());
        if let Some(error) = self.refusal(&data, deadline, now) {
            return Err((Refusal { error, data }, waiter));
        }
        let is_sleep = matches!(data, Request::Sleep);
        let index = self.slab.vacant_key();
        if self.generations.len() <= index {
            self.generations.resize(index + 1, 0);
        }
        let generation = (self.generations[index] + 1) & GENERATION_MASK;
        self.generations[index] = generation;
        let key = RequestKey {
            index: u32::try_from(index).expect("the slab never holds 2^32 requests"),
            generation,
        };
        let fsync_fd = match &data {
            Request::Fsync { fd, .. } => Some(fd.clone()),
            _ => None,
        };
        // The common case (no sleep, no sync, no deadline) is queued as it is inserted: one
        // slab access instead of three.
        let plain = !is_sleep && fsync_fd.is_none() && deadline.is_none();
        let peer = data.waits_on_peer();
        self.slab.insert(Slot {
            generation,
            data,
            phase: Phase::Queued,
            waiter,
            attached: true,
            cancel: CancelState::None,
            deadline: None,
            timed_out: false,
            late: None,
        });
        if plain {
            self.counts.queued += 1;
            self.push_queued(key, peer);
            return Ok(key);
        }
        if is_sleep {
            match deadline {
                Some(at) if Some(at) > now => {
                    self.set_phase(key, Phase::Sleeping);
                    self.arm_timer(key, at);
                }
                _ => self.settle(key, Ok(0)),
            }
            return Ok(key);
        }
        if let Some(at) = deadline {
            self.arm_timer(key, at);
        }
        match fsync_fd {
            None => self.enqueue(key, peer),
            Some(fd) => match self.durability.acquire(&fd, key) {
                Grant::Dirty => self.enqueue(key, false),
                Grant::Clean => {
                    // Durability rule 4: the permit passes on at once.
                    let next = self.durability.release(&fd, key, None);
                    self.settle(key, Ok(0));
                    self.pass_permit(&fd, next);
                }
                Grant::Wait => {
                    self.set_phase(key, Phase::AwaitingPermit);
                    self.counts.queued += 1;
                }
            },
        }
        Ok(key)
    }

    fn set_phase(&mut self, key: RequestKey, phase: Phase) {
        if let Some(slot) = self.slot_mut(key) {
            slot.phase = phase;
        }
    }

    fn enqueue(&mut self, key: RequestKey, peer: bool) {
        self.set_phase(key, Phase::Queued);
        self.counts.queued += 1;
        self.push_queued(key, peer);
    }

    /// Lifecycle rule 2: a request that waits on a peer goes to the queue the in-flight limit
    /// does not hold back.
    fn push_queued(&mut self, key: RequestKey, peer: bool) {
        if peer {
            self.peer_queue.push_back(key);
        } else {
            self.submit_queue.push_back(key);
        }
    }

    fn arm_timer(&mut self, key: RequestKey, at: Instant) {
        if let Some(slot) = self.slot_mut(key) {
            slot.deadline = Some(at);
            self.counts.live_timers += 1;
            self.prune_stale_timers();
            self.timers.push(Reverse((at, key.index, key.generation)));
        }
    }

    /// Attaches a forwarding cell to a live slot (forward rules 2 and 3).
    pub(crate) fn attach_forward(&mut self, key: RequestKey, cell: &Arc<ForwardCell>) {
        let Some(slot) = self.slot_mut(key) else {
            self.counts.stale_messages += 1;
            return;
        };
        if !slot.attached {
            self.counts.stale_messages += 1;
            return;
        }
        if let Waiter::Forward(existing) = &slot.waiter
            && Arc::ptr_eq(existing, cell)
        {
            return;
        }
        let old = std::mem::replace(&mut slot.waiter, Waiter::Forward(cell.clone()));
        let completed = matches!(slot.phase, Phase::Completed(_));
        self.deferred.drop_waiter(old);
        if completed {
            let slot = self.slab.remove(key.index as usize);
            let Phase::Completed(outcome) = slot.phase else {
                unreachable!("checked Completed just above")
            };
            self.deliver_to_cell(cell, outcome, slot.data);
            self.deferred.drop_waiter(slot.waiter);
            self.deferred.drop_ticket(slot.late);
        }
    }

    fn deliver_to_cell(&mut self, cell: &Arc<ForwardCell>, outcome: Outcome, data: Request) {
        self.counts.forwarded += 1;
        let settled = cell.settle(outcome, Some(data));
        self.settled(settled);
    }

    /// Acts on a cell's answer to a settle: wake its waker after the borrow, or dispose of a
    /// result its abandoned handle left behind (with the handle's stash ticket, forward rule 7).
    pub(crate) fn settled(&mut self, settled: Delivery) {
        match settled {
            Delivery::Stored(Some(w)) => self.deferred.wake.push(w),
            Delivery::Stored(None) => {}
            Delivery::Abandoned(outcome, data, ticket) => self.dispose(outcome, data, ticket),
        }
    }

    /// Disposes of a result nobody will consume. With a stash ticket, the result goes to the
    /// stash after the borrow (stash rules 2 and 3); otherwise a created fd is closed (SPEC §4,
    /// "an operation that creates a resource ... closes that resource").
    fn dispose(&mut self, outcome: Outcome, data: Option<Request>, ticket: Option<StashTicket>) {
        if let Some(ticket) = ticket {
            self.deferred.deposits.push((ticket, outcome, data));
            return;
        }
        if let Some(data) = data {
            if let Ok(fd) = outcome
                && data.creates_fd()
            {
                close_orphan_fd(fd);
            }
            self.deferred.drop_data.push(data);
        }
    }

    /// Polls `key` locally. `Err` means the key is stale (its result went elsewhere).
    pub(crate) fn poll(&mut self, key: RequestKey, waker: &Waker) -> Result<PollSlot, Error> {
        let closed = self.closed;
        let Some(slot) = self.slot_mut(key) else {
            return Err(Error::Closed);
        };
        if matches!(slot.phase, Phase::Completed(_)) {
            let slot = self.slab.remove(key.index as usize);
            let Phase::Completed(outcome) = slot.phase else {
                unreachable!("checked Completed just above")
            };
            let waker = match slot.waiter {
                Waiter::Local(w) => Some(w),
                Waiter::None => None,
                other => {
                    self.deferred.drop_waiter(other);
                    None
                }
            };
            return Ok(PollSlot::Ready(outcome, Some(slot.data), waker));
        }
        if closed {
            // Lifecycle rule 7: a pending poll after closure fails; the request detaches.
            self.detach(key, None);
            return Ok(PollSlot::Ready(
                Err(Failure::Runtime(Error::Closed)),
                None,
                None,
            ));
        }
        match &slot.waiter {
            Waiter::Local(w) if w.will_wake(waker) => Ok(PollSlot::Pending),
            _ => Ok(PollSlot::NeedWaker),
        }
    }

    /// Installs a waker cloned outside the borrow.
    pub(crate) fn install_waker(&mut self, key: RequestKey, waker: Waker) -> Install {
        let closed = self.closed;
        match self.slot_mut(key) {
            Some(slot) if !closed && !matches!(slot.phase, Phase::Completed(_)) => {
                match std::mem::replace(&mut slot.waiter, Waiter::Local(waker)) {
                    Waiter::Local(old) => Install::Installed(Some(old)),
                    other => {
                        self.deferred.drop_waiter(other);
                        Install::Installed(None)
                    }
                }
            }
            _ => Install::Settled(waker),
        }
    }

    /// The handle of `key` is gone (lifecycle rule 5), leaving `ticket` if it was bound to a
    /// stash (stash rule 2); a forwarded handle left its ticket in its cell (forward rule 7).
    pub(crate) fn detach(&mut self, key: RequestKey, ticket: Option<StashTicket>) {
        let Some(slot) = self.slot_mut(key) else {
            self.deferred.drop_ticket(ticket);
            return;
        };
        slot.attached = false;
        let waiter = std::mem::replace(&mut slot.waiter, Waiter::None);
        let ticket = match (&waiter, ticket) {
            (Waiter::Forward(cell), None) => cell.take_ticket(),
            (_, ticket) => ticket,
        };
        let retained = slot.data.is_retained();
        // A retained request runs to completion once detached: its deadline no longer applies.
        let dropped_deadline = retained && slot.deadline.take().is_some();
        let timed = slot.deadline.is_some();
        let kind = PhaseKind::of(&slot.phase);
        if dropped_deadline {
            self.counts.live_timers -= 1;
        }
        self.deferred.drop_waiter(waiter);
        match kind {
            PhaseKind::Completed => {
                let slot = self.slab.remove(key.index as usize);
                let Phase::Completed(outcome) = slot.phase else {
                    unreachable!("matched Completed just above")
                };
                self.dispose(outcome, Some(slot.data), ticket);
            }
            PhaseKind::Queued | PhaseKind::AwaitingPermit if retained => {
                self.deferred.drop_ticket(ticket);
            }
            PhaseKind::Queued | PhaseKind::Sleeping => {
                if kind == PhaseKind::Queued {
                    self.counts.queued -= 1;
                }
                if timed {
                    self.counts.live_timers -= 1;
                }
                let slot = self.slab.remove(key.index as usize);
                self.deferred.drop_data.push(slot.data);
                self.deferred.drop_ticket(ticket);
            }
            PhaseKind::AwaitingPermit => self.deferred.drop_ticket(ticket),
            PhaseKind::InFlight => {
                if let Some(slot) = self.slot_mut(key) {
                    slot.late = ticket;
                }
                if !retained {
                    self.request_cancel(key);
                }
            }
        }
    }

    /// An explicit cancel that keeps the handle attached: a queued request settles with
    /// `ECANCELED`, an in-flight one gets an async cancel, a settled one keeps its result.
    pub(crate) fn cancel(&mut self, key: RequestKey) {
        let Some(slot) = self.slot(key) else {
            return;
        };
        match slot.phase {
            Phase::Queued | Phase::AwaitingPermit => {
                self.counts.queued -= 1;
                self.settle(key, Err(Failure::Os(libc::ECANCELED)));
            }
            Phase::Sleeping => self.settle(key, Err(Failure::Os(libc::ECANCELED))),
            Phase::InFlight => self.request_cancel(key),
            Phase::Completed(_) => {}
        }
    }

    fn request_cancel(&mut self, key: RequestKey) {
        if let Some(slot) = self.slot_mut(key)
            && slot.cancel == CancelState::None
        {
            slot.cancel = CancelState::Queued;
            self.cancel_queue.push_back(key);
        }
    }

    /// Settles a live, unsettled request with `outcome`, releasing its durability permit first.
    fn settle(&mut self, key: RequestKey, outcome: Outcome) {
        let fsync = match self.slot(key).map(|s| &s.data) {
            Some(Request::Fsync { fd, start, .. }) => Some((fd.clone(), *start)),
            Some(_) => None,
            None => return,
        };
        if let Some((fd, start)) = fsync {
            let synced = if outcome.is_ok() { start } else { None };
            let next = self.durability.release(&fd, key, synced);
            self.settle_slot(key, outcome);
            self.pass_permit(&fd, next);
        } else {
            self.settle_slot(key, outcome);
        }
    }

    /// Hands the permit to the next live waiting sync (durability rules 2 and 4).
    fn pass_permit(
        &mut self,
        fd: &std::sync::Arc<std::os::fd::OwnedFd>,
        mut next: Option<(RequestKey, Grant)>,
    ) {
        while let Some((key, grant)) = next {
            let waiting = self
                .slot(key)
                .is_some_and(|s| matches!(s.phase, Phase::AwaitingPermit));
            if !waiting {
                next = self.durability.release(fd, key, None);
                continue;
            }
            // Lifecycle rule 9: after closure the waiting syncs still run, in permit order.
            if grant == Grant::Clean {
                self.counts.queued -= 1;
                next = self.durability.release(fd, key, None);
                self.settle_slot(key, Ok(0));
            } else {
                // A sync completes on its own: it goes under the in-flight limit.
                self.set_phase(key, Phase::Queued);
                self.push_queued(key, false);
                next = None;
            }
        }
    }

    /// Lifecycle rule 4.
    fn settle_slot(&mut self, key: RequestKey, outcome: Outcome) {
        let Some(slot) = self
            .slab
            .get_mut(key.index as usize)
            .filter(|s| s.generation == key.generation)
        else {
            return;
        };
        if slot.deadline.take().is_some() {
            self.counts.live_timers -= 1;
        }
        if !slot.attached {
            // Rule 7: closure told this request's handle `Closed`; an error it hid is counted.
            if self.closed && outcome.is_err() && slot.data.is_retained() {
                self.counts.retained_failures += 1;
            }
            let mut slot = self.slab.remove(key.index as usize);
            self.deferred.drop_waiter(slot.waiter);
            let ticket = slot.late.take();
            self.dispose(outcome, Some(slot.data), ticket);
            return;
        }
        match std::mem::replace(&mut slot.waiter, Waiter::None) {
            Waiter::Forward(cell) => {
                let slot = self.slab.remove(key.index as usize);
                self.deliver_to_cell(&cell, outcome, slot.data);
                self.deferred.drop_cells.push(cell);
            }
            Waiter::Local(w) => {
                slot.phase = Phase::Completed(outcome);
                self.deferred.wake.push(w);
            }
            Waiter::None => slot.phase = Phase::Completed(outcome),
        }
    }

    /// Applies one mailbox message (forward rules 2 and 4).
    pub(crate) fn apply(&mut self, msg: Msg) {
        match msg {
            Msg::Drop { key, ticket } => self.detach(key, ticket),
            Msg::Cancel { key } => self.cancel(key),
            Msg::Forward { key, cell } => {
                if self.closed {
                    // Lifecycle rule 7 / forward rule 6: closure retired or detached the slot.
                    let settled = cell.close();
                    self.settled(settled);
                    self.detach(key, None);
                } else {
                    self.attach_forward(key, &cell);
                }
                self.deferred.drop_cells.push(cell);
            }
            Msg::Register {
                data,
                deadline,
                cell,
            } => {
                let abandoned = cell.lock().abandoned;
                if abandoned && !data.is_retained() {
                    // Dropped at birth: never submitted, so its ticket ends with nothing.
                    self.deferred.drop_ticket(cell.take_ticket());
                    self.deferred.drop_data.push(data);
                    self.deferred.drop_cells.push(cell);
                    return;
                }
                match self.register(data, deadline, Waiter::Forward(cell.clone())) {
                    Ok(key) => {
                        let abandoned = {
                            let mut state = cell.lock();
                            state.key = Some(key);
                            state.abandoned
                        };
                        if abandoned {
                            self.detach(key, None);
                        }
                    }
                    Err((refusal, waiter)) => {
                        self.deferred.drop_waiter(waiter);
                        let settled =
                            cell.settle(Err(Failure::Runtime(refusal.error)), Some(refusal.data));
                        self.settled(settled);
                    }
                }
                self.deferred.drop_cells.push(cell);
            }
        }
    }
}
