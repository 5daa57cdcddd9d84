//! Crate rule E7 for every owner of user values that is dropped before it is armed: a prepared
//! operation of each kind, a refused bind, a binding and its two halves, and a rejected
//! submission. A panicking destructor of the job, decoder or hook is caught when the owner is
//! dropped normally; while the thread is already unwinding the values are leaked, because a
//! second panic would abort the process.
//!
//! The unwinding scenarios run in a child process (this test binary re-executed for the one
//! test), so a regression shows as that test failing with the child's abort, not as the whole
//! test binary crashing.

mod support;

use baton_cancel::{ContainedDrop, HookOutcome, Interruptible, QuarantineBound};
use baton_completion::{
    BindError, BlockingPool, Decoder, ExecutorLease, IoExecutor, PreparedOperation, Registrar,
    RejectReason, ShutdownReport, from_fn,
};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::{RecordingSink, bind, kind, quiet_hook, recording_registrar};
use web_time::Instant;

/// Set in the child process: the test body runs the scenario instead of spawning a child.
const CHILD: &str = "BATON_COMPLETION_HOSTILE_DESTRUCTORS_CHILD";

/// Runs `scenario` in a child process, this test binary re-executed for `test` alone: a second
/// panic during an unwind aborts the child, and the abort fails `test` here.
fn in_child_process(test: &str, scenario: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        scenario();
        return;
    }
    let binary = std::env::current_exe().expect("the test binary's path");
    let output = Command::new(binary)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the child process running {test} failed ({}):\n{stderr}",
        output.status
    );
    assert!(
        stdout.contains("1 passed"),
        "the child process ran no test named {test}:\n{stdout}"
    );
}

/// Drops `value` while this thread unwinds from a panic; returning at all means no abort.
fn drop_while_unwinding<T>(value: T) {
    let unwound = catch_unwind(AssertUnwindSafe(move || {
        let _in_scope = value;
        panic!("unwinding with a hostile value in scope");
    }));
    assert!(unwound.is_err(), "the first panic reaches its catch");
}

/// Drops `value` normally and tells whether a destructor's panic escaped the drop. (The
/// callers assert afterwards, once no hostile value is left to drop during the assertion's
/// own unwind.)
fn panic_escapes_drop<T>(value: T) -> bool {
    catch_unwind(AssertUnwindSafe(move || drop(value))).is_err()
}

/// A user value whose destructor counts itself, then panics.
struct Hostile(Arc<AtomicUsize>);

impl Drop for Hostile {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("hostile destructor");
    }
}

/// Counts the hostile destructors that ran.
#[derive(Default)]
struct Destructors(Arc<AtomicUsize>);

impl Destructors {
    fn hostile(&self) -> Hostile {
        Hostile(Arc::clone(&self.0))
    }

