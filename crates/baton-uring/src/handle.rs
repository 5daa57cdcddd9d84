//! Thread-safe handles: [`DriverHandle`], [`Unparker`], and detached syncs ([`SyncReceiver`]).

use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll};

use crate::context::{self, with_core};
use crate::error::Error;
use crate::forward::{Delivery, ForwardCell};
use crate::mailbox::{Mailbox, Msg};
use crate::request::{Failure, Request};
use crate::state::Waiter;
use crate::sync::Arc;

/// A `Clone + Send + Sync` handle to a driver's mailbox. It does not keep the driver alive:
/// once the driver closes, everything sent through it resolves to `Closed`.
#[derive(Debug, Clone)]
pub struct DriverHandle {
    pub(crate) shared: Arc<Mailbox>,
}

/// Wakes a driver's turn from any thread (`Clone + Send + Sync`).
#[derive(Debug, Clone)]
pub struct Unparker {
    shared: Arc<Mailbox>,
}

impl Unparker {
    pub(crate) fn new(shared: Arc<Mailbox>) -> Unparker {
        Unparker { shared }
    }

    /// Ends the driver's current or next wait. Cheap when already unparked.
    pub fn unpark(&self) {
        self.shared.unpark();
    }
}

impl DriverHandle {
    pub(crate) fn new(shared: Arc<Mailbox>) -> DriverHandle {
        DriverHandle { shared }
    }

    /// The driver's id.
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// Whether the driver has closed.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// An unparker for the driver.
    pub fn unparker(&self) -> Unparker {
        Unparker::new(self.shared.clone())
    }

    /// Tells the driver that `fd` was written outside it — by a system call on another thread,
    /// say — so the file's next sync through the driver really syncs instead of finding the
    /// file clean (durability rule D3). From any thread; on a closed driver it does nothing.
    /// Call it after the write completed.
    pub fn note_write(&self, fd: &StdArc<OwnedFd>) {
        if let Some(entered) = context::current_for(self.shared.id) {
            with_core(entered.inner(), |core| core.note_write(fd));
        } else {
            let written = Msg::Written {
                file: StdArc::downgrade(fd),
            };
            // A closed driver runs no later sync either: nothing to tell.
            drop(self.shared.send(written));
        }
    }

    /// Starts a detached `fsync` (`datasync`: `fdatasync`) and returns its receiver at once, even
    /// with a full ring, without cloning any waker. Dropping the receiver leaves the sync
    /// running. Syncs of one file serialize through its durability permit.
    pub fn start_sync(&self, fd: StdArc<OwnedFd>, datasync: bool) -> SyncReceiver {
        let cell = Arc::new(ForwardCell::new(None));
        let data = Request::Fsync {
            fd,
            datasync,
            start: None,
        };
        if let Some(entered) = context::current_for(self.shared.id) {
            let refused = with_core(entered.inner(), |core| {
                match core.register(data, None, Waiter::Forward(cell.clone())) {
                    Ok(key) => {
                        cell.lock().key = Some(key);
                        None
                    }
                    Err(refused) => {
                        let (refusal, waiter) = *refused;
                        core.deferred.drop_waiter(waiter);
                        Some(refusal)
                    }
                }
            });
            if let Some(refusal) = refused {
                let settled = cell.settle(Err(Failure::Runtime(refusal.error)), None);
                drop(refusal.data);
                drop(settled);
            }
        } else if let Err(msg) = self.shared.send(Msg::Register {
            data,
            deadline: None,
            cell: cell.clone(),
        }) {
            drop(msg);
            if let Delivery::Stored(w) = cell.close() {
                drop(w);
            }
        }
        SyncReceiver { cell }
    }
}

/// The receiver of a detached sync; resolves to the sync's result, or `Closed`.
#[derive(Debug)]
#[must_use = "the sync runs anyway; await the receiver to learn its result"]
pub struct SyncReceiver {
    cell: Arc<ForwardCell>,
}

impl Future for SyncReceiver {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.cell.poll(cx).map(|(outcome, _data)| match outcome {
            Ok(_) => Ok(()),
            Err(failure) => Err(failure.into_io()),
        })
    }
}

impl Error {
    /// Whether `err` is Baton's `Closed`.
    pub fn is_closed(err: &io::Error) -> bool {
        Error::from_io(err) == Some(&Error::Closed)
    }

    /// Whether `err` is Baton's deadline `Timeout`.
    pub fn is_timeout(err: &io::Error) -> bool {
        Error::from_io(err) == Some(&Error::Timeout)
    }
}
