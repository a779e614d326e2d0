//! Compile time and memory must not grow with repetition bounds (issue 5, item 5): each case
//! compiles the same structure with small bounds (≤ 10) and with large ones, and prints both
//! and their ratio (the expected answer: ratio ≤ 2 for time and memory).
//!
//! `cargo bench --bench repetition_bounds -- [--tokenizer llama3]`

use std::time::Instant;

use maskforge::tokenizer::load_tokenizer;
use maskforge::JsonSchemaOptions;
use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler};
use serde_json::json;

mod common;
use common::arg;

/// Median compile time in microseconds over `runs`, and the compiled grammar's memory.
fn measure(runs: usize, mut compile: impl FnMut() -> CompiledGrammar) -> (f64, usize) {
    let mut times = Vec::with_capacity(runs);
    let mut bytes = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let g = compile();
        times.push(t.elapsed().as_secs_f64() * 1e6);
        bytes = g.memory_usage();
    }
    times.sort_by(|a, b| a.total_cmp(b));
    (times[runs / 2], bytes)
}

fn main() {
    let tokenizer = arg("--tokenizer", "llama3");
    let (vocab, _) = load_tokenizer(&tokenizer).unwrap_or_else(|e| panic!("{e}"));
    // The whole-grammar cache would turn the repeated compiles into lookups: off.
    let compiler = GrammarCompiler::new(vocab, CompilerConfig::default().grammar_cache_len(0));
    let options = JsonSchemaOptions::spec_compliant();
    type Case<'a> = (&'a str, Box<dyn Fn(u64, u64) -> CompiledGrammar + 'a>, (u64, u64), (u64, u64));
    let cases: Vec<Case> = vec![
        (
            "ebnf x{0,N}",
            Box::new(|_, hi| compiler.compile_grammar(&format!("root ::= \"x\"{{0,{hi}}}")).unwrap()),
            (0, 10),
            (0, 100_000),
        ),
        (
            "string maxLength N",
            Box::new(|_, hi| {
                compiler.compile_json_schema(&json!({"type": "string", "maxLength": hi}), &options).unwrap()
            }),
            (0, 10),
            (0, 100_000),
        ),
        (
            "array minItems/maxItems",
            Box::new(|lo, hi| {
                let schema = json!({"type": "array", "items": {"type": "integer"}, "minItems": lo, "maxItems": hi});
                compiler.compile_json_schema(&schema, &options).unwrap()
            }),
            (1, 10),
            (1000, 5000),
        ),
    ];
    for (name, compile, small, large) in &cases {
        let (t_small, m_small) = measure(21, || compile(small.0, small.1));
        let (t_large, m_large) = measure(21, || compile(large.0, large.1));
        println!(
            "{name:26} small {:?}: {t_small:7.1} us {m_small:8} B | large {:?}: {t_large:7.1} us {m_large:8} B | ratio time {:.2} memory {:.2}",
            small,
            large,
            t_large / t_small,
            m_large as f64 / m_small as f64
        );
    }
}
