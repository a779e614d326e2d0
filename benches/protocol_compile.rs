//! Compile time of model protocols with per-request tool sets (XGrammar-2 §4.2 setting): for
//! each protocol and N in 5 / 20 / 50, compile R requests whose N tools are consecutive windows
//! of the tool corpus (a different set each time: no cache reuse between requests), and print
//! the median and p90 of: the front-end (template expansion and lowering to the grammar IR),
//! the whole `compile_protocol` (front-end + automata, JIT cache mode), and the first mask.
//!
//! `cargo bench --bench protocol_compile -- [--requests 20] [--tools fixtures/corpus/tools/tools.jsonl]`

use std::time::Instant;

use maskforge::structural_tag_to_grammar;
use maskforge::tokenizer::load_tokenizer;
use maskforge::{protocol_structural_tag, ProtocolOptions, ToolChoice};
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, TokenBitmask};
use maskforge_bench::stats::Summary;
use serde_json::Value;

mod common;
use common::arg;

fn main() {
    let requests: usize = arg("--requests", "20").parse().expect("--requests N");
    let default_tools = maskforge::tokenizer::fixtures_dir().join("corpus/tools/tools.jsonl");
    let path = arg("--tools", &default_tools.to_string_lossy());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e} (run scripts/fetch-corpus)"));
    let pool: Vec<Value> =
        text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect();
    println!("tool pool: {} tools from {path}; {requests} requests per row", pool.len());
    println!(
        "{:<12} {:>3} | {:>22} | {:>22} | {:>22} | failed",
        "protocol", "N", "front-end ms p50/p90", "compile ms p50/p90", "first mask ms p50/p90"
    );
    for (protocol, tokenizer) in
        [("harmony", "gptoss"), ("llama", "llama3"), ("qwen", "qwen3"), ("qwen_coder", "qwen3")]
    {
        let (vocab, _) = load_tokenizer(tokenizer).unwrap_or_else(|e| panic!("{e}"));
        let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
        let options = ProtocolOptions { reasoning: true, parallel_tool_calls: true };
        for n in [5usize, 20, 50] {
            let (mut front, mut whole, mut first) = (Vec::new(), Vec::new(), Vec::new());
            let mut failed = 0;
            for r in 0..requests {
                let start = (r * n * 7) % pool.len();
                // The pool repeats some names (one tool per name in a request).
                let mut tools: Vec<Value> = Vec::with_capacity(n);
                let mut names = std::collections::HashSet::new();
                for i in 0..pool.len() {
                    let t = &pool[(start + i) % pool.len()];
                    if tools.len() < n && names.insert(t["function"]["name"].as_str().unwrap_or_default().to_string()) {
                        tools.push(t.clone());
                    }
                }
                let t = Instant::now();
                let lowered = protocol_structural_tag(protocol, &tools, &ToolChoice::Auto, &options)
                    .map_err(|e| e.to_string())
                    .and_then(|tag| structural_tag_to_grammar(&tag, &vocab).map_err(|e| e.to_string()));
                if let Err(e) = lowered {
                    if failed == 0 {
                        eprintln!("{protocol} N={n}: {e}");
                    }
                    failed += 1;
                    continue;
                }
                front.push(t.elapsed().as_secs_f64() * 1e3);
                let t = Instant::now();
                let Ok(g) = compiler.compile_protocol(protocol, &tools, &ToolChoice::Auto, &options) else {
                    failed += 1;
                    continue;
                };
                whole.push(t.elapsed().as_secs_f64() * 1e3);
                let t = Instant::now();
                let mut m = GrammarMatcher::new(&g);
                let mut mask = TokenBitmask::new(vocab.vocab_size());
                m.fill_next_token_bitmask(mask.as_words_mut());
                first.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let cell = |v: &[f64]| {
                if v.is_empty() {
                    "-".to_string()
                } else {
                    let s = Summary::of(v);
                    format!("{:.2} / {:.2}", s.p50, s.p90)
                }
            };
            println!(
                "{protocol:<12} {n:>3} | {:>22} | {:>22} | {:>22} | {failed}",
                cell(&front),
                cell(&whole),
                cell(&first)
            );
        }
    }
}
