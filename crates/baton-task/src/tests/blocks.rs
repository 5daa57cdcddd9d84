//! The recycled task blocks: a kept block comes back for its own layout only, the cache
//! refuses blocks past its bounds (the caller then frees them), and a full cache makes room for
//! a new layout.

#![cfg(not(loom))]

use std::alloc::Layout;
use std::ptr::NonNull;

use crate::blocks::BlockCache;

fn allocate(layout: Layout) -> NonNull<u8> {
    // SAFETY: the layouts used here are non-zero-sized.
    NonNull::new(unsafe { std::alloc::alloc(layout) }).expect("the test allocation succeeds")
}

fn free(block: NonNull<u8>, layout: Layout) {
    // SAFETY: `block` came from `allocate` with `layout` and nothing else owns it.
    unsafe { std::alloc::dealloc(block.as_ptr(), layout) }
}

#[test]
fn kept_block_is_reused_for_its_layout_only() {
    let cache = BlockCache::default();
    let small = Layout::from_size_align(96, 8).expect("a valid layout");
    let other = Layout::from_size_align(128, 8).expect("a valid layout");
    let block = allocate(small);
    // SAFETY: the block came from the global allocator with `small` and is given up here.
    assert!(unsafe { cache.keep(small, block) }.is_ok());
    assert_eq!(cache.take(other), None, "another layout gets no block");
    assert_eq!(cache.take(small), Some(block));
    assert_eq!(cache.take(small), None, "a block is handed out once");
    free(block, small);
}

#[test]
fn blocks_past_the_bounds_are_handed_back() {
    let cache = BlockCache::default();
    let big = Layout::from_size_align(4096, 8).expect("a valid layout");
    let block = allocate(big);
    // SAFETY: as above; `Err` hands the block back.
    let refused = unsafe { cache.keep(big, block) };
    assert_eq!(
        refused,
        Err(block),
        "a big task's block goes back to the allocator"
    );
    free(block, big);
    let small = Layout::from_size_align(256, 8).expect("a valid layout");
    let mut kept = 0;
    loop {
        let block = allocate(small);
        // SAFETY: as above.
        match unsafe { cache.keep(small, block) } {
            Ok(()) => kept += 1,
            Err(block) => {
                free(block, small);
                break;
            }
        }
    }
    assert_eq!(
        kept,
        128 * 1024 / 256,
        "the cache holds at most its byte bound"
    );
    // The cache frees what it kept when it is dropped.
}

/// A cache filled with the blocks of one task type makes room for another's by freeing the
/// first type's blocks, so tasks that ran earlier do not keep a later workload's blocks out.
#[test]
fn a_full_cache_makes_room_for_a_new_layout() {
    let cache = BlockCache::default();
    let old = Layout::from_size_align(256, 8).expect("a valid layout");
    let new = Layout::from_size_align(64, 8).expect("a valid layout");
    for _ in 0..128 * 1024 / 256 {
        // SAFETY: as above.
        assert!(unsafe { cache.keep(old, allocate(old)) }.is_ok());
    }
    let block = allocate(new);
    // SAFETY: as above.
    let kept = unsafe { cache.keep(new, block) };
    assert_eq!(kept, Ok(()), "a block of the new layout is kept");
    assert_eq!(cache.take(new), Some(block));
    let mut old_left = 0;
    while let Some(block) = cache.take(old) {
        free(block, old);
        old_left += 1;
    }
    assert_eq!(old_left, 128 * 1024 / 256 - 1, "one old block made room");
    free(block, new);
}
