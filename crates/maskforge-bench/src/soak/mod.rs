//! The soak: a server's long run in miniature, to show that nothing drifts (the library side of
//! the `soak` program).
//!
//! `threads` workers share ONE [`GrammarCompiler`] (its cross-grammar pool, whole-grammar
//! cache, rule-automaton cache and schema-fragment cache, with the budgets the caller set) for
//! a fixed time. Each repeatedly draws a request from a [`Workload`] — a random MaskBench
//! schema with its valid instance, or 5–50 random tools around a ground-truth call — compiles
//! it and walks a matcher along the instance ([`walk::Walker`]): a mask before every token,
//! every K-th mask (counted per worker) compared with the exact oracle, rollbacks with replays
//! and forks now and then. Every `report_every` the main thread takes a [`Snapshot`]
//! (throughput, RSS, pool bytes and evictions, cache sizes, mismatches, errors by kind).
//!
//! A *mismatch* is a bug: a cached mask that differs from the oracle's, a token the mask
//! allows but `accept_token` refuses, a replayed or forked mask that differs from the first
//! one. An *error* is an outcome a server sees for real inputs: a schema that does not compile
//! (by error kind), a compile over its deadline, a valid instance the grammar's policy rejects,
//! a panic caught by the library (a poisoned matcher), a panic in a worker (caught here).
//!
//! At the end the workers are told to stop and any compile in flight is cancelled through a
//! [`CancelToken`] shared by the workers' compiler handles (an interruption then is not an
//! error).

pub mod report;
pub mod walk;
pub mod workload;

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;

use maskforge::{CancelToken, Error, GrammarCompiler, SchemaErrorKind, TextEncoder};
pub use report::{Counters, Mismatch, RssReport, Snapshot, SoakSummary};
pub use walk::{Churn, WalkEnd, Walker};
pub use workload::{Draw, Request, SchemaCase, Workload};

/// How a soak runs (the compiler's budgets are the compiler's own configuration).
#[derive(Clone, Debug)]
pub struct SoakConfig {
    /// Worker threads.
    pub threads: usize,
    /// How long the workers run.
    pub duration: Duration,
    /// Compare every K-th mask of a worker with the exact oracle (0: never).
    pub check_every: u64,
    /// The interval between snapshots.
    pub report_every: Duration,
    /// The share of tool-calling requests (the rest are MaskBench schemas).
    pub tool_share: f64,
    /// Rollbacks and forks.
    pub churn: Churn,
    /// Walk at most this many tokens of an instance (long instances are cut there).
    pub max_tokens: usize,
    /// Seed of every random choice (worker `i` uses `seed + i`).
    pub seed: u64,
}

impl Default for SoakConfig {
    fn default() -> Self {
        SoakConfig {
            threads: 2,
            duration: Duration::from_secs(60),
            check_every: 64,
            report_every: Duration::from_secs(30),
            tool_share: 0.5,
            churn: Churn { rollback: 0.02, fork: 0.01 },
            max_tokens: 2_000,
            seed: 0,
        }
    }
}

/// Runs a soak on `compiler`, calling `on_report` with each periodic snapshot (not the final
/// one, which ends the summary's list).
pub fn run(
    compiler: &GrammarCompiler,
    encoder: &TextEncoder,
    workload: &Workload,
    config: &SoakConfig,
    mut on_report: impl FnMut(&Snapshot),
) -> SoakSummary {
    let counters = Counters::default();
    let stop = AtomicBool::new(false);
    let cancel = CancelToken::new();
    let draw = Draw::new(workload, config.tool_share);
    let start_rss = report::rss_mib().0;
    let start = Instant::now();
    let mut snapshots = Vec::new();
    std::thread::scope(|scope| {
        for i in 0..config.threads {
            let worker = Worker {
                compiler: compiler.with_cancel_token(cancel.clone()),
                encoder,
                draw: &draw,
                config,
                counters: &counters,
                stop: &stop,
            };
            let rng = StdRng::seed_from_u64(config.seed.wrapping_add(i as u64));
            scope.spawn(move || worker.run(rng));
        }
        let mut previous = Snapshot::default();
        let end = start + config.duration;
        loop {
            let next = start + config.report_every * (snapshots.len() as u32 + 1);
            if next >= end {
                break;
            }
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
            let snapshot = Snapshot::take(start.elapsed(), &counters, compiler, &previous);
            on_report(&snapshot);
            previous = snapshot.clone();
            snapshots.push(snapshot);
        }
        std::thread::sleep(end.saturating_duration_since(Instant::now()));
        stop.store(true, Ordering::Relaxed);
        cancel.cancel();
    });
    let seconds = start.elapsed().as_secs_f64();
    let previous = snapshots.last().cloned().unwrap_or_default();
    snapshots.push(Snapshot::take(start.elapsed(), &counters, compiler, &previous));
    summarize(config, compiler, &counters, start_rss, seconds, snapshots)
}

