//! The serving-engine calls: batch fill and accept equal N single calls bit for bit at any
//! thread count; batches driven from several threads over shared grammars equal the oracle;
//! draft masks equal stepping with fill/accept/rollback; `accept_tokens` equals accepting one
//! by one; bad arguments are typed errors that write nothing.

use std::sync::OnceLock;

use maskforge::{
    BatchGrammarMatcher, CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions,
    MatcherConfig, MatcherError, VocabularyBuilder,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::support::fixtures::{encode, maskbench_files, vocab};

/// Words per mask row for the Llama 3 vocabulary.
fn row_words() -> usize {
    vocab("llama3").vocab_size().div_ceil(32)
}

fn allowed(row: &[u32]) -> Vec<u32> {
    (0..row.len() * 32).filter(|&i| row[i / 32] >> (i % 32) & 1 == 1).map(|i| i as u32).collect()
}

/// The schema and a valid instance of every 60th MaskBench file that compiles (Llama 3).
fn samples() -> &'static [(String, serde_json::Value, String)] {
    static SAMPLES: OnceLock<Vec<(String, serde_json::Value, String)>> = OnceLock::new();
    SAMPLES.get_or_init(|| {
        let mut out = Vec::new();
        for (name, file) in maskbench_files().iter().step_by(60) {
            let Some(test) = file["tests"].as_array().and_then(|t| t.iter().find(|t| t["valid"] == true)) else {
                continue;
            };
            if compiler().compile_json_schema(&file["schema"], &options()).is_ok() {
                out.push((name.clone(), file["schema"].clone(), test["data"].to_string()));
            }
            if out.len() == 4 {
                break;
            }
        }
        assert_eq!(out.len(), 4, "too few MaskBench schemas compile");
        out
    })
}

fn options() -> JsonSchemaOptions {
    serde_json::from_value(serde_json::json!({"strict_mode": false})).unwrap()
}

/// One compiler (one mask pool) for the whole suite.
fn compiler() -> &'static GrammarCompiler {
    static C: OnceLock<GrammarCompiler> = OnceLock::new();
    C.get_or_init(|| GrammarCompiler::new(vocab("llama3").clone(), CompilerConfig::default()))
}

fn grammars() -> Vec<CompiledGrammar> {
    samples().iter().map(|(_, schema, _)| compiler().compile_json_schema(schema, &options()).unwrap()).collect()
}

/// A random next token for a matcher with mask `row`: mostly an allowed one, sometimes any id
/// (to exercise rejection).
fn pick(rng: &mut StdRng, row: &[u32]) -> u32 {
    let ids = allowed(row);
    if ids.is_empty() || rng.random_bool(0.1) {
        rng.random_range(0..vocab("llama3").vocab_size() as u32)
    } else {
        ids[rng.random_range(0..ids.len())]
    }
}

/// Along random walks of six matchers over four MaskBench grammars, the batch fill (at 1, 2
/// and 4 threads, rows permuted) equals single fills of matchers driven by single calls, and
/// batch accept gives the single verdicts; unmapped rows stay untouched.
#[test]
fn batch_calls_equal_single_calls_at_any_thread_count() {
    let grammars = grammars();
    let batches: Vec<_> = [1, 2, 4].into_iter().map(|t| BatchGrammarMatcher::new(t).unwrap()).collect();
    let n = 6;
    let mut batched: Vec<_> = (0..n).map(|i| GrammarMatcher::new(&grammars[i % grammars.len()])).collect();
    let mut single = batched.clone();
    let w = row_words();
    // Matcher i writes row n - i (row 0 is never written).
    let indices: Vec<usize> = (0..n).map(|i| n - i).collect();
    let mut rng = StdRng::seed_from_u64(15);
    for step in 0..12 {
        let expected: Vec<Vec<u32>> = single
            .iter_mut()
            .map(|m| {
                let mut row = vec![0; w];
                m.fill_next_token_bitmask(&mut row);
                row
            })
            .collect();
        for batch in &batches {
            let mut bitmask = vec![0xA5A5_A5A5; (n + 1) * w];
            batch.batch_fill_next_token_bitmask(&mut batched, &mut bitmask, Some(&indices)).unwrap();
            assert!(bitmask[..w].iter().all(|&x| x == 0xA5A5_A5A5), "row 0 was written");
            for (i, row) in expected.iter().enumerate() {
                let got = &bitmask[indices[i] * w..][..w];
                assert!(got == row, "step {step}, matcher {i}, {} threads", batch.num_threads());
            }
            let mut plain = vec![0; n * w];
            batch.batch_fill_next_token_bitmask(&mut batched, &mut plain, None).unwrap();
            assert!(plain.chunks(w).zip(&expected).all(|(a, b)| a == b.as_slice()));
        }
        let tokens: Vec<u32> = expected.iter().map(|row| pick(&mut rng, row)).collect();
        let verdicts = batches[step % 3].batch_accept_token(&mut batched, &tokens).unwrap();
        let single_verdicts: Vec<bool> = single.iter_mut().zip(&tokens).map(|(m, &t)| m.accept_token(t)).collect();
        assert_eq!(verdicts, single_verdicts, "step {step}");
    }
    assert!(batched.iter().zip(&single).all(|(a, b)| a.num_accepted_tokens() == b.num_accepted_tokens()));
}

