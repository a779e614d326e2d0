//! `maskforge toolbench`: the tool-calling benchmark of XGrammar-2 §4.1 (see
//! `maskforge::toolbench`): for each tools-per-request count, a fresh compiler (cold pool and
//! whole-grammar cache), `--requests` requests, one summary line per setting and optionally a
//! JSON array with one object per setting.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use maskforge::load_tokenizer;

use crate::output::{outln, Failure};
use maskforge::{CompilerConfig, GrammarCompiler};
use maskforge::{ProtocolOptions, ToolChoice};
use maskforge_bench::toolbench::{
    load_tools, load_valid_calls, run_setting, PlainJson, ProtocolCalls, Setting, ToolBenchConfig, ToolProtocol,
};

#[derive(clap::Args)]
pub struct ToolbenchArgs {
    /// Tokenizer fixture name or `tokenizer.json[.gz]` path.
    #[arg(long, default_value = "llama3")]
    tokenizer: String,
    /// The tool pool: a `tools.jsonl` file or a folder holding it (ground-truth calls are read
    /// from `cases.jsonl` next to it).
    #[arg(long)]
    tools: PathBuf,
    /// Tools allowed per request, comma-separated.
    #[arg(long, default_value = "5,20,50", value_delimiter = ',')]
    tools_per_request: Vec<usize>,
    /// `static`, `dynamic` or both (comma-separated).
    #[arg(long, default_value = "static,dynamic", value_delimiter = ',')]
    setting: Vec<String>,
    /// Requests per setting.
    #[arg(long, default_value_t = 100)]
    requests: usize,
    /// Seed of the tool draws.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Use only this many tools of the pool (a seeded sample; 0 = all). The paper uses 100.
    #[arg(long, default_value_t = 0)]
    pool_tools: usize,
    /// When cache entries are built: `jit`, `aot` or a number K of states at compile time.
    #[arg(long, default_value = "jit")]
    mode: String,
    /// Time budget of the ahead-of-time part, in milliseconds (with `aot` or K).
    #[arg(long)]
    precompute_ms: Option<f64>,
    /// Byte budget of the cross-grammar pool, in MiB (0: no pool).
    #[arg(long, default_value_t = 256.0)]
    pool_mib: f64,
    /// Whole grammars kept per compiler (0: no whole-grammar cache).
    #[arg(long, default_value_t = 64)]
    grammar_cache: usize,
    /// Only the first mask per request (no per-step masks): faster, for long runs.
    #[arg(long)]
    first_mask_only: bool,
    /// Threads of the pool the library walks the vocabulary on (default: rayon's, one per core;
    /// `1` for single-thread figures).
    #[arg(long)]
    threads: Option<usize>,
    /// Calls in this model family's protocol format (`protocols/NAME.json`, e.g. `llama`,
    /// `harmony`) instead of plain JSON `{"name": ..., "arguments": ...}`; use the family's
    /// tokenizer.
    #[arg(long)]
    protocol: Option<String>,
    /// With `--protocol`: whether responses start with reasoning (`on`/`off`).
    #[arg(long, default_value = "on")]
    reasoning: String,
    /// Write a JSON array with one object per setting here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Keep compiled grammars in this directory (see `generate --cache-dir`).
    #[arg(long)]
    cache_dir: Option<PathBuf>,
}

