//! `maskforge maskbench`: runs MaskBench files (see `maskforge::maskbench`), single-threaded,
//! prints outcome counts and TTFM/TBM percentiles, optionally one JSON line per file and a
//! summary object.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use maskforge::load_tokenizer;

use crate::output::{outln, Failure};
use maskforge::{CompilerConfig, GrammarCompiler, Parser};
use maskforge_bench::maskbench::{run_file, summarize, FileResult, MaskBenchConfig};

#[derive(clap::Args)]
pub struct MaskbenchArgs {
    /// Tokenizer fixture name or `tokenizer.json[.gz]` path.
    #[arg(long, default_value = "llama3")]
    tokenizer: String,
    /// MaskBench files, or folders of them (`*.json`, sorted by name).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Write one JSON object per line per file here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the summary as one JSON object here.
    #[arg(long)]
    summary_json: Option<PathBuf>,
    /// Per-file time limit in seconds.
    #[arg(long, default_value_t = 60.0)]
    limit_s: f64,
    /// When token-mask cache entries are built: `jit` (on first use), `aot` (every reachable
    /// state at compile time, part of TTFM) or a number K (the K most expensive states at
    /// compile time, the rest on first use).
    #[arg(long, default_value = "jit")]
    mode: String,
    /// Check tokens with accept_token only (no masks, no TBM): the same verdicts, faster.
    #[arg(long)]
    accept_only: bool,
    /// Treat `format` as an annotation (not enforced).
    #[arg(long)]
    no_format: bool,
    /// Keep compiled grammars in this directory (see `generate --cache-dir`).
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// Threads of the pool the library walks the vocabulary on (default: rayon's, one per core;
    /// `1` for single-thread figures).
    #[arg(long)]
    threads: Option<usize>,
    /// Simulate a model's forward pass of this many microseconds before every mask, during
    /// which a background thread builds the entries `GrammarMatcher::prefetch` lists (TBM then
    /// shows what a serving engine sees; the time limit per file counts the waits too).
    #[arg(long)]
    forward_us: Option<u64>,
    /// How many bytes ahead a prefetch looks (with `--forward-us`).
    #[arg(long, default_value_t = 8)]
    prefetch_bytes: usize,
    /// The parser matchers run: `auto`, `earley` or `pda` (files the PDA does not serve are
    /// compile errors with `pda`).
    #[arg(long, default_value = "auto")]
    parser: String,
    /// Also print the N slowest masks: their time, file and place among the file's masks (to
    /// profile the tail: run the file alone with `step_cost` or `entry_tail`).
    #[arg(long, default_value_t = 0)]
    slowest: usize,
}

fn parser(name: &str) -> Result<Parser, String> {
    name.parse().map_err(|e| format!("--parser: {e}"))
}

fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| format!("{}: {e}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            v.sort();
            out.extend(v);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn name_of(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// How often a piped run prints its progress line.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

pub fn run(args: &MaskbenchArgs) -> Result<ExitCode, Failure> {
    crate::source::size_thread_pool(args.threads);
    let mode = crate::source::cache_mode(&args.mode)?;
    let (vocab, encoder) = load_tokenizer(&args.tokenizer).map_err(|e| e.to_string())?;
    let config = CompilerConfig::default().cache_mode(mode).parser(parser(&args.parser)?);
    let config = crate::source::with_cache_dir(config, args.cache_dir.as_ref());
    let compiler = GrammarCompiler::new(vocab, config);
    let mut config = MaskBenchConfig {
        limit: Duration::from_secs_f64(args.limit_s),
        masks: !args.accept_only,
        forward: args.forward_us.map(Duration::from_micros),
        prefetch_bytes: args.prefetch_bytes,
        ..Default::default()
    };
    config.options.enforce_format = !args.no_format;
    let files = files(&args.paths)?;
    let mut json_out = match &args.json {
        Some(p) => {
            Some(std::io::BufWriter::new(std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?))
        }
        None => None,
    };
    // Progress on stderr: every file on a terminal, a line every PROGRESS_EVERY when piped (a
    // MaskBench run takes minutes; a silent one looks hung).
    let terminal = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let mut last_line = started;
    let mut passing = 0usize;
    let mut results: Vec<FileResult> = Vec::with_capacity(files.len());
    for (i, path) in files.iter().enumerate() {
        let name = name_of(path);
        let result = match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(file) => run_file(&compiler, &encoder, &name, &file, &config),
            Err(e) => FileResult {
                file: name.clone(),
                outcome: maskforge_bench::maskbench::Outcome::CompileError,
                ttfm_us: None,
                tbm_us: Vec::new(),
                tokens: 0,
                error: Some(format!("cannot read: {e}")),
                relaxed: Vec::new(),
            },
        };
        if let Some(out) = json_out.as_mut() {
            serde_json::to_writer(&mut *out, &result).map_err(|e| e.to_string())?;
            writeln!(out).map_err(|e| e.to_string())?;
            out.flush().map_err(|e| e.to_string())?;
        }
        passing += usize::from(result.outcome == maskforge_bench::maskbench::Outcome::Passing);
        results.push(result);
        maskforge_bench::allocator::collect_between_requests();
        let status = format!(
            "maskbench: {}/{} files, {passing} passing, {:.0} s",
            i + 1,
            files.len(),
            started.elapsed().as_secs_f64()
        );
        if terminal {
            eprint!("\r{status}");
        } else if last_line.elapsed() >= PROGRESS_EVERY || i + 1 == files.len() {
            eprintln!("{status}");
            last_line = std::time::Instant::now();
        }
    }
    if terminal {
        eprintln!();
    }
    let s = summarize(&results);
    outln!(
        "{} schemas: {} passing, {} compile_error, {} timeout, {} validation_error, {} invalidation_error; {} tokens",
        s.schemas,
        s.passing,
        s.compile_error,
        s.timeout,
        s.validation_error,
        s.invalidation_error,
        s.tokens
    );
    for (label, x) in [("TTFM", &s.ttfm_us), ("TBM ", &s.tbm_us)] {
        outln!(
            "{label} us: avg {:.1} p25 {:.1} p50 {:.1} p75 {:.1} p90 {:.1} p95 {:.1} p99 {:.1} p99.9 {:.1} max {:.1}",
            x.avg,
            x.p25,
            x.p50,
            x.p75,
            x.p90,
            x.p95,
            x.p99,
            x.p999,
            x.max
        );
    }
    for (us, file, k) in slowest_masks(&results, args.slowest) {
        outln!("slow mask: {us:.0} us, {file}, mask {k} of the file");
    }
    // The compile-time caches carry over from file to file, as in a server: how much they served.
    let (rules, fragments) = (compiler.rule_fsm_cache_stats(), compiler.schema_fragment_stats());
    outln!(
        "caches: rule automata {} hits / {} built ({} states kept); schema fragments {} hits / {} lowered",
        rules.hits,
        rules.misses,
        rules.states,
        fragments.hits,
        fragments.misses
    );
    if let Some(p) = &args.summary_json {
        let text = serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?;
        std::fs::write(p, text + "\n").map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The `n` slowest masks of `results`, slowest first: time (µs), file, and the mask's place
/// among the file's masks (from 0).
fn slowest_masks(results: &[FileResult], n: usize) -> Vec<(f64, &str, usize)> {
    // Without `--slowest`, no list of every mask of the run (600k of them).
    if n == 0 {
        return Vec::new();
    }
    let mut all: Vec<(f64, &str, usize)> =
        results.iter().flat_map(|r| r.tbm_us.iter().enumerate().map(|(k, &us)| (us, r.file.as_str(), k))).collect();
    let n = n.min(all.len());
    if n == 0 {
        return all;
    }
    all.select_nth_unstable_by(n - 1, |a, b| b.0.total_cmp(&a.0));
    all.truncate(n);
    all.sort_by(|a, b| b.0.total_cmp(&a.0));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(file: &str, tbm_us: &[f64]) -> FileResult {
        FileResult {
            file: file.into(),
            outcome: maskforge_bench::maskbench::Outcome::Passing,
            ttfm_us: None,
            tbm_us: tbm_us.to_vec(),
            tokens: 0,
            error: None,
            relaxed: Vec::new(),
        }
    }

    #[test]
    fn the_slowest_masks_come_first_with_their_file_and_place() {
        let results = [result("a", &[1.0, 9.0, 3.0]), result("b", &[7.0, 2.0])];
        assert_eq!(slowest_masks(&results, 2), vec![(9.0, "a", 1), (7.0, "b", 0)]);
        assert_eq!(slowest_masks(&results, 9).len(), 5);
        assert!(slowest_masks(&results, 0).is_empty());
    }
}
