//! A global allocator that counts the allocations of the threads that ask for it, for the
//! tests that check how often the library allocates. A test file installs it with
//! `#[global_allocator] static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;`
//! and measures with [`allocations`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Forwards to the system allocator; counts allocations (`alloc`, `alloc_zeroed`,
/// `realloc`) and notes the largest on threads inside [`allocations`] or
/// [`allocations_and_largest`].
pub struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    if COUNTING.with(Cell::get) {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        LARGEST.with(|l| l.set(l.get().max(size)));
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged; the bookkeeping
// (thread-local cells with const initialisers) never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(p, layout) }
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        note(size);
        // SAFETY: forwarded.
        unsafe { System.realloc(p, layout, size) }
    }
}

/// `f`'s result and the number of allocations it made on this thread.
pub fn allocations<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let (r, count, _) = allocations_and_largest(f);
    (r, count)
}

/// `f`'s result, the number of allocations it made on this thread and the size in bytes
/// of the largest of them (0 when it made none).
pub fn allocations_and_largest<R>(f: impl FnOnce() -> R) -> (R, usize, usize) {
    ALLOCATIONS.with(|n| n.set(0));
    LARGEST.with(|l| l.set(0));
    COUNTING.with(|c| c.set(true));
    let r = f();
    COUNTING.with(|c| c.set(false));
    (r, ALLOCATIONS.with(Cell::get), LARGEST.with(Cell::get))
}
