//! The soak's counters (shared by the worker threads), its periodic snapshots and its summary.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

use maskforge::GrammarCompiler;

/// Mismatches kept in full (the count goes on past it).
const KEPT_MISMATCHES: usize = 100;
/// Requests named per error kind (the first ones), to look into.
const NAMED_PER_ERROR: usize = 5;

/// A disagreement the soak found: a bug, unlike an [error](Counters::error).
#[derive(Clone, Debug, Serialize)]
pub struct Mismatch {
    /// The request (MaskBench file, or tool case and tool ids).
    pub label: String,
    /// What disagreed: `oracle` (cached mask vs the exact one), `accept` (a token the mask
    /// allows is not accepted, or one it forbids is), `rollback` (a mask after a rollback and replay differs from the
    /// one first computed at that step), `fork` (a matcher's mask changed after a fork of it
    /// moved on).
    pub kind: &'static str,
    /// Tokens accepted before the mask (in the main matcher, a replay or a fork).
    pub step: usize,
    /// The instance's token at that step (none at its end).
    pub token: Option<u32>,
    /// That token's text.
    pub token_text: String,
    /// The details (first differing token, ...).
    pub detail: String,
}

/// Counters every worker adds to.
#[derive(Debug, Default)]
pub struct Counters {
    /// Requests started.
    pub requests: AtomicU64,
    /// Requests walked to the end of their instance and able to end there.
    pub completed: AtomicU64,
    /// Instance tokens accepted (replays and forks not counted).
    pub tokens: AtomicU64,
    /// Masks filled by the engine (replays and forks included, the oracle's not).
    pub masks: AtomicU64,
    /// Masks compared with the exact oracle.
    pub oracle_checks: AtomicU64,
    /// Rollbacks (each followed by a replay of the rolled-back tokens).
    pub rollbacks: AtomicU64,
    /// Forks (each moved one token away from its parent).
    pub forks: AtomicU64,
    mismatch_count: AtomicU64,
    mismatches: Mutex<Vec<Mismatch>>,
    errors: Mutex<BTreeMap<String, u64>>,
    error_requests: Mutex<BTreeMap<String, Vec<String>>>,
}

