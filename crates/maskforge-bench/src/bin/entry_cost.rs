//! Time to build every token-mask cache entry of a JSON Schema's grammar, one entry at a time
//! (single thread), with the states' automaton sizes: where just-in-time compilation pays.
//!
//! `cargo run --release -p maskforge-bench --bin entry_cost -- SCHEMA_OR_MASKBENCH_FILE [TOKENIZER] [--top N] [--repeat N] [--spec]`
//!
//! `--top N` lists the N most expensive entries (rule, context depth, tokens whose first byte
//! the state reads, entry sizes). `--repeat N` then walks each of them N more times without
//! the caches (`maskforge::cache::build_entry`), the loop to run under a profiler. `--spec`
//! compiles with the spec-compliant options MaskBench runs use (strict mode off, any whitespace).

use std::time::Instant;

use maskforge::cache::{build_entry, reachable_scannable_states, AdaptiveTokenMask};
use maskforge::fsm::StateId;
use maskforge::tokenizer::load_tokenizer;
use maskforge::JsonSchemaOptions;
use maskforge::{CompilerConfig, GrammarCompiler};
use maskforge_bench::stats::Summary;

/// The value after `--name`, if given.
fn flag(args: &[String], name: &str) -> Result<Option<usize>, Box<dyn std::error::Error>> {
    match args.iter().position(|a| a == name) {
        Some(i) => Ok(Some(args.get(i + 1).ok_or(format!("{name} needs a number"))?.parse()?)),
        None => Ok(None),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let top = flag(&args, "--top")?.unwrap_or(0);
    let repeat = flag(&args, "--repeat")?.unwrap_or(0);
    let positional: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|&(i, a)| !a.starts_with("--") && (i == 0 || !matches!(args[i - 1].as_str(), "--top" | "--repeat")))
        .map(|(_, a)| a)
        .collect();
    let path = positional.first().ok_or("give a schema file")?;
    let (vocab, _) = load_tokenizer(positional.get(1).map(|s| s.as_str()).unwrap_or("llama3"))?;
    let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let schema = value.get("schema").cloned().unwrap_or(value);
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let t = Instant::now();
    let options = if args.iter().any(|a| a == "--spec") {
        JsonSchemaOptions::spec_compliant()
    } else {
        JsonSchemaOptions::default()
    };
    let grammar = compiler.compile_json_schema(&schema, &options)?;
    println!(
        "compile {:.2} ms, {} rules, {} states",
        t.elapsed().as_secs_f64() * 1e3,
        grammar.fsm().rules().len(),
        grammar.fsm().state_len()
    );
    let fsm = grammar.fsm();
    let mut costs: Vec<(f64, StateId, usize)> = Vec::new();
    for (state, first_byte_tokens) in reachable_scannable_states(fsm, &vocab) {
        let t = Instant::now();
        grammar.mask_cache().entry(fsm, &vocab, state, false);
        costs.push((t.elapsed().as_secs_f64() * 1e6, state, first_byte_tokens));
    }
    let times: Vec<f64> = costs.iter().map(|c| c.0).collect();
    let s = Summary::of(&times);
    costs.sort_by(|a, b| b.0.total_cmp(&a.0));
    let worst = costs.first().map_or(StateId::new(0), |c| c.1);
    println!(
        "{} entries: total {:.1} ms, per entry avg {:.0} us p50 {:.0} p90 {:.0} max {:.0} (state {} of rule {})",
        times.len(),
        times.iter().sum::<f64>() / 1e3,
        s.avg,
        s.p50,
        s.p90,
        s.max,
        worst,
        fsm.rules()[fsm.rule_of(worst)].name
    );
    let cache = grammar.mask_cache();
    for &(us, state, first_byte_tokens) in costs.iter().take(top) {
        let rule = fsm.rule_of(state);
        let context = cache.certain_context(fsm, state);
        let entry = cache.entry(fsm, &vocab, state, false);
        let accepted = match &entry.accepted {
            AdaptiveTokenMask::Accepted(v) => format!("accepted {}", v.len()),
            AdaptiveTokenMask::Rejected(v) => format!("rejected {}", v.len()),
            AdaptiveTokenMask::Bitset(_) => "bitset".to_string(),
        };
        println!(
            "  {us:>9.0} us  state {state} of rule {} ({:?}, {} edges, final {}), context {}, first-byte tokens {first_byte_tokens}, {accepted}, uncertain {}",
            fsm.rule(rule).name,
            fsm.rule(rule).kind,
            fsm.byte_edges(state).len(),
            fsm.is_final(state),
            context.len(),
            entry.uncertain.len()
        );
        if repeat > 0 {
            let outer = context.last().map_or(rule, |&q| fsm.rule_of(q));
            let follow = cache.follow_sets()[outer.index()];
            let t = Instant::now();
            for _ in 0..repeat {
                std::hint::black_box(build_entry(fsm, context, &follow, &vocab, state));
            }
            println!("             walk without caches: {:.0} us", t.elapsed().as_secs_f64() * 1e6 / repeat as f64);
        }
    }
    Ok(())
}
