//! Batch mask fill (`BatchGrammarMatcher`) at several thread counts: N matchers, each over its
//! own MaskBench schema (or all over one with `--same-grammar`), walking a valid instance of
//! it; per decoding step, the time to fill all N rows of the batch bitmask.
//!
//! `cargo bench --bench batch_fill -- [--tokenizer llama3] [--matchers 64] [--steps 40] [--threads 1,2] [--same-grammar]`
//!
//! A first pass on fresh matchers builds the JIT cache entries the walks need (the cost of new
//! grammars, measured elsewhere); the timed passes then run the same walks on fresh matchers,
//! once per thread count, so that every count sees the same warm caches.

use std::time::Instant;

use maskforge::tokenizer::{fixtures_dir, load_tokenizer};
use maskforge::{
    BatchGrammarMatcher, CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions,
};
use maskforge::{TextEncoder, TokenBitmask};
use maskforge_bench::stats::Summary;

mod common;
use common::arg;

/// A compiled schema and the tokens of one of its valid instances.
struct Walk {
    grammar: CompiledGrammar,
    tokens: Vec<u32>,
}

fn main() {
    let tokenizer = arg("--tokenizer", "llama3");
    let n: usize = arg("--matchers", "64").parse().expect("--matchers takes a number");
    let steps: usize = arg("--steps", "40").parse().expect("--steps takes a number");
    let threads: Vec<usize> =
        arg("--threads", "1,2").split(',').map(|t| t.parse().expect("--threads takes numbers")).collect();
    let same = std::env::args().any(|a| a == "--same-grammar");
    let (vocab, encoder) = load_tokenizer(&tokenizer).unwrap_or_else(|e| panic!("{e}"));
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let walks = walks(&compiler, &encoder, if same { 1 } else { n }, steps);
    let walks: Vec<&Walk> = (0..n).map(|i| &walks[i % walks.len()]).collect();
    let mut bitmask = vec![0u32; n * TokenBitmask::new(vocab.vocab_size()).as_words().len()];
    run(&BatchGrammarMatcher::new(1).unwrap(), &walks, steps, &mut bitmask); // builds the cache entries
    for &t in &threads {
        let batch = BatchGrammarMatcher::new(t).expect("a thread pool");
        let us = run(&batch, &walks, steps, &mut bitmask);
        let s = Summary::of(&us);
        println!(
            "batch_fill tokenizer={tokenizer} matchers={n} grammars={} threads={t} steps={} | step_us: avg={:.0} p50={:.0} p90={:.0} max={:.0} | per matcher p50={:.2}",
            if same { 1 } else { n },
            us.len(),
            s.avg,
            s.p50,
            s.p90,
            s.max,
            s.p50 / n as f64
        );
    }
}

/// The batch-fill time of every step of the walks, on fresh matchers.
fn run(batch: &BatchGrammarMatcher, walks: &[&Walk], steps: usize, bitmask: &mut [u32]) -> Vec<f64> {
    let mut matchers: Vec<GrammarMatcher> = walks.iter().map(|w| GrammarMatcher::new(&w.grammar)).collect();
    let mut us = Vec::with_capacity(steps);
    for step in 0..steps {
        let t = Instant::now();
        batch.batch_fill_next_token_bitmask(&mut matchers, bitmask, None).expect("a valid batch");
        us.push(t.elapsed().as_secs_f64() * 1e6);
        let tokens: Vec<u32> = walks.iter().map(|w| w.tokens[step]).collect();
        let accepted = batch.batch_accept_token(&mut matchers, &tokens).expect("one token per matcher");
        assert!(accepted.iter().all(|&a| a), "a valid instance's token was rejected at step {step}");
    }
    us
}

/// Up to `n` MaskBench schemas (in file order) with a valid instance of at least `steps` tokens.
fn walks(compiler: &GrammarCompiler, encoder: &TextEncoder, n: usize, steps: usize) -> Vec<Walk> {
    let dir = fixtures_dir().join("corpus/maskbench-dev");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fetch-corpus)", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let options = JsonSchemaOptions::spec_compliant();
    let mut out = Vec::new();
    for path in files {
        let Ok(file) = serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&path).unwrap()) else {
            continue;
        };
        let instance = file["tests"].as_array().and_then(|t| t.iter().find(|t| t["valid"] == true));
        let Some(instance) = instance else { continue };
        let Ok(tokens) = encoder.encode_for_matching(&serde_json::to_string(&instance["data"]).unwrap()) else {
            continue;
        };
        if tokens.len() < steps {
            continue;
        }
        let Ok(grammar) = compiler.compile_json_schema(&file["schema"], &options) else { continue };
        out.push(Walk { grammar, tokens });
        if out.len() == n {
            break;
        }
    }
    assert_eq!(out.len(), n, "not enough MaskBench schemas with an instance of {steps} tokens");
    out
}