impl Counters {
    /// Adds one to `counter`.
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an error of `kind`: an outcome that is not a bug (a schema that does not compile,
    /// a compile over its deadline, a valid instance the grammar's policy rejects, ...).
    /// `request` labels the request (the first few per kind are kept).
    pub fn error(&self, kind: &str, request: &str) {
        *self.errors.lock().unwrap_or_else(|p| p.into_inner()).entry(kind.to_owned()).or_default() += 1;
        let mut named = self.error_requests.lock().unwrap_or_else(|p| p.into_inner());
        let names = named.entry(kind.to_owned()).or_default();
        if names.len() < NAMED_PER_ERROR {
            names.push(request.to_owned());
        }
    }

    /// Records a mismatch and prints it to stderr at once.
    pub fn mismatch(&self, m: Mismatch) {
        eprintln!(
            "MISMATCH {}: {} at step {}, token {:?} {:?}: {}",
            m.kind, m.label, m.step, m.token, m.token_text, m.detail
        );
        self.mismatch_count.fetch_add(1, Ordering::Relaxed);
        let mut kept = self.mismatches.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < KEPT_MISMATCHES {
            kept.push(m);
        }
    }

    /// Mismatches found so far.
    pub fn mismatch_count(&self) -> u64 {
        self.mismatch_count.load(Ordering::Relaxed)
    }

    /// The first mismatches (at most 100).
    pub fn kept_mismatches(&self) -> Vec<Mismatch> {
        self.mismatches.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Errors by kind so far.
    pub fn errors(&self) -> BTreeMap<String, u64> {
        self.errors.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The first requests (at most 5) of each error kind.
    pub fn error_requests(&self) -> BTreeMap<String, Vec<String>> {
        self.error_requests.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The process's resident set size and its peak, in MiB (`VmRSS`, `VmHWM` of
/// `/proc/self/status`; zero where there is none).
pub fn rss_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The machine's load average over the last minute (`/proc/loadavg`; zero where there is none):
/// a soak's throughput means little without it on a shared machine.
pub fn load_average() -> f64 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

/// The state of a soak at one moment (one periodic report line).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Snapshot {
    /// Seconds since the start.
    pub elapsed_s: f64,
    /// Requests started.
    pub requests: u64,
    /// Masks filled.
    pub masks: u64,
    /// Masks per second since the previous snapshot.
    pub masks_per_s: f64,
    /// Masks compared with the oracle.
    pub oracle_checks: u64,
    /// Resident set size, MiB.
    pub rss_mib: f64,
    /// Peak resident set size so far, MiB.
    pub peak_rss_mib: f64,
    /// The machine's load average (1 minute).
    pub load_average: f64,
    /// Bytes the cross-grammar pool holds.
    pub pool_bytes: usize,
    /// Items the pool holds.
    pub pool_entries: usize,
    /// Items the pool evicted so far.
    pub pool_evictions: u64,
    /// Whole grammars cached.
    pub grammars_cached: usize,
    /// Rule automata cached, and their states.
    pub rule_fsms_cached: (usize, usize),
    /// Rule automata evicted so far.
    pub rule_fsm_evictions: u64,
    /// JSON Schema fragments cached.
    pub fragments_cached: usize,
    /// Mismatches so far.
    pub mismatches: u64,
    /// Errors by kind so far.
    pub errors: BTreeMap<String, u64>,
}

impl Snapshot {
    /// Reads the counters and the compiler's caches; `previous` gives the masks/s interval.
    pub fn take(elapsed: Duration, counters: &Counters, compiler: &GrammarCompiler, previous: &Snapshot) -> Snapshot {
        let masks = counters.masks.load(Ordering::Relaxed);
        let elapsed_s = elapsed.as_secs_f64();
        let interval = elapsed_s - previous.elapsed_s;
        let (rss, peak) = rss_mib();
        let pool = compiler.pool_stats();
        let rules = compiler.rule_fsm_cache_stats();
        Snapshot {
            elapsed_s,
            requests: counters.requests.load(Ordering::Relaxed),
            masks,
            masks_per_s: if interval > 0.0 { (masks - previous.masks) as f64 / interval } else { 0.0 },
            oracle_checks: counters.oracle_checks.load(Ordering::Relaxed),
            rss_mib: rss,
            peak_rss_mib: peak,
            load_average: load_average(),
            pool_bytes: pool.bytes,
            pool_entries: pool.entries,
            pool_evictions: pool.evictions,
            grammars_cached: compiler.grammar_cache_stats().len,
            rule_fsms_cached: (rules.entries, rules.states),
            rule_fsm_evictions: rules.evictions,
            fragments_cached: compiler.schema_fragment_stats().entries,
            mismatches: counters.mismatch_count(),
            errors: counters.errors(),
        }
    }

    /// The one-line report.
    pub fn line(&self) -> String {
        let errors: Vec<String> = self.errors.iter().map(|(k, n)| format!("{k}={n}")).collect();
        format!(
            "{:>7.0}s req {:>7} masks {:>10} ({:>7.0}/s) oracle {:>7} rss {:>7.1} MiB (peak {:>7.1}) pool {:>6.1} MiB \
             {:>6} items {:>7} evicted | grammars {:>3} rules {:>5}/{:>7} st ({} evicted) fragments {:>4} | \
             mismatches {} | errors {} | load {:.1}",
            self.elapsed_s,
            self.requests,
            self.masks,
            self.masks_per_s,
            self.oracle_checks,
            self.rss_mib,
            self.peak_rss_mib,
            self.pool_bytes as f64 / (1u64 << 20) as f64,
            self.pool_entries,
            self.pool_evictions,
            self.grammars_cached,
            self.rule_fsms_cached.0,
            self.rule_fsms_cached.1,
            self.rule_fsm_evictions,
            self.fragments_cached,
            self.mismatches,
            if errors.is_empty() { "none".to_owned() } else { errors.join(" ") },
            self.load_average,
        )
    }
}

/// RSS at the start and the largest RSS seen in the first and in the last window of the run
/// (10 minutes, or a third of a shorter run): a plateau shows as two close maxima.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RssReport {
    /// RSS when the workers started (workload and tokenizer loaded), MiB.
    pub start_mib: f64,
    /// The window, seconds.
    pub window_s: f64,
    /// Largest RSS of the snapshots in the first window, MiB.
    pub first_window_max_mib: f64,
    /// Largest RSS of the snapshots in the last window, MiB.
    pub last_window_max_mib: f64,
    /// Peak RSS of the process (`VmHWM`), MiB.
    pub peak_mib: f64,
}

impl RssReport {
    /// From the snapshots of a run of `total` seconds.
    pub fn of(start_mib: f64, snapshots: &[Snapshot], total_s: f64) -> RssReport {
        let window_s = (total_s / 3.0).min(600.0);
        let max_in = |keep: &dyn Fn(f64) -> bool| {
            snapshots.iter().filter(|s| keep(s.elapsed_s)).map(|s| s.rss_mib).fold(0.0, f64::max)
        };
        RssReport {
            start_mib,
            window_s,
            first_window_max_mib: max_in(&|t| t <= window_s),
            last_window_max_mib: max_in(&|t| t >= total_s - window_s),
            peak_mib: snapshots.last().map_or(0.0, |s| s.peak_rss_mib),
        }
    }
}

/// The result of a soak (`--json`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SoakSummary {
    /// Worker threads.
    pub threads: usize,
    /// Wall time, seconds.
    pub seconds: f64,
    /// Every K-th mask was checked against the oracle.
    pub check_every: u64,
    /// The pool's byte budget.
    pub pool_budget: usize,
    /// Requests started.
    pub requests: u64,
    /// Requests walked to the end.
    pub completed: u64,
    /// Instance tokens accepted.
    pub tokens: u64,
    /// Masks filled.
    pub masks: u64,
    /// Masks per second over the whole run.
    pub masks_per_s: f64,
    /// Requests per second over the whole run.
    pub requests_per_s: f64,
    /// Masks compared with the oracle.
    pub oracle_checks: u64,
    /// Rollbacks.
    pub rollbacks: u64,
    /// Forks.
    pub forks: u64,
    /// Mismatches (a bug each).
    pub mismatches: u64,
    /// The first mismatches in full.
    pub mismatch_list: Vec<Mismatch>,
    /// Errors by kind.
    pub errors: BTreeMap<String, u64>,
    /// The first requests of each error kind.
    pub error_requests: BTreeMap<String, Vec<String>>,
    /// RSS over the run.
    pub rss: RssReport,
    /// Every periodic snapshot, and the final one.
    pub snapshots: Vec<Snapshot>,
}

impl SoakSummary {
    /// The closing lines of the report.
    pub fn text(&self) -> String {
        let errors: Vec<String> = self.errors.iter().map(|(k, n)| format!("{k}={n}")).collect();
        let last = self.snapshots.last().cloned().unwrap_or_default();
        format!(
            "soak: {} threads, {:.0} s: {} requests ({:.1}/s, {} completed), {} tokens, {} masks ({:.0}/s), {} \
             checked against the oracle (every {}), {} rollbacks, {} forks\n\
             pool: {:.1} MiB of {:.1} MiB, {} evictions; RSS: {:.1} MiB at the start, max {:.1} MiB in the first \
             {:.0} s, max {:.1} MiB in the last {:.0} s, peak {:.1} MiB\n\
             mismatches: {}; errors: {}",
            self.threads,
            self.seconds,
            self.requests,
            self.requests_per_s,
            self.completed,
            self.tokens,
            self.masks,
            self.masks_per_s,
            self.oracle_checks,
            self.check_every,
            self.rollbacks,
            self.forks,
            last.pool_bytes as f64 / (1u64 << 20) as f64,
            self.pool_budget as f64 / (1u64 << 20) as f64,
            last.pool_evictions,
            self.rss.start_mib,
            self.rss.first_window_max_mib,
            self.rss.window_s,
            self.rss.last_window_max_mib,
            self.rss.window_s,
            self.rss.peak_mib,
            self.mismatches,
            if errors.is_empty() { "none".to_owned() } else { errors.join(" ") },
        )
    }
}
