//! The MaskBench ratchet: every file of `maskbench-dev` through the runner
//! (`maskforge_bench::maskbench::run_file`, spec-compliant options, `llama3`), compared with the
//! committed baseline `tests/data/maskbench_baseline.json` (file → outcome). The test fails
//! when any file's outcome gets worse; when some improve, it says so, and
//! `MASKFORGE_UPDATE_BASELINE=1 cargo test --release --test integration maskbench_ratchet`
//! rewrites the baseline (only when nothing got worse).
//!
//! Speed: masks are computed by the exact oracle (about 10 ms per step with llama3), so this
//! test checks tokens with `accept_token` and the end with `can_terminate`
//! ([`MaskBenchConfig::masks`] off). The verdicts are the same: masks agree with
//! `accept_token` by construction, which the matcher's mask-equality properties test. Files
//! run on all cores (the runner itself is single-threaded per file).

use std::collections::BTreeMap;
use std::time::Duration;

use maskforge::{CompilerConfig, GrammarCompiler};
use maskforge_bench::maskbench::{run_file, MaskBenchConfig, Outcome};
use rayon::prelude::*;

use crate::support::fixtures::{load, maskbench_files};

const BASELINE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/maskbench_baseline.json");

#[test]
fn maskbench_ratchet() {
    let (vocab, encoder) = load("llama3");
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let config = MaskBenchConfig { limit: Duration::from_secs(30), masks: false, ..Default::default() };
    let files = maskbench_files();
    let results: BTreeMap<String, Outcome> = files
        .par_iter()
        .map(|(name, file)| (name.clone(), run_file(&compiler, encoder, name, file, &config).outcome))
        .collect();
    let baseline: BTreeMap<String, Outcome> = match std::fs::read_to_string(BASELINE) {
        Ok(text) => serde_json::from_str(&text).expect("a valid baseline"),
        Err(_) => BTreeMap::new(),
    };
    let mut worse = Vec::new();
    let mut better = Vec::new();
    for (name, &now) in &results {
        match baseline.get(name) {
            Some(&before) if now > before => worse.push(format!("{name}: {} -> {}", before.name(), now.name())),
            Some(&before) if now < before => better.push(format!("{name}: {} -> {}", before.name(), now.name())),
            Some(_) => {}
            None => better.push(format!("{name}: new, {}", now.name())),
        }
    }
    let count = |o: Outcome| results.values().filter(|&&x| x == o).count();
    eprintln!(
        "maskbench-dev: {} files, {} passing, {} compile_error, {} timeout, {} validation_error, {} invalidation_error",
        results.len(),
        count(Outcome::Passing),
        count(Outcome::CompileError),
        count(Outcome::Timeout),
        count(Outcome::ValidationError),
        count(Outcome::InvalidationError)
    );
    assert!(worse.is_empty(), "{} files got worse than the baseline:\n{}", worse.len(), worse.join("\n"));
    if !better.is_empty() {
        if std::env::var_os("MASKFORGE_UPDATE_BASELINE").is_some() {
            let text = serde_json::to_string_pretty(&results).unwrap();
            std::fs::write(BASELINE, text + "\n").unwrap();
            eprintln!("baseline updated ({} files improved)", better.len());
        } else {
            eprintln!(
                "{} files improved; update the baseline with MASKFORGE_UPDATE_BASELINE=1:\n{}",
                better.len(),
                better.join("\n")
            );
        }
    }
}

#[test]
fn unsatisfiable_schema_verdict_depends_on_the_tests() {
    let (vocab, encoder) = load("llama3");
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let config = MaskBenchConfig { masks: false, ..Default::default() };
    let schema = serde_json::json!({"type": "object", "required": ["a"], "not": {"required": ["a"]}});
    let file = |valid: bool| serde_json::json!({"schema": schema, "tests": [{"data": {"a": 1}, "valid": valid}]});
    assert_eq!(run_file(&compiler, encoder, "u", &file(false), &config).outcome, Outcome::Passing);
    assert_eq!(run_file(&compiler, encoder, "u", &file(true), &config).outcome, Outcome::ValidationError);
    let malformed = serde_json::json!({"schema": {"type": 3}, "tests": []});
    assert_eq!(run_file(&compiler, encoder, "m", &malformed, &config).outcome, Outcome::CompileError);
}
