//! A client's heap and tasks under a steady load (`h*`): its live allocations and tokio tasks
//! must not grow with the number of operations. Its own test binary: a global allocator
//! counts live allocations (a count, not bytes, so that buffers that grow and shrink do not
//! hide or fake a trend), and live bytes with their peak, for what one call holds at once.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static MADE: AtomicI64 = AtomicI64::new(0);
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);
static PEAK_BYTES: AtomicI64 = AtomicI64::new(0);

fn add_bytes(n: i64) {
    let now = LIVE_BYTES.fetch_add(n, Ordering::Relaxed) + n;
    PEAK_BYTES.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(1, Ordering::Relaxed);
        MADE.fetch_add(1, Ordering::Relaxed);
        add_bytes(layout.size() as i64);
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(1, Ordering::Relaxed);
        MADE.fetch_add(1, Ordering::Relaxed);
        add_bytes(layout.size() as i64);
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        add_bytes(-(layout.size() as i64));
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        MADE.fetch_add(1, Ordering::Relaxed);
        add_bytes(new as i64 - layout.size() as i64);
        System.realloc(ptr, layout, new)
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Live allocations of the whole process now.
pub fn live_allocations() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// Allocations made by the whole process so far (a realloc counts as one).
pub fn allocations_made() -> i64 {
    MADE.load(Ordering::Relaxed)
}

/// Live bytes of the whole process now.
pub fn live_bytes() -> i64 {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// The most live bytes since the last [`reset_peak_bytes`] (or the start).
pub fn peak_bytes() -> i64 {
    PEAK_BYTES.load(Ordering::Relaxed)
}

/// Starts a new peak at the live bytes of now.
pub fn reset_peak_bytes() {
    PEAK_BYTES.store(LIVE_BYTES.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// One test at a time: the counts are the whole process's.
pub static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

mod h10_no_kinds_operations_grow_a_clients_live_allocations_or_tasks;
mod h20_an_uncontended_lock_and_unlock_allocate_a_bounded_number_of_times;
mod h30_a_large_guarded_write_holds_no_extra_copy_of_its_words_while_it_is_sent;
