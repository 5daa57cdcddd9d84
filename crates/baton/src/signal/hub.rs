//! The per-runtime half of signal handling: a task on the runtime reads its slot's eventfd on
//! the ring and wakes the runtime's listeners after each batch of deliveries.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Waker;

use baton_uring::ops;

use super::registry::SlotLease;
use crate::handle::Handle;

/// One runtime's listeners and the slot they are woken through.
///
/// Invariant: once `closed` is set (the reader task ended: the runtime shut down), no waker
/// is kept — every waiter registered before was woken, and later registrations see `closed`.
#[derive(Debug)]
pub(crate) struct Hub {
    waiters: Mutex<Vec<Waker>>,
    closed: AtomicBool,
    /// Held for the hub's life: the handler writes to this slot's eventfd.
    slot: SlotLease,
}

impl Hub {
    /// The runtime's hub, made (and its reader task spawned) by its first listener.
    pub(crate) fn of(handle: &Handle) -> io::Result<Arc<Hub>> {
        handle.signal_hub(|| {
            let hub = Arc::new(Hub {
                waiters: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
                slot: SlotLease::acquire()?,
            });
            let eventfd = Arc::new(hub.slot.eventfd()?);
            let reader = Arc::clone(&hub);
            handle
                .try_spawn(read_deliveries(reader, eventfd))
                .map_err(crate::Error::into_io)?;
            Ok(hub)
        })
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Keeps `waker` until the next batch of deliveries (once per task: `will_wake`).
    pub(crate) fn register(&self, waker: &Waker) {
        let waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        if waiters.iter().any(|w| w.will_wake(waker)) {
            return;
        }
        drop(waiters);
        // Cloned outside the lock: a waker's clone is user code.
        let waker = waker.clone();
        self.waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(waker);
    }

    /// Wakes every waiter (outside the lock).
    fn wake_all(&self) {
        let waiters =
            std::mem::take(&mut *self.waiters.lock().unwrap_or_else(PoisonError::into_inner));
        for waker in waiters {
            waker.wake();
        }
    }
}

/// Closes the hub when the reader task ends (a shutdown drops it), so listeners resolve to
/// `None` instead of waiting forever.
struct CloseOnDrop(Arc<Hub>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::Release);
        self.0.wake_all();
    }
}

/// The reader task: each completed read of the eventfd means deliveries happened since the
/// last one (the handler counted them before writing), so every listener is woken to look.
async fn read_deliveries(hub: Arc<Hub>, eventfd: Arc<std::os::fd::OwnedFd>) {
    let hub = CloseOnDrop(hub);
    let mut buf = [0u8; 8];
    loop {
        let (res, back) = ops::read_at(Arc::clone(&eventfd), buf, 0).await;
        buf = back;
        if res.is_err() {
            return;
        }
        hub.0.wake_all();
    }
}
