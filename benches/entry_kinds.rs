//! The cost of building cache entries, per kind of state: a small grammar per kind, compiled
//! just in time by a fresh compiler (a cold pool), a matcher fed a prefix that reaches the
//! kind's states, then one timed mask fill: the entries of that step are built then (plus the
//! mask itself, microseconds). One line per kind, the median and the spread over the runs, so a
//! regression shows which kind it is in.
//!
//! `cargo bench --bench entry_kinds -- [--tokenizer llama3] [--runs 9]`

use std::time::Instant;

use maskforge::tokenizer::load_tokenizer;
use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, PropertyOrder};
use maskforge::{TokenBitmask, Vocabulary};
use maskforge_bench::stats::Summary;

mod common;
use common::arg;

/// A kind of entry: how to compile its grammar, and the text that reaches its states.
struct Kind {
    name: &'static str,
    compile: fn(&GrammarCompiler) -> CompiledGrammar,
    prefix: &'static str,
}

const KINDS: [Kind; 5] = [
    Kind {
        name: "string_body",
        compile: |c| schema(c, r#"{"type": "string"}"#, PropertyOrder::default()),
        prefix: "\"",
    },
    Kind { name: "number", compile: |c| schema(c, r#"{"type": "number"}"#, PropertyOrder::default()), prefix: "1" },
    Kind { name: "object_keys", compile: |c| schema(c, OBJECT, PropertyOrder::default()), prefix: "{\"" },
    Kind {
        name: "free_text",
        compile: |c| c.compile_grammar(r#"root ::= "<answer>" [^<]* "</answer>""#).unwrap(),
        prefix: "<answer>",
    },
    Kind { name: "any_order_members", compile: |c| schema(c, OBJECT, PropertyOrder::Any), prefix: "{\"" },
];

/// An object of a few optional properties of several types, keys sharing prefixes.
const OBJECT: &str = r#"{"type": "object", "properties": {
    "name": {"type": "string"}, "nickname": {"type": "string"}, "age": {"type": "integer"},
    "address": {"type": "object", "properties": {"city": {"type": "string"}}},
    "tags": {"type": "array", "items": {"type": "string"}}, "active": {"type": "boolean"}}}"#;

fn schema(compiler: &GrammarCompiler, schema: &str, order: PropertyOrder) -> CompiledGrammar {
    let options = JsonSchemaOptions { property_order: order, ..JsonSchemaOptions::default() };
    compiler.compile_json_schema_str(schema, &options).unwrap()
}

fn main() {
    let tokenizer = arg("--tokenizer", "llama3");
    let runs: usize = arg("--runs", "9").parse().expect("--runs takes a number");
    let (vocab, _) = load_tokenizer(&tokenizer).unwrap_or_else(|e| panic!("{e}"));
    for kind in &KINDS {
        let (us, entries): (Vec<f64>, Vec<usize>) = (0..runs).map(|_| time_first_fill(&vocab, kind)).unzip();
        let s = Summary::of(&us);
        let min = us.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "entry_kinds tokenizer={tokenizer} kind={} runs={runs} entries={} | build_us: p50={:.0} min={min:.0} max={:.0}",
            kind.name, entries[0], s.p50, s.max
        );
    }
}

/// The time of the fill that builds the entries of `kind` (cold: a new compiler, so a new
/// pool), and how many entries it built.
fn time_first_fill(vocab: &Vocabulary, kind: &Kind) -> (f64, usize) {
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let grammar = (kind.compile)(&compiler);
    let mut m = GrammarMatcher::new(&grammar);
    assert!(m.accept_string(kind.prefix), "{}: the prefix {:?} is rejected", kind.name, kind.prefix);
    let before = grammar.mask_cache_stats().entries;
    let mut mask = TokenBitmask::new(vocab.vocab_size());
    let t = Instant::now();
    m.fill_next_token_bitmask(mask.as_words_mut());
    let us = t.elapsed().as_secs_f64() * 1e6;
    assert!(mask.count_allowed() > 0, "{}: nothing allowed after {:?}", kind.name, kind.prefix);
    (us, grammar.mask_cache_stats().entries - before)
}
