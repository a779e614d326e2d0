//! The MaskBench runner (the library side of `maskforge maskbench`).
//!
//! A MaskBench file is `{description, meta, schema, tests: [{description, valid, data}]}`
//! (guidance-ai/jsonschemabench). Per file, [`run_file`]:
//!
//! 1. compiles the schema and fills the first mask: the time to first mask (TTFM);
//! 2. per test, serializes `data` compactly (`json.dumps(data, separators=(",", ":"),
//!    ensure_ascii=False)`: no whitespace, non-ASCII kept), tokenizes it, and for every token
//!    fills the mask (the time between masks, TBM), checks the token is allowed and accepts
//!    it; at the end, checks that the stop token is allowed;
//! 3. scores the file: a valid instance passes when every token was allowed and it can end,
//!    an invalid one when some token was forbidden or it cannot end. The outcome is
//!    [`Outcome::ValidationError`] if a valid instance failed, else
//!    [`Outcome::InvalidationError`] if an invalid one passed, else [`Outcome::Passing`].
//!
//! The clock is checked after compiling, between tests and between tokens: a file over the
//! time limit ends as [`Outcome::Timeout`], never as a hang. A single compile is not
//! interrupted, so one pathological compile can overrun the limit (it is then reported as a
//! timeout once it returns).
//!
//! With [`MaskBenchConfig::masks`] off, tokens are checked with `accept_token` and the end
//! with `can_terminate` only — the same verdicts, since masks agree with `accept_token` by
//! construction (and by the oracle-equality tests) — which is what CI uses while masks are
//! computed by the exact oracle (milliseconds per step).
//!
//! Schemas are compiled in the spec-compliant configuration
//! ([`JsonSchemaOptions::spec_compliant`]: strict mode off, any whitespace), as MaskBench
//! instances follow the JSON Schema specification.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::stats::Summary;
use maskforge::GrammarCompiler;
use maskforge::GrammarMatcher;
use maskforge::Prefetch;
use maskforge::TextEncoder;
use maskforge::TokenBitmask;
use maskforge::{JsonSchemaOptions, SchemaErrorKind};

/// How [`run_file`] runs.
#[derive(Clone, Debug)]
pub struct MaskBenchConfig {
    /// The per-file time limit.
    pub limit: Duration,
    /// Fill a mask before every token (and measure it); when `false`, only `accept_token`
    /// and `can_terminate` are used, and no TBM is recorded.
    pub masks: bool,
    /// The JSON Schema options (default: spec-compliant).
    pub options: JsonSchemaOptions,
    /// Simulate a model's forward pass of this long before every mask (the host's time while
    /// the GPU runs), during which a background thread builds the entries that
    /// [`GrammarMatcher::prefetch`] lists; `None`: masks back to back, no background work.
    pub forward: Option<Duration>,
    /// How many bytes ahead a prefetch looks (with [`forward`](Self::forward)).
    pub prefetch_bytes: usize,
}

impl Default for MaskBenchConfig {
    fn default() -> Self {
        MaskBenchConfig {
            limit: Duration::from_secs(60),
            masks: true,
            options: JsonSchemaOptions::spec_compliant(),
            forward: None,
            prefetch_bytes: 8,
        }
    }
}

/// The outcome of one file, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every valid instance accepted, every invalid one rejected.
    Passing,
    /// An invalid instance was accepted.
    InvalidationError,
    /// A valid instance was rejected.
    ValidationError,
    /// The time limit was reached.
    Timeout,
    /// The schema did not compile (an unsatisfiable schema is `Passing` when no test instance
    /// is valid, and `ValidationError` otherwise).
    CompileError,
}

impl Outcome {
    /// The name used in reports (`passing`, `compile_error`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Passing => "passing",
            Outcome::InvalidationError => "invalidation_error",
            Outcome::ValidationError => "validation_error",
            Outcome::Timeout => "timeout",
            Outcome::CompileError => "compile_error",
        }
    }
}

/// The result of one file (one line of `--json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileResult {
    /// The file name.
    pub file: String,
    /// The outcome.
    pub outcome: Outcome,
    /// Time to first mask in microseconds (compile, plus the first mask when masks are on).
    pub ttfm_us: Option<f64>,
    /// Time of each mask in microseconds.
    pub tbm_us: Vec<f64>,
    /// Tokens checked.
    pub tokens: usize,
    /// What went wrong (the first failing test, or the compile error).
    pub error: Option<String>,
    /// The keywords the grammar relaxes (from the coverage report), sorted.
    #[serde(default)]
    pub relaxed: Vec<String>,
}

