//! The data-driven suites: every case of `tests/data/*/*.json` (format: `tests/data/README.md`),
//! run in every configuration — each mask-cache mode (JIT, AOT, Precompute), each with a cold
//! pool (a fresh compiler) and a warm one (the same compiler compiling the case again, so that
//! its masks come from the pool) — against the exact oracle. At every step of every input the
//! cached mask equals the oracle's and agrees with `accept_token` on the next token: an accepted
//! input's tokens are all in the masks, a rejected input's first refused token is out of it.
//! The oracle's masks do not depend on the configuration (they come from the grammar's
//! language alone): each is computed once per token prefix, by the first configuration
//! reaching it, and shared by the others and by inputs with the same prefix.
//!
//! `cargo test --release --test integration data_cases -- --nocapture` prints the counts.

use std::collections::HashMap;
use std::fmt;
use std::time::Instant;

use maskforge::MaskCacheMode;
use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, TokenBitmask, Vocabulary};
use rayon::prelude::*;

use crate::support::case_file::{load_all, vocab_by_name, Case, TokenInput, Verdict};
use crate::support::reference;

const MODES: [MaskCacheMode; 3] = [MaskCacheMode::Jit, MaskCacheMode::Aot, MaskCacheMode::Precompute(2)];

/// One configuration: a cache mode, and whether the compiler's pool is cold or warm.
#[derive(Clone, Copy, Debug)]
struct Config {
    mode: MaskCacheMode,
    warm: bool,
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}, {} pool", self.mode, if self.warm { "warm" } else { "cold" })
    }
}

/// What one case (with one vocabulary) did: its failures (where: a configuration or another
/// check; why) and counters for the summary.
#[derive(Default)]
struct Outcome {
    failures: Vec<(String, String)>,
    inputs: usize,
    steps: usize,
    oracle_masks: usize,
    warm_entries: usize,
    warm_pool_entries: usize,
}

#[test]
fn every_case_in_every_configuration() {
    let start = Instant::now();
    let files = load_all();
    let runs: Vec<(&str, &Case, &str)> = files
        .iter()
        .flat_map(|f| f.cases.iter().flat_map(move |c| c.vocabs().into_iter().map(move |v| (f.name.as_str(), c, v))))
        .collect();
    let outcomes: Vec<Outcome> = runs
        .par_iter()
        .map(|&(_, case, vocab)| {
            // A panic (an input the vocabulary cannot spell, a bug) is this case's failure.
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(case, vocab)));
            run.unwrap_or_else(|panic| Outcome {
                failures: vec![("panic".into(), panic_message(&*panic).into())],
                ..Outcome::default()
            })
        })
        .collect();
    let sum = |get: fn(&Outcome) -> usize| outcomes.iter().map(get).sum::<usize>();
    let cases: usize = files.iter().map(|f| f.cases.len()).sum();
    let (warm_entries, warm_pool_entries) = (sum(|o| o.warm_entries), sum(|o| o.warm_pool_entries));
    eprintln!(
        "data cases: {} files, {cases} cases, {} case×vocabulary runs, {} inputs, {} oracle masks, {} \
         mask checks per configuration ({} configurations); warm pools served {warm_pool_entries} of {warm_entries} \
         entries; {:.1?}",
        files.len(),
        runs.len(),
        sum(|o| o.inputs),
        sum(|o| o.oracle_masks),
        sum(|o| o.steps) / (2 * MODES.len()),
        2 * MODES.len(),
        start.elapsed()
    );
    let failures: Vec<String> = (runs.iter().zip(&outcomes))
        .flat_map(|((file, case, vocab), o)| {
            o.failures.iter().map(move |(at, why)| format!("{file} › {} [{vocab}, {at}] {why}", case.name))
        })
        .collect();
    let shown: Vec<&str> = failures.iter().take(40).map(String::as_str).collect();
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), shown.join("\n"));
    // Else the warm configurations would test nothing the cold ones do not.
    assert!(warm_pool_entries > 0, "no mask of a warm configuration came from the pool");
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic.downcast_ref::<String>().map(String::as_str).or(panic.downcast_ref::<&str>().copied()).unwrap_or("?")
}

/// Runs one case with one vocabulary in every configuration.
fn run_case(case: &Case, vocab_name: &str) -> Outcome {
    let vocab = vocab_by_name(vocab_name);
    let inputs = case.token_inputs(vocab_name, &vocab);
    let mut outcome = Outcome { inputs: inputs.len(), ..Outcome::default() };
    if let Err(why) = check_reference(case) {
        outcome.failures.push(("reference recognizer".into(), why));
    }
    let mut oracle = Oracle::default();
    for mode in MODES {
        // No whole-grammar cache: the second compile must build a grammar again, from the pool.
        let config = CompilerConfig::default().cache_mode(mode).grammar_cache_len(0);
        let compiler = GrammarCompiler::new(vocab.clone(), config);
        for warm in [false, true] {
            let config = Config { mode, warm };
            let mut fail = |why: String| outcome.failures.push((config.to_string(), why));
            let grammar = match check_compile(case, &compiler) {
                Ok(Some(grammar)) => grammar,
                Ok(None) => continue,
                Err(why) => {
                    fail(why);
                    continue;
                }
            };
            for input in &inputs {
                match walk(&grammar, input, &mut oracle) {
                    Ok(steps) => outcome.steps += steps,
                    Err(why) => fail(format!("input {}: {why}", input.label)),
                }
            }
            if warm {
                let stats = grammar.mask_cache_stats();
                outcome.warm_entries += stats.entries;
                outcome.warm_pool_entries += stats.pool_hits + stats.pool_partial_hits;
            }
        }
    }
    outcome.oracle_masks = oracle.len();
    outcome
}

