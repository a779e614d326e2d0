//! The PDA path (`CompilerConfig::parser(Parser::Pda)`): its masks equal the Earley path's and
//! the exact oracle's, and it accepts exactly what the Earley path accepts, on random grammars
//! with a small vocabulary (with rollbacks), on the builtin JSON grammar with real tokenizers,
//! and on the MaskBench schemas it serves (every step of valid instances, up to the first
//! rejected token of invalid ones). Grammars it does not serve are a typed error.

use maskforge::{
    CompiledGrammar, CompilerConfig, Error, Grammar, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, Parser,
    PdaError, TokenBitmask, Vocabulary,
};
use proptest::prelude::*;

use crate::support::fixtures::{load, maskbench_files};
use crate::support::gen;
use crate::support::oracle_check::checked_mask;
use crate::support::small_vocab::{small_vocab, token_vocab};

fn compiler(vocab: &Vocabulary, parser: Parser) -> GrammarCompiler {
    GrammarCompiler::new(vocab.clone(), CompilerConfig::default().parser(parser))
}

fn mask(m: &mut GrammarMatcher) -> TokenBitmask {
    let mut mask = TokenBitmask::new(m.grammar().vocabulary().vocab_size());
    m.fill_next_token_bitmask(mask.as_words_mut());
    mask
}

