//! A warm mask computation does not allocate: every buffer the hot path needs belongs to the
//! matcher and is reused (a counting global allocator, per thread, checks it).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use maskforge::MaskCacheMode;
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, TokenBitmask};

use crate::support::fixtures::{encode, vocab};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: defers to the system allocator; the counter is a const-initialized thread-local
// `Cell`, which never allocates.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

#[test]
fn warm_mask_filling_does_not_allocate() {
    let v = vocab("llama3").clone();
    let grammar = GrammarCompiler::new(v, CompilerConfig::default().cache_mode(MaskCacheMode::Aot))
        .compile_builtin_json_grammar()
        .unwrap();
    let doc = r#"{"name": "Zoë", "tags": ["a", "b"], "n": -1.5e3, "ok": true, "o": {"x": null}}"#;
    let mut m = GrammarMatcher::new(&grammar);
    let mut mask = TokenBitmask::new(grammar.vocabulary().vocab_size());
    let mut steps = 0;
    // The counter sees allocations at all.
    let before = allocations();
    let probe = std::hint::black_box(vec![0u8; 64]);
    assert!(allocations() > before && probe.len() == 64);
    for id in encode("llama3", doc) {
        m.fill_next_token_bitmask(mask.as_words_mut()); // warm: buffers grow to this state's needs
        let before = allocations();
        m.fill_next_token_bitmask(mask.as_words_mut());
        assert_eq!(allocations() - before, 0, "the mask at step {steps} allocated");
        assert!(m.accept_token(id));
        steps += 1;
    }
    assert!(steps > 20);
}
