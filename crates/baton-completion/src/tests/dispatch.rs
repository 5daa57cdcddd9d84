//! Unit tests of exactly-once dispatch (crate rules E5–E8).

use super::support::{
    DropFlag, PanicOnDrop, RecordingSink, bind_split, blocking_op, interruptible, kind,
    assert_only_cancelled, panicking_registrar, payload, registrar,
};
use crate::completion::{CompletionFailure, DeliveryOutcome};
use crate::dispatch::{
    AsyncDispatch, BlockingDispatch, Dispatch, RunReport, Submission, TerminalClass,
};
use crate::prepared::{BlockingJob, Decoder, PreparedOperation, WorkClass};
use crate::registrar::RuntimeHalf;
use crate::sync::{Arc, AtomicBool, AtomicUsize, Mutex, Ordering};
use baton_cancel::{CancelBeforeStart, ContainedDrop, QueueState};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

fn bind(prepared: PreparedOperation) -> (RuntimeHalf, Submission, Arc<RecordingSink>) {
    let (registrar, sink, _allocator) = registrar();
    let (half, submission) = bind_split(&registrar, prepared);
    (half, submission, sink)
}

fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> T + Send + 'static,
) -> (RuntimeHalf, Submission, Arc<RecordingSink>) {
    bind(blocking_op(job))
}

fn async_job<F, Fut>(construct: F) -> (RuntimeHalf, Submission, Arc<RecordingSink>)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    bind(PreparedOperation::interruptible_async(
        kind(1),
        construct,
        Decoder::identity(),
        interruptible(),
    ))
}

fn blocking_dispatch(submission: Submission) -> BlockingDispatch {
    match submission.arm() {
        Dispatch::Blocking(dispatch) => dispatch,
        Dispatch::Async(_) => panic!("a blocking job arms as a blocking dispatch"),
    }
}

fn async_dispatch(submission: Submission) -> AsyncDispatch {
    match submission.arm() {
        Dispatch::Async(dispatch) => dispatch,
        Dispatch::Blocking(_) => panic!("an async job arms as an async dispatch"),
    }
}

