//! Prints, per scannable automaton state of a grammar, the sizes of its token-mask cache entry
//! (accepted / rejected / uncertain) and a few uncertain tokens: where runtime checks will go.
//!
//! `cargo run --release -p maskforge-bench --bin cache_report -- [TOKENIZER] [GRAMMAR.ebnf]` (defaults: llama3
//! and the builtin JSON grammar).

use maskforge::cache::{reachable_scannable_states, AdaptiveTokenMask};
use maskforge::tokenizer::load_tokenizer;
use maskforge::{CompilerConfig, GrammarCompiler};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (vocab, _) = load_tokenizer(args.first().map(String::as_str).unwrap_or("llama3"))?;
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let grammar = match args.get(1) {
        Some(path) => compiler.compile_grammar(&std::fs::read_to_string(path)?)?,
        None => compiler.compile_builtin_json_grammar()?,
    };
    let fsm = grammar.fsm();
    let mut total_uncertain = 0;
    for (state, cost) in reachable_scannable_states(fsm, &vocab) {
        let e = grammar.mask_cache().entry(fsm, &vocab, state, false);
        let (form, n) = match &e.accepted {
            AdaptiveTokenMask::Accepted(v) => ("accepted", v.len()),
            AdaptiveTokenMask::Rejected(v) => ("rejected", v.len()),
            AdaptiveTokenMask::Bitset(v) => ("bitset", v.len()),
        };
        total_uncertain += e.uncertain.len();
        let sample: Vec<String> = e
            .uncertain
            .iter()
            .take(6)
            .map(|&p| format!("{:?}", vocab.token_text_lossy(vocab.sorted_token_ids()[p as usize])))
            .collect();
        println!(
            "state {state:5} rule {:12} cost {cost:6} {form:8} {n:6} uncertain {:5} {}",
            fsm.rules()[fsm.rule_of(state)].name,
            e.uncertain.len(),
            sample.join(" ")
        );
    }
    let stats = grammar.mask_cache_stats();
    println!("total: {} entries, {} bytes, {} uncertain tokens", stats.entries, stats.bytes, total_uncertain);
    Ok(())
}
