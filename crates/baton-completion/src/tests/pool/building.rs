//! Building a pool and attaching runtimes: bad configurations and duplicate attaches are
//! refused.

use super::{fixture, refusing};
use crate::executor::{AttachError, IoExecutor};
use crate::pool::{BlockingPool, BuildError, InterruptibleThreads};
use std::time::Duration;

#[test]
fn zero_capacity_is_refused() {
    let error = BlockingPool::builder().queue_capacity(0).build();
    assert_eq!(error.err(), Some(BuildError::ZeroCapacity));
}

#[test]
fn zero_threads_are_refused() {
    let fixed = BlockingPool::builder()
        .interruptible_threads(InterruptibleThreads::Fixed(0))
        .build();
    assert_eq!(
        fixed.err(),
        Some(BuildError::ZeroThreads {
            lane: "interruptible"
        })
    );
    let elastic = BlockingPool::builder()
        .interruptible_threads(InterruptibleThreads::Elastic {
            max: 0,
            keep_alive: Duration::from_secs(1),
        })
        .build();
    assert!(matches!(elastic, Err(BuildError::ZeroThreads { .. })));
    let quarantine = BlockingPool::builder().quarantine_threads(0).build();
    assert_eq!(
        quarantine.err().map(|e| e.to_string()),
        Some("the quarantine lane needs at least 1 thread".to_owned())
    );
}

#[test]
fn duplicate_runtime_attach_is_refused() {
    let f = fixture(BlockingPool::builder());
    let runtime = f.registrar.runtime_id();
    assert_eq!(
        f.pool.attach_runtime(runtime).err(),
        Some(AttachError::DuplicateRuntime { runtime })
    );
    f.lease.detach();
    assert!(
        f.pool.attach_runtime(runtime).is_ok(),
        "detached may attach again"
    );
}

#[test]
fn refused_fixed_thread_fails_the_build() {
    let result = BlockingPool::builder()
        .interruptible_threads(InterruptibleThreads::Fixed(3))
        .thread_spawner(refusing(2))
        .build();
    assert!(matches!(result, Err(BuildError::Spawn { message }) if message.contains("injected")));
}
