//! The background thread: runs the worker between `block_on` calls and hands it over at
//! dispatch boundaries (L3, L5, L7–L9).

use std::sync::Arc;

use crate::frame::{BackgroundMark, RuntimeKey};
use crate::slot::{Answer, Close, Slot};
use crate::sync::thread;
use crate::worker::{LoanWorker, RunOutcome};

/// Closes the slot if the background thread unwinds (L9), so no caller waits for a thread
/// that is gone.
struct CloseOnUnwind<'a> {
    slot: &'a Slot,
}

impl Drop for CloseOnUnwind<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            match self.slot.close_after_panic() {
                Close::Taken(worker) => drop(worker),
                Close::WithBackground | Close::OnLoan | Close::AlreadyClosed => {}
            }
        }
    }
}

/// The background thread's body: run the worker until a request or closure needs attention,
/// then answer at the slot. The worker is dropped here, outside the slot lock, once closed.
pub(crate) fn run(slot: Arc<Slot>, key: RuntimeKey, worker: Box<dyn LoanWorker>) {
    let _close_on_unwind = CloseOnUnwind { slot: &slot };
    let _mark = BackgroundMark::new(key);
    let mut worker = worker;
    loop {
        let outcome = worker.run_until(&mut || slot.needs_attention(), None);
        if outcome == RunOutcome::ShuttingDown {
            // The worker retired itself: close the protocol and drop it (L8).
            match slot.close() {
                Close::Taken(other) => drop(other),
                Close::WithBackground | Close::OnLoan | Close::AlreadyClosed => {}
            }
            drop(worker);
            return;
        }
        let holds_local = worker.holds_local_tasks();
        match slot.answer(worker, holds_local) {
            Answer::Run(next) => worker = next,
            Answer::Closed(held) => {
                drop(held);
                return;
            }
        }
    }
}
