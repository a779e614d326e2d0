//! Prints the grammar a JSON Schema file lowers to and the size of each rule automaton.
//!
//! `cargo run --release -p maskforge-bench --bin grammar_stats -- FILE [--print]`
use maskforge::fsm::{build_grammar_fsm, FsmLimits};
use maskforge::{json_schema_to_grammar, JsonSchemaOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&args[0])?)?;
    let schema = value.get("schema").cloned().unwrap_or(value);
    let (grammar, _) = json_schema_to_grammar(&schema, &JsonSchemaOptions::spec_compliant())?;
    if args.iter().any(|a| a == "--print") {
        println!("{grammar}");
    }
    let fsm = build_grammar_fsm(&grammar, &FsmLimits::default())?;
    let mut per_rule = vec![0usize; fsm.rules().len()];
    for s in fsm.states() {
        per_rule[fsm.rule_of(s)] += 1;
    }
    let mut sizes: Vec<(usize, &str)> = per_rule.iter().zip(fsm.rules()).map(|(&n, r)| (n, r.name.as_str())).collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let nonempty = sizes.iter().filter(|s| s.0 > 0).count();
    println!(
        "grammar rules {}, fsm rules {} ({} with states), states {}",
        grammar.rules().len(),
        fsm.rules().len(),
        nonempty,
        fsm.state_len()
    );
    let mut by_kind: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for (n, name) in &sizes {
        let kind = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '_').to_string();
        let e = by_kind.entry(kind).or_default();
        e.0 += 1;
        e.1 += n;
    }
    for (k, (r, n)) in &by_kind {
        println!("kind {k:20} rules {r:6} states {n:8}");
    }
    for (n, name) in sizes.iter().take(25) {
        println!("{n:8} {name}");
    }
    Ok(())
}
