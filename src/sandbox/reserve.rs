//! Memory the next run allocates from without faulting in fresh pages.
//!
//! The engine facade keeps about 0.9 MB of every isolate dropped on a thread (docs/LIFECYCLE.md),
//! so a worker thread's heap ends every run higher than it began. With the used isolate torn down
//! and the next one built in its memory, the next *run* was the one to grow the heap: glibc grows
//! a thread's heap a page at a time, so a run with 100 calls in flight paid about 175 `mprotect`
//! calls and as many page faults, 27% of its time (docs/PERFORMANCE.md, W3).
//!
//! A [`RunReserve`] taken between the teardown and the build holds [`RESERVE_BYTES`] of the
//! memory the teardown freed (its pages already mapped), so the build grows the heap instead,
//! where nobody waits for it; dropped after the build, it leaves that memory free for the run.
//! With another allocator it costs a few dozen small allocations and changes nothing else.

/// About what a run with 100 calls in flight allocates (W3: 175 pages of 4 KiB).
const RESERVE_BYTES: usize = 1024 * 1024;

/// Small enough that the allocator serves it from the thread's heap, not a mapping of its own
/// (glibc maps blocks of 128 KiB and more separately).
const BLOCK_BYTES: usize = 32 * 1024;

const PAGE_BYTES: usize = 4096;

pub(crate) struct RunReserve {
    _blocks: Vec<Vec<u8>>,
}

impl RunReserve {
    pub(crate) fn take() -> RunReserve {
        let blocks = (0..RESERVE_BYTES / BLOCK_BYTES)
            .map(|_| {
                let mut block = Vec::<u8>::with_capacity(BLOCK_BYTES);
                // Memory the teardown freed is mapped already; should the allocator hand out
                // fresh pages instead, the build's time, not the run's, pays for mapping them.
                for page in block.spare_capacity_mut().chunks_mut(PAGE_BYTES) {
                    page[0].write(0);
                }
                // Stores to memory that is freed unread would be dead code to the optimiser.
                std::hint::black_box(block)
            })
            .collect();
        RunReserve { _blocks: blocks }
    }
}