/// Three threads, each driving a batch of three matchers over grammars compiled concurrently
/// by one shared compiler, through one shared batch pool: every mask equals the oracle's.
#[test]
fn concurrent_batches_over_shared_grammars_equal_the_oracle() {
    let batch = BatchGrammarMatcher::new(2).unwrap();
    let w = row_words();
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let batch = &batch;
            s.spawn(move || {
                let mut matchers: Vec<_> = (0..3)
                    .map(|i| {
                        let (_, schema, _) = &samples()[(t as usize + i) % samples().len()];
                        GrammarMatcher::new(&compiler().compile_json_schema(schema, &options()).unwrap())
                    })
                    .collect();
                let mut rng = StdRng::seed_from_u64(100 + t);
                let mut bitmask = vec![0; 3 * w];
                let mut exact = vec![0; w];
                for step in 0..6 {
                    batch.batch_fill_next_token_bitmask(&mut matchers, &mut bitmask, None).unwrap();
                    for (i, m) in matchers.iter_mut().enumerate() {
                        m.fill_next_token_bitmask_exact(&mut exact).unwrap();
                        assert!(bitmask[i * w..][..w] == exact[..], "thread {t}, step {step}, matcher {i}");
                    }
                    let tokens: Vec<u32> = bitmask.chunks(w).map(|row| pick(&mut rng, row)).collect();
                    batch.batch_accept_token(&mut matchers, &tokens).unwrap();
                }
            });
        }
    });
}

/// Drafts from valid instances (and the same drafts with a token replaced by a rejected one):
/// the draft masks equal fill/accept step by step then rollback, the matcher is restored, and
/// `accept_tokens` equals accepting one by one.
#[test]
fn draft_masks_and_accept_tokens_equal_stepping() {
    let w = row_words();
    for (grammar, (name, _, instance)) in grammars().iter().zip(samples()) {
        let ids = encode("llama3", instance);
        let mut m = GrammarMatcher::new(grammar);
        let start = ids.len() / 3;
        assert_eq!(m.accept_tokens(&ids[..start]), start, "{name}");
        let good: Vec<u32> = ids[start..].iter().copied().take(8).collect();
        let mut bad = good.clone();
        let k = bad.len() / 2;
        bad[k] = first_rejected(&m, &good[..k]);
        for draft in [&good, &bad] {
            let mut out = vec![0; (draft.len() + 1) * w];
            let filled = m.fill_draft_bitmasks(draft, &mut out).unwrap();
            // Step by step on a fork.
            let mut stepper = m.fork();
            let mut expected = Vec::new();
            for &id in draft.iter() {
                let mut row = vec![0; w];
                stepper.fill_next_token_bitmask(&mut row);
                expected.push(row);
                if !stepper.accept_token(id) {
                    break;
                }
            }
            if expected.len() == draft.len() {
                let mut row = vec![0; w];
                stepper.fill_next_token_bitmask(&mut row);
                expected.push(row);
            }
            assert_eq!(filled, expected.len(), "{name}");
            assert!(out.chunks(w).zip(&expected).all(|(a, b)| a == b.as_slice()), "{name}");
            let accepted = expected.len() - 1;
            stepper.rollback(accepted).unwrap();
            // The matcher is where it was: same step count, same mask as the rolled-back fork.
            assert_eq!(m.num_accepted_tokens(), start);
            let (mut a, mut b) = (vec![0; w], vec![0; w]);
            m.fill_next_token_bitmask(&mut a);
            stepper.fill_next_token_bitmask(&mut b);
            assert_eq!(a, b, "{name}");
            // accept_tokens on a fork takes the same prefix.
            let mut fork = m.fork();
            assert_eq!(fork.accept_tokens(draft), accepted, "{name}");
            assert_eq!(fork.num_accepted_tokens(), start + accepted);
        }
        assert_eq!(m.fork().accept_tokens(&bad), k, "{name}: the bad token is rejected");
    }
}

