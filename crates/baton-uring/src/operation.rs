//! [`Op`]: the future every operation returns. It registers lazily on first poll and then
//! follows the handle side of the lifecycle and forwarding rules (see `state/mod.rs` and
//! `forward.rs`).

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll};

use web_time::Instant;

use crate::context::{self, Entered, with_core};
use crate::error::Error;
use crate::forward::{CellSlot, ForwardCell};
use crate::handle::DriverHandle;
use crate::key::RequestKey;
use crate::linger::{Budget, REPLY_WAIT, wait_until};
use crate::mailbox::{Heard, IdlePoint, Mailbox, Msg};
use crate::request::{Failure, Outcome, Request, close_orphan_fd};
use crate::stash::{Stash, StashTicket};
use crate::state::{Install, PollSlot, Waiter};
use crate::sync::Arc;

/// Turns a raw outcome plus the returned buffers into the operation's output.
pub(crate) type Decode<T> = fn(Outcome, Option<Request>) -> T;

/// The operation's way to its driver's mailbox: an owned count, or a borrow of a
/// [`DriverHandle`] that outlives the operation (which saves the count's two atomic updates per
/// operation).
enum Bound<'h> {
    Owned(Arc<Mailbox>),
    Borrowed(&'h Mailbox),
}

impl Deref for Bound<'_> {
    type Target = Mailbox;

    fn deref(&self) -> &Mailbox {
        match self {
            Bound::Owned(shared) => shared,
            Bound::Borrowed(shared) => shared,
        }
    }
}

enum State<'h> {
    Unregistered {
        data: Request,
        bound: Option<Bound<'h>>,
    },
    Local {
        key: RequestKey,
        shared: Bound<'h>,
    },
    Forwarded {
        cell: Arc<ForwardCell>,
        shared: Bound<'h>,
    },
    Invalid {
        data: Request,
        reason: &'static str,
    },
    Done,
}

/// An io_uring operation that may hold a borrow of a [`DriverHandle`] for `'h` (see
/// [`bind_borrowed`](Operation::bind_borrowed)); [`Op`] is the form that borrows nothing.
/// Building it does nothing; the first poll registers it with the driver entered on the
/// polling thread (or the driver it was bound to). It is `Send`: it may be polled or dropped on
/// any thread. Dropping it cancels a read-like request and lets a retained one (write, sync,
/// close, shutdown, a path change such as mkdir or rename) finish.
#[must_use = "operations do nothing until polled"]
pub struct Operation<'h, T> {
    state: State<'h>,
    deadline: Option<Instant>,
    decode: Decode<T>,
    /// Where a result that completes after this operation is dropped goes (stash rule S1).
    stash: Option<StashRef<'h>>,
}

/// The stash of a cancel-safe operation: borrowed for the operation's life, or shared.
enum StashRef<'h> {
    Borrowed(&'h StdArc<Stash>),
    Shared(StdArc<Stash>),
}

impl StashRef<'_> {
    fn ticket(&self) -> StashTicket {
        match self {
            StashRef::Borrowed(stash) => Stash::ticket(stash),
            StashRef::Shared(stash) => Stash::ticket(stash),
        }
    }
}

/// An operation that owns its way to the driver: what every constructor in [`ops`](crate::ops)
/// returns, and what may be stored or awaited anywhere (`'static`).
pub type Op<T> = Operation<'static, T>;

impl<T> fmt::Debug for Operation<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Unregistered { .. } => "unregistered",
            State::Local { .. } => "local",
            State::Forwarded { .. } => "forwarded",
            State::Invalid { .. } => "invalid",
            State::Done => "done",
        };
        f.debug_struct("Operation")
            .field("state", &state)
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl<T> Op<T> {
    pub(crate) fn new(data: Request, decode: Decode<T>) -> Op<T> {
        Operation {
            state: State::Unregistered { data, bound: None },
            deadline: None,
            decode,
            stash: None,
        }
    }

    /// The operation, or — when `refused` — one refused before registration with `reason`
    /// (see [`invalid`](Op::invalid)); for constructors that check their buffers first.
    pub(crate) fn new_unless(
        refused: bool,
        data: Request,
        reason: &'static str,
        decode: Decode<T>,
    ) -> Op<T> {
        if refused {
            Op::invalid(data, reason, decode)
        } else {
            Op::new(data, decode)
        }
    }

    /// An operation refused before registration: resolves to `InvalidInput` with `reason`.
    pub(crate) fn invalid(data: Request, reason: &'static str, decode: Decode<T>) -> Op<T> {
        Operation {
            state: State::Invalid { data, reason },
            deadline: None,
            decode,
            stash: None,
        }
    }
}

