//! Blocking-pool shutdown with long jobs: jobs that outlive the shutdown deadline make the
//! report say *deadline exceeded* with the right counts, queued jobs are cancelled (each
//! delivers `Cancelled` once), the long jobs still deliver afterwards, and a runtime sees a
//! quarantined job that outlived its declared bound as `BoundExceeded`.

use baton_cancel::{HookOutcome, Interruptible, QuarantineBound};
use baton_completion::{
    BlockingPool, CompletionFailure, CompletionKind, Decoder, ExternalCompletion,
    InterruptibleThreads, IoExecutor, PreparedOperation, Registrar, SettleOutcome, ShutdownReport,
    Submission, WaitError, WaitTable, from_fn,
};
use baton_tests::pool::ChannelRuntime;
use crossbeam_channel::{Receiver, Sender};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use web_time::Instant;

struct Harness {
    registrar: Registrar,
    table: WaitTable,
    inbox: Receiver<ExternalCompletion>,
    kind: CompletionKind,
}

fn harness() -> Harness {
    let ChannelRuntime {
        registrar,
        table,
        inbox,
    } = ChannelRuntime::fresh();
    Harness {
        registrar,
        table,
        inbox,
        kind: CompletionKind::try_from_raw(2).expect("non-zero"),
    }
}

impl Harness {
    fn bind(&mut self, prepared: PreparedOperation) -> (baton_completion::WaitKey, Submission) {
        let identity = self.registrar.issue(self.kind).expect("ids available");
        let (half, submission) = self
            .registrar
            .bind(identity, prepared)
            .expect("valid bind")
            .split();
        (self.table.register(half).expect("same runtime"), submission)
    }

    /// A job that signals its start and then holds its thread until the gate opens.
    fn long_job(
        &mut self,
        bound: Option<QuarantineBound>,
        started: &Sender<()>,
        gate: &Receiver<()>,
    ) -> (baton_completion::WaitKey, Submission) {
        let (started, gate) = (started.clone(), gate.clone());
        let job = from_fn(move || {
            started.send(()).expect("test listens");
            gate.recv().is_ok()
        });
        let prepared = match bound {
            Some(bound) => {
                PreparedOperation::quarantined_blocking(self.kind, job, Decoder::identity(), bound)
            }
            None => PreparedOperation::interruptible_blocking(
                self.kind,
                job,
                Decoder::identity(),
                Interruptible::new("long", || Ok(HookOutcome::PendingReap)),
            ),
        };
        self.bind(prepared)
    }

    fn recv(&self) -> ExternalCompletion {
        self.inbox
            .recv_timeout(Duration::from_secs(30))
            .expect("a completion arrives")
    }
}

#[test]
fn pool_shutdown_reports_deadline_exceeded_with_the_right_counts() {
    let pool = BlockingPool::builder()
        .interruptible_threads(InterruptibleThreads::Fixed(2))
        .quarantine_threads(1)
        .build()
        .expect("valid pool");
    let mut h = harness();
    let lease = pool
        .attach_runtime(h.registrar.runtime_id())
        .expect("fresh runtime");
    let (started_tx, started_rx) = crossbeam_channel::unbounded();
    let (gate_tx, gate_rx) = crossbeam_channel::unbounded::<()>();

    let clock = Instant::now();
    let bound = QuarantineBound::Deadline(clock + Duration::from_secs(1));
    let mut long_keys = Vec::new();
    for quarantined in [false, false, true] {
        let (key, submission) = h.long_job(quarantined.then_some(bound), &started_tx, &gate_rx);
        lease.submit(submission).expect("accepted");
        long_keys.push(key);
    }
    for _ in 0..3 {
        started_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("long job starts");
    }
    let mut queued_keys = Vec::new();
    for value in 0..5_u8 {
        let (key, submission) = h.bind(PreparedOperation::interruptible_blocking(
            h.kind,
            from_fn(move || value),
            Decoder::identity(),
            Interruptible::new("short", || Ok(HookOutcome::Reaped)),
        ));
        lease
            .submit(submission)
            .expect("queued behind the long jobs");
        queued_keys.push(key);
    }
    let before = pool.snapshot();
    assert_eq!(
        (
            before.queued,
            before.running_interruptible,
            before.running_quarantined
        ),
        (5, 2, 1)
    );

    let report = pool.shutdown(Instant::now() + Duration::from_millis(100));
    let ShutdownReport::DeadlineExceeded { snapshot } = report else {
        panic!("long jobs outlive the deadline: {report:?}")
    };
    assert_eq!(snapshot.accepted, 8);
    assert_eq!(snapshot.queued, 0, "queued work was cancelled");
    assert_eq!(snapshot.cancelled, 5);
    assert_eq!(snapshot.running_interruptible, 2);
    assert_eq!(snapshot.running_quarantined, 1);
    assert_eq!(snapshot.completed, 0);
    assert!(snapshot.adds_up());

    // The five cancelled jobs delivered `Cancelled`, exactly once each.
    for _ in 0..5 {
        let completion = h.recv();
        assert!(matches!(
            completion.result,
            Err(CompletionFailure::Cancelled)
        ));
        assert!(matches!(
            h.table.settle(completion),
            SettleOutcome::Settled { .. }
        ));
    }
    assert!(h.inbox.try_recv().is_err());

    // The runtime checks quarantine bounds with an injected clock: the quarantined job is
    // still running two seconds after its deadline.
    let check = h.table.check_bounds(clock + Duration::from_secs(3));
    assert_eq!(check.exceeded, 1);
    assert_eq!(h.table.counters().bound_exceeded, 1);

    // Open the gate: the long jobs finish and still deliver; the quarantined one is stale.
    drop(gate_tx);
    let mut settled = 0;
    let mut stale = 0;
    for _ in 0..3 {
        match h.table.settle(h.recv()) {
            SettleOutcome::Settled { .. } => settled += 1,
            SettleOutcome::Stale => stale += 1,
            SettleOutcome::Foreign => panic!("same runtime"),
        }
    }
    assert_eq!((settled, stale), (2, 1));
    let report = pool.shutdown(Instant::now() + Duration::from_secs(30));
    let ShutdownReport::Drained { snapshot } = report else {
        panic!("everything finished: {report:?}")
    };
    assert_eq!(
        (snapshot.completed, snapshot.cancelled, snapshot.accepted),
        (3, 5, 8)
    );

    let mut cx = Context::from_waker(Waker::noop());
    for key in queued_keys {
        assert_eq!(
            h.table.poll_wait::<u8>(key, &mut cx),
            Poll::Ready(Err(WaitError::Cancelled))
        );
    }
    assert_eq!(
        h.table.poll_wait::<bool>(long_keys[0], &mut cx),
        Poll::Ready(Ok(false))
    );
    assert_eq!(
        h.table.poll_wait::<bool>(long_keys[2], &mut cx),
        Poll::Ready(Err(WaitError::BoundExceeded { bound }))
    );
}