/// Compiles the case and checks the compile error (the first line of its message) or the
/// coverage report it expects; the grammar, when there is one.
fn check_compile(case: &Case, compiler: &GrammarCompiler) -> Result<Option<CompiledGrammar>, String> {
    let grammar = match (case.compile(compiler), &case.error) {
        (Err(e), Some(want)) => {
            // The first line says what and where; a source excerpt may follow.
            let message = e.to_string();
            let first_line = message.lines().next().unwrap_or_default();
            return if first_line == want {
                Ok(None)
            } else {
                Err(format!("compile error {message:?}, expected {want:?}"))
            };
        }
        (Err(e), None) => return Err(format!("does not compile: {e}")),
        (Ok(_), Some(want)) => return Err(format!("compiles, expected the error {want:?}")),
        (Ok(grammar), None) => grammar,
    };
    if let Some(want) = &case.relaxed_keywords {
        let report = grammar.json_schema_report().ok_or("no coverage report")?;
        if report.relaxed_keywords() != *want {
            return Err(format!("relaxed keywords {:?}, expected {want:?}", report.relaxed_keywords()));
        }
    }
    Ok(Some(grammar))
}

/// The oracle's masks of one case, by the token prefix they follow.
type Oracle<'a> = HashMap<&'a [u32], TokenBitmask>;

/// Walks `input` through a matcher of `grammar`, checking every mask against the oracle's and
/// the input's verdict. Returns the masks checked.
fn walk<'a>(grammar: &CompiledGrammar, input: &'a TokenInput, oracle: &mut Oracle<'a>) -> Result<usize, String> {
    let vocab = grammar.vocabulary();
    let mut m = GrammarMatcher::new(grammar);
    for (step, &id) in input.ids.iter().enumerate() {
        let mask = checked_mask(&mut m, &input.ids[..step], oracle)?;
        let in_mask = mask.get(id as usize);
        let accepted = m.accept_token(id);
        let token = format!("token {id} ({:?})", vocab.token_text_lossy(id));
        if in_mask != accepted {
            return Err(format!("step {step}: {token}: in the mask {in_mask}, accepted {accepted}"));
        }
        if !accepted {
            return match input.verdict {
                Verdict::Rejected => Ok(step + 1),
                _ => Err(format!("step {step}: {token} rejected")),
            };
        }
    }
    let mask = checked_mask(&mut m, &input.ids, oracle)?;
    let stop_allowed = m.stop_token_ids().iter().any(|&s| mask.get(s as usize));
    match input.verdict {
        Verdict::Rejected => Err("every token accepted, expected a rejection".into()),
        Verdict::Accepted if !(m.can_terminate() && stop_allowed) => Err("accepted, but the grammar cannot end".into()),
        Verdict::Prefix if m.can_terminate() => Err("accepted and can end, expected a prefix".into()),
        _ => Ok(input.ids.len() + 1),
    }
}

/// The cached mask after `prefix` (the matcher's state), once checked equal to the oracle's
/// (computed now when `oracle` does not have it yet).
fn checked_mask<'a>(
    m: &mut GrammarMatcher,
    prefix: &'a [u32],
    oracle: &mut Oracle<'a>,
) -> Result<TokenBitmask, String> {
    let n = m.grammar().vocabulary().vocab_size();
    let mut cached = TokenBitmask::new(n);
    m.fill_next_token_bitmask(cached.as_words_mut());
    let exact = oracle.entry(prefix).or_insert_with(|| {
        let mut exact = TokenBitmask::new(n);
        m.fill_next_token_bitmask_exact(exact.as_words_mut()).expect("a mask of the vocabulary's size");
        exact
    });
    let step = prefix.len();
    if cached != *exact {
        let vocab = m.grammar().vocabulary();
        return Err(format!(
            "step {step}: the cached mask differs from the oracle's: only cached {}; only oracle {}",
            sample_ids(vocab, &cached, exact),
            sample_ids(vocab, exact, &cached)
        ));
    }
    Ok(cached)
}

/// A few tokens allowed by `a` and not by `b`, with their texts.
fn sample_ids(vocab: &Vocabulary, a: &TokenBitmask, b: &TokenBitmask) -> String {
    let ids: Vec<usize> = a.allowed_ids().filter(|&i| !b.get(i)).collect();
    let shown: Vec<String> =
        ids.iter().take(5).map(|&i| format!("{i} {:?}", vocab.token_text_lossy(i as u32))).collect();
    format!("{} tokens [{}]", ids.len(), shown.join(", "))
}

/// For an EBNF case the independent recognizer can read: it accepts exactly the inputs whose
/// verdict is accepted.
fn check_reference(case: &Case) -> Result<(), String> {
    let Some(ebnf) = case.ebnf() else { return Ok(()) };
    let Ok(grammar) = maskforge::parse_ebnf(&ebnf, "root") else { return Ok(()) };
    if !reference::reads(&grammar) {
        return Ok(());
    }
    for (bytes, verdict) in case.byte_inputs() {
        if reference::recognizes(&grammar, &bytes) != (verdict == Verdict::Accepted) {
            return Err(format!("disagrees on {:?} ({verdict:?})", String::from_utf8_lossy(&bytes)));
        }
    }
    Ok(())
}
