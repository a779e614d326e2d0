//! Where the mask-time tail comes from: runs MaskBench files the way the runner does (one
//! compiler, so one pool, for all of them; spec-compliant options; a mask before every token),
//! but builds the missing cache entries of each step one at a time before the fill and times
//! each, sorted by the cause of its cost (design notes, open problem 1): how the entry is built
//! (`MaskCache::build_path`: `text`, `slice`, `paths` or `parser`), then the shape of its state:
//!
//! * `nfa`: the state's byte edges overlap (subset construction gave up);
//! * `cycle`: the state lies on a cycle of byte edges of its rule (a string body, digits,
//!   whitespace);
//! * `strtail`: a byte edge of the state leads (through UTF-8 continuation states) into a
//!   state that enters a nullable rule, such as a key position entering the shared `strtail`;
//! * `nullable`: the state is final or predicts a nullable rule;
//! * `other`.
//!
//! `cargo run --release -p maskforge-bench --bin entry_tail -- [--every N] [--over-us 1000] [--tokenizer llama3] PATH...`
//!
//! Prints every entry over `--over-us` (file, state, rule, cause, first-byte tokens), then the
//! total and count per cause, the cost distribution of all entries, and the TBM percentiles of
//! the fills (which then build nothing: their entries are built just before), and those of the
//! steps (a step's entries and its fill: what the runner's TBM measures in one fill).
//!
//! `--top-steps N` lists the N slowest steps: file, fill time, and each entry's rule and cost.
//!
//! `--repeat N` then builds the slowest entry N more times in a fresh cache of its grammar (no
//! pool), the loop to run under a profiler; with `--profile-state S` instead, state `S` of
//! that entry's grammar is walked along byte paths N times with the run's warm pool (a
//! typical entry of a known structure), and with `--cold` the processor's caches are flushed
//! (64 MiB written) before each walk, as a serving loop's other work leaves them; with
//! `--fresh`, each walk is a first one: no pool and a fresh set of walks (the grammar's byte
//! regions are found and their tables built again each time, as a first entry without a pool
//! finds and builds them).

use std::collections::BTreeMap;
use std::time::Instant;

use maskforge::cache::{BuildPath, MaskCache};
use maskforge::fsm::{GrammarFsm, StateId};
use maskforge::tokenizer::load_tokenizer;
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, TokenBitmask};
use maskforge_bench::stats::Summary;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The value after `--name`, or `default`.
fn flag(args: &[String], name: &str, default: &str) -> String {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.into())
}

/// Prints the percentiles of `times` (µs), their total, and how many exceed 100 µs and 1 ms.
fn print_times(label: &str, times: &[f64]) {
    let s = Summary::of(times);
    let over = |limit: f64| times.iter().filter(|&&us| us > limit).count();
    println!(
        "{label} us: p50 {:.1} p99 {:.1} p99.9 {:.0} max {:.0} total {:.1} ms; over 100 us / 1 ms: {} / {} of {}",
        s.p50,
        s.p99,
        s.p999,
        s.max,
        times.iter().sum::<f64>() / 1e3,
        over(100.0),
        over(1000.0),
        times.len()
    );
}

/// The cause of an entry's cost (see the module docs): how it is built, and the shape of its
/// state.
fn cause(fsm: &GrammarFsm, state: StateId, path: BuildPath) -> String {
    let path = match path {
        BuildPath::FreeText => "text",
        BuildPath::LoopSlice => "slice",
        BuildPath::BytePaths => "paths",
        BuildPath::Parser => "parser",
    };
    format!("{path}/{}", shape(fsm, state))
}

