//! Unit and property tests of completion identities (crate rules E1–E2).

use crate::identity::{
    CompletionKind, IdentityAllocator, IdentityError, KindError, OperationId, RuntimeId, WaitSlot,
};
use proptest::prelude::*;
use std::collections::HashSet;

fn runtime() -> RuntimeId {
    RuntimeId::allocate().expect("test process has runtime ids")
}

#[test]
fn runtime_ids_are_unique() {
    let a = runtime();
    let b = runtime();
    assert_ne!(a, b);
    assert!(a.to_string().starts_with("runtime #"));
}

#[test]
fn kind_zero_is_refused() {
    assert_eq!(CompletionKind::try_from_raw(0), Err(KindError::Zero));
    let kind = CompletionKind::try_from_raw(7).expect("7 is non-zero");
    assert_eq!(kind.get(), 7);
    assert_eq!(
        KindError::Zero.to_string(),
        "completion kind 0 is reserved; use a non-zero kind number"
    );
}

#[test]
fn released_slot_comes_back_with_next_generation() {
    let allocator = IdentityAllocator::new(runtime());
    let first = allocator.allocate_wait().expect("slots available");
    let (id, generation) = (first.wait_id(), first.generation());
    drop(first);
    let second = allocator.allocate_wait().expect("slots available");
    assert_eq!(second.wait_id(), id);
    assert_eq!(second.generation().get(), generation.get() + 1);
}

#[test]
fn slot_exhaustion_is_an_error() {
    let rt = runtime();
    let allocator = IdentityAllocator::with_limits(rt, 2, 1);
    let _a = allocator.allocate_wait().expect("first slot");
    let _b = allocator.allocate_wait().expect("second slot");
    assert_eq!(
        allocator.allocate_wait().map(|slot| slot.wait_id()),
        Err(IdentityError::WaitSlotsExhausted { runtime: rt })
    );
}

#[test]
fn operation_exhaustion_is_an_error_not_a_wrap() {
    let rt = runtime();
    let allocator = IdentityAllocator::with_limits(rt, 4, u64::MAX - 1);
    assert_eq!(
        allocator.allocate_operation().map(OperationId::get),
        Ok(u64::MAX - 1)
    );
    assert_eq!(
        allocator.allocate_operation(),
        Err(IdentityError::OperationIdsExhausted { runtime: rt })
    );
}

#[test]
fn exhausted_generation_retires_the_slot() {
    let allocator = IdentityAllocator::with_limits(runtime(), 1, 1);
    let slot = allocator.allocate_wait_on(u32::MAX);
    drop(slot);
    assert!(allocator.allocate_wait().is_err(), "slot 0 is retired");
}

proptest! {
    /// Random allocate/release sequences never hand out the same (slot, generation) pair or
    /// operation id twice.
    #[test]
    fn prop_identity_allocators_never_repeat(ops in proptest::collection::vec(0_u8..3, 1..200)) {
        let allocator = IdentityAllocator::new(runtime());
        let mut live: Vec<WaitSlot> = Vec::new();
        let mut seen_waits = HashSet::new();
        let mut seen_ops = HashSet::new();
        for op in ops {
            match op {
                0 => {
                    let slot = allocator.allocate_wait().expect("slots available");
                    prop_assert!(seen_waits.insert((slot.wait_id(), slot.generation())));
                    live.push(slot);
                }
                1 => {
                    if !live.is_empty() {
                        let victim = live.len() / 2;
                        drop(live.swap_remove(victim));
                    }
                }
                _ => {
                    let op = allocator.allocate_operation().expect("ids available");
                    prop_assert!(seen_ops.insert(op));
                }
            }
        }
    }
}

/// The lowest free slot is handed out first, so after a burst the slots in use stay low (the
/// wait tables are indexed by slot number and sized by the highest one they see).
#[test]
fn the_lowest_free_slot_is_handed_out_first() {
    let allocator = IdentityAllocator::new(RuntimeId::allocate().expect("runtime id"));
    let mut burst: Vec<_> = (0..8)
        .map(|_| allocator.allocate_wait().expect("ids available"))
        .collect();
    // Free all but the highest, lowest first: a last-in-first-out list would now hand out 6.
    let highest = burst.pop().expect("eight slots");
    drop(burst);
    let next = allocator.allocate_wait().expect("ids available");
    assert_eq!(next.wait_id().get(), 0);
    let after = allocator.allocate_wait().expect("ids available");
    assert_eq!(after.wait_id().get(), 1);
    assert_eq!(highest.wait_id().get(), 7);
}
