//! The driver's thread-safe half: mailbox, unpark flag and wake-up eventfd. Handles, unparkers
//! and detached-sync senders reach the driver only through here.

use std::fmt;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::OnceLock;

use web_time::Instant;

use crate::forward::ForwardCell;
use crate::key::RequestKey;
use crate::linger::{Budget, Linger, Token, TokenWas};
use crate::request::Request;
use crate::stash::StashTicket;
use crate::sync::{Arc, AtomicU32, AtomicUsize, Mutex, Ordering, lock};

/// A message from another thread to the driver.
#[derive(Debug)]
pub(crate) enum Msg {
    /// Register a request on behalf of a foreign handle or a detached sync.
    Register {
        data: Request,
        deadline: Option<Instant>,
        cell: Arc<ForwardCell>,
    },
    /// Forward the result of `key` through `cell` (forward rule F1).
    Forward {
        key: RequestKey,
        cell: Arc<ForwardCell>,
    },
    /// The handle of `key` was dropped on a foreign thread, with its stash ticket if it was
    /// bound to a stash (stash rule S2).
    Drop {
        key: RequestKey,
        ticket: Option<StashTicket>,
    },
    /// The handle of `key` asked for an async cancel, keeping its result.
    Cancel { key: RequestKey },
    /// The file was written outside the driver (durability rule D3). Weak, so the message
    /// never keeps the file open.
    Written { file: std::sync::Weak<OwnedFd> },
}

#[derive(Debug, Default)]
struct MailboxState {
    closed: bool,
    messages: Vec<Msg>,
}

/// Called after a message woke the driver (see [`Mailbox::set_message_hook`]). A std `Arc`
/// even under loom: the hook is installed before any other thread exists and only read after.
pub(crate) type MessageHook = std::sync::Arc<dyn Fn() + Send + Sync>;

/// Where the driver was when a message reached it.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Heard {
    /// Lingering at this idle point (forward rule F8): a reply may be moments away (F9).
    Lingering(IdlePoint),
    /// Busy, or blocked and woken: no reply is known to be close.
    Woken,
}

/// The count of the driver's idle points, wrapping: a poller waiting for its reply (forward
/// rule F9) stops once the driver passed another one.
pub(crate) type IdlePoint = u32;

/// State shared between the driver and every handle.
pub(crate) struct Mailbox {
    pub(crate) id: u64,
    mailbox: Mutex<MailboxState>,
    /// Messages ever queued; bumped under the mailbox lock after each push, so a turn that has
    /// taken exactly this many can skip the lock (it never resets, so no message is hidden).
    sent: AtomicUsize,
    /// The unpark token (see `linger.rs`).
    token: Token,
    /// Idle points the driver reached (F9); bumped before each linger or blocking wait.
    idle_points: AtomicU32,
    eventfd: Option<OwnedFd>,
    /// Told after every message's unpark: set once by the owner of a driver that may sit idle
    /// where nobody waits on the ring (worker rule W11).
    message_hook: OnceLock<MessageHook>,
}

impl fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mailbox")
            .field("id", &self.id)
            .field("mailbox", &self.mailbox)
            .field("sent", &self.sent)
            .field("token", &self.token)
            .field("eventfd", &self.eventfd)
            .field("message_hook", &self.message_hook.get().is_some())
            .finish()
    }
}

impl Mailbox {
    pub(crate) fn new(id: u64, eventfd: Option<OwnedFd>) -> Arc<Mailbox> {
        Arc::new(Mailbox {
            id,
            mailbox: Mutex::new(MailboxState::default()),
            sent: AtomicUsize::new(0),
            token: Token::new(),
            idle_points: AtomicU32::new(0),
            eventfd,
            message_hook: OnceLock::new(),
        })
    }

    /// Queues `msg` and wakes the driver; a closed mailbox hands the message back so the caller
    /// drops it outside the lock.
    pub(crate) fn send(&self, msg: Msg) -> Result<(), Box<Msg>> {
        self.post(msg).map(drop)
    }

