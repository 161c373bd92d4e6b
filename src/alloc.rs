//! The process's allocator (feature `mimalloc`, on by default).
//!
//! A tool call and a run are allocation-bound: glibc's `malloc` and `free` were about 30% of a
//! call's instructions, most of them from the engine's C code, which calls `malloc` directly. So
//! the dependency's `override` feature replaces `malloc` itself, and this module makes the same
//! allocator Rust's. Measured in docs/PERFORMANCE-LOG.md ("The allocator"): 15% fewer instructions
//! per tool call, W4 (10,000 records) about 20% faster.
//!
//! One option differs from mimalloc's defaults, unless its environment variable is set:
//! `arena_eager_commit` = 0 (`MIMALLOC_ARENA_EAGER_COMMIT`), so arenas are committed as they are
//! used. On Linux mimalloc commits each arena it reserves in full (2, "on overcommitting
//! systems"), and what it purges from such an arena stays resident: an idle pooled isolate cost
//! 9.6 MB of RSS that way (mimalloc 2.3), against 3.2 MB, and the workloads' peak RSS 95-99 MB
//! against 67 MB.
//!
//! The purge delay stays mimalloc's (1 s). At 100 ms the workloads' peak RSS fell to 48-50 MB, but
//! memory a run had freed was returned and faulted back in by the next ones: 33.4k page faults
//! per 100 W3 runs against 26.3k (glibc: 25.9k), and 9% more CPU.
//!
//! It must be set before the first arena is reserved, at the process's first allocations, so it
//! is set from the executable's initialisers, right after mimalloc's own (priority 101), which
//! reads the environment.

use std::ffi::c_long;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_arena_eager_commit` in `mi_option_t` (mimalloc 3.x `include/mimalloc.h`; the
/// dependency is pinned, so the C source this index belongs to is too).
#[cfg(target_os = "linux")]
const MI_OPTION_ARENA_EAGER_COMMIT: i32 = 4;
#[cfg(target_os = "linux")]
const COMMIT_AS_USED: c_long = 0;
/// Overrides our value, as it overrides mimalloc's default.
#[cfg(target_os = "linux")]
const ARENA_EAGER_COMMIT_VARIABLE: &std::ffi::CStr = c"MIMALLOC_ARENA_EAGER_COMMIT";

unsafe extern "C" {
    #[cfg(target_os = "linux")]
    fn mi_option_set(option: i32, value: c_long);
    #[cfg(all(test, target_os = "linux"))]
    fn mi_option_get(option: i32) -> c_long;
    #[cfg(test)]
    fn mi_is_in_heap_region(p: *const std::ffi::c_void) -> bool;
}

/// Runs before `main` and before any Rust code of the process, from `.init_array`.
#[cfg(target_os = "linux")]
extern "C" fn commit_arenas_as_used() {
    // SAFETY: the environment is not written while the initialisers run (one thread);
    // `mi_option_set` sets a plain integer.
    unsafe {
        if libc::getenv(ARENA_EAGER_COMMIT_VARIABLE.as_ptr()).is_null() {
            mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, COMMIT_AS_USED);
        }
    }
}

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array.00102")]
static COMMIT_ARENAS_AS_USED: extern "C" fn() = commit_arenas_as_used;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_and_c_allocations_both_come_from_mimalloc() {
        let boxed = Box::new([0u8; 64]);
        assert!(unsafe { mi_is_in_heap_region(boxed.as_ptr().cast()) });
        // What the engine's C code does: `malloc` itself, not Rust's allocator.
        let from_c = unsafe { libc::malloc(64) };
        assert!(!from_c.is_null());
        assert!(
            unsafe { mi_is_in_heap_region(from_c) },
            "C `malloc` is not mimalloc's: the `override` feature did not take"
        );
        unsafe { libc::free(from_c) };
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn our_defaults_are_in_effect_unless_the_environment_sets_them() {
        let variable = ARENA_EAGER_COMMIT_VARIABLE.to_str().unwrap();
        let expected = match std::env::var(variable) {
            Ok(set) => set.parse().expect("a number"),
            Err(_) => COMMIT_AS_USED,
        };
        assert_eq!(
            unsafe { mi_option_get(MI_OPTION_ARENA_EAGER_COMMIT) },
            expected,
            "{variable}"
        );
    }
}
