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

use maskforge::tokenizer::load_tokenizer;
use maskforge::{BatchGrammarMatcher, CompilerConfig, GrammarCompiler, GrammarMatcher, TokenBitmask};
use maskforge_bench::stats::Summary;

mod common;
#[path = "common/walks.rs"]
mod walks;
use common::arg;
use walks::{walks, Walk};

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
