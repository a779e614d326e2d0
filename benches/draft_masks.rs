//! Draft masks for speculative decoding (`GrammarMatcher::fill_draft_bitmasks`) against the
//! same work done one step at a time: at every k-th position of a valid instance of each
//! MaskBench schema, the masks for a draft of the next k tokens in one call, versus k single
//! steps (fill, accept) — the cost a verifier would pay without the draft call — and versus the
//! same k + 1 masks stepped by hand with the rollback the draft call does.
//!
//! `cargo bench --bench draft_masks -- [--tokenizer llama3] [--schemas 32] [--k 8] [--steps 48]`
//!
//! A first pass builds the JIT cache entries the walks need, so the timed passes compare warm
//! steps. The two methods alternate per position, so drift on a shared machine hits both.

use std::time::Instant;

use maskforge::tokenizer::load_tokenizer;
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, TokenBitmask};
use maskforge_bench::stats::Summary;

mod common;
#[path = "common/walks.rs"]
mod walks;
use common::arg;
use walks::{walks, Walk};

/// Microseconds per draft position for each way of computing its masks.
#[derive(Default)]
struct Times {
    draft: Vec<f64>,
    single_steps: Vec<f64>,
    by_hand: Vec<f64>,
}

fn main() {
    let tokenizer = arg("--tokenizer", "llama3");
    let n: usize = arg("--schemas", "32").parse().expect("--schemas takes a number");
    let k: usize = arg("--k", "8").parse().expect("--k takes a number");
    let steps: usize = arg("--steps", "48").parse().expect("--steps takes a number");
    let (vocab, encoder) = load_tokenizer(&tokenizer).unwrap_or_else(|e| panic!("{e}"));
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let walks = walks(&compiler, &encoder, n, steps);
    let words = TokenBitmask::new(vocab.vocab_size()).as_words().len();
    let mut rows = vec![0u32; (k + 1) * words];
    measure(&walks, k, steps, &mut rows); // builds the cache entries
    let t = measure(&walks, k, steps, &mut rows);
    let (d, s, h) = (Summary::of(&t.draft), Summary::of(&t.single_steps), Summary::of(&t.by_hand));
    let sum = |v: &[f64]| v.iter().sum::<f64>();
    println!(
        "draft_masks tokenizer={tokenizer} schemas={n} k={k} positions={} | draft us p50={:.1} p90={:.1} | {k} single steps p50={:.1} p90={:.1} | {} masks by hand p50={:.1} p90={:.1} | draft / single steps: total {:.2}x, p50 {:.2}x | draft / by hand: total {:.2}x",
        t.draft.len(),
        d.p50,
        d.p90,
        s.p50,
        s.p90,
        k + 1,
        h.p50,
        h.p90,
        sum(&t.draft) / sum(&t.single_steps),
        d.p50 / s.p50,
        sum(&t.draft) / sum(&t.by_hand),
    );
}

/// Times the three methods at every k-th position of every walk: the fastest of `REPEATS`
/// interleaved runs of each, so that a preemption on a shared machine does not count.
fn measure(walks: &[Walk], k: usize, steps: usize, rows: &mut [u32]) -> Times {
    const REPEATS: usize = 5;
    let mut times = Times::default();
    for walk in walks {
        let mut m = GrammarMatcher::new(&walk.grammar);
        for start in (0..steps - k).step_by(k) {
            let draft = &walk.tokens[start..start + k];
            let mut best = [f64::INFINITY; 3];
            for _ in 0..REPEATS {
                for (method, best) in best.iter_mut().enumerate() {
                    let t = Instant::now();
                    run_method(method, &mut m, draft, rows);
                    *best = best.min(t.elapsed().as_secs_f64() * 1e6);
                    if method == 1 {
                        m.rollback(k).expect("no rollback limit"); // not part of k single steps
                    }
                }
            }
            times.draft.push(best[0]);
            times.single_steps.push(best[1]);
            times.by_hand.push(best[2]);
            assert!(m.accept_tokens(draft) == k, "the walk goes on");
        }
    }
    times
}

/// Method 0: the draft call; 1: k single steps (fill, accept), left applied; 2: the draft
/// call's work by hand (k + 1 masks, k accepts, rollback).
fn run_method(method: usize, m: &mut GrammarMatcher, draft: &[u32], rows: &mut [u32]) {
    let k = draft.len();
    let mut chunks = rows.chunks_exact_mut(rows.len() / (k + 1));
    if method == 0 {
        let filled = m.fill_draft_bitmasks(draft, rows).expect("a valid draft");
        assert_eq!(filled, k + 1, "a valid instance's draft was rejected");
        return;
    }
    for (&id, row) in draft.iter().zip(&mut chunks) {
        m.fill_next_token_bitmask(row);
        m.accept_token(id);
    }
    if method == 2 {
        m.fill_next_token_bitmask(chunks.next().expect("k + 1 rows"));
        m.rollback(k).expect("no rollback limit");
    }
}