    /// [`send`](Self::send), also telling whether the driver was lingering (forward rule F8).
    pub(crate) fn post(&self, msg: Msg) -> Result<Heard, Box<Msg>> {
        {
            let mut mailbox = lock(&self.mailbox);
            if mailbox.closed {
                // Boxed: a closed mailbox is rare, and a message is large.
                return Err(Box::new(msg));
            }
            mailbox.messages.push(msg);
            self.sent.fetch_add(1, Ordering::Release);
        }
        let heard = match self.unpark_noting() {
            // Bumped before the linger began, so this is its idle point or a later one.
            TokenWas::Lingering => Heard::Lingering(self.idle_point()),
            TokenWas::Clear | TokenWas::Pending => Heard::Woken,
        };
        if let Some(hook) = self.message_hook.get() {
            hook();
        }
        Ok(heard)
    }

    /// Installs the hook told after every message's unpark, at most once; a second hook is
    /// handed back. A driver whose owner may keep it idle where nobody waits on the ring uses
    /// this to learn that a message needs a turn.
    pub(crate) fn set_message_hook(&self, hook: MessageHook) -> Result<(), MessageHook> {
        self.message_hook.set(hook)
    }

    /// Whether messages were queued beyond the `taken` a turn has applied (no lock).
    pub(crate) fn has_messages_beyond(&self, taken: usize) -> bool {
        self.sent.load(Ordering::Acquire) != taken
    }

    /// Whether the mailbox still accepts messages.
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.mailbox).closed
    }

    /// Moves every queued message into `out`. `taken` is the caller's count of messages taken
    /// so far; when it equals the number ever sent, the lock is skipped.
    pub(crate) fn take_messages(&self, taken: &mut usize, out: &mut Vec<Msg>) {
        if self.sent.load(Ordering::Acquire) == *taken {
            return;
        }
        let mut mailbox = lock(&self.mailbox);
        *taken = self.sent.load(Ordering::Acquire);
        if out.is_empty() {
            std::mem::swap(out, &mut mailbox.messages);
        } else {
            out.append(&mut mailbox.messages);
        }
    }

    /// Refuses further messages and returns the ones still queued.
    pub(crate) fn close(&self) -> Vec<Msg> {
        let mut mailbox = lock(&self.mailbox);
        mailbox.closed = true;
        std::mem::take(&mut mailbox.messages)
    }

    /// Wakes the driver: records the unpark in the token, and writes the eventfd only when the
    /// token was clear (a lingering driver sees the token itself, forward rule F8).
    pub(crate) fn unpark(&self) {
        let _unparked: TokenWas = self.unpark_noting();
    }

    /// [`unpark`](Self::unpark), telling what the token held (the loom models check it).
    pub(crate) fn unpark_noting(&self) -> TokenWas {
        let unparked = self.token.unpark();
        if unparked == TokenWas::Clear
            && let Some(fd) = &self.eventfd
        {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live local into an eventfd this struct owns.
            let _ = unsafe { libc::write(fd.as_raw_fd(), (&raw const one).cast(), 8) };
        }
        unparked
    }

    /// Writes the eventfd unconditionally (shutdown uses it to complete the armed read).
    pub(crate) fn kick(&self) {
        if let Some(fd) = &self.eventfd {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live local into an eventfd this struct owns.
            let _ = unsafe { libc::write(fd.as_raw_fd(), (&raw const one).cast(), 8) };
        }
    }

    /// Clears the unpark token, returning whether an unpark happened since the last call.
    pub(crate) fn take_notified(&self) -> bool {
        self.token.take()
    }

    /// Driver side: marks an idle point (F9), before the driver lingers or blocks.
    pub(crate) fn reach_idle_point(&self) {
        self.idle_points.fetch_add(1, Ordering::Release);
    }

    /// The idle points the driver reached so far (F9).
    pub(crate) fn idle_point(&self) -> IdlePoint {
        self.idle_points.load(Ordering::Acquire)
    }

    /// Driver side, after [`take_notified`](Self::take_notified) found nothing: lingers
    /// (forward rule F8) until an unpark, `ready()` (the ring has completions) or the budget.
    pub(crate) fn linger(&self, budget: Budget, ready: impl FnMut() -> bool) -> Linger {
        self.token.linger(budget, ready)
    }

    /// The eventfd the driver keeps a read armed on.
    pub(crate) fn eventfd(&self) -> Option<i32> {
        self.eventfd.as_ref().map(AsRawFd::as_raw_fd)
    }
}