impl<'h, T> Operation<'h, T> {
    /// Asks the driver to cancel the request without giving up its result: the operation then
    /// resolves to whatever the kernel reports last — an `ECANCELED` OS error if the cancel won, the completed result if the request finished first. A queued request is cancelled
    /// without being submitted. No effect before the first poll or after completion.
    pub fn cancel(&self) {
        let (key, shared) = match &self.state {
            State::Local { key, shared } => (Some(*key), shared),
            State::Forwarded { cell, shared } => (cell.lock().key, shared),
            _ => return,
        };
        let Some(key) = key else { return };
        match context::current_for(shared.id) {
            Some(entered) => with_core(entered.inner(), |core| core.cancel(key)),
            None => drop(shared.send(Msg::Cancel { key })),
        }
    }

    /// Binds the operation to `handle`'s driver instead of the one entered at first poll.
    /// Has no effect once the operation has been polled. (After
    /// [`bind_borrowed`](Operation::bind_borrowed) it replaces the borrow with a count but
    /// keeps the borrow's lifetime.)
    pub fn bind(mut self, handle: &DriverHandle) -> Operation<'h, T> {
        if let State::Unregistered { bound, .. } = &mut self.state {
            *bound = Some(Bound::Owned(handle.shared.clone()));
        }
        self
    }

    /// Binds the operation to `handle`'s driver, as [`bind`](Operation::bind) does, but
    /// borrows the handle instead of counting a reference to the driver: the operation then
    /// cannot outlive `handle`. For operations awaited inside a borrow of the object that holds
    /// the handle (a file's `read_at(&self, ..)`), this saves two atomic updates per operation.
    /// Has no effect once the operation has been polled.
    pub fn bind_borrowed<'b>(self, handle: &'b DriverHandle) -> Operation<'b, T>
    where
        'h: 'b,
    {
        let mut op: Operation<'b, T> = self;
        if let State::Unregistered { bound, .. } = &mut op.state {
            *bound = Some(Bound::Borrowed(&handle.shared));
        }
        op
    }

    /// Makes the operation cancel-safe: if it is dropped after the kernel completed it, or
    /// while the kernel may still complete it, its result (the bytes of a receive, the
    /// connection of an accept) goes to `stash` instead of being discarded, and the socket's
    /// next receive or accept takes it from there first ([`Stash::poll_take_bytes`],
    /// [`Stash::poll_take_connection`]). For other requests a late result is disposed of as
    /// usual. The operation then cannot outlive `stash`'s borrow.
    pub fn stash_late_result<'b>(self, stash: &'b StdArc<Stash>) -> Operation<'b, T>
    where
        'h: 'b,
    {
        let mut op: Operation<'b, T> = self;
        op.stash = Some(StashRef::Borrowed(stash));
        op
    }

    /// [`stash_late_result`](Operation::stash_late_result) holding a share of `stash`, so the
    /// operation keeps its lifetime (an [`Op`] stays `'static`, for an adapter that stores it
    /// across polls).
    pub fn stash_late_result_shared(mut self, stash: StdArc<Stash>) -> Operation<'h, T> {
        self.stash = Some(StashRef::Shared(stash));
        self
    }

    /// Gives the operation a deadline: past it, the operation resolves to `Timeout` (an
    /// already-passed deadline submits nothing). Has no effect once polled.
    pub fn with_deadline(mut self, deadline: Instant) -> Operation<'h, T> {
        if matches!(self.state, State::Unregistered { .. }) {
            self.deadline = Some(deadline);
        }
        self
    }

    /// The request's key, once registered locally.
    pub fn key(&self) -> Option<RequestKey> {
        match &self.state {
            State::Local { key, .. } => Some(*key),
            State::Forwarded { cell, .. } => cell.lock().key,
            _ => None,
        }
    }

    fn fail(&mut self, error: Error, data: Option<Request>) -> Poll<T> {
        self.state = State::Done;
        Poll::Ready((self.decode)(Err(Failure::Runtime(error)), data))
    }

    fn ready(&mut self, outcome: Outcome, data: Option<Request>) -> Poll<T> {
        self.state = State::Done;
        Poll::Ready((self.decode)(outcome, data))
    }

    /// Registers with the entered driver, or through the mailbox; `heard` says where a mailbox
    /// message found the driver (forward rule F9).
    fn register(&mut self, cx: &mut Context<'_>, heard: &mut Heard) -> Option<Poll<T>> {
        let State::Unregistered { data, bound } = std::mem::replace(&mut self.state, State::Done)
        else {
            unreachable!("register is only called on an unregistered op")
        };
        let current = context::current();
        let shared = match (bound, current) {
            (Some(shared), _) => shared,
            (None, Some(entered)) => Bound::Owned(entered.inner().shared.clone()),
            (None, None) => return Some(self.fail(Error::NoDriver, Some(data))),
        };
        if let Some(entered) = current.filter(|e| e.id == shared.id) {
            // Lifecycle rule U1 refuses without cloning the waker: asked first, under a shared
            // borrow that runs no user code.
            let now = self.deadline.map(|_| Instant::now());
            let refused = entered
                .inner()
                .core
                .try_borrow()
                .expect("driver state is never borrowed while user code runs")
                .refusal(&data, self.deadline, now);
            if let Some(error) = refused {
                return Some(self.fail(error, Some(data)));
            }
            // Waker hygiene: the waker is cloned before the state is borrowed, so registration
            // and waker installation take one borrow instead of three.
            let waker = Waiter::Local(cx.waker().clone());
            let result = with_core(entered.inner(), |core| {
                core.register(data, self.deadline, waker)
            });
            return match result {
                Ok(key) => {
                    self.state = State::Local { key, shared };
                    Some(Poll::Pending)
                }
                Err(refused) => {
                    let (refusal, waiter) = *refused;
                    drop(waiter);
                    Some(self.fail(refusal.error, Some(refusal.data)))
                }
            };
        }
        if self.deadline.is_some_and(|d| d <= Instant::now()) {
            return Some(self.fail(Error::Timeout, Some(data)));
        }
        let cell = Arc::new(ForwardCell::new(None));
        let msg = Msg::Register {
            data,
            deadline: self.deadline,
            cell: cell.clone(),
        };
        match shared.post(msg) {
            Ok(answer) => {
                *heard = answer;
                self.state = State::Forwarded { cell, shared };
            }
            Err(refused) => {
                let data = match *refused {
                    Msg::Register { data, .. } => Some(data),
                    _ => None,
                };
                return Some(self.fail(Error::Closed, data));
            }
        }
        None
    }
}

