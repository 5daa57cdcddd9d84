//! `block_on` from inside a task poll (or on the background thread while it runs a task): the
//! worker is busy polling the very task that called, so the loan driver cannot lend it and a
//! plain poll loop would wait forever for timers and I/O only the worker can complete.
//!
//! # Rules
//!
//! N1. The nested future is polled in place whenever its waker fired (initially once).
//!
//! N2. Between polls, the caller runs driver-only turns of the worker it is already running
//!    (worker rule W10): settle the inbox, reap the ring, fire timers, park in the ring wait
//!    until a completion, a timer or an unpark. It never polls another task re-entrantly.
//!
//! N3. The nested future's waker sets its flag *then* unparks the worker, whose unpark is a token,
//!    so a wake between the flag check and the park ends the park at once (no lost wake-up).
//!
//! N4. The call holds the worker's tasks back (task rule T12, `Spawner::hold_tasks` on the
//!    worker's own scheduler, not whichever is innermost on the thread) for as
//!    long as it runs: a `JoinHandle` of an unfinished task of this worker polled by the nested
//!    future (or a `JoinSet` holding one) panics, saying why, instead of waiting forever.
//!
//! Limit: a nested future that waits for *another task of the same worker* cannot progress
//! here — the worker runs no task until this call returns. Through a `JoinHandle` that is a
//! panic (N4); through a channel a task feeds it is a hang this call cannot tell from a slow
//! sender. This is the same caveat tokio documents for `block_in_place`.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use baton_uring::{Park, Worker, WorkerHandle};

/// The nested future's waker (N3).
struct NestedWake {
    woken: AtomicBool,
    worker: WorkerHandle,
}

impl Wake for NestedWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        // The nested `block_on` holds the worker on its thread and parks in the driver: ending
        // that park is enough. Telling the wake listener too would count this as outside work
        // and keep the next give-back from resting.
        self.worker.driver().unparker().unpark();
    }
}

/// Drives `future` to completion on this thread with `worker`'s driver only (N1–N4).
pub(crate) fn block_on_driver_only<F: Future>(worker: &Worker, future: F) -> F::Output {
    // Rule N4.
    let _held = worker.handle().spawner().hold_tasks();
    let wake = Arc::new(NestedWake {
        woken: AtomicBool::new(true),
        worker: worker.handle(),
    });
    let waker = Waker::from(Arc::clone(&wake));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if wake.woken.swap(false, Ordering::AcqRel) {
            // Rule N1.
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
        } else {
            // Rule N2: ends on a completion, a timer, or the waker's unpark (N3).
            let _turn = worker.turn_driver_only(Park::Wait(None));
        }
    }
}