/// Totals over files (`--summary-json`).
#[derive(Clone, Debug, Serialize)]
pub struct MaskBenchSummary {
    /// Files run.
    pub schemas: usize,
    /// Files per outcome.
    pub passing: usize,
    /// See [`Outcome::CompileError`].
    pub compile_error: usize,
    /// See [`Outcome::Timeout`].
    pub timeout: usize,
    /// See [`Outcome::ValidationError`].
    pub validation_error: usize,
    /// See [`Outcome::InvalidationError`].
    pub invalidation_error: usize,
    /// Tokens checked.
    pub tokens: usize,
    /// TTFM percentiles (µs).
    pub ttfm_us: Summary,
    /// TBM percentiles (µs).
    pub tbm_us: Summary,
}

/// Summarizes file results.
pub fn summarize(results: &[FileResult]) -> MaskBenchSummary {
    let n = |o: Outcome| results.iter().filter(|r| r.outcome == o).count();
    let ttfm: Vec<f64> = results.iter().filter_map(|r| r.ttfm_us).collect();
    let tbm: Vec<f64> = results.iter().flat_map(|r| r.tbm_us.iter().copied()).collect();
    MaskBenchSummary {
        schemas: results.len(),
        passing: n(Outcome::Passing),
        compile_error: n(Outcome::CompileError),
        timeout: n(Outcome::Timeout),
        validation_error: n(Outcome::ValidationError),
        invalidation_error: n(Outcome::InvalidationError),
        tokens: results.iter().map(|r| r.tokens).sum(),
        ttfm_us: Summary::of(&ttfm),
        tbm_us: Summary::of(&tbm),
    }
}

/// The compact serialization MaskBench instances are checked in.
pub fn compact_json(data: &Value) -> String {
    serde_json::to_string(data).expect("a JSON value serializes")
}

