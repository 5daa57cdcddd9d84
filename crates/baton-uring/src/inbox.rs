//! The completion inbox: how executors hand external
//! completions to the worker.
//!
//! # Rules (cited as "inbox rule I1" ... I3)
//!
//! I1. **Accept or refuse, atomically with closure.** [`InboxSender::deliver`] pushes under the
//!    inbox lock only while the inbox is open; closing takes the channel's only sender under the
//!    same lock. So every completion reported `Delivered` is in the channel before closure
//!    completes, and the worker's final drain sees it; every later one is refused with
//!    `InboxClosed` and dropped by the sender (outside the lock, contained). Closing also sets
//!    a flag under that lock, so [`InboxSender::is_closed`] answers without taking it.
//!
//! I2. **Wake after pushing.** An accepted completion unparks the worker after the push, so a
//!    worker that checked the inbox and then parked is woken (the driver's unpark is a token).
//!
//! I3. **No user code under the lock.** Payload destructors run after the lock is released.

use std::fmt;
use std::sync::Arc;

use baton_cancel::ContainedDrop;
use baton_completion::{CompletionSender, DeliveryOutcome, ExternalCompletion};

use self::queue::{Receiver, Sender, TryRecvError};
use crate::handle::Unparker;
use crate::sync::{AtomicBool, AtomicU64, Mutex, Ordering, lock};

/// The channel: crossbeam's unbounded MPSC queue normally; under `cfg(loom)` a loom-visible
/// stand-in with the same (linearizable, disconnect-on-last-sender) semantics, so the models
/// see the dependency between a push and the worker's look at the queue.
#[cfg(not(loom))]
mod queue {
    pub(super) use crossbeam_channel::{Receiver, Sender, TryRecvError, unbounded};
}

#[cfg(loom)]
mod queue {
    use std::collections::VecDeque;

    use crate::sync::{Arc, Mutex, lock};

    #[derive(Debug)]
    struct State<T> {
        items: VecDeque<T>,
        senders: usize,
    }

    #[derive(Debug)]
    pub(crate) struct Sender<T>(Arc<Mutex<State<T>>>);

    #[derive(Debug)]
    pub(crate) struct Receiver<T>(Arc<Mutex<State<T>>>);

    /// A send the stand-in never refuses (the receiver outlives every send in the models).
    #[derive(Debug)]
    pub(crate) struct SendError<T>(T);

    impl<T> SendError<T> {
        pub(crate) fn into_inner(self) -> T {
            self.0
        }
    }

    #[derive(Debug)]
    pub(crate) enum TryRecvError {
        Empty,
        Disconnected,
    }

    pub(crate) fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
        let state = Arc::new(Mutex::new(State {
            items: VecDeque::new(),
            senders: 1,
        }));
        (Sender(state.clone()), Receiver(state))
    }

    impl<T> Sender<T> {
        pub(crate) fn send(&self, item: T) -> Result<(), SendError<T>> {
            lock(&self.0).items.push_back(item);
            Ok(())
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            lock(&self.0).senders -= 1;
        }
    }

    impl<T> Receiver<T> {
        pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
            let mut state = lock(&self.0);
            match state.items.pop_front() {
                Some(item) => Ok(item),
                None if state.senders == 0 => Err(TryRecvError::Disconnected),
                None => Err(TryRecvError::Empty),
            }
        }

        pub(crate) fn is_empty(&self) -> bool {
            lock(&self.0).items.is_empty()
        }

        pub(crate) fn len(&self) -> usize {
            lock(&self.0).items.len()
        }
    }
}

/// The executors' side of a worker's inbox: a [`CompletionSender`] (`Send + Sync`).
///
/// Invariant: `closed` is set under the `tx` lock when the sender is taken, and never cleared,
/// so it mirrors `tx.is_none()` without the lock that every delivery takes.
pub struct InboxSender {
    /// `Some` while the inbox is open (inbox rule I1).
    tx: Mutex<Option<Sender<ExternalCompletion>>>,
    closed: AtomicBool,
    unparker: Unparker,
    accepted: AtomicU64,
    refused: AtomicU64,
}

