//! The time of `fsm::build_grammar_fsm` alone, per JSON Schema file (single thread), and a
//! fingerprint of what it built.
//!
//! `cargo run --release -p maskforge-bench --bin fsm_build -- FILE_OR_DIR... [--repeat N] [--top N] [--per-file]`
//!
//! Every file is lowered to a grammar first (untimed); then its automata are built `--repeat`
//! times (default 3) and the fastest build counts, which takes most of the noise of a shared
//! machine out of a comparison. Prints the slowest files, the total, and a fingerprint: the
//! states and the structural hashes (`fsm::hash`, independent of state numbering) of every
//! rule of every grammar. Two versions of the construction that build the same automata up to
//! numbering print the same fingerprint; `--per-file` prints each file's to stderr.

// The same allocator as the `maskforge` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use maskforge_bench::cli;

use std::time::Instant;

use maskforge::fsm::hash::hash_rules;
use maskforge::fsm::{build_grammar_fsm, FsmLimits};
use maskforge::{json_schema_to_grammar, JsonSchemaOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut take = |flag: &str| cli::take_flag(&mut args, flag);
    let top: usize = take("--top").map_or(Ok(10), |s| s.parse())?;
    let repeat: usize = take("--repeat").map_or(Ok(3), |s| s.parse())?;
    let per_file = args.iter().position(|a| a == "--per-file").map(|i| args.remove(i)).is_some();
    let files = cli::json_files(&args)?;
    let options = JsonSchemaOptions::spec_compliant();
    let limits = FsmLimits::default();
    let mut rows: Vec<(String, f64, usize)> = Vec::new();
    let mut fingerprint: Vec<u8> = Vec::new();
    for path in &files {
        let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        let schema = value.get("schema").cloned().unwrap_or(value);
        let Ok((grammar, _)) = json_schema_to_grammar(&schema, &options) else { continue };
        let mut best = f64::INFINITY;
        let mut fsm = None;
        for _ in 0..repeat.max(1) {
            let t = Instant::now();
            let built = build_grammar_fsm(&grammar, &limits)?;
            best = best.min(t.elapsed().as_secs_f64() * 1e3);
            fsm = Some(built);
        }
        let fsm = fsm.expect("built at least once");
        let hashes = hash_rules(&fsm);
        let mut file_print = (fsm.state_len() as u64).to_le_bytes().to_vec();
        for r in maskforge::fsm::FsmRuleId::range(fsm.rules().len()) {
            file_print.extend_from_slice(&hashes.rule_hash(r).unwrap_or(0).to_le_bytes());
        }
        fingerprint.extend_from_slice(&file_print);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if per_file {
            eprintln!("{name} {} {:016x}", fsm.state_len(), xxhash_rust::xxh3::xxh3_64(&file_print));
        }
        rows.push((name, best, fsm.state_len()));
    }
    let total: f64 = rows.iter().map(|r| r.1).sum();
    let states: usize = rows.iter().map(|r| r.2).sum();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    println!("{:<50} {:>9} {:>8}", "file", "fsm ms", "states");
    for r in rows.iter().take(top) {
        println!("{:<50} {:>9.2} {:>8}", r.0, r.1, r.2);
    }
    println!(
        "{} files: fsm {:.0} ms (best of {repeat}), {states} states, fingerprint {:016x}",
        rows.len(),
        total,
        xxhash_rust::xxh3::xxh3_64(&fingerprint)
    );
    Ok(())
}
