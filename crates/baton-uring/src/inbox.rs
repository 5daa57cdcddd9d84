//! The completion inbox (SPEC §4, "the completion inbox"): how executors hand external
//! completions to the worker.
//!
//! # Rules (cited as "inbox rule N")
//!
//! 1. **Accept or refuse, atomically with closure.** [`InboxSender::deliver`] pushes under the
//!    inbox lock only while the inbox is open; closing takes the channel's only sender under the
//!    same lock. So every completion reported `Delivered` is in the channel before closure
//!    completes, and the worker's final drain sees it; every later one is refused with
//!    `InboxClosed` and dropped by the sender (outside the lock, contained).
//! 2. **Wake after pushing.** An accepted completion unparks the worker after the push, so a
//!    worker that checked the inbox and then parked is woken (the driver's unpark is a token).
//! 3. **No user code under the lock.** Payload destructors run after the lock is released.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as StdOrdering};

use baton_cancel::ContainedDrop;
use baton_completion::{CompletionSender, DeliveryOutcome, ExternalCompletion};
use crossbeam_channel::{Receiver, Sender, TryRecvError};

use crate::handle::Unparker;
use crate::sync::{Mutex, lock};

/// The executors' side of a worker's inbox: a [`CompletionSender`] (`Send + Sync`).
pub struct InboxSender {
    /// `Some` while the inbox is open (inbox rule 1).
    tx: Mutex<Option<Sender<ExternalCompletion>>>,
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

/// A new open inbox whose deliveries unpark through `unparker`.
pub(crate) fn inbox(unparker: Unparker) -> (Arc<InboxSender>, InboxReceiver) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let sender = Arc::new(InboxSender {
        tx: Mutex::new(Some(tx)),
        unparker,
        accepted: AtomicU64::new(0),
        refused: AtomicU64::new(0),
    });
    (sender, InboxReceiver { rx })
}

impl InboxSender {
    /// Inbox rule 1: refuses every later delivery. Completions accepted before stay in the
    /// channel for the worker's final drain. Idempotent.
    pub(crate) fn close(&self) {
        let tx = lock(&self.tx).take();
        drop(tx);
    }

    /// Whether the inbox refuses deliveries.
    pub fn is_closed(&self) -> bool {
        lock(&self.tx).is_none()
    }

    /// The counts of accepted and refused deliveries.
    pub fn traffic(&self) -> InboxTraffic {
        InboxTraffic {
            accepted: self.accepted.load(StdOrdering::Relaxed),
            refused: self.refused.load(StdOrdering::Relaxed),
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
                self.accepted.fetch_add(1, StdOrdering::Relaxed);
                // Inbox rule 2: wake after the push.
                self.unparker.unpark();
                DeliveryOutcome::Delivered
            }
            Some(completion) => {
                self.refused.fetch_add(1, StdOrdering::Relaxed);
                // Inbox rule 3: the payload's destructor runs outside the lock, contained.
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