fn poll_local(
    entered: Entered,
    key: RequestKey,
    cx: &mut Context<'_>,
) -> Poll<(Outcome, Option<Request>)> {
    loop {
        let polled = with_core(entered.inner(), |core| core.poll(key, cx.waker()));
        match polled {
            Err(error) => return Poll::Ready((Err(Failure::Runtime(error)), None)),
            Ok(PollSlot::Ready(outcome, data, waker)) => {
                drop(waker);
                return Poll::Ready((outcome, data));
            }
            Ok(PollSlot::Pending) => return Poll::Pending,
            Ok(PollSlot::NeedWaker) => {
                // Waker hygiene: clone with no internal borrow held.
                let fresh = cx.waker().clone();
                match with_core(entered.inner(), |core| core.install_waker(key, fresh)) {
                    Install::Installed(old) => {
                        drop(old);
                        return Poll::Pending;
                    }
                    Install::Settled(fresh) => drop(fresh),
                }
            }
        }
    }
}

impl<T> Future for Operation<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        let mut heard = Heard::Woken;
        loop {
            match &this.state {
                State::Done => panic!("an Op was polled after it completed"),
                State::Invalid { .. } => {
                    let State::Invalid { data, reason } =
                        std::mem::replace(&mut this.state, State::Done)
                    else {
                        unreachable!("matched Invalid just above")
                    };
                    return this.ready(Err(Failure::Invalid(reason)), Some(data));
                }
                State::Unregistered { .. } => {
                    if let Some(done) = this.register(cx, &mut heard) {
                        return done;
                    }
                }
                State::Local { key, shared } => {
                    let key = *key;
                    if let Some(entered) = context::current_for(shared.id) {
                        return match poll_local(entered, key, cx) {
                            Poll::Ready((outcome, data)) => this.ready(outcome, data),
                            Poll::Pending => Poll::Pending,
                        };
                    }
                    // Forward rule F1: ask the owner to forward the result.
                    let cell = Arc::new(ForwardCell::new(Some(key)));
                    let State::Local { shared, .. } =
                        std::mem::replace(&mut this.state, State::Done)
                    else {
                        unreachable!("matched Local just above")
                    };
                    match shared.post(Msg::Forward {
                        key,
                        cell: cell.clone(),
                    }) {
                        Ok(answer) => {
                            heard = answer;
                            this.state = State::Forwarded { cell, shared };
                        }
                        Err(_) => return this.fail(Error::Closed, None),
                    }
                }
                State::Forwarded { cell, shared } => {
                    if let Some(entered) = context::current_for(shared.id) {
                        let key = cell.lock().key;
                        if let Some(key) = key {
                            with_core(entered.inner(), |core| core.attach_forward(key, cell));
                        }
                    }
                    let mut polled = cell.poll(cx);
                    if let (Poll::Pending, Heard::Lingering(point)) = (&polled, heard) {
                        polled = await_reply(cell, shared, point, cx);
                    }
                    return match polled {
                        Poll::Ready((outcome, data)) => this.ready(outcome, data),
                        Poll::Pending => Poll::Pending,
                    };
                }
            }
        }
    }
}