/// The PDA and Earley matchers are in the same state: same mask, same completion.
fn assert_same(
    pda: &mut GrammarMatcher,
    earley: &mut GrammarMatcher,
    what: &str,
) -> Result<TokenBitmask, TestCaseError> {
    let (a, b) = (mask(pda), mask(earley));
    prop_assert_eq!(&a, &b, "PDA vs Earley mask after {} tokens: {}", pda.num_accepted_tokens(), what);
    prop_assert_eq!(pda.is_completed(), earley.is_completed(), "completion: {}", what);
    Ok(a)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random grammars the PDA serves: at every step of a random walk with random rollbacks,
    /// the PDA's cached mask equals the exact oracle's and what `accept_token` does
    /// (`checked_mask`), and equals the Earley path's mask. Grammars it does not serve are
    /// refused with a `PdaError`, never another error.
    #[test]
    fn pda_masks_equal_earley_and_oracle_on_random_grammars(
        g in gen::grammar(),
        steps in prop::collection::vec((any::<prop::sample::Index>(), 0usize..3), 0..14),
    ) {
        let vocab = small_vocab();
        let pda_grammar = match compiler(&vocab, Parser::Pda).compile(g.clone()) {
            Ok(c) => c,
            Err(Error::Pda(_)) => return Ok(()),
            Err(e) => panic!("{e}"),
        };
        prop_assert_eq!(pda_grammar.parser(), Parser::Pda);
        let earley_grammar = compiler(&vocab, Parser::Earley).compile(g.clone()).unwrap();
        let (mut pda, mut earley) = (GrammarMatcher::new(&pda_grammar), GrammarMatcher::new(&earley_grammar));
        let what = g.to_string();
        for &(pick, back) in &steps {
            let m = checked_mask(&mut pda)?;
            assert_same(&mut pda, &mut earley, &what)?;
            let allowed: Vec<usize> = m.allowed_ids().collect();
            if allowed.is_empty() || pda.is_terminated() {
                break;
            }
            let t = allowed[pick.index(allowed.len())] as u32;
            prop_assert!(pda.accept_token(t) && earley.accept_token(t));
            // Now and then undo a few tokens (rollback must restore the threads exactly).
            let back = back.saturating_sub(1).min(pda.num_accepted_tokens());
            pda.rollback(back).unwrap();
            earley.rollback(back).unwrap();
        }
        checked_mask(&mut pda)?;
        assert_same(&mut pda, &mut earley, &what)?;
    }

    /// A forked PDA matcher is independent of its original, and jump-forward bytes agree with
    /// the Earley path's.
    #[test]
    fn pda_fork_and_jump_forward_agree_with_earley(
        g in gen::grammar(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let vocab = small_vocab();
        let Ok(pda_grammar) = compiler(&vocab, Parser::Pda).compile(g.clone()) else { return Ok(()) };
        let earley_grammar = compiler(&vocab, Parser::Earley).compile(g.clone()).unwrap();
        let (mut pda, mut earley) = (GrammarMatcher::new(&pda_grammar), GrammarMatcher::new(&earley_grammar));
        let what = g.to_string();
        for pick in &picks {
            prop_assert_eq!(pda.find_jump_forward_bytes(), earley.find_jump_forward_bytes(), "{}", what);
            let m = assert_same(&mut pda, &mut earley, &what)?;
            let allowed: Vec<usize> = m.allowed_ids().collect();
            if allowed.is_empty() || pda.is_terminated() {
                break;
            }
            let t = allowed[pick.index(allowed.len())] as u32;
            let mut fork = pda.fork();
            prop_assert!(fork.accept_token(t));
            // The original did not move.
            assert_same(&mut pda, &mut earley, &what)?;
            prop_assert!(pda.accept_token(t) && earley.accept_token(t));
            prop_assert_eq!(mask(&mut fork), mask(&mut pda));
        }
    }
}

fn refused(ebnf: &str, vocab: &Vocabulary) -> PdaError {
    match compiler(vocab, Parser::Pda).compile_grammar(ebnf) {
        Err(Error::Pda(e)) => e,
        other => panic!("{ebnf}: expected a PdaError, got {other:?}"),
    }
}

#[test]
fn grammars_the_pda_does_not_serve_are_typed_errors_and_auto_falls_back() {
    let vocab = token_vocab();
    assert!(matches!(refused(r#"root ::= root "a" | "b""#, &vocab), PdaError::LeftRecursion { .. }));
    assert!(matches!(refused(r#"root ::= "a"{0,500}"#, &vocab), PdaError::CountedRepetition { .. }));
    assert!(matches!(refused(r#"root ::= "a" Token(40)"#, &vocab), PdaError::TokenElement { .. }));
    assert!(matches!(
        refused(
            r#"root ::= TagDispatch(("tag1", x))
            x ::= "a""#,
            &vocab
        ),
        PdaError::TagDispatch { .. }
    ));
    for parser in [Parser::Auto, Parser::Earley] {
        let g = compiler(&vocab, parser).compile_grammar(r#"root ::= root "a" | "b""#).unwrap();
        assert_eq!(g.parser(), Parser::Earley);
    }
}

#[test]
fn auto_takes_the_pda_where_it_serves_the_grammar_and_earley_elsewhere() {
    let vocab = small_vocab();
    let auto = |source: &str| compiler(&vocab, Parser::Auto).compile_grammar(source).unwrap().parser();
    // Served: a deterministic nested grammar, and the builtin JSON grammar.
    assert_eq!(auto(r#"root ::= "a" root "b" | "c""#), Parser::Pda);
    let json = compiler(&vocab, Parser::Auto).compile_builtin_json_grammar().unwrap();
    assert_eq!(json.parser(), Parser::Pda);
    assert!(GrammarMatcher::new(&json).runs_pda());
    // Not served: left recursion, a counted repetition, a TagDispatch.
    assert_eq!(auto(r#"root ::= root "a" | "b""#), Parser::Earley);
    assert_eq!(auto(r#"root ::= "a"{0,500}"#), Parser::Earley);
    assert_eq!(auto("root ::= TagDispatch((\"tag1\", x))\nx ::= \"a\""), Parser::Earley);
    // `Earley` stays Earley on a grammar the PDA would serve.
    let earley = compiler(&vocab, Parser::Earley).compile_grammar(r#"root ::= "a" root "b" | "c""#).unwrap();
    assert_eq!(earley.parser(), Parser::Earley);
}

#[test]
fn the_parser_choice_is_part_of_the_whole_grammar_cache_key_and_is_saved() {
    let vocab = small_vocab();
    let ebnf = r#"root ::= "a" root "b" | "c""#;
    let pda = compiler(&vocab, Parser::Pda).compile_grammar(ebnf).unwrap();
    let earley = compiler(&vocab, Parser::Earley).compile_grammar(ebnf).unwrap();
    assert_eq!((pda.parser(), earley.parser()), (Parser::Pda, Parser::Earley));
    let loaded = CompiledGrammar::deserialize(&pda.serialize(), &vocab).unwrap();
    assert_eq!(loaded.parser(), Parser::Pda);
    assert!(GrammarMatcher::new(&loaded).runs_pda());
}

/// Walks `ids` through a PDA matcher and an Earley matcher of the same source, comparing masks
/// at every step (and with the oracle every `oracle_every` steps), until a token is rejected.
/// Returns how many tokens were accepted and whether both can then terminate.
fn walk_both(
    pda: &CompiledGrammar,
    earley: &CompiledGrammar,
    ids: &[u32],
    oracle_every: usize,
    what: &str,
) -> (usize, bool) {
    let (mut p, mut e) = (GrammarMatcher::new(pda), GrammarMatcher::new(earley));
    assert!(p.runs_pda());
    let n = pda.vocabulary().vocab_size();
    for (i, &id) in ids.iter().chain([&u32::MAX]).enumerate() {
        let (mp, me) = (mask(&mut p), mask(&mut e));
        assert_eq!(mp, me, "PDA vs Earley mask at token {i}: {what}");
        if oracle_every > 0 && i % oracle_every == 0 {
            let mut exact = TokenBitmask::new(n);
            p.fill_next_token_bitmask_exact(exact.as_words_mut()).unwrap();
            assert_eq!(mp, exact, "PDA vs oracle at token {i}: {what}");
        }
        if id == u32::MAX {
            break;
        }
        let (a, b) = (p.accept_token(id), e.accept_token(id));
        assert_eq!((a, b), (mp.get(id as usize), mp.get(id as usize)), "token {i} ({id}): {what}");
        if !a {
            return (i, false);
        }
    }
    assert!(p.runs_pda(), "no hand-over to Earley on {what}");
    assert_eq!(p.can_terminate(), e.can_terminate());
    (ids.len(), p.can_terminate())
}

/// The builtin JSON grammar with real tokenizers on real documents (the data of MaskBench
/// instances, compact and pretty-printed), and with rollbacks in the middle.
#[test]
fn builtin_json_pda_equals_earley_with_real_tokenizers() {
    for tokenizer in ["llama3", "qwen3"] {
        let (vocab, encoder) = load(tokenizer);
        let pda = compiler(vocab, Parser::Pda).compile_builtin_json_grammar().unwrap();
        let earley = compiler(vocab, Parser::Earley).compile_builtin_json_grammar().unwrap();
        assert_eq!(pda.parser(), Parser::Pda);
        let mut docs = 0;
        for (name, file) in maskbench_files().iter().step_by(40) {
            let Some(tests) = file["tests"].as_array() else { continue };
            let Some(test) = tests.iter().find(|t| t["valid"] == true) else { continue };
            for text in [test["data"].to_string(), serde_json::to_string_pretty(&test["data"]).unwrap()] {
                let ids = encoder.encode_for_matching(&text).unwrap();
                let what = format!("{tokenizer} {name}: {text:.200}");
                let (read, ends) = walk_both(&pda, &earley, &ids, if docs < 4 { 5 } else { 0 }, &what);
                assert!(read == ids.len() && ends, "valid JSON not accepted: {what}");
                // Half the document: both paths agree on every step of the prefix.
                let half = (0..=text.len() / 2).rev().find(|&i| text.is_char_boundary(i)).unwrap();
                let ids = encoder.encode_for_matching(&text[..half]).unwrap();
                walk_both(&pda, &earley, &ids, 0, &what);
                docs += 1;
            }
        }
        assert!(docs >= 40, "{docs} documents");
        rollbacks_equal_earley(
            &pda,
            &earley,
            &encoder.encode_for_matching(r#"{"a": [1, {"b": "c\n"}, true], "d": null}"#).unwrap(),
        );
    }
}

/// Rolls back by every amount from every point of `ids`: the PDA's masks equal Earley's.
fn rollbacks_equal_earley(pda: &CompiledGrammar, earley: &CompiledGrammar, ids: &[u32]) {
    let (mut p, mut e) = (GrammarMatcher::new(pda), GrammarMatcher::new(earley));
    for (i, &id) in ids.iter().enumerate() {
        assert!(p.accept_token(id) && e.accept_token(id));
        for back in 1..=i + 1 {
            p.rollback(back).unwrap();
            e.rollback(back).unwrap();
            assert_eq!(mask(&mut p), mask(&mut e), "after token {i}, rolled back {back}");
            for &id in &ids[i + 1 - back..=i] {
                assert!(p.accept_token(id) && e.accept_token(id));
            }
        }
    }
}

/// The MaskBench schemas the PDA serves (with the options of the benchmark runner): every step
/// of every valid instance and the first rejected token of invalid ones give the same masks and
/// verdicts on both paths. Files it does not serve must be refused with a `PdaError`.
#[test]
fn maskbench_schemas_pda_equals_earley() {
    let (vocab, encoder) = load("llama3");
    let (pda_compiler, earley_compiler) = (compiler(vocab, Parser::Pda), compiler(vocab, Parser::Earley));
    let options = JsonSchemaOptions::default();
    let (mut served, mut refused, mut instances) = (0, 0, 0);
    for (name, file) in maskbench_files().iter().step_by(23) {
        let schema = &file["schema"];
        let pda = match pda_compiler.compile_json_schema(schema, &options) {
            Ok(g) => g,
            Err(Error::Pda(_)) => {
                refused += 1;
                continue;
            }
            Err(_) => continue,
        };
        served += 1;
        let earley = earley_compiler.compile_json_schema(schema, &options).unwrap();
        for (t, test) in file["tests"].as_array().into_iter().flatten().enumerate() {
            let text = serde_json::to_string(&test["data"]).unwrap();
            let Ok(ids) = encoder.encode_for_matching(&text) else { continue };
            let what = format!("{name} test {t}");
            walk_both(&pda, &earley, &ids, if instances % 16 == 0 { 7 } else { 0 }, &what);
            instances += 1;
        }
    }
    eprintln!("maskbench-dev sample: {served} schemas served by the PDA, {refused} refused, {instances} instances");
    assert!(served >= 30 && instances >= 100, "{served} served, {instances} instances");
}

/// A grammar whose ambiguity overflows the PDA's threads: the matcher hands over to Earley
/// mid-input and its masks stay exact.
#[test]
fn an_ambiguous_grammar_hands_over_to_earley_and_stays_exact() {
    let vocab = small_vocab();
    let ebnf = r#"root ::= x "b"
        x ::= "a" x | "a" y | ""
        y ::= "a" x "c" | """#;
    let grammar: Grammar = maskforge::parse_ebnf(ebnf, "root").unwrap();
    let pda = compiler(&vocab, Parser::Pda).compile(grammar.clone()).unwrap();
    let earley = compiler(&vocab, Parser::Earley).compile(grammar).unwrap();
    let (mut p, mut e) = (GrammarMatcher::new(&pda), GrammarMatcher::new(&earley));
    let aaa = crate::support::small_vocab::id(&vocab, "aaa");
    let mut steps = 0;
    while p.runs_pda() {
        assert!(p.accept_token(aaa) && e.accept_token(aaa));
        steps += 1;
        assert!(steps < 200, "the threads never overflowed");
    }
    assert_eq!(mask(&mut p), mask(&mut e));
    let mut exact = TokenBitmask::new(vocab.vocab_size());
    p.fill_next_token_bitmask_exact(exact.as_words_mut()).unwrap();
    assert_eq!(mask(&mut p), exact);
    p.rollback(steps).unwrap();
    e.rollback(steps).unwrap();
    assert_eq!(mask(&mut p), mask(&mut e));
}