/// The shape of `state` (see the module docs).
fn shape(fsm: &GrammarFsm, state: StateId) -> &'static str {
    let edges = fsm.byte_edges(state);
    if edges.windows(2).any(|w| w[1].lo <= w[0].hi) {
        return "nfa";
    }
    if on_cycle(fsm, state) {
        return "cycle";
    }
    let enters_nullable = |s: StateId| fsm.rule_edges(s).iter().any(|e| fsm.rule(e.rule).nullable);
    let leads_into_nullable = edges.iter().any(|e| {
        enters_nullable(e.target)
            || fsm.byte_edges(e.target).iter().any(|c| {
                enters_nullable(c.target) || fsm.byte_edges(c.target).iter().any(|d| enters_nullable(d.target))
            })
    });
    if leads_into_nullable {
        "strtail"
    } else if fsm.is_final(state) || enters_nullable(state) {
        "nullable"
    } else {
        "other"
    }
}

/// Whether `state` can reach itself by byte edges of its rule.
fn on_cycle(fsm: &GrammarFsm, state: StateId) -> bool {
    let mut seen = vec![state];
    let mut stack = vec![state];
    while let Some(s) = stack.pop() {
        for e in fsm.byte_edges(s) {
            if e.target == state {
                return true;
            }
            if fsm.rule_of(e.target) == fsm.rule_of(state) && !seen.contains(&e.target) && seen.len() < 4096 {
                seen.push(e.target);
                stack.push(e.target);
            }
        }
    }
    false
}

/// How [`profile_state`] walks: after flushing the processor's caches (`cold`), and as a first
/// walk, without the pool or anything a walk before it learned (`fresh`).
struct Profiled {
    cold: bool,
    fresh: bool,
}

