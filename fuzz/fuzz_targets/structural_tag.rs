//! Structural tags (XGrammar's JSON format, the legacy form, protocol tools).
#![no_main]
#[path = "common.rs"]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(grammar) = common::compiler().compile_structural_tag_str(text) {
            common::walk(&grammar, data);
        }
    }
});
