//! One case per grammar shape (deep nesting, long strings, large enums, numbers): compile time,
//! ahead-of-time cache build time and bytes, and per-step mask time on an input the grammar
//! accepts (the expected answer: every token allowed, and the input complete at the end).
//!
//! `cargo bench --bench shapes -- [--tokenizer llama3]`

use std::time::Instant;

use maskforge::tokenizer::load_tokenizer;
use maskforge::MaskCacheMode;
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, TokenBitmask, JSON_GRAMMAR_EBNF};
use maskforge_bench::stats::Summary;

struct Case {
    name: &'static str,
    grammar: String,
    input: String,
}

fn cases() -> Vec<Case> {
    let enum_words: Vec<String> =
        (0..1000).map(|i| format!("\"option_{i:04}_{}\"", ["red", "green", "blue"][i % 3])).collect();
    vec![
        Case {
            name: "deep_arrays_100",
            grammar: JSON_GRAMMAR_EBNF.into(),
            input: "[".repeat(100) + "1" + &"]".repeat(100),
        },
        Case {
            name: "deep_objects_50",
            grammar: JSON_GRAMMAR_EBNF.into(),
            input: "{\"a\": ".repeat(50) + "null" + &"}".repeat(50),
        },
        Case {
            name: "long_string_4000",
            grammar: r#"root ::= "\"" [^"\\]{0,5000} "\"""#.into(),
            input: format!("\"{}\"", "lorem ipsum dolor sit amet, ".repeat(143)),
        },
        Case {
            name: "json_long_string_4000",
            grammar: JSON_GRAMMAR_EBNF.into(),
            input: format!("{{\"text\": \"{}\"}}", "lorem ipsum dolor sit amet, ".repeat(143)),
        },
        Case {
            name: "enum_1000",
            grammar: format!("root ::= {}", enum_words.join(" | ")),
            input: enum_words[777].trim_matches('"').to_string(),
        },
        Case {
            name: "numbers_500",
            grammar: JSON_GRAMMAR_EBNF.into(),
            input: format!(
                "[{}]",
                (0..500).map(|i| format!("{}", (i as f64) * 1.37 - 250.0)).collect::<Vec<_>>().join(", ")
            ),
        },
    ]
}

mod common;
use common::arg;

fn main() {
    let tokenizer = arg("--tokenizer", "llama3");
    let (vocab, encoder) = load_tokenizer(&tokenizer).unwrap_or_else(|e| panic!("{e}"));
    for case in cases() {
        let jit = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
        let t = Instant::now();
        jit.compile_grammar(&case.grammar).unwrap();
        let compile_us = t.elapsed().as_secs_f64() * 1e6;
        let aot = GrammarCompiler::new(vocab.clone(), CompilerConfig::default().cache_mode(MaskCacheMode::Aot));
        let t = Instant::now();
        let grammar = aot.compile_grammar(&case.grammar).unwrap();
        let aot_ms = t.elapsed().as_secs_f64() * 1e3;
        let ids = encoder.encode_for_matching(&case.input).unwrap();
        let entries_before = grammar.mask_cache_stats().entries;
        let mut m = GrammarMatcher::new(&grammar);
        let mut mask = TokenBitmask::new(vocab.vocab_size());
        let mut times = Vec::with_capacity(ids.len());
        for &id in &ids {
            let t = Instant::now();
            m.fill_next_token_bitmask(mask.as_words_mut());
            times.push(t.elapsed().as_secs_f64() * 1e6);
            assert!(mask.get(id as usize) && m.accept_token(id), "{}: token rejected", case.name);
        }
        assert!(m.can_terminate(), "{}: input incomplete", case.name);
        let s = Summary::of(&times);
        let stats = grammar.mask_cache_stats();
        println!(
            "{:24} tokens={:5} compile_us={:8.0} aot_ms={:7.1} entries={:4}+{} cache_kb={:6.0} | mask_us avg={:6.1} p50={:6.1} p99={:7.1} max={:7.1}",
            case.name,
            ids.len(),
            compile_us,
            aot_ms,
            entries_before,
            stats.entries - entries_before,
            stats.bytes as f64 / 1024.0,
            s.avg,
            s.p50,
            s.p99,
            s.max
        );
    }
}
