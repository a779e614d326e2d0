//! Lowers one JSON Schema file N times (for profiling the front-end alone).
//!
//! `cargo run --release -p maskforge-bench --bin front_loop -- FILE [N=50]`
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use maskforge::{json_schema_to_grammar, JsonSchemaOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&args[0])?)?;
    let n: usize = args.get(1).map_or(Ok(50), |s| s.parse())?;
    let schema = value.get("schema").cloned().unwrap_or(value);
    let options = JsonSchemaOptions::spec_compliant();
    let mut rules = 0;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = std::time::Instant::now();
        let (grammar, _) = json_schema_to_grammar(&schema, &options)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        rules = grammar.rules().len();
    }
    times.sort_by(f64::total_cmp);
    println!("{rules} rules, per lowering: min {:.2} ms, median {:.2} ms", times[0], times[n / 2]);
    Ok(())
}
