//! The EBNF front-end and everything a grammar compiles through: any text is a grammar or a
//! typed error, never a panic or a hang.
#![no_main]
#[path = "common.rs"]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(grammar) = common::compiler().compile_grammar(text) {
            common::walk(&grammar, data);
        }
    }
});
