//! The matcher against the oracle: a builtin JSON grammar driven by a stream of operations
//! (accept a token id, in range or not; roll back; fill and compare with the exact mask).
#![no_main]
#[path = "common.rs"]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    static GRAMMAR: std::sync::OnceLock<maskforge::CompiledGrammar> = std::sync::OnceLock::new();
    let grammar = GRAMMAR.get_or_init(|| common::compiler().compile_builtin_json_grammar().expect("builtin JSON"));
    common::walk(grammar, data);
});
