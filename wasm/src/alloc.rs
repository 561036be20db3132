//! The global allocator: the standard one (dlmalloc on wasm32), growing the
//! wasm memory ahead in large steps instead of 64 KiB at a time.
//!
//! dlmalloc asks `memory.grow` for just what an allocation needs, and each
//! grow is slow in V8 (measured in Node 20: syncing 300k ops into a fresh
//! module took 12.8 s, 3.3 s of it in the apply; the same sync again in the
//! same module, its memory already grown, took 5.1-6.0 s, 0.9-1.0 s in the
//! apply). So when an allocation made the memory grow, this allocates and
//! frees a block of a sixteenth of the memory, 8 to 32 MiB: dlmalloc grows
//! once for it and keeps the freed block for the next allocations (wasm
//! memory never shrinks, and dlmalloc cannot release it). The step is
//! what the memory can overshoot what is used: a quarter of the memory, as
//! before, took a 1M-row sync on OPFS to 136 MB for 106 MB in use; 8 MiB
//! keeps the peak within the page caches plus a few MiB.

use std::alloc::{GlobalAlloc, Layout, System};
use std::arch::wasm32::memory_size;

const PAGE: usize = 64 * 1024;
const MIN_STEP: usize = 8 << 20;
const MAX_STEP: usize = 32 << 20;

pub struct GrowAhead;

fn grow_ahead() {
    let current = memory_size::<0>() * PAGE;
    let step = (current / 16).clamp(MIN_STEP, MAX_STEP);
    if let Ok(layout) = Layout::from_size_align(step, 16) {
        // SAFETY: a plain allocation freed at once with the same layout.
        unsafe {
            let block = System.alloc(layout);
            if !block.is_null() {
                System.dealloc(block, layout);
            }
        }
    }
}

// SAFETY: forwards to System; grow_ahead only allocates and frees.
unsafe impl GlobalAlloc for GrowAhead {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let before = memory_size::<0>();
        let block = unsafe { System.alloc(layout) };
        if memory_size::<0>() != before {
            grow_ahead();
        }
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let before = memory_size::<0>();
        let block = unsafe { System.alloc_zeroed(layout) };
        if memory_size::<0>() != before {
            grow_ahead();
        }
        block
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let before = memory_size::<0>();
        let block = unsafe { System.realloc(ptr, layout, new_size) };
        if memory_size::<0>() != before {
            grow_ahead();
        }
        block
    }
}

#[global_allocator]
static ALLOCATOR: GrowAhead = GrowAhead;