/// Random draft trees (tokens mostly from the valid instance, sometimes random; parents random
/// earlier nodes): each node's row equals the mask after accepting its path one token at a time
/// (zeros when the path is rejected), and the matcher is restored.
#[test]
fn draft_tree_masks_equal_stepping_each_path() {
    let w = row_words();
    let mut rng = StdRng::seed_from_u64(7);
    for (grammar, (name, _, instance)) in grammars().iter().zip(samples()) {
        let ids = encode("llama3", instance);
        let mut m = GrammarMatcher::new(grammar);
        let start = ids.len() / 4;
        assert_eq!(m.accept_tokens(&ids[..start]), start, "{name}");
        let (mut tokens, mut parents, mut depth) = (Vec::new(), Vec::new(), Vec::new());
        for node in 0..10 {
            let parent = (node > 0 && rng.random_bool(0.7)).then(|| rng.random_range(0..node));
            let d = parent.map_or(0, |p: usize| depth[p] + 1);
            let next = ids.get(start + d).copied().filter(|_| rng.random_bool(0.8));
            tokens.push(next.unwrap_or_else(|| rng.random_range(0..vocab("llama3").vocab_size() as u32)));
            parents.push(parent);
            depth.push(d);
        }
        let mut out = vec![0xA5A5_A5A5; (tokens.len() + 1) * w];
        let accepted = m.fill_draft_tree_bitmasks(&tokens, &parents, &mut out).unwrap();
        let mut root = vec![0; w];
        m.fork().fill_next_token_bitmask(&mut root);
        assert!(out[..w] == root[..], "{name}: root row");
        for node in 0..tokens.len() {
            let mut path = vec![node];
            while let Some(p) = parents[*path.last().unwrap()] {
                path.push(p);
            }
            let path: Vec<u32> = path.iter().rev().map(|&n| tokens[n]).collect();
            let mut stepper = m.fork();
            let mut expected = vec![0; w];
            let ok = stepper.accept_tokens(&path) == path.len();
            if ok {
                stepper.fill_next_token_bitmask(&mut expected);
            }
            assert_eq!(accepted[node], ok, "{name}: node {node}");
            assert!(out[(node + 1) * w..][..w] == expected[..], "{name}: node {node}");
        }
        assert!(accepted.iter().any(|&a| a), "{name}: no path accepted");
        assert_eq!(m.num_accepted_tokens(), start);
        let mut after = vec![0; w];
        m.fill_next_token_bitmask(&mut after);
        assert_eq!(after, root, "{name}: not restored");
    }
}

/// The first token id the grammar rejects after `m` accepts `prefix` (on a fork).
fn first_rejected(m: &GrammarMatcher, prefix: &[u32]) -> u32 {
    let mut fork = m.fork();
    assert_eq!(fork.accept_tokens(prefix), prefix.len());
    let mut row = vec![0; row_words()];
    fork.fill_next_token_bitmask(&mut row);
    (0..).find(|&id: &u32| row[id as usize / 32] >> (id % 32) & 1 == 0).unwrap()
}

