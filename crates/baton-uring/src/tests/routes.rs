//! The worker's route store (worker rule W5): routes are found only for the exact wait they
//! were registered for, a reused slot replaces its older route, and the count follows.

use baton_completion::{CompletionKind, IdentityAllocator, RuntimeId};

use crate::worker::routes::{Route, Routes};

fn route(owner: u64, allocator: &IdentityAllocator) -> Route {
    Route {
        owner,
        operation_id: allocator.allocate_operation().expect("ids available"),
        kind: CompletionKind::try_from_raw(1).expect("non-zero"),
    }
}

#[test]
fn a_route_answers_only_for_its_own_generation() {
    let allocator = IdentityAllocator::new(RuntimeId::allocate().expect("runtime id"));
    let mut routes = Routes::default();
    let first = allocator.allocate_wait().expect("ids available");
    let second = allocator.allocate_wait().expect("ids available");
    let (first_id, old_generation) = (first.wait_id(), first.generation());
    routes.insert(first_id, old_generation, route(7, &allocator));
    routes.insert(second.wait_id(), second.generation(), route(8, &allocator));
    assert_eq!(routes.len(), 2);
    assert_eq!(routes.get(first_id, old_generation).map(|r| r.owner), Some(7));
    // The slot is freed and handed out again: its new wait's route replaces the old one.
    drop(first);
    let reused = allocator.allocate_wait().expect("ids available");
    assert_eq!(reused.wait_id(), first_id);
    routes.insert(first_id, reused.generation(), route(9, &allocator));
    assert_eq!(routes.len(), 2);
    assert!(routes.get(first_id, old_generation).is_none(), "the old wait is stale");
    // Removing the old generation leaves the new route alone.
    routes.remove(first_id, old_generation);
    assert_eq!(routes.get(first_id, reused.generation()).map(|r| r.owner), Some(9));
    let mut owners: Vec<u64> = routes.iter().map(|(_, _, r)| r.owner).collect();
    owners.sort_unstable();
    assert_eq!(owners, [8, 9]);
    routes.remove(first_id, reused.generation());
    assert_eq!(routes.len(), 1);
    routes.clear();
    assert_eq!(routes.len(), 0);
    assert!(routes.get(second.wait_id(), second.generation()).is_none());
}
