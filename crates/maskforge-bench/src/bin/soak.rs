//! The soak (see `maskforge_bench::soak`): N threads serve random MaskBench schemas and tool sets
//! through one compiler for M minutes, every K-th mask checked against the exact oracle; a report
//! line every 30 s, a summary at the end. Exit code 1 when a mismatch was found, 2 on bad
//! arguments or fixtures.
//!
//! `cargo run --release -p maskforge-bench --bin soak -- [--threads 2] [--minutes 1] [--seconds S]
//! [--check-every 64] [--tokenizer llama3] [--pool-budget 256M] [--grammar-cache 64]
//! [--rule-cache-states 1000000] [--fragment-cache 1024] [--timeout-s 30] [--report-s 30]
//! [--tool-share 0.5] [--rollback 0.02] [--fork 0.01] [--max-tokens 2000] [--seed 0]
//! [--maskbench DIR] [--tools DIR] [--json OUT]`
//!
//! Sizes take `K`, `M` or `G` (KiB, MiB, GiB) or are bytes. `--seconds` overrides `--minutes`.
//! `MASKBENCH` and `TOOLS` default to the fixtures' `corpus/maskbench-dev` and `corpus/tools`.

use std::process::ExitCode;
use std::time::Duration;

use maskforge::tokenizer::{fixtures_dir, load_tokenizer};
use maskforge::{CompilerConfig, GrammarCompiler};
use maskforge_bench::cli::take_flag;
use maskforge_bench::soak::{self, Churn, SoakConfig, Workload};

// The allocator the `maskforge` binary uses: RSS here is what a server built the same way sees.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<ExitCode, String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let defaults = SoakConfig::default();
    let minutes: f64 = parse(&mut args, "--minutes", 1.0)?;
    let seconds: f64 = parse(&mut args, "--seconds", minutes * 60.0)?;
    let config = SoakConfig {
        threads: parse(&mut args, "--threads", defaults.threads)?,
        duration: Duration::from_secs_f64(seconds),
        check_every: parse(&mut args, "--check-every", defaults.check_every)?,
        report_every: Duration::from_secs_f64(parse(&mut args, "--report-s", 30.0)?),
        tool_share: parse(&mut args, "--tool-share", defaults.tool_share)?,
        churn: Churn {
            rollback: parse(&mut args, "--rollback", defaults.churn.rollback)?,
            fork: parse(&mut args, "--fork", defaults.churn.fork)?,
        },
        max_tokens: parse(&mut args, "--max-tokens", defaults.max_tokens)?,
        seed: parse(&mut args, "--seed", defaults.seed)?,
    };
    let compiler_config = CompilerConfig::default()
        .pool_bytes(size(&take_flag(&mut args, "--pool-budget").unwrap_or_else(|| "256M".into()))?)
        .grammar_cache_len(parse(&mut args, "--grammar-cache", maskforge::DEFAULT_GRAMMAR_CACHE_LEN)?)
        .rule_fsm_cache_states(parse(&mut args, "--rule-cache-states", maskforge::DEFAULT_RULE_FSM_CACHE_STATES)?)
        .schema_fragment_cache_len(parse(&mut args, "--fragment-cache", maskforge::DEFAULT_SCHEMA_FRAGMENT_CACHE_LEN)?)
        .compile_timeout(Duration::from_secs_f64(parse(&mut args, "--timeout-s", 30.0)?));
    let tokenizer = take_flag(&mut args, "--tokenizer").unwrap_or_else(|| "llama3".into());
    let corpus = fixtures_dir().join("corpus");
    let maskbench = take_flag(&mut args, "--maskbench").map_or_else(|| corpus.join("maskbench-dev"), Into::into);
    let tools = take_flag(&mut args, "--tools").map_or_else(|| corpus.join("tools"), Into::into);
    let json = take_flag(&mut args, "--json");
    if let Some(unknown) = args.first() {
        return Err(format!("unknown argument `{unknown}`"));
    }
    if config.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    let (vocab, encoder) = load_tokenizer(&tokenizer).map_err(|e| e.to_string())?;
    let workload = Workload::load(&maskbench, &tools)?;
    let compiler = GrammarCompiler::new(vocab, compiler_config);
    println!(
        "soak: {} threads, {:.0} s, oracle every {} masks, {} schemas, {} tools, {} calls, pool budget {:.1} MiB",
        config.threads,
        config.duration.as_secs_f64(),
        config.check_every,
        workload.schemas.len(),
        workload.tools.len(),
        workload.calls.len(),
        compiler.pool_stats().budget as f64 / (1u64 << 20) as f64,
    );
    let summary = soak::run(&compiler, &encoder, &workload, &config, |s| println!("{}", s.line()));
    println!("{}", summary.snapshots.last().map(|s| s.line()).unwrap_or_default());
    println!("{}", summary.text());
    for (kind, requests) in &summary.error_requests {
        println!("first requests with {kind}: {}", requests.join("; "));
    }
    for m in &summary.mismatch_list {
        println!(
            "MISMATCH {}: {} at step {}, token {:?} {:?}: {}",
            m.kind, m.label, m.step, m.token, m.token_text, m.detail
        );
    }
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
        std::fs::write(&path, text).map_err(|e| format!("cannot write {path}: {e}"))?;
    }
    Ok(if summary.mismatches == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The value of `flag` parsed, or `default` when it is absent.
fn parse<T: std::str::FromStr>(args: &mut Vec<String>, flag: &str, default: T) -> Result<T, String> {
    match take_flag(args, flag) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| format!("{flag} {v}: not a valid value")),
    }
}

/// A byte size: a number with an optional `K`, `M` or `G` (binary units).
fn size(text: &str) -> Result<usize, String> {
    let (number, unit) = match text.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let scale: f64 = match unit.to_ascii_uppercase().trim_end_matches("IB").trim_end_matches('B') {
        "" => 1.0,
        "K" => 1024.0,
        "M" => 1024.0 * 1024.0,
        "G" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("--pool-budget {text}: expected a size such as 64M or 1G")),
    };
    let n: f64 = number.trim().parse().map_err(|_| format!("--pool-budget {text}: expected a size such as 64M"))?;
    Ok((n * scale) as usize)
}

#[cfg(test)]
mod tests {
    use super::size;

    #[test]
    fn sizes_take_binary_units() {
        assert_eq!(size("64M"), Ok(64 << 20));
        assert_eq!(size("1G"), Ok(1 << 30));
        assert_eq!(size("512KiB"), Ok(512 << 10));
        assert_eq!(size("1000"), Ok(1000));
        assert!(size("12X").is_err() && size("M").is_err());
    }
}