/// Bad arguments are typed errors, and nothing is written: not the bitmask, not the matchers.
#[test]
fn bad_arguments_are_errors_that_write_nothing() {
    let vocab =
        VocabularyBuilder::new().tokens(["{", "}", "{}", " ", "</s>"]).special(4).stop_tokens([4]).build().unwrap();
    let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
    let grammar = compiler.compile_builtin_json_grammar().unwrap();
    let batch = BatchGrammarMatcher::new(2).unwrap();
    let mut ms = vec![GrammarMatcher::new(&grammar), GrammarMatcher::new(&grammar)];
    let untouched = vec![7u32; 3];
    let mut bitmask = untouched.clone();
    let fill = |bitmask: &mut [u32], indices: Option<&[usize]>, ms: &mut [GrammarMatcher]| {
        batch.batch_fill_next_token_bitmask(ms, bitmask, indices)
    };
    assert_eq!(fill(&mut bitmask[..1], None, &mut ms), Err(MatcherError::BitmaskTooShort { got: 1, need: 2 }));
    assert_eq!(fill(&mut bitmask, Some(&[0, 3]), &mut ms), Err(MatcherError::RowIndexOutOfRange { index: 3, rows: 3 }));
    assert_eq!(fill(&mut bitmask, Some(&[1, 1]), &mut ms), Err(MatcherError::DuplicateRowIndex { index: 1 }));
    assert_eq!(
        fill(&mut bitmask, Some(&[1]), &mut ms),
        Err(MatcherError::BatchLengthMismatch { matchers: 2, given: 1 })
    );
    assert_eq!(bitmask, untouched);
    assert_eq!(fill(&mut bitmask, Some(&[2, 0]), &mut ms), Ok(()));
    assert_eq!(bitmask, vec![0b01101, 7, 0b01101]);
    assert_eq!(fill(&mut [], None, &mut []), Ok(()));

    assert_eq!(
        batch.batch_accept_token(&mut ms, &[2]),
        Err(MatcherError::BatchLengthMismatch { matchers: 2, given: 1 })
    );
    assert_eq!(
        batch.batch_accept_string(&mut ms, &["{}"]),
        Err(MatcherError::BatchLengthMismatch { matchers: 2, given: 1 })
    );
    assert!(ms.iter().all(|m| m.num_accepted_tokens() == 0));
    assert_eq!(batch.batch_accept_string(&mut ms, &["{}", "}"]), Ok(vec![true, false]));

    // Another vocabulary size in the same batch.
    let other = VocabularyBuilder::new().tokens(["{", "}", "</s>"]).special(2).stop_tokens([2]).build().unwrap();
    let other = GrammarCompiler::new(other, CompilerConfig::default()).compile_builtin_json_grammar().unwrap();
    let mut mixed = vec![GrammarMatcher::new(&grammar), GrammarMatcher::new(&other)];
    assert_eq!(fill(&mut bitmask, None, &mut mixed), Err(MatcherError::VocabSizeMismatch { expected: 5, got: 3 }));

    // Drafts: an id outside the vocabulary, too few rows, longer than the rollback limit.
    let mut m = GrammarMatcher::with_config(&grammar, MatcherConfig::default().max_rollback_tokens(1));
    let mut out = untouched.clone();
    assert_eq!(m.fill_draft_bitmasks(&[0, 9], &mut out), Err(MatcherError::InvalidTokenId { id: 9, vocab_size: 5 }));
    assert_eq!(m.fill_draft_bitmasks(&[0, 1, 3], &mut out), Err(MatcherError::MaskTooSmall { got: 3, need: 4 }));
    assert_eq!(
        m.fill_draft_bitmasks(&[0, 1], &mut out),
        Err(MatcherError::RollbackTooFar { requested: 2, available: 1 })
    );
    assert_eq!(
        m.fill_draft_tree_bitmasks(&[0, 1], &[None, Some(1)], &mut out),
        Err(MatcherError::InvalidDraftParent { node: 1, parent: 1 })
    );
    assert_eq!(
        m.fill_draft_tree_bitmasks(&[0], &[None, None], &mut out),
        Err(MatcherError::BatchLengthMismatch { matchers: 1, given: 2 })
    );
    assert_eq!(
        m.fill_draft_tree_bitmasks(&[0, 1], &[None, Some(0)], &mut out),
        Err(MatcherError::RollbackTooFar { requested: 2, available: 1 })
    );
    assert_eq!(out, untouched);
    assert_eq!(m.fill_draft_tree_bitmasks(&[2, 1], &[None, None], &mut out), Ok(vec![true, false]));
    assert_eq!(out, vec![0b01101, 0b11000, 0]);
    assert_eq!(m.fill_draft_bitmasks(&[2], &mut out), Ok(2));
    assert_eq!(out, vec![0b01101, 0b11000, 0]);
    assert_eq!(m.num_accepted_tokens(), 0);
}