/// The worker's side of the inbox.
#[derive(Debug)]
pub(crate) struct InboxReceiver {
    rx: Receiver<ExternalCompletion>,
}

/// What a sender has seen so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InboxTraffic {
    /// Completions accepted (`Delivered`).
    pub accepted: u64,
    /// Completions refused because the inbox was closed (`InboxClosed`).
    pub refused: u64,
}

impl std::ops::Add for InboxTraffic {
    type Output = InboxTraffic;

    fn add(self, other: InboxTraffic) -> InboxTraffic {
        InboxTraffic {
            accepted: self.accepted + other.accepted,
            refused: self.refused + other.refused,
        }
    }
}

/// A new open inbox whose deliveries unpark through `unparker`.
pub(crate) fn inbox(unparker: Unparker) -> (Arc<InboxSender>, InboxReceiver) {
    let (tx, rx) = queue::unbounded();
    let sender = Arc::new(InboxSender {
        tx: Mutex::new(Some(tx)),
        closed: AtomicBool::new(false),
        unparker,
        accepted: AtomicU64::new(0),
        refused: AtomicU64::new(0),
    });
    (sender, InboxReceiver { rx })
}

impl InboxSender {
    /// Inbox rule I1: refuses every later delivery. Completions accepted before stay in the
    /// channel for the worker's final drain. Idempotent.
    pub(crate) fn close(&self) {
        let tx = {
            let mut open = lock(&self.tx);
            self.closed.store(true, Ordering::Release);
            open.take()
        };
        drop(tx);
    }

    /// Whether the inbox refuses deliveries. Lock-free: a submitter asks this for every job,
    /// and the lock is the one the executors' deliveries take.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The counts of accepted and refused deliveries.
    pub fn traffic(&self) -> InboxTraffic {
        InboxTraffic {
            accepted: self.accepted.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}

impl CompletionSender for InboxSender {
    fn deliver(&self, completion: ExternalCompletion) -> DeliveryOutcome {
        let refused = {
            let tx = lock(&self.tx);
            match tx.as_ref() {
                // The receiver lives as long as the worker, which closes the inbox before it
                // drops the receiver, so a send on an open inbox cannot fail; should it ever,
                // the completion comes back and is refused like on a closed inbox.
                Some(tx) => tx.send(completion).err().map(|err| err.into_inner()),
                None => Some(completion),
            }
        };
        match refused {
            None => {
                self.accepted.fetch_add(1, Ordering::Relaxed);
                // Inbox rule I2: wake after the push.
                self.unparker.unpark();
                DeliveryOutcome::Delivered
            }
            Some(completion) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                // Inbox rule I3: the payload's destructor runs outside the lock, contained.
                let _ = ContainedDrop::drop_value(completion);
                DeliveryOutcome::InboxClosed
            }
        }
    }
}

impl fmt::Debug for InboxSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InboxSender")
            .field("closed", &self.is_closed())
            .field("traffic", &self.traffic())
            .finish_non_exhaustive()
    }
}

/// One look at the channel.
#[must_use]
#[derive(Debug)]
pub(crate) enum Received {
    /// A completion to route.
    Completion(ExternalCompletion),
    /// Nothing queued right now.
    Empty,
    /// Closed and fully drained: nothing will ever arrive again.
    Finished,
}

impl InboxReceiver {
    /// Takes the next queued completion.
    pub(crate) fn next(&self) -> Received {
        match self.rx.try_recv() {
            Ok(completion) => Received::Completion(completion),
            Err(TryRecvError::Empty) => Received::Empty,
            Err(TryRecvError::Disconnected) => Received::Finished,
        }
    }

    /// Whether completions are waiting to be routed.
    pub(crate) fn has_queued(&self) -> bool {
        !self.rx.is_empty()
    }

    /// How many completions wait to be routed.
    pub(crate) fn queued(&self) -> usize {
        self.rx.len()
    }
}
