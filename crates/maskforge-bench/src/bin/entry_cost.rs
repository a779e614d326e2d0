//! Time to build every token-mask cache entry of a JSON Schema's grammar, one entry at a time
//! (single thread), with the states' automaton sizes: where just-in-time compilation pays.
//!
//! `cargo run --release -p maskforge-bench --bin entry_cost -- SCHEMA_OR_MASKBENCH_FILE [TOKENIZER]`

use std::time::Instant;

use maskforge::cache::reachable_scannable_states;
use maskforge::tokenizer::load_tokenizer;
use maskforge::JsonSchemaOptions;
use maskforge::{CompilerConfig, GrammarCompiler};
use maskforge_bench::stats::Summary;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().ok_or("give a schema file")?;
    let (vocab, _) = load_tokenizer(args.get(1).map(String::as_str).unwrap_or("llama3"))?;
    let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let schema = value.get("schema").cloned().unwrap_or(value);
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let t = Instant::now();
    let options = JsonSchemaOptions::default();
    let grammar = compiler.compile_json_schema(&schema, &options)?;
    println!(
        "compile {:.2} ms, {} rules, {} states",
        t.elapsed().as_secs_f64() * 1e3,
        grammar.fsm().rules().len(),
        grammar.fsm().state_len()
    );
    let fsm = grammar.fsm();
    let mut times = Vec::new();
    let mut worst = (0.0, maskforge::fsm::StateId::new(0));
    for (state, _) in reachable_scannable_states(fsm, &vocab) {
        let t = Instant::now();
        grammar.mask_cache().entry(fsm, &vocab, state, false);
        let us = t.elapsed().as_secs_f64() * 1e6;
        if us > worst.0 {
            worst = (us, state);
        }
        times.push(us);
    }
    let s = Summary::of(&times);
    println!(
        "{} entries: total {:.1} ms, per entry avg {:.0} us p50 {:.0} p90 {:.0} max {:.0} (state {} of rule {})",
        times.len(),
        times.iter().sum::<f64>() / 1e3,
        s.avg,
        s.p50,
        s.p90,
        s.max,
        worst.1,
        fsm.rules()[fsm.rule_of(worst.1)].name
    );
    Ok(())
}
