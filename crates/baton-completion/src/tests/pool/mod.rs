//! Unit tests of the blocking pool (pool rules P1–P7), over the fixture here: building and
//! attaching (`building`), submitting (`submit`), shutting down (`shutdown`), refused thread
//! spawns and unwinding lane threads (`spawn_failure`, `lane_thread`), and the counters under
//! random workloads (`counters`).

use super::support::{RecordingSink, bind_split, blocking_op, kind, registrar, wait_until};
use crate::ExternalCompletion;
use crate::dispatch::Submission;
use crate::executor::{ExecutorLease, IoExecutor};
use crate::pool::{BlockingPool, BlockingPoolBuilder, OsThreadSpawner, ThreadSpawner};
use crate::prepared::{Decoder, PreparedOperation, from_fn};
use crate::registrar::Registrar;
use crate::sync::{Arc, AtomicUsize, Ordering, mpsc};
use baton_cancel::QuarantineBound;
use std::time::Duration;
use web_time::Instant;

mod building;
mod counters;
mod lane_thread;
mod shutdown;
mod spawn_failure;
mod submit;
mod waking;

pub(super) struct Fixture {
    pub(super) pool: BlockingPool,
    pub(super) lease: Arc<dyn ExecutorLease>,
    pub(super) registrar: Registrar,
    pub(super) sink: Arc<RecordingSink>,
}

pub(super) fn fixture(builder: BlockingPoolBuilder) -> Fixture {
    let pool = builder.build().expect("valid pool configuration");
    let (registrar, sink, _allocator) = registrar();
    let lease = pool
        .attach_runtime(registrar.runtime_id())
        .expect("fresh runtime attaches");
    Fixture {
        pool,
        lease,
        registrar,
        sink,
    }
}

impl Fixture {
    pub(super) fn bind(&self, prepared: PreparedOperation) -> Submission {
        bind_split(&self.registrar, prepared).1
    }

    pub(super) fn blocking<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Submission {
        self.bind(blocking_op(job))
    }

    pub(super) fn quarantined<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Submission {
        self.bind(PreparedOperation::quarantined_blocking(
            kind(1),
            from_fn(job),
            Decoder::identity(),
            QuarantineBound::FiniteWork {
                units: 1,
                unit: "job",
            },
        ))
    }

    /// A job that reports it started, then waits for the gate.
    pub(super) fn gated(
        &self,
        quarantined: bool,
    ) -> (Submission, mpsc::Receiver<()>, mpsc::Sender<()>) {
        let (started_tx, started_rx) = mpsc::channel();
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let job = move || {
            let _ = started_tx.send(());
            gate_rx.recv().is_ok()
        };
        let submission = if quarantined {
            self.quarantined(job)
        } else {
            self.blocking(job)
        };
        (submission, started_rx, gate_tx)
    }

    pub(super) fn wait_for_completions(&self, count: usize) -> Vec<ExternalCompletion> {
        wait_until(|| self.sink.count() >= count);
        self.sink.take()
    }
}

pub(super) fn later(seconds: u64) -> Instant {
    Instant::now() + Duration::from_secs(seconds)
}

#[derive(Debug)]
struct RefusingSpawner {
    allow: AtomicUsize,
}

impl ThreadSpawner for RefusingSpawner {
    fn spawn(&self, name: String, body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        let allowed = self
            .allow
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if allowed {
            OsThreadSpawner.spawn(name, body)
        } else {
            Err(std::io::Error::other("thread limit reached (injected)"))
        }
    }
}

pub(super) fn refusing(allow: usize) -> Arc<dyn ThreadSpawner> {
    Arc::new(RefusingSpawner {
        allow: AtomicUsize::new(allow),
    })
}

/// Submits one blocking job per value through `lease`, each returning its value.
pub(super) fn submit_values(
    registrar: &Registrar,
    lease: &dyn ExecutorLease,
    values: std::ops::Range<u8>,
) {
    for value in values {
        let (_half, submission) = bind_split(registrar, blocking_op(move || value));
        lease.submit(submission).expect("accepted");
    }
}
