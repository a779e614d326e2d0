//! The ECMA-262 regex front-end: any pattern compiles or is a typed error.
#![no_main]
#[path = "common.rs"]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(pattern) = std::str::from_utf8(data) {
        if let Ok(grammar) = common::compiler().compile_regex(pattern) {
            common::walk(&grammar, data);
        }
    }
});