/// Runs one MaskBench file (`file` is its parsed content; `name` labels the result).
pub fn run_file(
    compiler: &GrammarCompiler,
    encoder: &TextEncoder,
    name: &str,
    file: &Value,
    config: &MaskBenchConfig,
) -> FileResult {
    let mut result = FileResult {
        file: name.to_string(),
        outcome: Outcome::Passing,
        ttfm_us: None,
        tbm_us: Vec::new(),
        tokens: 0,
        error: None,
        relaxed: Vec::new(),
    };
    let start = Instant::now();
    let Some(schema) = file.get("schema") else {
        result.outcome = Outcome::CompileError;
        result.error = Some("no `schema` in the file".into());
        return result;
    };
    let grammar = match compiler.compile_json_schema(schema, &config.options) {
        Ok(g) => g,
        Err(e) => {
            // An unsatisfiable schema is a correct verdict, not a failure, when no test
            // instance is valid: the empty language rejects every instance, as it should.
            let unsatisfiable =
                matches!(&e, maskforge::Error::Schema(s) if matches!(s.kind(), SchemaErrorKind::Unsatisfiable(_)));
            let tests = file.get("tests").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let any_valid = tests.iter().any(|t| t.get("valid").and_then(Value::as_bool).unwrap_or(true));
            result.outcome = match (unsatisfiable, any_valid) {
                (true, false) => Outcome::Passing,
                (true, true) => Outcome::ValidationError,
                (false, _) => Outcome::CompileError,
            };
            result.error = Some(e.to_string());
            return result;
        }
    };
    if let Some(report) = grammar.json_schema_report() {
        result.relaxed = report.relaxed_keywords().into_iter().map(String::from).collect();
    }
    let vocab = grammar.vocabulary().clone();
    let mut matcher = GrammarMatcher::new(&grammar);
    let ahead = config.forward.filter(|_| config.masks).map(|forward| Ahead::start(forward, config.prefetch_bytes));
    let mut mask = TokenBitmask::new(vocab.vocab_size());
    if config.masks {
        matcher.fill_next_token_bitmask(mask.as_words_mut());
    }
    result.ttfm_us = Some(start.elapsed().as_secs_f64() * 1e6);
    let timed_out = |r: &mut FileResult| {
        if start.elapsed() > config.limit {
            r.outcome = Outcome::Timeout;
            r.error = Some(format!("over the time limit of {:?}", config.limit));
            true
        } else {
            false
        }
    };
    if timed_out(&mut result) {
        return result;
    }
    let stop = matcher.stop_token_ids().first().copied();
    let mut validation: Option<String> = None;
    let mut invalidation: Option<String> = None;
    let tests = file.get("tests").and_then(Value::as_array).cloned().unwrap_or_default();
    for (t, test) in tests.iter().enumerate() {
        if timed_out(&mut result) {
            return result;
        }
        let valid = test.get("valid").and_then(Value::as_bool).unwrap_or(true);
        let text = compact_json(test.get("data").unwrap_or(&Value::Null));
        let ids = match encoder.encode_for_matching(&text) {
            Ok(ids) => ids,
            Err(e) => {
                validation.get_or_insert(format!("test {t}: cannot tokenize: {e}"));
                continue;
            }
        };
        matcher.reset();
        let mut accepted_all = true;
        let mut failed_at = None;
        for (i, &id) in ids.iter().enumerate() {
            if i % 64 == 0 && timed_out(&mut result) {
                return result;
            }
            result.tokens += 1;
            let allowed = if config.masks {
                if let Some(ahead) = &ahead {
                    ahead.forward_pass(&mut matcher);
                }
                let t0 = Instant::now();
                matcher.fill_next_token_bitmask(mask.as_words_mut());
                result.tbm_us.push(t0.elapsed().as_secs_f64() * 1e6);
                let allowed = mask.get(id as usize);
                if allowed && !matcher.accept_token(id) {
                    validation.get_or_insert(format!("test {t}: token {i} allowed by the mask but not accepted"));
                }
                allowed
            } else {
                matcher.accept_token(id)
            };
            if !allowed {
                accepted_all = false;
                failed_at = Some(i);
                break;
            }
        }
        let ends = accepted_all
            && if config.masks {
                if let Some(ahead) = &ahead {
                    ahead.forward_pass(&mut matcher);
                }
                let t0 = Instant::now();
                matcher.fill_next_token_bitmask(mask.as_words_mut());
                result.tbm_us.push(t0.elapsed().as_secs_f64() * 1e6);
                stop.is_some_and(|s| mask.get(s as usize))
            } else {
                matcher.can_terminate()
            };
        let passed = accepted_all && ends;
        if valid && !passed {
            let why = match failed_at {
                Some(i) => {
                    let prefix = vocab.concat_bytes(&ids[..i]);
                    format!(
                        "test {t}: valid instance rejected at token {i} ({:?}) after {:?}",
                        String::from_utf8_lossy(vocab.token_bytes(ids[i])),
                        String::from_utf8_lossy(&prefix[prefix.len().saturating_sub(80)..])
                    )
                }
                None => format!("test {t}: valid instance cannot end"),
            };
            validation.get_or_insert(why);
        } else if !valid && passed {
            invalidation.get_or_insert(format!("test {t}: invalid instance accepted: {}", truncate(&text, 200)));
        }
    }
    if let Some(v) = validation {
        result.outcome = Outcome::ValidationError;
        result.error = Some(v);
    } else if let Some(v) = invalidation {
        result.outcome = Outcome::InvalidationError;
        result.error = Some(v);
    }
    result
}

/// The simulated forward pass of [`MaskBenchConfig::forward`] and the background thread that
/// builds prefetched entries meanwhile (it ends when this is dropped).
struct Ahead {
    jobs: mpsc::Sender<(u64, Prefetch)>,
    /// The number of the latest prefetch: the thread drops older ones.
    latest: Arc<AtomicU64>,
    forward: Duration,
    bytes: usize,
}

impl Ahead {
    fn start(forward: Duration, bytes: usize) -> Ahead {
        let (jobs, queue) = mpsc::channel::<(u64, Prefetch)>();
        let latest = Arc::new(AtomicU64::new(0));
        let current = latest.clone();
        std::thread::spawn(move || {
            for (n, prefetch) in queue {
                prefetch.run_while(|| current.load(Ordering::Relaxed) == n);
            }
        });
        Ahead { jobs, latest, forward, bytes }
    }

    /// What a host does between `accept_token` and the next fill while the GPU runs: hand the
    /// prefetch to the background thread, then wait out the forward pass.
    fn forward_pass(&self, matcher: &mut GrammarMatcher) {
        let started = Instant::now();
        let n = self.latest.fetch_add(1, Ordering::Relaxed) + 1;
        let prefetch = matcher.prefetch(self.bytes);
        if !prefetch.is_empty() {
            // The thread lives as long as `self`: sending cannot fail.
            let _ = self.jobs.send((n, prefetch));
        }
        std::thread::sleep(self.forward.saturating_sub(started.elapsed()));
    }
}

fn truncate(s: &str, n: usize) -> &str {
    let mut end = s.len().min(n);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
