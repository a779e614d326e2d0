//! The allocator of the measuring binaries (the `maskforge` command and the profiling
//! programs run on mimalloc; the library sets none), configured by [`configure`] for a
//! process that serves masks: no allocation may pause a decoding step for milliseconds.
//!
//! - mimalloc gives freed memory back to the system in batches (a *purge*, `madvise` over the
//!   pages freed in the last second), from inside whichever allocation comes next. After a
//!   grammar is dropped that batch is tens of megabytes: a decoding step that allocated at that
//!   moment paused for 3–8 ms in the kernel (session 25, `docs/benchmarks.md`). A serving
//!   process keeps reusing that memory, so the binaries keep it: [`keep_freed_memory`]. (The
//!   resident size of a whole MaskBench run grew by about 6 %.)
//! - Every 10,000 calls of its slow path, mimalloc collects the whole thread heap: every page,
//!   including the blocks other threads freed (the background thread that frees dropped
//!   grammars). On a heap of hundreds of megabytes that took 7.6 ms inside one mask. The
//!   binaries make it a hundred times rarer, the most the option allows: [`collect_rarely`].
//! - Rarer is not never: a whole MaskBench run still reaches one such collection near its end,
//!   and by then the blocks the background thread freed since the start have piled up on the
//!   heap's pages; walking them took 6–18 ms inside one mask (session 26). The runners hand the
//!   allocator that walk between files, outside any timing, as a server can between requests:
//!   [`collect_between_requests`]. The collection inside a mask then finds little to walk.

use libmimalloc_sys::{mi_collect, mi_option_get, mi_option_set, mi_option_t};
use std::os::raw::c_long;

/// `mi_option_purge_delay` and `mi_option_generic_collect`: their places in the option list
/// of the mimalloc (v3) that `libmimalloc-sys` 0.1.49 builds, which names no constant for them.
const PURGE_DELAY: mi_option_t = 15;
const GENERIC_COLLECT: mi_option_t = 34;
/// Their defaults there (milliseconds; slow-path calls): how each place is checked before it
/// is written.
const DEFAULT_PURGE_DELAY: c_long = 1000;
const DEFAULT_GENERIC_COLLECT: c_long = 10_000;
/// The most slow-path calls between collections mimalloc accepts.
const RAREST_GENERIC_COLLECT: c_long = 1_000_000;

/// Both settings of the module docs; returns whether each was made.
pub fn configure() -> (bool, bool) {
    (keep_freed_memory(), collect_rarely())
}

/// Tells mimalloc never to purge freed memory (see the module docs).
pub fn keep_freed_memory() -> bool {
    set_from_default(PURGE_DELAY, DEFAULT_PURGE_DELAY, -1)
}

/// Tells mimalloc to collect the thread heap as rarely as it allows (see the module docs).
pub fn collect_rarely() -> bool {
    set_from_default(GENERIC_COLLECT, DEFAULT_GENERIC_COLLECT, RAREST_GENERIC_COLLECT)
}

/// Takes in the blocks other threads freed on this thread's heap, now rather than in whichever
/// allocation next reaches mimalloc's periodic collection (see the module docs). For a
/// runner's idle moment: between files or requests, never inside a timed mask.
pub fn collect_between_requests() {
    // SAFETY: a collection of the calling thread's own heap, without force (no memory is
    // given back to the system); mimalloc allows it at any time.
    unsafe { mi_collect(false) }
}

/// Sets `option` to `value` when it holds `default`. Does nothing otherwise: another mimalloc,
/// or a `MIMALLOC_…` variable the user set. Returns whether it was set.
fn set_from_default(option: mi_option_t, default: c_long, value: c_long) -> bool {
    // SAFETY: reading and writing an option of the allocator by its number is thread-safe in
    // mimalloc, and a number it does not know is ignored.
    unsafe {
        if mi_option_get(option) != default {
            return false;
        }
        mi_option_set(option, value);
        mi_option_get(option) == value
    }
}

#[cfg(test)]
mod tests {
    /// The options' places hold their known defaults, and each is set once: a second call
    /// finds it set (no longer the default) and leaves it.
    #[test]
    fn each_option_is_set_once() {
        assert_eq!(super::configure(), (true, true), "mimalloc's options are not where they were");
        assert_eq!(super::configure(), (false, false));
        // SAFETY: as in `set_from_default`.
        let now = unsafe { (super::mi_option_get(super::PURGE_DELAY), super::mi_option_get(super::GENERIC_COLLECT)) };
        assert_eq!(now, (-1, super::RAREST_GENERIC_COLLECT));
    }
}