fn poll_once(dispatch: &mut AsyncDispatch) -> Poll<RunReport> {
    Pin::new(dispatch).poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn blocking_job_delivers_its_result_once() {
    let (half, submission, sink) = blocking(|| 40 + 2);
    let report = blocking_dispatch(submission).run();
    assert_eq!(report.class, TerminalClass::Completed);
    assert_eq!(report.delivery, DeliveryOutcome::Delivered);
    let completion = sink.only();
    assert_eq!(completion.identity(), half.identity());
    assert_eq!(payload::<i32>(completion), Ok(42));
}

#[test]
fn cancel_before_start_never_runs_the_body() {
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let (half, submission, sink) = blocking(move || flag.store(true, Ordering::SeqCst));
    let dispatch = blocking_dispatch(submission);
    assert_eq!(
        half.cancel_handle().cancel_before_start(),
        CancelBeforeStart::CancelledQueued
    );
    assert_eq!(dispatch.run().class, TerminalClass::Cancelled);
    assert!(!ran.load(Ordering::SeqCst));
    assert_only_cancelled::<()>(&sink);
}

/// A dispatch dropped unstarted delivers `Cancelled` and leaves its queue cell cancelled, so
/// the requester's cell agrees with the delivery (nothing is left looking queued forever).
#[test]
fn dropped_dispatch_delivers_cancelled() {
    let (half, submission, sink) = blocking(|| 1_u8);
    drop(blocking_dispatch(submission));
    assert_only_cancelled::<u8>(&sink);
    assert_eq!(half.cancel_handle().state(), QueueState::Cancelled);
    let (half, submission, sink) = async_job(|| async { 1_u8 });
    drop(async_dispatch(submission));
    assert_only_cancelled::<u8>(&sink);
    assert_eq!(half.cancel_handle().state(), QueueState::Cancelled);
}

#[test]
fn dispatch_cancel_delivers_cancelled_without_running() {
    let (half, submission, sink) = blocking(|| -> u8 { panic!("must not run") });
    let report = submission.arm().cancel();
    assert_eq!(report.class, TerminalClass::Cancelled);
    assert_only_cancelled::<u8>(&sink);
    assert_eq!(half.cancel_handle().state(), QueueState::Cancelled);
}

#[test]
fn withdraw_marks_the_cell_withdrawn_and_delivers_cancelled_without_running() {
    let (half, submission, sink) = blocking(|| -> u8 { panic!("must not run") });
    let report = submission.arm().withdraw();
    assert_eq!(report.class, TerminalClass::Cancelled);
    assert_eq!(report.delivery, DeliveryOutcome::Delivered);
    assert_only_cancelled::<u8>(&sink);
    assert_eq!(half.cancel_handle().state(), QueueState::Cancelled);
    assert!(half.cancel_handle().was_withdrawn());
    assert_eq!(
        half.cancel_handle().cancel_before_start(),
        CancelBeforeStart::AlreadyCancelled
    );
}

#[test]
fn withdraw_after_a_cancel_leaves_the_cell_cancelled() {
    let (half, submission, sink) = async_job(|| async { 1_u8 });
    assert_eq!(
        half.cancel_handle().cancel_before_start(),
        CancelBeforeStart::CancelledQueued
    );
    assert_eq!(submission.arm().withdraw().class, TerminalClass::Cancelled);
    assert_only_cancelled::<u8>(&sink);
    assert_eq!(half.cancel_handle().state(), QueueState::Cancelled);
}

#[test]
fn panicking_job_delivers_worker_panic() {
    let (_half, submission, sink) = blocking(|| -> u8 { panic!("job failed") });
    assert_eq!(
        blocking_dispatch(submission).run().class,
        TerminalClass::WorkerPanic
    );
    assert_eq!(
        payload::<u8>(sink.only()),
        Err(CompletionFailure::WorkerPanic {
            message: "job failed".into()
        })
    );
}

/// A job whose destructor panics.
struct HostileJob {
    _hostile: PanicOnDrop,
}

/// Records how many completions its sink holds when it is dropped, then panics.
struct DeliveryWitness {
    sink: Arc<RecordingSink>,
    seen: Arc<AtomicUsize>,
    _hostile: PanicOnDrop,
}

impl Drop for DeliveryWitness {
    fn drop(&mut self) {
        self.seen.store(self.sink.count(), Ordering::SeqCst);
    }
}

/// A job holding a [`DeliveryWitness`]; the sink is attached after binding.
struct WitnessedJob {
    _witness: Arc<Mutex<Option<DeliveryWitness>>>,
}

impl BlockingJob for WitnessedJob {
    type Output = u32;
    fn run(&mut self) -> u32 {
        7
    }
}

impl BlockingJob for HostileJob {
    type Output = u32;
    fn run(&mut self) -> u32 {
        7
    }
}

#[test]
fn result_is_delivered_before_a_panicking_job_destructor() {
    let slot = Arc::new(Mutex::new(None));
    let (_half, submission, sink) = bind(PreparedOperation::interruptible_blocking(
        kind(1),
        WitnessedJob {
            _witness: Arc::clone(&slot),
        },
        Decoder::identity(),
        interruptible(),
    ));
    let seen = Arc::new(AtomicUsize::new(usize::MAX));
    *slot.lock().expect("not poisoned") = Some(DeliveryWitness {
        sink: Arc::clone(&sink),
        seen: Arc::clone(&seen),
        _hostile: PanicOnDrop,
    });
    drop(slot);
    let report = blocking_dispatch(submission).run();
    assert_eq!(report.class, TerminalClass::Completed);
    assert_eq!(
        seen.load(Ordering::SeqCst),
        1,
        "the destructor ran after exactly one delivery"
    );
    assert_eq!(payload::<u32>(sink.only()), Ok(7));
}

#[test]
fn dispatch_dropped_during_an_unwind_delivers_and_leaks_the_job() {
    let (_half, submission, sink) = bind(PreparedOperation::interruptible_blocking(
        kind(1),
        HostileJob {
            _hostile: PanicOnDrop,
        },
        Decoder::identity(),
        interruptible(),
    ));
    let dispatch = blocking_dispatch(submission);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _dispatch = dispatch;
        panic!("unwinding with a dispatch in scope");
    }));
    assert!(unwound.is_err(), "the first panic propagates, no abort");
    assert_only_cancelled::<u32>(&sink);
}

#[test]
fn unarmed_submission_delivers_nothing_and_rollback_destroys_the_job() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(Arc::clone(&dropped));
    let (_half, submission, sink) = blocking(move || {
        let _keep = &flag;
    });
    assert_eq!(submission.rollback(), ContainedDrop::Dropped);
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(sink.count(), 0);

    let (_half, submission, sink) = blocking(|| 3_u8);
    drop(submission);
    assert_eq!(sink.count(), 0);
}

#[test]
fn rollback_contains_a_panicking_job_destructor() {
    let hostile = PanicOnDrop;
    let (_half, submission, sink) = blocking(move || {
        let _keep = &hostile;
    });
    assert_eq!(
        submission.rollback(),
        ContainedDrop::Panicked {
            message: "hostile destructor".into()
        }
    );
    assert_eq!(sink.count(), 0);
}

#[test]
fn closed_inbox_is_reported_in_the_run() {
    let (_half, submission, sink) = blocking(|| 1_u8);
    sink.close();
    let report = blocking_dispatch(submission).run();
    assert_eq!(report.class, TerminalClass::Completed);
    assert_eq!(report.delivery, DeliveryOutcome::InboxClosed);
}

#[test]
fn async_job_delivers_its_result() {
    let (_half, submission, sink) = async_job(|| async { "done" });
    let mut dispatch = async_dispatch(submission);
    let Poll::Ready(report) = poll_once(&mut dispatch) else {
        panic!("a ready future finishes on the first poll")
    };
    assert_eq!(report.class, TerminalClass::Completed);
    assert_eq!(payload::<&str>(sink.only()), Ok("done"));
}

