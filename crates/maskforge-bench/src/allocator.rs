//! The allocator of the measuring binaries (the `maskforge` command and the profiling
//! programs run on mimalloc; the library sets none).
//!
//! mimalloc gives freed memory back to the system in batches (a *purge*, `madvise` over the
//! pages freed in the last second), from inside whichever allocation comes next. After a
//! grammar is dropped that batch is tens of megabytes: a decoding step that allocates at that
//! moment paused for 3–8 ms in the kernel (session 25, `docs/benchmarks.md`). A serving
//! process keeps reusing that memory, so the binaries keep it instead:
//! [`keep_freed_memory`]. (The resident size of a whole MaskBench run grew by about 6 %.)

use libmimalloc_sys::{mi_option_get, mi_option_set, mi_option_t};

/// `mi_option_purge_delay`: its place in the option list of the mimalloc (v3) that
/// `libmimalloc-sys` 0.1.49 builds, which names no constant for it.
const PURGE_DELAY: mi_option_t = 15;
/// Its default there, in milliseconds: how the place is checked before it is written.
const DEFAULT_PURGE_DELAY: std::os::raw::c_long = 1000;

/// Tells mimalloc never to purge freed memory (see the module docs). Does nothing when the
/// option does not hold its known default: another mimalloc, or a `MIMALLOC_PURGE_DELAY` the
/// user set. Returns whether it was set.
pub fn keep_freed_memory() -> bool {
    // SAFETY: reading and writing an option of the allocator by its number is thread-safe in
    // mimalloc, and a number it does not know is ignored.
    unsafe {
        if mi_option_get(PURGE_DELAY) != DEFAULT_PURGE_DELAY {
            return false;
        }
        mi_option_set(PURGE_DELAY, -1);
        mi_option_get(PURGE_DELAY) == -1
    }
}

#[cfg(test)]
mod tests {
    /// The option's place holds the purge delay's known default, and is set once: a second
    /// call finds it set (no longer the default) and leaves it.
    #[test]
    fn purging_is_turned_off_once() {
        assert!(super::keep_freed_memory(), "mimalloc's purge delay is not where it was");
        assert!(!super::keep_freed_memory());
        // SAFETY: as in `keep_freed_memory`.
        assert_eq!(unsafe { super::mi_option_get(super::PURGE_DELAY) }, -1);
    }
}
