//! JSON Schema compile. Inputs that are not JSON are parsed as errors quickly; the seed corpus
//! (MaskBench schemas) keeps the fuzzer among schema-shaped values, and libFuzzer's mutations
//! of them are the structure-aware part.
#![no_main]
#[path = "common.rs"]
mod common;

use maskforge::JsonSchemaOptions;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // The first byte picks the options, so both the default and the spec-compliant lowering run.
    let options = if data.first().is_some_and(|b| b & 1 == 1) {
        JsonSchemaOptions::spec_compliant()
    } else {
        JsonSchemaOptions::default()
    };
    if let Ok(grammar) = common::compiler().compile_json_schema_str(text, &options) {
        common::walk(&grammar, data);
    }
});