#[test]
fn cancelled_async_job_never_constructs_its_future() {
    let constructed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&constructed);
    let (half, submission, sink) = async_job(move || {
        flag.store(true, Ordering::SeqCst);
        async {}
    });
    let mut dispatch = async_dispatch(submission);
    assert_eq!(
        half.cancel_handle().cancel_before_start(),
        CancelBeforeStart::CancelledQueued
    );
    assert!(matches!(
        poll_once(&mut dispatch),
        Poll::Ready(RunReport {
            class: TerminalClass::Cancelled,
            ..
        })
    ));
    assert!(!constructed.load(Ordering::SeqCst));
    assert_only_cancelled::<()>(&sink);
}

/// Arms and polls the async job once: it must end as a worker panic, and deliver one with
/// `message`.
fn assert_async_worker_panic(submission: Submission, sink: &RecordingSink, message: &str) {
    let mut dispatch = async_dispatch(submission);
    assert!(matches!(
        poll_once(&mut dispatch),
        Poll::Ready(RunReport {
            class: TerminalClass::WorkerPanic,
            ..
        })
    ));
    assert_eq!(
        payload::<u8>(sink.only()),
        Err(CompletionFailure::WorkerPanic {
            message: message.into()
        })
    );
}

#[test]
fn future_panicking_on_construction_delivers_worker_panic() {
    let (_half, submission, sink) =
        async_job(|| -> std::future::Ready<u8> { panic!("construction failed") });
    assert_async_worker_panic(submission, &sink, "construction failed");
}

struct PanicOnPoll;

impl Future for PanicOnPoll {
    type Output = u8;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u8> {
        panic!("poll failed")
    }
}

#[test]
fn future_panicking_on_poll_delivers_worker_panic() {
    let (_half, submission, sink) = async_job(|| PanicOnPoll);
    assert_async_worker_panic(submission, &sink, "poll failed");
}

struct PendingOnce {
    polled: bool,
    _witness: Option<DeliveryWitness>,
}

impl Future for PendingOnce {
    type Output = u8;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u8> {
        if self.polled {
            Poll::Ready(9)
        } else {
            self.polled = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[test]
fn dropped_in_flight_future_delivers_cancelled() {
    let (_half, submission, sink) = async_job(|| PendingOnce {
        polled: false,
        _witness: None,
    });
    let mut dispatch = async_dispatch(submission);
    assert!(poll_once(&mut dispatch).is_pending());
    assert_eq!(sink.count(), 0);
    drop(dispatch);
    assert_only_cancelled::<u8>(&sink);
}

#[test]
fn result_is_delivered_before_a_panicking_future_destructor() {
    let witness = Arc::new(Mutex::new(None::<DeliveryWitness>));
    let handed = Arc::clone(&witness);
    let (_half, submission, sink) = async_job(move || PendingOnce {
        polled: false,
        _witness: handed.lock().expect("not poisoned").take(),
    });
    let seen = Arc::new(AtomicUsize::new(usize::MAX));
    *witness.lock().expect("not poisoned") = Some(DeliveryWitness {
        sink: Arc::clone(&sink),
        seen: Arc::clone(&seen),
        _hostile: PanicOnDrop,
    });
    let mut dispatch = async_dispatch(submission);
    assert!(poll_once(&mut dispatch).is_pending());
    assert!(matches!(
        poll_once(&mut dispatch),
        Poll::Ready(RunReport {
            class: TerminalClass::Completed,
            ..
        })
    ));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        1,
        "the future's destructor ran after exactly one delivery"
    );
    assert_eq!(payload::<u8>(sink.only()), Ok(9));
}

#[test]
#[should_panic(expected = "AsyncDispatch polled after it finished")]
fn polling_a_finished_dispatch_panics() {
    let (_half, submission, _sink) = async_job(|| async { 1_u8 });
    let mut dispatch = async_dispatch(submission);
    assert!(poll_once(&mut dispatch).is_ready());
    let _ = poll_once(&mut dispatch);
}

#[test]
fn submission_reports_its_shape() {
    let (half, submission, _sink) = async_job(|| async {});
    assert!(submission.is_async());
    assert_eq!(submission.work_class(), WorkClass::Interruptible);
    assert_eq!(submission.identity(), half.identity());
    assert!(format!("{submission:?}").contains("Async"));
}

fn bind_to_panicking_sink() -> Submission {
    let (registrar, _sink) = panicking_registrar();
    bind_split(&registrar, blocking_op(|| 1_u8)).1
}

#[test]
fn panicking_sink_is_contained_and_reported_undeliverable() {
    let report = blocking_dispatch(bind_to_panicking_sink()).run();
    assert_eq!(report.class, TerminalClass::Completed);
    assert_eq!(report.delivery, DeliveryOutcome::InboxClosed);
}

#[test]
fn panicking_sink_during_an_unwind_does_not_abort() {
    let dispatch = blocking_dispatch(bind_to_panicking_sink());
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _dispatch = dispatch;
        panic!("unwinding with a dispatch in scope");
    }));
    assert!(unwound.is_err(), "the first panic propagates, no abort");
}
