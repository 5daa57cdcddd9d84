//! A minimal thread-parking executor, used to poll a runtime's operation futures from a foreign
//! thread (one that is not running that runtime).
//!
//! Rules:
//!
//! B1. The future is polled only on the calling thread.
//!
//! B2. A wake from any thread sets a flag and unparks the caller; the caller consumes the flag
//!    before polling again, so a wake that lands between a poll and the park is never lost.
//!
//! B3. Spurious unparks are harmless: the caller parks again until the flag is set.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

/// Wakes the thread that runs [`block_on`].
#[derive(Debug)]
struct ParkWaker {
    thread: Thread,
    notified: AtomicBool,
}

impl Wake for ParkWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Rule B2: publish the wake before unparking.
        self.notified.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

/// Polls `future` to completion on this thread, parking between polls.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let parker = Arc::new(ParkWaker {
        thread: thread::current(),
        notified: AtomicBool::new(false),
    });
    let waker = Waker::from(Arc::clone(&parker));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        // Rules B2 and B3: sleep until a wake is recorded, whatever unparked us.
        while !parker.notified.swap(false, Ordering::Acquire) {
            thread::park();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::block_on;
    use std::sync::mpsc;
    use std::task::Poll;
    use std::thread;

    #[test]
    fn ready_future_returns_at_once() {
        assert_eq!(block_on(async { 5 }), 5);
    }

    #[test]
    fn wake_from_another_thread_resumes_the_poll() {
        let (tx, rx) = mpsc::channel();
        let mut waker_sent = false;
        let mut helper = None;
        let out = block_on(std::future::poll_fn(|cx| {
            if let Ok(v) = rx.try_recv() {
                return Poll::Ready(v);
            }
            if !waker_sent {
                waker_sent = true;
                let waker = cx.waker().clone();
                let tx = tx.clone();
                helper = Some(thread::spawn(move || {
                    tx.send(11).expect("receiver alive");
                    waker.wake();
                }));
            }
            Poll::Pending
        }));
        assert_eq!(out, 11);
        helper
            .expect("helper started")
            .join()
            .expect("helper finished");
    }
}