    fn ran(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A registrar whose sink records deliveries; the scenarios here must deliver none.
/// Fresh destructor counts, and a registrar delivering to a recording sink.
fn fixtures() -> (Destructors, Registrar, Arc<RecordingSink>) {
    let (registrar, sink) = registrar();
    (Destructors::default(), registrar, sink)
}

fn registrar() -> (Registrar, Arc<RecordingSink>) {
    recording_registrar()
}

/// One prepared operation of each kind, each with a job that owns a hostile value.
fn hostile_jobs(destructors: &Destructors) -> [PreparedOperation; 3] {
    let (blocking, quarantined, future) = (
        destructors.hostile(),
        destructors.hostile(),
        destructors.hostile(),
    );
    [
        PreparedOperation::interruptible_blocking(
            kind(1),
            from_fn(move || {
                let _owned = &blocking;
            }),
            Decoder::identity(),
            quiet_hook(),
        ),
        PreparedOperation::quarantined_blocking(
            kind(1),
            from_fn(move || {
                let _owned = &quarantined;
            }),
            Decoder::identity(),
            QuarantineBound::FiniteWork {
                units: 1,
                unit: "job",
            },
        ),
        PreparedOperation::interruptible_async(
            kind(1),
            move || {
                let _owned = &future;
                async {}
            },
            Decoder::identity(),
            quiet_hook(),
        ),
    ]
}

/// A prepared blocking operation whose job, decoder and hook each own a hostile value.
fn hostile_everywhere(destructors: &Destructors, kind_raw: u32) -> PreparedOperation {
    let (job, decoder, hook) = (
        destructors.hostile(),
        destructors.hostile(),
        destructors.hostile(),
    );
    PreparedOperation::interruptible_blocking(
        kind(kind_raw),
        from_fn(move || {
            let _owned = &job;
        }),
        Decoder::new(move |()| {
            let _owned = &decoder;
        }),
        Interruptible::new("test", move || {
            let _owned = &hook;
            Ok(HookOutcome::Reaped)
        }),
    )
}

#[test]
fn prepared_operation_of_each_kind_dropped_unbound_contains_its_jobs_panicking_destructor() {
    let destructors = Destructors::default();
    let escaped = hostile_jobs(&destructors).map(panic_escapes_drop);
    assert_eq!(escaped, [false; 3], "a job's panicking destructor escaped");
    assert_eq!(destructors.ran(), 3, "each job was destroyed");
}

#[test]
fn prepared_operation_of_each_kind_dropped_while_unwinding_leaks_its_job_instead_of_aborting() {
    in_child_process(
        "prepared_operation_of_each_kind_dropped_while_unwinding_leaks_its_job_instead_of_aborting",
        || {
            let destructors = Destructors::default();
            for prepared in hostile_jobs(&destructors) {
                drop_while_unwinding(prepared);
            }
            assert_eq!(destructors.ran(), 0, "each job was leaked, not dropped");
        },
    );
}

#[test]
fn prepared_operation_dropped_unbound_contains_its_job_decoder_and_hook_destructors() {
    let destructors = Destructors::default();
    assert!(
        !panic_escapes_drop(hostile_everywhere(&destructors, 1)),
        "a panicking destructor escaped the prepared operation's drop"
    );
    assert_eq!(destructors.ran(), 3);
}

#[test]
fn prepared_operation_dropped_while_unwinding_leaks_its_job_decoder_and_hook() {
    in_child_process(
        "prepared_operation_dropped_while_unwinding_leaks_its_job_decoder_and_hook",
        || {
            let destructors = Destructors::default();
            drop_while_unwinding(hostile_everywhere(&destructors, 1));
            assert_eq!(destructors.ran(), 0);
        },
    );
}

/// A refused bind destroys the prepared operation (crate rule E4), contained.
#[test]
fn refused_bind_contains_the_prepared_operations_panicking_destructors() {
    let destructors = Destructors::default();
    let (ours, sink) = registrar();
    let (theirs, _their_sink) = registrar();
    let foreign = theirs.issue(kind(1)).expect("ids available");
    let refused = catch_unwind(AssertUnwindSafe(|| {
        ours.bind(foreign, hostile_everywhere(&destructors, 1))
    }));
    let refused = refused.expect("the refusal's destruction did not panic");
    assert!(matches!(refused, Err(BindError::ForeignIdentity { .. })));
    let mismatched = ours.issue(kind(1)).expect("ids available");
    let refused = catch_unwind(AssertUnwindSafe(|| {
        ours.bind(mismatched, hostile_everywhere(&destructors, 2))
    }));
    let refused = refused.expect("the refusal's destruction did not panic");
    assert!(matches!(refused, Err(BindError::KindMismatch { .. })));
    assert_eq!(
        destructors.ran(),
        6,
        "both prepared operations were destroyed"
    );
    assert_eq!(sink.count(), 0, "nothing was delivered");
}

/// A refused bind made by a destructor that runs during an unwind leaks the operation.
#[test]
fn refused_bind_while_unwinding_leaks_the_prepared_operation() {
    in_child_process(
        "refused_bind_while_unwinding_leaks_the_prepared_operation",
        || {
            struct BindsOnDrop(Option<(Registrar, PreparedOperation)>);
            impl Drop for BindsOnDrop {
                fn drop(&mut self) {
                    let (registrar, prepared) = self.0.take().expect("set at construction");
                    let identity = registrar.issue(kind(2)).expect("ids available");
                    let refused = registrar.bind(identity, prepared);
                    assert!(matches!(refused, Err(BindError::KindMismatch { .. })));
                }
            }
            let (destructors, registrar, sink) = fixtures();
            drop_while_unwinding(BindsOnDrop(Some((
                registrar,
                hostile_everywhere(&destructors, 1),
            ))));
            assert_eq!(destructors.ran(), 0);
            assert_eq!(sink.count(), 0);
        },
    );
}

/// A binding, and each half of a split one, dropped without being armed: nothing is delivered
/// (crate rule E5) and the job, decoder and hook destructors are contained.
#[test]
fn binding_and_its_halves_dropped_unarmed_contain_their_panicking_destructors() {
    let (destructors, registrar, sink) = fixtures();
    assert!(
        !panic_escapes_drop(bind(&registrar, hostile_everywhere(&destructors, 1))),
        "a panicking destructor escaped the binding's drop"
    );
    assert_eq!(
        destructors.ran(),
        3,
        "the binding destroyed job, decoder and hook"
    );
    let (half, submission) = bind(&registrar, hostile_everywhere(&destructors, 1)).split();
    assert!(
        !panic_escapes_drop(submission),
        "a panicking destructor escaped the submission's drop"
    );
    assert_eq!(destructors.ran(), 4, "the submission destroyed the job");
    assert!(
        !panic_escapes_drop(half),
        "a panicking destructor escaped the runtime half's drop"
    );
    assert_eq!(
        destructors.ran(),
        6,
        "the runtime half destroyed decoder and hook"
    );
    assert_eq!(sink.count(), 0, "nothing was delivered");
}

#[test]
fn binding_and_its_halves_dropped_unarmed_while_unwinding_leak_instead_of_aborting() {
    in_child_process(
        "binding_and_its_halves_dropped_unarmed_while_unwinding_leak_instead_of_aborting",
        || {
            let (destructors, registrar, sink) = fixtures();
            drop_while_unwinding(bind(&registrar, hostile_everywhere(&destructors, 1)));
            let (half, submission) = bind(&registrar, hostile_everywhere(&destructors, 1)).split();
            drop_while_unwinding(submission);
            drop_while_unwinding(half);
            assert_eq!(destructors.ran(), 0);
            assert_eq!(sink.count(), 0);
        },
    );
}

/// A default pool with `registrar`'s runtime attached, then shut down, and its report.
fn shut_down_pool(registrar: &Registrar) -> (BlockingPool, Arc<dyn ExecutorLease>, ShutdownReport) {
    let pool = BlockingPool::builder().build().expect("default pool");
    let lease = pool
        .attach_runtime(registrar.runtime_id())
        .expect("fresh runtime");
    let report = pool.shutdown(Instant::now());
    (pool, lease, report)
}

/// A submission a shut-down pool rejects: its rollback reports the job's panicking destructor
/// (crate rule E5), and a rejection dropped during an unwind leaks the job.
#[test]
fn rejected_submission_rollback_reports_the_panicking_job_destructor() {
    let (destructors, registrar, sink) = fixtures();
    let (_pool, lease, report) = shut_down_pool(&registrar);
    assert!(matches!(report, ShutdownReport::Drained { .. }));
    let (half, submission) = bind(&registrar, hostile_everywhere(&destructors, 1)).split();
    let rejected = lease
        .submit(submission)
        .expect_err("a shut-down pool rejects");
    assert_eq!(rejected.reason, RejectReason::ShuttingDown);
    assert_eq!(
        rejected.rollback(),
        ContainedDrop::Panicked {
            message: "hostile destructor".to_owned()
        }
    );
    assert_eq!(destructors.ran(), 1, "the rollback destroyed the job");
    assert!(
        !panic_escapes_drop(half),
        "a panicking destructor escaped the runtime half's drop"
    );
    assert_eq!(sink.count(), 0, "nothing was delivered");
}

#[test]
fn rejected_submission_dropped_while_unwinding_leaks_the_job() {
    in_child_process(
        "rejected_submission_dropped_while_unwinding_leaks_the_job",
        || {
            let (destructors, registrar, sink) = fixtures();
            let (_pool, lease, _report) = shut_down_pool(&registrar);
            let (_half, submission) = bind(&registrar, hostile_everywhere(&destructors, 1)).split();
            let rejected = lease
                .submit(submission)
                .expect_err("a shut-down pool rejects");
            drop_while_unwinding(rejected);
            assert_eq!(destructors.ran(), 0, "the job was leaked");
            assert_eq!(sink.count(), 0);
        },
    );
}
