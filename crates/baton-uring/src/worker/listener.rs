//! The wake listener (worker rule W11): one more party told whenever work becomes runnable on
//! the worker from another thread, for a driver that keeps an idle worker somewhere it cannot
//! see the driver's unpark (the loan driver's slot between `block_on` calls).

use std::fmt;
use std::sync::{Arc, OnceLock};

use baton_task::Unpark;

/// The listener, set at most once and read without a lock by every wake. Shared by the
/// scheduler's unpark hook and every [`WorkerHandle`](super::WorkerHandle).
#[derive(Default)]
pub(crate) struct ListenerCell {
    listener: OnceLock<Arc<dyn Unpark>>,
}

impl fmt::Debug for ListenerCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListenerCell")
            .field("installed", &self.listener.get().is_some())
            .finish()
    }
}

impl ListenerCell {
    /// Installs `listener` unless one is installed already, in which case it is handed back.
    pub(crate) fn set(&self, listener: Arc<dyn Unpark>) -> Result<(), Arc<dyn Unpark>> {
        self.listener.set(listener)
    }

    /// Worker rule W11: tells the listener, if any. Called after the driver was unparked.
    pub(crate) fn notify(&self) {
        if let Some(listener) = self.listener.get() {
            listener.unpark();
        }
    }
}
