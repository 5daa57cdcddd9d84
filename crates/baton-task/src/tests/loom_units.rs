//! Loom models of the scheduler's task units (rule T1): tasks hold units of their scheduler's
//! state instead of `Arc` counts; while any unit is out the units together own one strong
//! count. A unit released on another thread racing the claim holder's batch refill must
//! leave exactly that one strong count, or none once every task is freed.

use crate::tests::support::{run_all, scheduler};

/// Proves rule T1 (units): a handle dropped on another thread releases the last unit (the
/// count reaches zero, giving up the units' strong count) while the claim holder spawns
/// again (the count leaves zero in a batch, taking the strong count again), in any order.
/// Afterwards, with every task freed, only the scheduler's own strong count is left.
#[test]
fn loom_remote_unit_release_racing_a_refill_keeps_the_count_paired() {
    loom::model(|| {
        let scheduler = scheduler();
        let base = scheduler.state_refs();
        let first = scheduler.spawn(async {});
        run_all(&scheduler);
        assert_eq!(
            scheduler.state_refs(),
            base + 1,
            "the units own one strong count"
        );
        let dropping = loom::thread::spawn(move || drop(first));
        let second = scheduler.spawn(async {});
        run_all(&scheduler);
        dropping.join().unwrap();
        assert_eq!(
            scheduler.state_refs(),
            base + 1,
            "one task left, one strong count"
        );
        drop(second);
        assert_eq!(
            scheduler.state_refs(),
            base,
            "no unit left, no strong count"
        );
    });
}

/// Proves rule T1 (units) with T9: a unit released on another thread racing the claim
/// holder's own release of its spares (its guard dropping) pairs the count too, whichever
/// brings it to zero.
#[test]
fn loom_remote_unit_release_racing_spares_returned_at_claim_release() {
    loom::model(|| {
        let scheduler = scheduler();
        let base = scheduler.state_refs();
        let handle = scheduler.spawn(async {});
        let guard = scheduler.enter();
        run_all(&scheduler);
        let dropping = loom::thread::spawn(move || drop(handle));
        drop(guard);
        dropping.join().unwrap();
        assert_eq!(
            scheduler.state_refs(),
            base,
            "no unit left, no strong count"
        );
    });
}
