//! End to end, exactly as a runtime uses the crate: registrar → bind → split → submit the
//! submission half to a `BlockingPool` → the completion arrives at a channel-backed
//! `CompletionSender` → `WaitTable::settle` on the "runtime thread" → the decoded value via
//! `poll_wait`.

mod support;

use baton_completion::{
    BlockingPool, Decoder, ExternalCompletion, IoExecutor, PreparedOperation, Registrar,
    SettleOutcome, ShutdownReport, WaitError, WaitTable, from_fn,
};
use crossbeam_channel::Receiver;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use support::channel::ChannelRuntime;
use support::{bind, kind, quiet_hook};
use web_time::Instant;

#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn runtime() -> (Registrar, WaitTable, Receiver<ExternalCompletion>) {
    let ChannelRuntime {
        registrar,
        table,
        inbox,
    } = ChannelRuntime::fresh();
    (registrar, table, inbox)
}

#[test]
fn blocking_job_round_trip_through_pool_inbox_and_wait_table() {
    let (registrar, mut table, inbox) = runtime();
    let pool = BlockingPool::builder().build().expect("default pool");
    let lease = pool
        .attach_runtime(registrar.runtime_id())
        .expect("fresh runtime");

    // The decoder runs on the runtime thread and may hold `!Send` state.
    let prefix = Rc::new("answer".to_owned());
    let prepared = PreparedOperation::interruptible_blocking(
        kind(3),
        from_fn(|| 6_u64 * 7),
        Decoder::new(move |value: u64| format!("{prefix}={value}")),
        quiet_hook(),
    );
    let (half, submission) = bind(&registrar, prepared).split();
    let key = table.register(half).expect("same runtime");

    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    let mut cx = Context::from_waker(&waker);
    assert!(table.poll_wait::<String>(key, &mut cx).is_pending());

    lease.submit(submission).expect("accepted");
    let completion = inbox
        .recv_timeout(Duration::from_secs(20))
        .expect("the pool delivers");
    let SettleOutcome::Settled {
        waker: Some(to_wake),
    } = table.settle(completion)
    else {
        panic!("the completion matches the registered wait")
    };
    to_wake.wake();
    assert_eq!(counter.0.load(Ordering::SeqCst), 1);
    assert_eq!(
        table.poll_wait::<String>(key, &mut cx),
        Poll::Ready(Ok("answer=42".to_owned()))
    );
    assert!(table.is_empty());
    let outcome = pool.shutdown(Instant::now() + Duration::from_secs(20));
    assert!(matches!(outcome, ShutdownReport::Drained { .. }));
}

#[test]
fn cancelled_wait_settles_and_the_late_cancelled_completion_is_stale() {
    let (registrar, mut table, inbox) = runtime();
    let pool = BlockingPool::builder().build().expect("default pool");
    let prepared = PreparedOperation::interruptible_blocking(
        kind(1),
        from_fn(|| 1_u8),
        Decoder::identity(),
        quiet_hook(),
    );
    let (half, submission) = bind(&registrar, prepared).split();
    let key = table.register(half).expect("same runtime");
    // Cancel before the submission even reaches the pool: the cancel wins.
    let outcome = table.cancel(key);
    assert!(matches!(
        outcome,
        baton_completion::CancelOutcome::CancelledQueued { .. }
    ));
    let lease = pool
        .attach_runtime(registrar.runtime_id())
        .expect("fresh runtime");
    lease.submit(submission).expect("accepted");
    let late = inbox
        .recv_timeout(Duration::from_secs(20))
        .expect("the pool delivers the cancellation");
    assert!(matches!(table.settle(late), SettleOutcome::Stale));
    assert_eq!(table.counters().stale, 1);
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(
        table.poll_wait::<u8>(key, &mut cx),
        Poll::Ready(Err(WaitError::Cancelled))
    );
}
