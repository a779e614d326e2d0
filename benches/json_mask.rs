//! Per-step mask time on the builtin JSON grammar with a real tokenizer, over real documents
//! (the `data` of valid MaskBench instances, compact layout).
//!
//! `cargo bench --bench json_mask -- [--tokenizer llama3] [--docs 20] [--mode jit|aot|K]
//! [--parser auto|earley|pda]`
//! Prints compile time and mask-time percentiles in microseconds (`avg99`: the mean without the
//! slowest 1 %, robust to preemption on a loaded machine), the mean `accept_token` time,
//! plus the number of tokens checked (the expected answer: every document must be accepted) and
//! how many fills took their checks' verdicts from the grammar's shared memo (each document
//! runs a new matcher).

use std::time::Instant;

use maskforge::tokenizer::load_tokenizer;
use maskforge::MaskCacheMode;
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, Parser, TokenBitmask};
use maskforge_bench::stats::Summary;

mod common;
use common::arg;

fn main() {
    let tokenizer = arg("--tokenizer", "llama3");
    let n_docs: usize = arg("--docs", "20").parse().expect("--docs takes a number");
    let mode = match arg("--mode", "jit").as_str() {
        "jit" => MaskCacheMode::Jit,
        "aot" => MaskCacheMode::Aot,
        k => MaskCacheMode::Precompute(k.parse().expect("--mode takes jit, aot or a number")),
    };
    let parser: Parser = arg("--parser", "auto").parse().unwrap_or_else(|e| panic!("--parser: {e}"));
    let (vocab, encoder) = load_tokenizer(&tokenizer).unwrap_or_else(|e| panic!("{e}"));
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default().cache_mode(mode).parser(parser));
    let t = Instant::now();
    let grammar = compiler.compile_builtin_json_grammar().unwrap();
    let compile_us = t.elapsed().as_secs_f64() * 1e6;

    let dir = maskforge::tokenizer::fixtures_dir().join("corpus/maskbench-dev");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fetch-corpus)", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut docs = Vec::new();
    for path in names {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if let Some(t) = v["tests"].as_array().and_then(|t| t.iter().find(|t| t["valid"] == true)) {
            docs.push(t["data"].to_string());
        }
        if docs.len() == n_docs {
            break;
        }
    }
    let mut mask = TokenBitmask::new(vocab.vocab_size());
    let mut times = Vec::new();
    let mut accept_us = 0.0;
    let mut tokens = 0;
    for doc in &docs {
        let ids = encoder.encode_for_matching(doc).unwrap();
        let mut m = GrammarMatcher::new(&grammar);
        for &id in &ids {
            let t = Instant::now();
            m.fill_next_token_bitmask(mask.as_words_mut());
            times.push(t.elapsed().as_secs_f64() * 1e6);
            assert!(mask.get(id as usize), "document rejected: {doc}");
            let t = Instant::now();
            assert!(m.accept_token(id), "document rejected: {doc}");
            accept_us += t.elapsed().as_secs_f64() * 1e6;
            tokens += 1;
        }
        assert!(m.can_terminate());
    }
    let s = Summary::of(&times);
    // The mean without the slowest 1 % of steps: on a loaded machine a preempted step costs a
    // scheduler slice (~20 ms) and dominates the plain mean.
    let trimmed = {
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        sorted.truncate(sorted.len() - sorted.len() / 100);
        sorted.iter().sum::<f64>() / sorted.len().max(1) as f64
    };
    let stats = grammar.mask_cache_stats();
    println!(
        "json_mask tokenizer={tokenizer} mode={mode:?} parser={:?} docs={} tokens={tokens} compile_us={compile_us:.0} cache: entries={} bytes={} uncertain={} shared_verdict_hits={} | mask_us: avg={:.1} avg99={:.2} p50={:.1} p90={:.1} p99={:.1} max={:.1} | accept_us: avg={:.2}",
        grammar.parser(),
        docs.len(),
        stats.entries,
        stats.bytes,
        stats.uncertain_tokens,
        stats.shared_verdict_hits,
        s.avg,
        trimmed,
        s.p50,
        s.p90,
        s.p99,
        s.max,
        accept_us / tokens as f64
    );
}
