//! Helpers shared by the integration tests (and the loom models in `loom_scheduler.rs`): a
//! counting unpark hook and a driver loop.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

// A loom atomic under `cfg(loom)`, so the models check the unpark counts they read.
#[cfg(loom)]
use loom::sync::atomic::AtomicUsize;
#[cfg(not(loom))]
use std::sync::atomic::AtomicUsize;

use baton_task::{JoinError, JoinHandle, Scheduler, Unpark};

/// Counts how often the scheduler asked to unpark the worker.
#[derive(Debug, Default)]
pub struct CountingUnpark(AtomicUsize);

impl CountingUnpark {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Unpark for CountingUnpark {
    fn unpark(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

pub fn scheduler() -> (Scheduler, Arc<CountingUnpark>) {
    let unpark = Arc::new(CountingUnpark::default());
    (
        Scheduler::new(Arc::clone(&unpark) as Arc<dyn Unpark>),
        unpark,
    )
}

/// Polls `future` once with a no-op waker.
pub fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

/// Generous bound that only guards against hangs.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// Runs the scheduler on this thread until `handle` resolves.
pub fn drive<T>(scheduler: &Scheduler, mut handle: JoinHandle<T>) -> Result<T, JoinError> {
    let started = Instant::now();
    loop {
        if let Poll::Ready(result) = poll_once(&mut handle) {
            return result;
        }
        let report = scheduler.run_ready(64);
        if report.polled == 0 && !report.more_ready {
            assert!(started.elapsed() < HANG_GUARD, "task never finished");
            std::thread::yield_now();
        }
    }
}

/// A future that stays pending, parking its waker in a shared slot for the test to use, and
/// completes once `release` was called.
#[derive(Debug, Default)]
pub struct Gate {
    waker: std::sync::Mutex<Option<Waker>>,
    open: std::sync::atomic::AtomicBool,
    polls: AtomicUsize,
}

impl Gate {
    pub fn new() -> Arc<Gate> {
        Arc::new(Gate::default())
    }

    pub fn polls(&self) -> usize {
        self.polls.load(Ordering::SeqCst)
    }

    pub fn has_waker(&self) -> bool {
        self.waker.lock().unwrap().is_some()
    }

    /// Opens the gate and wakes the waiting task.
    pub fn release(&self) {
        self.open.store(true, Ordering::SeqCst);
        let waker = self.waker.lock().unwrap().take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Opens the gate and wakes the waiting task from another thread, joined before returning.
    pub fn release_from_another_thread(self: &Arc<Gate>) {
        let gate = Arc::clone(self);
        std::thread::spawn(move || gate.release()).join().unwrap();
    }

    /// Takes the parked waker without waking it.
    pub fn take_waker(&self) -> Option<Waker> {
        self.waker.lock().unwrap().take()
    }

    /// Opens the gate without waking anyone.
    pub fn open_without_waking(&self) {
        self.open.store(true, Ordering::SeqCst);
    }

    pub fn wait(self: &Arc<Gate>) -> GateWait {
        GateWait(Arc::clone(self))
    }

    /// A task body that waits for the gate, then returns `value`.
    pub fn behind<T>(self: &Arc<Gate>, value: T) -> impl Future<Output = T> + use<T> {
        let wait = self.wait();
        async move {
            wait.await;
            value
        }
    }
}

#[derive(Debug)]
pub struct GateWait(Arc<Gate>);

impl Future for GateWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.polls.fetch_add(1, Ordering::SeqCst);
        *self.0.waker.lock().unwrap() = Some(cx.waker().clone());
        if self.0.open.load(Ordering::SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// Sets its flag when dropped.
#[derive(Debug)]
pub struct DropFlag(pub Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl DropFlag {
    /// A task body that never finishes and sets `dropped` when it is dropped.
    pub fn pending_forever(
        dropped: &Arc<std::sync::atomic::AtomicBool>,
    ) -> impl Future<Output = ()> + use<> {
        let flag = DropFlag(Arc::clone(dropped));
        async move {
            let _flag = flag;
            std::future::pending::<()>().await;
        }
    }
}