impl<T> Drop for Operation<'_, T> {
    fn drop(&mut self) {
        if matches!(self.state, State::Done) {
            // The common end of a consumed operation: nothing to hand back or detach.
            return;
        }
        let stash = self.stash.take();
        match std::mem::replace(&mut self.state, State::Done) {
            State::Unregistered { .. } | State::Invalid { .. } | State::Done => {}
            State::Local { key, shared } => {
                // Stash rule S1: counted as outstanding before the driver hears of the drop.
                detach(&shared, key, stash.as_ref().map(StashRef::ticket));
            }
            State::Forwarded { cell, shared } => {
                // Forward rules F4 and F7.
                let (key, slot, ticket) = cell.abandon(stash.as_ref().map(StashRef::ticket));
                match (slot, ticket) {
                    // Stash rule S1: the result already reached this handle; keep it.
                    (CellSlot::Ready(outcome, data), Some(ticket)) => ticket.deposit(outcome, data),
                    (CellSlot::Ready(Ok(fd), Some(data)), None) if data.creates_fd() => {
                        close_orphan_fd(fd);
                    }
                    (slot, ticket) => drop((slot, ticket)),
                }
                if let Some(key) = key {
                    detach(&shared, key, None);
                }
            }
        }
    }
}

/// Forward rule F9: the message just sent found the driver lingering, so its reply may be
/// moments away. Off any driver's thread (a runtime thread has its own work to get back to),
/// wait for it until the cell is settled, the driver passes its next idle point without having
/// replied, or the budget ends. The waker is already in the cell, so a reply after the wait
/// wakes it as usual (F3).
fn await_reply(
    cell: &ForwardCell,
    shared: &Mailbox,
    point: IdlePoint,
    cx: &mut Context<'_>,
) -> Poll<(Outcome, Option<Request>)> {
    if context::current().is_some() {
        return Poll::Pending;
    }
    let _ = wait_until(Budget::of(REPLY_WAIT), || {
        shared.idle_point() != point || cell.is_settled()
    });
    if cell.is_settled() {
        cell.poll(cx)
    } else {
        Poll::Pending
    }
}

fn detach(shared: &Mailbox, key: RequestKey, ticket: Option<StashTicket>) {
    match context::current_for(shared.id) {
        // Forward rule F5: a local drop acts at once.
        Some(entered) => with_core(entered.inner(), |core| core.detach(key, ticket)),
        None => drop(shared.send(Msg::Drop { key, ticket })),
    }
}
