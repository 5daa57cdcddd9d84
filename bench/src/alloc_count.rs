//! A counting global allocator, so every sample can report allocations per operation.
//!
//! Every allocation entry point (`alloc`, `alloc_zeroed`, `realloc`) adds one to a process-wide
//! atomic counter and then forwards to the system allocator unchanged. Deallocations are not
//! counted: the figure of interest is how often an operation asks the allocator for memory. The
//! counter is global, so work a runtime moves to helper threads (a blocking pool, a driver
//! thread) is counted too; the benchmark's own load generators allocate nothing while a sample
//! is being timed, so the count belongs to the contender under test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many allocation requests the process has made since it started.
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// The process's global allocator: the system allocator plus one relaxed counter increment.
#[derive(Debug)]
pub(crate) struct CountingAllocator;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract the caller upholds for us is exactly the one `System` needs; the counter
// is a side effect that never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller guarantees `layout` has a non-zero size, as `System.alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller guarantees `layout` has a non-zero size, as `System.alloc_zeroed`
        // requires.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was returned by this allocator, which always delegates to `System`, with
        // this same `layout` (the caller's contract).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` (we always delegate) with `layout`, and the caller
        // guarantees `new_size` is non-zero and does not overflow when rounded to the alignment.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The number of allocation requests made by the whole process so far.
pub(crate) fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::allocations;

    #[test]
    fn boxing_a_value_is_counted() {
        let before = allocations();
        let boxed = std::hint::black_box(Box::new(7_u64));
        let after = allocations();
        assert_eq!(*boxed, 7);
        assert!(after > before, "a Box allocation must move the counter");
    }
}
