//! Where the completion inbox routes a completion: a cancelled wait's completion is counted
//! stale and dropped, another runtime's is refused, one for another thread's wait is held until
//! the worker returns there; the wait context's errors; and `InboxClosed` after shutdown.

mod worker_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use baton_completion::{
    CancelOutcome, CompletionIdentity, Decoder, DeliveryOutcome, ExternalCompletion,
    IdentityAllocator, Registrar, RuntimeId, WaitError,
};
use baton_uring::{Park, WaitsError, Worker, with_current_waits};
use worker_support::inbox::{
    assert_wait_then_shut_down, interruptible_job, kind, poll_wait, register_job, register_job_on,
    shut_down_clean,
};
use worker_support::{deadline, run_here, serial, serial_worker, worker};

#[test]
fn a_completion_whose_wait_was_cancelled_is_counted_stale_and_dropped() {
    serial_worker!(worker);
    let registrar = worker.handle().registrar();
    let (key, submission) = {
        let _entered = worker.enter();
        let (key, submission) = register_job(&registrar, 5);
        let cancelled = with_current_waits(|waits| waits.cancel(key)).expect("entered");
        assert!(matches!(cancelled, CancelOutcome::CancelledQueued { .. }));
        (key, submission)
    };
    run_here(submission);
    let turn = worker.turn(Park::Poll);
    assert_eq!((turn.settled, turn.dropped), (0, 1));
    let metrics = worker.metrics();
    assert_eq!((metrics.inbox.settled, metrics.inbox.stale), (0, 1));
    assert_wait_then_shut_down(worker, key, Poll::Ready(Err(WaitError::Cancelled)));
}

#[test]
fn another_runtimes_completion_is_refused_and_never_reaches_our_waiter() {
    serial_worker!(worker);
    let (key, own_submission) = register_job_on(&worker, 1);
    // Another runtime's registrar delivering into our inbox, with a wait id and generation that
    // may well equal ours: the runtime id alone must keep it out.
    let other = IdentityAllocator::new(RuntimeId::allocate().expect("runtime id"));
    let foreign = Registrar::new(other, worker.handle().completion_sender());
    let identity = foreign.issue(kind()).expect("identity");
    let prepared = interruptible_job(|| 99_u32, Decoder::identity());
    let (_half, submission) = foreign.bind(identity, prepared).expect("bind").split();
    let foreign_identity: CompletionIdentity = submission.identity();
    run_here(submission);
    let turn = worker.turn(Park::Poll);
    assert_eq!((turn.settled, turn.dropped), (0, 1));
    assert_eq!(worker.metrics().inbox.foreign, 1);
    {
        let _entered = worker.enter();
        assert_eq!(
            poll_wait(key),
            Poll::Pending,
            "our waiter saw nothing of it"
        );
        if foreign_identity.wait_id == key.wait_id {
            eprintln!("note: the foreign completion carried our wait id and generation");
        }
    }
    run_here(own_submission);
    let _ = worker.turn(Park::Poll);
    assert_wait_then_shut_down(worker, key, Poll::Ready(Ok(2)));
}

#[test]
fn a_completion_for_another_threads_wait_is_held_until_the_worker_returns_there() {
    serial_worker!(worker);
    let (key, submission) = register_job_on(&worker, 10);
    assert!(
        worker.has_local_tasks_on_current_thread(),
        "a live wait binds the worker here"
    );
    run_here(submission);
    let worker = std::thread::spawn(move || {
        assert!(!worker.has_local_tasks_on_current_thread());
        let turn = worker.turn(Park::Poll);
        assert_eq!((turn.settled, turn.dropped), (0, 0));
        assert_eq!(worker.metrics().inbox.held, 1);
        assert!(
            !worker.has_ready_work(),
            "held work is not runnable on this thread"
        );
        worker
    })
    .join()
    .expect("other thread");
    assert!(
        worker.has_ready_work(),
        "the held completion is runnable back home"
    );
    let turn = worker.turn(Park::Poll);
    assert_eq!(turn.settled, 1);
    assert_eq!(worker.metrics().inbox.held, 0);
    assert_wait_then_shut_down(worker, key, Poll::Ready(Ok(11)));
}

#[test]
fn the_wait_context_reports_where_it_cannot_be_used() {
    let _serial = serial();
    assert_eq!(
        with_current_waits(|_| ()).expect_err("no worker entered"),
        WaitsError::NotOnWorker
    );
    let Some(worker) = worker() else { return };
    let _entered = worker.enter();
    let nested = with_current_waits(|_| with_current_waits(|_| ()).expect_err("nested"));
    assert_eq!(nested, Ok(WaitsError::Busy));
    drop(_entered);
    shut_down_clean(worker);
}

/// A payload that counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

fn counted_completion(worker: &Worker, drops: &Arc<AtomicUsize>) -> ExternalCompletion {
    let allocator = Arc::clone(worker.handle().allocator());
    let slot = allocator.allocate_wait().expect("wait id");
    ExternalCompletion::new(
        CompletionIdentity {
            runtime_id: worker.runtime_id(),
            wait_id: slot.wait_id(),
            generation: slot.generation(),
            operation_id: allocator.allocate_operation().expect("operation id"),
            kind: kind(),
        },
        Ok(Box::new(Counted(Arc::clone(drops)))),
    )
}

#[test]
fn the_inbox_reports_inbox_closed_after_shutdown() {
    serial_worker!(worker);
    let handle = worker.handle();
    let sender = handle.completion_sender();
    let drops = Arc::new(AtomicUsize::new(0));
    // Accepted before closure: routed (stale: no such wait) by the shutdown's final drain.
    let early = counted_completion(&worker, &drops);
    assert_eq!(sender.deliver(early), DeliveryOutcome::Delivered);
    let late = counted_completion(&worker, &drops);
    assert!(!handle.is_closed());
    let report = worker.shutdown(Some(deadline()));
    assert_eq!(report.inbox_dropped, 1, "{report:?}");
    assert!(report.is_clean());
    assert!(handle.is_closed());
    assert_eq!(sender.deliver(late), DeliveryOutcome::InboxClosed);
    assert_eq!(
        drops.load(Ordering::Acquire),
        2,
        "both payloads were dropped, none leaked"
    );
}
