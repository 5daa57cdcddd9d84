//! Closing a worker without waiting (worker rule W8, `Worker::close`): what a `block_on` caller
//! holding the worker does when the runtime shuts down from another thread. Pending polls fail
//! with `Closed` and are woken, tasks are cancelled, writes keep going, and the later shutdown
//! drains and reports both steps.

mod worker_support;

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use baton_task::{CancelReason, SpawnError};
use baton_uring::{Park, WorkerClose, ops};
use worker_support::{PendingWrite, deadline, poll_once, serial_worker};

/// A waker that records whether it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn close_fails_a_pending_receive_with_closed_wakes_it_and_cancels_the_tasks() {
    serial_worker!(worker);
    let (ours, peer) = UnixStream::pair().expect("socket pair");
    let sock = Arc::new(OwnedFd::from(ours));
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    // Polled on the worker's thread outside any task, as a `block_on` root is.
    let mut receive = pin!(ops::recv(Arc::clone(&sock), Vec::with_capacity(64)));
    {
        let _entered = worker.enter();
        assert!(receive.as_mut().poll(&mut cx).is_pending());
    }
    let handle = worker.handle();
    let sleeper = handle.spawn(std::future::pending::<()>());
    let bound = deadline();
    while worker.metrics().driver.in_flight == 0 || worker.metrics().tasks.live == 0 {
        assert!(
            web_time::Instant::now() < bound,
            "the receive never reached the kernel"
        );
        let _ = worker.turn(Park::Poll);
    }

    assert_eq!(worker.close(), WorkerClose::Closed);
    assert!(flag.0.load(Ordering::SeqCst), "the pending poll was woken");
    let (received, _buf) = {
        let _entered = worker.enter();
        match receive.as_mut().poll(&mut cx) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("a pending poll fails once the worker closed"),
        }
    };
    let err = received.expect_err("the worker closed");
    assert_eq!(
        baton_uring::Error::from_io(&err),
        Some(&baton_uring::Error::Closed)
    );
    match poll_once(sleeper) {
        Poll::Ready(Err(err)) => {
            assert_eq!(err.cancel_reason(), Some(CancelReason::RuntimeShutdown));
        }
        other => panic!("the task was cancelled, got {other:?}"),
    }
    assert!(handle.is_closed(), "the inbox refuses completions");
    assert_eq!(
        handle.try_spawn(async {}).map(drop).expect_err("refused"),
        SpawnError::Shutdown
    );
    assert_eq!(worker.close(), WorkerClose::AlreadyClosed);

    let report = worker.shutdown(Some(deadline()));
    assert_eq!(
        report.tasks.cancelled, 1,
        "the close's cancellations: {report:?}"
    );
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(
        Arc::strong_count(&sock),
        1,
        "the driver gave the socket back"
    );
    drop(peer);
}

#[test]
fn a_write_in_flight_when_the_worker_closes_lands_by_the_later_shutdown() {
    serial_worker!(worker);
    // One turn polls the task, which registers the write; the close submits and retains it.
    let write = PendingWrite::start(&worker, "close", b"kept");
    assert_eq!(worker.close(), WorkerClose::Closed);
    write.assert_landed_by_shutdown(worker);
}