pub fn run(args: &ToolbenchArgs) -> Result<ExitCode, Failure> {
    crate::source::size_thread_pool(args.threads);
    let mode = crate::source::cache_mode(&args.mode)?;
    let settings: Vec<Setting> = args
        .setting
        .iter()
        .map(|s| match s.as_str() {
            "static" => Ok(Setting::Static),
            "dynamic" => Ok(Setting::Dynamic),
            other => Err(format!("--setting {other}: expected `static` or `dynamic`")),
        })
        .collect::<Result<_, _>>()?;
    let (vocab, encoder) = load_tokenizer(&args.tokenizer).map_err(|e| e.to_string())?;
    let mut tools = load_tools(&args.tools)?;
    if args.pool_tools > 0 && args.pool_tools < tools.len() {
        use rand::seq::SliceRandom;
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed ^ 0x9e37_79b9_7f4a_7c15);
        tools.shuffle(&mut rng);
        tools.truncate(args.pool_tools);
    }
    let calls = load_valid_calls(&args.tools)?;
    let protocol: Box<dyn ToolProtocol> = match &args.protocol {
        None => Box::new(PlainJson::default()),
        Some(name) => {
            let reasoning = match args.reasoning.as_str() {
                "on" => true,
                "off" => false,
                other => return Err(format!("--reasoning {other}: expected `on` or `off`").into()),
            };
            let options = ProtocolOptions { reasoning, parallel_tool_calls: true };
            Box::new(ProtocolCalls::new(name, ToolChoice::Auto, options).map_err(|e| e.to_string())?)
        }
    };
    let config = crate::source::with_cache_dir(CompilerConfig::default(), args.cache_dir.as_ref())
        .cache_mode(mode)
        .precompute_budget(args.precompute_ms.map(|ms| Duration::from_secs_f64(ms / 1e3)))
        .pool_bytes((args.pool_mib * (1u64 << 20) as f64) as usize)
        .grammar_cache_len(args.grammar_cache);
    let mut reports = Vec::new();
    outln!(
        "{:>5} {:>8} {:>5} | {:>6} {:>6} | {:>9} {:>9} {:>9} | {:>9} {:>9} | {:>7} {:>7} {:>8} | {:>9} | {:>6}",
        "tools",
        "setting",
        "reqs",
        "reuse",
        "struct",
        "comp p50",
        "comp p99",
        "comp max",
        "ttfm p50",
        "ttfm p99",
        "tbm p50",
        "tbm p99",
        "tbm max",
        "valid",
        "wall s"
    );
    outln!(
        "      (reuse, struct: % of pool entries a request found built; comp, ttfm, tbm: compile, time to first \
         mask and time between masks in microseconds; valid: calls accepted of calls checked; wall: seconds)"
    );
    for &n in &args.tools_per_request {
        for &setting in &settings {
            let compiler = GrammarCompiler::new(vocab.clone(), config.clone());
            let bench = ToolBenchConfig {
                tools_per_request: n,
                setting,
                requests: args.requests,
                seed: args.seed,
                masks: !args.first_mask_only,
            };
            let r = run_setting(&compiler, &encoder, protocol.as_ref(), &tools, &calls, &bench)?;
            outln!(
                "{:>5} {:>8} {:>5} | {:>5.1}% {:>5.1}% | {:>9.0} {:>9.0} {:>9.0} | {:>9.0} {:>9.0} | {:>7.1} {:>7.1} {:>8.0} | {:>4}/{:<4} | {:>6.1}",
                n,
                format!("{setting:?}").to_lowercase(),
                r.requests,
                r.reuse_rate * 100.0,
                r.structure_reuse_rate * 100.0,
                r.compile_us.p50,
                r.compile_us.p99,
                r.compile_us.max,
                r.first_mask_us.p50,
                r.first_mask_us.p99,
                r.tbm_us.p50,
                r.tbm_us.p99,
                r.tbm_us.max,
                r.valid_calls_accepted,
                r.valid_calls_total,
                r.wall_s
            );
            outln!(
                "      pool: {} hits, {} partial, {} misses, {} items, {:.1} MiB (max {:.1} of {:.1}), {} evictions; acquired {:?}{}",
                r.pool.hits,
                r.pool.partial_hits,
                r.pool.misses,
                r.pool.entries,
                r.pool.bytes as f64 / 1048576.0,
                r.pool.max_bytes as f64 / 1048576.0,
                r.pool.budget as f64 / 1048576.0,
                r.pool.evictions,
                r.entries_acquired,
                if r.rejected.is_empty() { String::new() } else { format!("; rejected {:?}", r.rejected) }
            );
            reports.push(r);
        }
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&reports).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let all_valid = reports.iter().all(|r| r.valid_calls_accepted == r.valid_calls_total);
    Ok(if all_valid { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
