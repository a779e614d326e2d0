//! Where the compile time of tool-calling request grammars goes: front-end, automata, follow
//! sets and certain contexts, structural hashes — medians over requests of N random tools.
//!
//! `cargo run --release -p maskforge-bench --bin compile_phases -- [N=50] [REQUESTS=30] [POOL_TOOLS=100]`

// The same allocator as the `maskforge` binary, so phase times add up to its TTFM.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::Path;
use std::time::Instant;

use maskforge::cache::MaskCache;
use maskforge::fsm::{build_grammar_fsm, hash::hash_rules, FsmLimits};
use maskforge::{json_schema_to_grammar, JsonSchemaOptions};
use maskforge_bench::stats::Summary;
use maskforge_bench::toolbench::{load_tools, PlainJson, Tool};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::SeedableRng;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("numbers")).collect();
    let n = args.first().copied().unwrap_or(50);
    let requests = args.get(1).copied().unwrap_or(30);
    let pool_tools = args.get(2).copied().unwrap_or(100);
    let dir = maskforge::tokenizer::fixtures_dir().join("corpus/tools");
    let mut tools = load_tools(Path::new(&dir))?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    tools.shuffle(&mut rng);
    tools.truncate(pool_tools);
    let options = JsonSchemaOptions::default();
    let mut phases: [Vec<f64>; 4] = Default::default();
    let (mut states, mut rules) = (0, 0);
    for _ in 0..requests {
        let chosen: Vec<&Tool> = tools.choose_multiple(&mut rng, n).collect();
        let schema = PlainJson::schema(&chosen);
        let t = Instant::now();
        let (grammar, _) = json_schema_to_grammar(&schema, &options)?;
        phases[0].push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let fsm = build_grammar_fsm(&grammar, &FsmLimits::default())?;
        phases[1].push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let cache = MaskCache::new(&fsm, None);
        phases[2].push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let hashes = hash_rules(&fsm);
        phases[3].push(t.elapsed().as_secs_f64() * 1e6);
        states = fsm.state_len();
        rules = fsm.rules().len();
        if std::env::var_os("RULE_SIZES").is_some() {
            let mut per_rule = vec![0usize; rules];
            for s in fsm.states() {
                per_rule[fsm.rule_of(s)] += 1;
            }
            let mut sizes: Vec<(usize, &str)> =
                per_rule.iter().zip(fsm.rules()).map(|(&n, r)| (n, r.name.as_str())).collect();
            sizes.sort_unstable_by(|a, b| b.cmp(a));
            println!("largest rule automata: {:?}", &sizes[..sizes.len().min(12)]);
        }
        drop((cache, hashes));
    }
    println!("{n} tools, {requests} requests; last grammar: {rules} rules, {states} states");
    for (name, v) in ["front-end", "automata", "follow+contexts", "structural hash"].iter().zip(&phases) {
        let s = Summary::of(v);
        println!("{name:>16}: p50 {:>8.0} us  p99 {:>8.0} us", s.p50, s.p99);
    }
    Ok(())
}
