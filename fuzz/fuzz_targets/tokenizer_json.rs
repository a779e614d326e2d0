//! Loading a tokenizer.json: truncated, inconsistent or hostile files are typed errors.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = maskforge::Vocabulary::from_tokenizer_json(data, None);
});