/// Walks the vocabulary along byte paths for `state` of `grammar` `repeat` times with the
/// compiler's pool as the run left it (its first-byte walks and region tables warm, no entry
/// stored: what a typical entry of a known structure costs), or afresh each time (see
/// [`Profiled`]), the loop to run under a profiler.
fn profile_state(
    compiler: &GrammarCompiler,
    grammar: &maskforge::CompiledGrammar,
    vocab: &maskforge::Vocabulary,
    state: StateId,
    repeat: usize,
    how: Profiled,
) {
    use maskforge::cache::PathWalks;
    let (fsm, cache) = (grammar.fsm(), grammar.mask_cache());
    let context = cache.certain_context(fsm, state);
    let Some(pool) = compiler.pool() else { return };
    // One set of walks, as a grammar's cache has: its rule hashes and byte regions are the
    // grammar's, computed once; the first-byte walks come from the pool at every repeat.
    let warm = PathWalks::with_pool(fsm, vocab, std::sync::Arc::clone(pool));
    let mut scratch = vec![0u8; if how.cold { 64 << 20 } else { 0 }];
    let mut spent = std::time::Duration::ZERO;
    let mut built = 0;
    for r in 0..repeat {
        scratch.iter_mut().for_each(|x| *x = x.wrapping_add(r as u8));
        let fresh = how.fresh.then(|| PathWalks::new(fsm, vocab));
        let walks = fresh.as_ref().unwrap_or(&warm);
        let t = Instant::now();
        built += std::hint::black_box(walks.base(fsm, context, vocab, state)).is_some() as usize;
        spent += t.elapsed();
    }
    std::hint::black_box(&scratch);
    let us = spent.as_secs_f64() * 1e6 / repeat as f64;
    let caches = if how.cold { "cold" } else { "warm" };
    let walks = if how.fresh { "afresh, without a pool" } else { "with the warm pool" };
    println!("state {state} walked along byte paths {repeat} times {walks}, {caches} caches ({built} built): {us:.0} us each");
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    maskforge_bench::allocator::configure();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let every: usize = flag(&args, "--every", "1").parse()?;
    let over_us: f64 = flag(&args, "--over-us", "1000").parse()?;
    let (vocab, encoder) = load_tokenizer(&flag(&args, "--tokenizer", "llama3"))?;
    let mut paths = Vec::new();
    let mut skip = false;
    for a in &args {
        if std::mem::take(&mut skip) {
            continue;
        }
        if a.starts_with("--") {
            // Every flag takes a value but `--cold` and `--fresh`.
            skip = a != "--cold" && a != "--fresh";
            continue;
        }
        let p = std::path::Path::new(a);
        if p.is_dir() {
            let mut files: Vec<_> = std::fs::read_dir(p)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
            files.sort();
            paths.extend(files);
        } else {
            paths.push(p.to_path_buf());
        }
    }
    let paths: Vec<_> = paths.into_iter().step_by(every.max(1)).collect();
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let options = JsonSchemaOptions::spec_compliant();
    let mut entries: Vec<(f64, String, StateId, String, String, usize, usize)> = Vec::new();
    let mut tbm = Vec::new();
    // Per step: its entries and its fill, what the runner's TBM measures in one fill.
    let mut steps = Vec::new();
    // Per step: its file, its entries' rules and costs, and its fill (for `--top-steps`).
    let mut step_parts: Vec<(String, usize, usize, f64)> = Vec::new();
    // Per file: the time of its fills, of its slowest fill, and how many took over 1 ms.
    let mut fill_time: Vec<(f64, f64, String, usize)> = Vec::new();
    let mut mask = TokenBitmask::new(vocab.vocab_size());
    // The slowest entry: its cost, grammar, state and slot.
    let mut slowest: Option<(f64, maskforge::CompiledGrammar, StateId, bool)> = None;
    for path in &paths {
        let name = path.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
        let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        let Some(schema) = file.get("schema") else { continue };
        let Ok(grammar) = compiler.compile_json_schema(schema, &options) else { continue };
        let (fsm, cache) = (grammar.fsm(), grammar.mask_cache());
        let mut matcher = GrammarMatcher::new(&grammar);
        let tests = file.get("tests").and_then(|t| t.as_array()).cloned().unwrap_or_default();
        let started = Instant::now();
        for test in &tests {
            let text = serde_json::to_string(test.get("data").unwrap_or(&serde_json::Value::Null))?;
            let Ok(ids) = encoder.encode_for_matching(&text) else { continue };
            matcher.reset();
            for &id in ids.iter().chain([u32::MAX].iter()) {
                let entries_before = entries.len();
                for slot in matcher.prefetch(0).slots() {
                    let path = cache.build_path(fsm, &vocab, slot.state);
                    let t = Instant::now();
                    let uncertain = cache.entry(fsm, &vocab, slot.state, slot.below_min).uncertain.len();
                    let us = t.elapsed().as_secs_f64() * 1e6;
                    if slowest.as_ref().is_none_or(|s| s.0 < us) {
                        slowest = Some((us, grammar.clone(), slot.state, slot.below_min));
                    }
                    let rule = fsm.rules()[fsm.rule_of(slot.state)].name.clone();
                    // Through the rules the state calls, as the cache counts them.
                    let first = maskforge::fsm::lookahead::state_first_bytes(fsm, slot.state);
                    let first_bytes = vocab.count_starting_with(&first);
                    entries.push((
                        us,
                        name.clone(),
                        slot.state,
                        rule,
                        cause(fsm, slot.state, path),
                        first_bytes,
                        uncertain,
                    ));
                }
                let t = Instant::now();
                matcher.fill_next_token_bitmask(mask.as_words_mut());
                let us = t.elapsed().as_secs_f64() * 1e6;
                tbm.push(us);
                steps.push(us + entries[entries_before..].iter().map(|e| e.0).sum::<f64>());
                step_parts.push((name.clone(), entries_before, entries.len(), us));
                let slow = usize::from(us > 1000.0);
                match fill_time.last_mut() {
                    Some(last) if last.2 == name => {
                        last.0 += us;
                        last.1 = last.1.max(us);
                        last.3 += slow;
                    }
                    _ => fill_time.push((us, us, name.clone(), slow)),
                }
                if id == u32::MAX || !mask.get(id as usize) || !matcher.accept_token(id) {
                    break;
                }
            }
            if started.elapsed().as_secs() > 20 {
                break;
            }
        }
        maskforge_bench::allocator::collect_between_requests();
    }
    let mut slow: Vec<_> = entries.iter().filter(|e| e.0 > over_us).collect();
    slow.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (us, file, state, rule, cause, first_bytes, uncertain) in &slow {
        println!(
            "{us:>9.0} us  {cause:<10} {file} state {state} of {rule}, first-byte tokens {first_bytes}, uncertain {uncertain}"
        );
    }
    let mut per_cause: BTreeMap<&str, (usize, f64, usize, f64)> = BTreeMap::new();
    for e in &entries {
        let c = per_cause.entry(&e.4).or_default();
        c.0 += 1;
        c.1 += e.0;
        if e.0 > over_us {
            c.2 += 1;
            c.3 += e.0;
        }
    }
    println!("files {}, entries {}, fills {}", paths.len(), entries.len(), tbm.len());
    let pool = compiler.pool_stats();
    println!(
        "pool: entries {} hits / {} partial / {} misses; first-byte walks {} hits / {} misses; {} evictions",
        pool.hits, pool.partial_hits, pool.misses, pool.path_walk_hits, pool.path_walk_misses, pool.evictions
    );
    for (cause, (n, total, n_slow, slow_total)) in &per_cause {
        println!(
            "cause {cause:<10} entries {n:>6} total {:>9.1} ms | over {over_us} us: {n_slow:>5} entries, {:>9.1} ms",
            total / 1e3,
            slow_total / 1e3
        );
    }
    let costs: Vec<f64> = entries.iter().map(|e| e.0).collect();
    let s = Summary::of(&costs);
    println!(
        "entry cost us: p50 {:.0} p90 {:.0} p99 {:.0} max {:.0} total {:.1} ms",
        s.p50,
        s.p90,
        s.p99,
        s.max,
        costs.iter().sum::<f64>() / 1e3
    );
    print_times("fills after their entries", &tbm);
    print_times("steps (entries + fill)", &steps);
    let repeat: usize = flag(&args, "--repeat", "0").parse()?;
    let profiled = args.iter().position(|a| a == "--profile-state");
    if let (Some((_, grammar, state, below_min)), true, None) = (slowest.as_ref(), repeat > 0, profiled) {
        let (state, below_min) = (*state, *below_min);
        let t = Instant::now();
        for _ in 0..repeat {
            let cache = MaskCache::new(grammar.fsm(), None);
            std::hint::black_box(cache.entry(grammar.fsm(), &vocab, state, below_min));
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / repeat as f64;
        println!("slowest entry (state {state}) rebuilt {repeat} times without a pool: {us:.0} us each");
    }
    if let (Some((_, grammar, ..)), Some(state)) = (&slowest, profiled) {
        let state = StateId::new(args[state + 1].parse()?);
        let how = Profiled { cold: args.iter().any(|a| a == "--cold"), fresh: args.iter().any(|a| a == "--fresh") };
        profile_state(&compiler, grammar, &vocab, state, repeat.max(1), how);
    }
    let top_steps: usize = flag(&args, "--top-steps", "0").parse()?;
    let mut order: Vec<usize> = (0..steps.len()).collect();
    order.sort_by(|&a, &b| steps[b].total_cmp(&steps[a]));
    for &i in order.iter().take(top_steps) {
        let (file, from, to, fill) = &step_parts[i];
        let parts: Vec<String> = entries[*from..*to].iter().map(|e| format!("{} {:.0}", e.3, e.0)).collect();
        println!("step {:>7.0} us  {file}: fill {fill:.0}; entries [{}]", steps[i], parts.join(", "));
    }
    fill_time.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (total, max, file, slow) in fill_time.iter().take(10) {
        println!("fills of {file}: total {:.1} ms, slowest {max:.0} us, {slow} over 1 ms", total / 1e3);
    }
    Ok(())
}