fn summarize(
    config: &SoakConfig,
    compiler: &GrammarCompiler,
    counters: &Counters,
    start_rss: f64,
    seconds: f64,
    snapshots: Vec<Snapshot>,
) -> SoakSummary {
    let load = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    let per_s = |n: u64| n as f64 / seconds.max(1e-9);
    SoakSummary {
        threads: config.threads,
        seconds,
        check_every: config.check_every,
        pool_budget: compiler.pool_stats().budget,
        requests: load(&counters.requests),
        completed: load(&counters.completed),
        tokens: load(&counters.tokens),
        masks: load(&counters.masks),
        masks_per_s: per_s(load(&counters.masks)),
        requests_per_s: per_s(load(&counters.requests)),
        oracle_checks: load(&counters.oracle_checks),
        rollbacks: load(&counters.rollbacks),
        forks: load(&counters.forks),
        mismatches: counters.mismatch_count(),
        mismatch_list: counters.kept_mismatches(),
        errors: counters.errors(),
        error_requests: counters.error_requests(),
        rss: RssReport::of(start_rss, &snapshots, seconds),
        snapshots,
    }
}

/// One worker thread: its compiler handle (shared caches, the soak's cancel token) and what it
/// draws from.
struct Worker<'a> {
    compiler: GrammarCompiler,
    encoder: &'a TextEncoder,
    draw: &'a Draw<'a>,
    config: &'a SoakConfig,
    counters: &'a Counters,
    stop: &'a AtomicBool,
}

impl Worker<'_> {
    fn run(&self, rng: StdRng) {
        let vocab_size = self.compiler.vocabulary().vocab_size();
        let mut walker =
            Walker::new(self.counters, self.stop, self.config.check_every, self.config.churn, rng, vocab_size);
        while !self.stop.load(Ordering::Relaxed) {
            let request = self.draw.draw(walker.rng());
            Counters::bump(&self.counters.requests);
            // A panic here is a bug of the soak or one the library let through: count it and go
            // on, as a server's request handler would.
            let label = request.label();
            let served = std::panic::catch_unwind(AssertUnwindSafe(|| self.serve(&request, &label, &mut walker)));
            if served.is_err() {
                self.counters.error("worker_panic", &label);
            }
        }
    }

    fn serve(&self, request: &Request<'_>, label: &str, walker: &mut Walker<'_>) {
        let grammar = match request.compile(&self.compiler) {
            Ok(g) => g,
            Err(e) => {
                let stopping = self.stop.load(Ordering::Relaxed) && matches!(e, Error::Interrupted(_));
                if !stopping {
                    self.counters.error(&format!("compile_{}", error_kind(&e)), label);
                }
                return;
            }
        };
        let Ok(mut ids) = self.encoder.encode_for_matching(&request.text()) else {
            self.counters.error("tokenize", label);
            return;
        };
        let cut = ids.len() > self.config.max_tokens;
        ids.truncate(self.config.max_tokens);
        let end = walker.walk(&grammar, &ids, label);
        match end.error_kind() {
            // A cut instance need not end where it was cut.
            Some(_) if cut && end == WalkEnd::CannotEnd => Counters::bump(&self.counters.completed),
            Some(kind) => self.counters.error(kind, label),
            None if end == WalkEnd::Completed => Counters::bump(&self.counters.completed),
            None => {}
        }
    }
}

/// A short name of an error's kind, for the error counts.
fn error_kind(e: &Error) -> &'static str {
    match e {
        Error::Grammar(_) => "grammar",
        Error::Ebnf(_) => "ebnf",
        Error::Vocab(_) => "vocab",
        Error::Schema(s) => match s.kind() {
            SchemaErrorKind::Invalid(_) => "schema_invalid",
            SchemaErrorKind::UnresolvableRef(_) => "schema_unresolvable_ref",
            SchemaErrorKind::Unsatisfiable(_) => "schema_unsatisfiable",
            SchemaErrorKind::Unsupported { .. } => "schema_unsupported",
            SchemaErrorKind::TooLarge(_) => "schema_too_large",
            _ => "schema",
        },
        Error::Regex(_) => "regex",
        Error::Interrupted(_) => "interrupted",
        Error::Internal(_) => "internal",
        _ => "other",
    }
}
