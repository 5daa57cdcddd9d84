//! A scheduler in a steady spawn-and-join loop on its own thread allocates nothing once it is
//! warm: freed task blocks are recycled (T9) and the run queues keep their capacity, for `Send`
//! and local tasks alike.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::task::Poll;

use baton_task::{JoinHandle, Scheduler};
use support::{poll_once, scheduler};

/// Counts the allocations made on each thread, so tests running side by side in this binary
/// (and the harness's own threads) do not see each other's.
struct PerThreadCount;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to `System`; the count is a const-initialised
// thread-local `Cell` without a destructor, which never allocates.
unsafe impl GlobalAlloc for PerThreadCount {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // A thread being torn down may no longer reach its locals; it is then not counted.
        let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this `layout` (the caller's contract).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        // SAFETY: the caller's contract for `realloc` is passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: PerThreadCount = PerThreadCount;

fn allocations_here() -> usize {
    ALLOCATIONS.with(Cell::get)
}

const BATCH: usize = 1_000;

/// Spawns `BATCH` tasks with `spawn`, runs them all and joins each; checks every output.
fn one_batch(
    scheduler: &Scheduler,
    handles: &mut Vec<JoinHandle<usize>>,
    spawn: fn(&Scheduler, usize) -> JoinHandle<usize>,
) {
    handles.extend((0..BATCH).map(|i| spawn(scheduler, i)));
    while scheduler.run_ready(BATCH).polled > 0 {}
    for (i, mut handle) in handles.drain(..).enumerate() {
        match poll_once(&mut handle) {
            Poll::Ready(Ok(out)) => assert_eq!(out, i),
            other => panic!("task {i} did not finish after its batch ran: {other:?}"),
        }
    }
}

/// Allocations made by batches 3 to 5 of a spawn-and-join loop (the first two warm it up),
/// inside the scheduler's context as a worker's turn runs, so tasks freed by their joins hand
/// their blocks back to it.
fn steady_state_allocations(spawn: fn(&Scheduler, usize) -> JoinHandle<usize>) -> usize {
    let (scheduler, _unpark) = scheduler();
    let _entered = scheduler.enter();
    let mut handles = Vec::with_capacity(BATCH);
    for _ in 0..2 {
        one_batch(&scheduler, &mut handles, spawn);
    }
    let before = allocations_here();
    for _ in 0..3 {
        one_batch(&scheduler, &mut handles, spawn);
    }
    allocations_here() - before
}

#[test]
fn warm_send_batches_allocate_nothing() {
    let made = steady_state_allocations(|scheduler, i| scheduler.spawn(async move { i }));
    assert_eq!(made, 0, "allocations in three warm batches of Send tasks");
}

#[test]
fn warm_local_batches_allocate_nothing() {
    let made = steady_state_allocations(|scheduler, i| scheduler.spawn_local(async move { i }));
    assert_eq!(made, 0, "allocations in three warm batches of local tasks");
}
