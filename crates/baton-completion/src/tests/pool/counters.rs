//! Pool rule P6 under random workloads: the counters always add up.

use super::{fixture, later};
use crate::executor::{IoExecutor, RejectReason, ShutdownReport};
use crate::pool::{BlockingPool, InterruptibleThreads};
use crate::prepared::{Decoder, PreparedOperation, from_fn};
use crate::tests::support::{interruptible, kind};
use proptest::prelude::*;
use std::time::Duration;

#[derive(Clone, Debug)]
enum Op {
    Blocking,
    Async,
    Quarantined,
    CancelledBeforeStart,
    Panicking,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Blocking),
        Just(Op::Async),
        Just(Op::Quarantined),
        Just(Op::CancelledBeforeStart),
        Just(Op::Panicking),
    ]
}

proptest! {

    /// Whatever mix of jobs is submitted to a small pool, the counters add up at every
    /// snapshot, every accepted job delivers exactly once, and shutdown drains.
    #[test]
    fn prop_pool_counters_add_up(ops in proptest::collection::vec(op(), 1..40), capacity in 1_usize..8) {
        let f = fixture(
            BlockingPool::builder()
                .queue_capacity(capacity)
                .interruptible_threads(InterruptibleThreads::Elastic {
                    max: 2,
                    keep_alive: Duration::from_millis(5),
                })
                .quarantine_threads(1),
        );
        let mut accepted = 0_u64;
        for op in ops {
            let submission = match op {
                Op::Blocking => f.blocking(|| 1_u8),
                Op::Async => f.bind(PreparedOperation::interruptible_async(
                    kind(1),
                    || async { 1_u8 },
                    Decoder::identity(),
                    interruptible(),
                )),
                Op::Quarantined => f.quarantined(|| 1_u8),
                Op::CancelledBeforeStart => {
                    let identity = f.registrar.issue(kind(1)).expect("ids");
                    let (half, submission) = f
                        .registrar
                        .bind(identity, PreparedOperation::interruptible_blocking(
                            kind(1),
                            from_fn(|| 1_u8),
                            Decoder::identity(),
                            interruptible(),
                        ))
                        .expect("valid bind")
                        .split();
                    let _ = half.cancel_handle().cancel_before_start();
                    submission
                }
                Op::Panicking => f.blocking(|| -> u8 { panic!("proptest job panics") }),
            };
            match f.lease.submit(submission) {
                Ok(()) => accepted += 1,
                Err(rejected) => {
                    let capacity_refusal = matches!(rejected.reason, RejectReason::Capacity { .. });
                    prop_assert!(capacity_refusal, "unexpected rejection {}", rejected.reason);
                    let _ = rejected.rollback();
                }
            }
            let snapshot = f.pool.snapshot();
            prop_assert!(snapshot.adds_up(), "{:?}", snapshot);
            prop_assert_eq!(snapshot.accepted, accepted);
        }
        let report = f.pool.shutdown(later(20));
        let ShutdownReport::Drained { snapshot } = report else {
            panic!("short jobs drain: {report:?}")
        };
        prop_assert!(snapshot.adds_up());
        prop_assert_eq!(snapshot.finished(), accepted);
        prop_assert_eq!(f.sink.count() as u64, accepted);
    }
}
