//! Where the time to first mask goes, per phase, for JSON Schema files (single thread):
//! front-end (schema → grammar IR), automata (`fsm::build_grammar_fsm`), cache setup
//! (`MaskCache::new`: follow sets, certain contexts) and the first mask (its JIT entries).
//!
//! `cargo run --release -p maskforge-bench --bin ttfm_phases -- FILE_OR_DIR... [--tokenizer NAME] [--top N]`
//!
//! Prints one line per file, slowest first, and the totals per phase.

// The same allocator as the `maskforge` binary, so phase times add up to its TTFM.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use maskforge_bench::cli;

use std::time::Instant;

use maskforge::cache::MaskCache;
use maskforge::fsm::{build_grammar_fsm, FsmLimits};
use maskforge::tokenizer::load_tokenizer;
use maskforge::{json_schema_to_grammar, JsonSchemaOptions};
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, TokenBitmask};

/// (file, front-end, automata, cache setup, first mask in ms, states, entries built)
type Row = (String, f64, f64, f64, f64, usize, usize);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut take = |flag: &str| cli::take_flag(&mut args, flag);
    let tokenizer = take("--tokenizer").unwrap_or_else(|| "llama3".into());
    let top: usize = take("--top").map_or(Ok(20), |s| s.parse())?;
    let files = cli::json_files(&args)?;
    let (vocab, _) = load_tokenizer(&tokenizer)?;
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let options = JsonSchemaOptions::spec_compliant();
    let limits = FsmLimits::default();
    let mut rows: Vec<Row> = Vec::new();
    for path in &files {
        let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        let schema = value.get("schema").cloned().unwrap_or(value);
        let t = Instant::now();
        let Ok((grammar, _)) = json_schema_to_grammar(&schema, &options) else { continue };
        let front = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let fsm = build_grammar_fsm(&grammar, &limits)?;
        let build = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let cache = MaskCache::new(&fsm, None);
        let setup = t.elapsed().as_secs_f64() * 1e3;
        drop(cache);
        let states = fsm.state_len();
        // The first mask on a fresh compile (its automata are rebuilt, not timed here).
        let compiled = compiler.compile(grammar)?;
        let mut m = GrammarMatcher::new(&compiled);
        let mut mask = TokenBitmask::new(vocab.vocab_size());
        let t = Instant::now();
        m.fill_next_token_bitmask(mask.as_words_mut());
        let first = t.elapsed().as_secs_f64() * 1e3;
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        rows.push((name, front, build, setup, first, states, compiled.mask_cache_stats().entries));
    }
    rows.sort_by(|a, b| (b.1 + b.2 + b.3 + b.4).total_cmp(&(a.1 + a.2 + a.3 + a.4)));
    println!(
        "{:<50} {:>9} {:>9} {:>9} {:>9} {:>8} {:>4}",
        "file", "front ms", "fsm ms", "setup ms", "mask ms", "states", "ent"
    );
    for r in rows.iter().take(top) {
        println!("{:<50} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>8} {:>4}", r.0, r.1, r.2, r.3, r.4, r.5, r.6);
    }
    let sum = |f: fn(&Row) -> f64| rows.iter().map(f).sum::<f64>();
    println!(
        "{} files: front {:.0} ms, fsm {:.0} ms, setup {:.0} ms, first mask {:.0} ms",
        rows.len(),
        sum(|r| r.1),
        sum(|r| r.2),
        sum(|r| r.3),
        sum(|r| r.4)
    );
    let mut totals: Vec<f64> = rows.iter().map(|r| r.1 + r.2 + r.3 + r.4).collect();
    totals.sort_by(f64::total_cmp);
    let pct =
        |p: f64| totals.get(((p * totals.len() as f64).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0);
    println!(
        "TTFM (sum of phases) ms: p50 {:.2} p90 {:.2} p99 {:.2} max {:.2}",
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0)
    );
    Ok(())
}
