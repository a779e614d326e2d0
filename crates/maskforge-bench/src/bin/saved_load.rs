//! Loading a saved grammar vs compiling it, over MaskBench JSON Schema files (issue 15's target:
//! loading at least 10x faster than compiling, median over `maskbench-dev`).
//!
//! `cargo run --release -p maskforge-bench --bin saved_load -- FILE_OR_DIR... [--tokenizer NAME]`
//!
//! Per file (single thread): the compile time (JIT cache mode, one compiler for all files with
//! its rule-automaton and schema-fragment caches, as a serving process has; its whole-grammar
//! cache off), then one first mask, then `serialize` (size and time) and `deserialize` (the
//! median of 3 loads, each of a fresh copy). Prints the percentiles of each and of the
//! per-file ratio compile / load.

// The same allocator as the `maskforge` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Instant;

use maskforge::tokenizer::load_tokenizer;
use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, TokenBitmask};
use maskforge_bench::cli;
use maskforge_bench::stats::Summary;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let tokenizer = cli::take_flag(&mut args, "--tokenizer").unwrap_or_else(|| "llama3".into());
    let files = cli::json_files(&args)?;
    let (vocab, _) = load_tokenizer(&tokenizer)?;
    vocab.fingerprint(); // computed once per vocabulary, not per load
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default().grammar_cache_len(0));
    let options = JsonSchemaOptions::default();
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let (mut compile, mut save, mut load, mut size, mut ratio) = (vec![], vec![], vec![], vec![], vec![]);
    for path in &files {
        let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        let schema = value.get("schema").cloned().unwrap_or(value);
        let t = Instant::now();
        let Ok(grammar) = compiler.compile_json_schema(&schema, &options) else { continue };
        let compile_ms = ms(t);
        let mut mask = TokenBitmask::new(vocab.vocab_size());
        GrammarMatcher::new(&grammar).fill_next_token_bitmask(mask.as_words_mut());
        let t = Instant::now();
        let bytes = grammar.serialize();
        save.push(ms(t));
        let mut loads: Vec<f64> = (0..3)
            .map(|_| {
                let copy = bytes.clone();
                let t = Instant::now();
                let loaded = CompiledGrammar::deserialize(&copy, &vocab).expect("a saved grammar loads");
                let elapsed = ms(t);
                drop(loaded);
                elapsed
            })
            .collect();
        loads.sort_by(f64::total_cmp);
        compile.push(compile_ms);
        load.push(loads[1]);
        size.push(bytes.len() as f64 / 1024.0);
        ratio.push(compile_ms / loads[1]);
    }
    let line = |name: &str, s: Summary| {
        println!("{name:<16} p50 {:>9.3}  p90 {:>9.3}  p99 {:>9.3}  max {:>9.3}", s.p50, s.p90, s.p99, s.max)
    };
    println!("{} files, tokenizer {tokenizer}", compile.len());
    line("compile ms", Summary::of(&compile));
    line("save ms", Summary::of(&save));
    line("save KiB", Summary::of(&size));
    line("load ms", Summary::of(&load));
    line("compile/load", Summary::of(&ratio));
    let (c, l): (f64, f64) = (compile.iter().sum(), load.iter().sum());
    println!("totals: compile {c:.0} ms, load {l:.0} ms ({:.1}x)", c / l);
    Ok(())
}
