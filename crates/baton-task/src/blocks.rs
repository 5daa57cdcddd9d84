//! Recycled task memory: the blocks of freed tasks, kept by the core claim holder (T9) for the
//! next tasks of the same layout, so a burst of spawns and joins on the worker's thread does
//! not pay the allocator twice per task.
//!
//! A task is still one allocation (T1); only its memory outlives it, bounded by
//! [`MAX_CACHED_BYTES`] per scheduler and freed with the scheduler; when the bound is reached,
//! the blocks of the task being freed push out those of other layouts. Blocks are what `Box`
//! allocates for a task (`Layout::new` of its type, from the global allocator), so a block
//! from either source may go back to either.

use std::alloc::Layout;
use std::cell::RefCell;
use std::ptr::NonNull;

/// The most memory a scheduler keeps in recycled blocks: room for one batch of a thousand
/// small tasks, without holding on to much after a burst.
const MAX_CACHED_BYTES: usize = 128 * 1024;

/// The largest task block worth keeping (bigger futures go straight back to the allocator).
const MAX_BLOCK_SIZE: usize = 512;

/// Free blocks of one layout.
#[derive(Debug)]
struct Blocks {
    layout: Layout,
    free: Vec<NonNull<u8>>,
}

/// Free task blocks, per layout. Only the core claim holder reaches it (it lives in the
/// `RunQueues`).
///
/// Invariant: every block in `free` was allocated by the global allocator with its list's
/// `layout`, is owned by the cache alone (no task lives in it), and `cached` is the sum of
/// their sizes.
#[derive(Debug, Default)]
pub(crate) struct BlockCache {
    lists: RefCell<Vec<Blocks>>,
    cached: std::cell::Cell<usize>,
}

impl BlockCache {
    /// A block for a new task of `layout`, if one is cached.
    pub(crate) fn take(&self, layout: Layout) -> Option<NonNull<u8>> {
        let mut lists = self.lists.borrow_mut();
        let list = lists.iter_mut().find(|list| list.layout == layout)?;
        let block = list.free.pop()?;
        self.cached.set(self.cached.get() - layout.size());
        Some(block)
    }

    /// Keeps the block of a freed task of `layout`, or hands it back when the block is too big
    /// or the cache is full of blocks of this layout. Blocks of other layouts make room for it:
    /// the tasks being freed now are the likeliest to be spawned next, so a cache filled by an
    /// earlier workload's tasks does not keep the current one's out.
    ///
    /// # Safety
    ///
    /// `block` was allocated by the global allocator with `layout`, and the caller gives up
    /// ownership of it when `Ok` is returned (no task lives in it any more).
    pub(crate) unsafe fn keep(
        &self,
        layout: Layout,
        block: NonNull<u8>,
    ) -> Result<(), NonNull<u8>> {
        let size = layout.size();
        if size > MAX_BLOCK_SIZE {
            return Err(block);
        }
        let mut lists = self.lists.borrow_mut();
        while self.cached.get() + size > MAX_CACHED_BYTES {
            let other = lists
                .iter_mut()
                .find(|list| list.layout != layout && !list.free.is_empty());
            let Some(other) = other else {
                return Err(block);
            };
            let Some(evicted) = other.free.pop() else {
                return Err(block);
            };
            // SAFETY: the type's invariant: the block came from the global allocator with its
            // list's layout, and only the cache owned it; it left the list just now.
            unsafe { std::alloc::dealloc(evicted.as_ptr(), other.layout) };
            self.cached.set(self.cached.get() - other.layout.size());
        }
        match lists.iter_mut().find(|list| list.layout == layout) {
            Some(list) => list.free.push(block),
            None => lists.push(Blocks {
                layout,
                free: vec![block],
            }),
        }
        self.cached.set(self.cached.get() + size);
        Ok(())
    }
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        for list in self.lists.get_mut().drain(..) {
            for block in list.free {
                // SAFETY: the type's invariant: the block came from the global allocator with
                // this layout and only the cache owns it.
                unsafe { std::alloc::dealloc(block.as_ptr(), list.layout) };
            }
        }
    }
}
