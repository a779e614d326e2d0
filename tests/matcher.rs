//! Matcher properties: the mask agrees with `accept_token` on every token, `rollback` restores
//! masks exactly, and `accept_string` reaches the same state as accepting the string's tokens.
//! Random grammars with a small synthetic vocabulary, and the builtin JSON grammar with Llama 3.

use maskforge::{CompiledGrammar, CompilerConfig, Grammar, GrammarCompiler, GrammarMatcher, TokenBitmask, Vocabulary};
use proptest::prelude::*;

use crate::support::fixtures::{encode, vocab};
use crate::support::gen;
use crate::support::small_vocab::small_vocab;

fn mask_of(m: &mut GrammarMatcher) -> TokenBitmask {
    let mut mask = TokenBitmask::new(m.grammar().vocabulary().vocab_size());
    m.fill_next_token_bitmask(mask.as_words_mut());
    mask
}

/// The mask by brute force: try every token and undo it.
fn brute_force_mask(m: &mut GrammarMatcher) -> TokenBitmask {
    let n = m.grammar().vocabulary().vocab_size();
    let mut mask = TokenBitmask::new(n);
    for id in 0..n as u32 {
        if m.accept_token(id) {
            mask.set(id as usize, true);
            m.rollback(1).unwrap();
        }
    }
    mask
}

fn compile(g: Grammar, vocab: Vocabulary) -> CompiledGrammar {
    GrammarCompiler::new(vocab, CompilerConfig::default()).compile(g).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Along a random walk: the mask equals brute force; rolling back restores every earlier mask.
    #[test]
    fn mask_equals_brute_force_and_rollback_restores(g in gen::grammar(), picks in prop::collection::vec(any::<prop::sample::Index>(), 1..10)) {
        let grammar = compile(g, small_vocab());
        let mut m = GrammarMatcher::new(&grammar);
        let mut history = vec![mask_of(&mut m)];
        for pick in &picks {
            let mask = mask_of(&mut m);
            prop_assert_eq!(&mask, &brute_force_mask(&mut m), "\n{}", grammar.grammar());
            let allowed: Vec<usize> = mask.allowed_ids().collect();
            if allowed.is_empty() {
                break;
            }
            prop_assert!(m.accept_token(allowed[pick.index(allowed.len())] as u32));
            if m.is_terminated() {
                prop_assert_eq!(mask_of(&mut m).count_allowed(), 0);
                break;
            }
            history.push(mask_of(&mut m));
        }
        // Roll back one token at a time and compare with the mask seen then.
        let k = m.num_accepted_tokens();
        for back in 1..=k {
            m.rollback(1).unwrap();
            if let Some(expected) = history.get(k - back) {
                prop_assert_eq!(&mask_of(&mut m), expected);
            }
        }
        prop_assert!(m.rollback(1).is_err());
    }

    /// `accept_string(s)` and accepting the tokens of `s` one by one end in the same state.
    #[test]
    fn accept_string_equals_token_path(g in gen::grammar(), s in gen::input()) {
        let grammar = compile(g, small_vocab());
        let vocab = grammar.vocabulary().clone();
        let mut by_string = GrammarMatcher::new(&grammar);
        let ok = by_string.accept_string(&s);
        // Greedy tokenization of `s` into the small vocabulary (longest token first).
        let mut by_tokens = GrammarMatcher::new(&grammar);
        let mut rest = &s[..];
        let mut ok_tokens = true;
        while !rest.is_empty() {
            let id = (0..vocab.vocab_size() as u32)
                .filter(|&id| !vocab.token_bytes(id).is_empty() && rest.starts_with(vocab.token_bytes(id)))
                .max_by_key(|&id| vocab.token_bytes(id).len())
                .expect("the small vocabulary covers every input byte");
            ok_tokens &= by_tokens.accept_token(id);
            if !ok_tokens {
                break;
            }
            rest = &rest[vocab.token_bytes(id).len()..];
        }
        prop_assert_eq!(ok, ok_tokens);
        if ok {
            // The Earley items themselves where the grammar runs Earley (`Auto` takes the PDA
            // for the grammars it serves; their masks below are compared either way).
            if let (Some(a), Some(b)) = (by_string.parser(), by_tokens.parser()) {
                prop_assert_eq!(a.current_items(), b.current_items());
            }
            prop_assert_eq!(mask_of(&mut by_string), mask_of(&mut by_tokens));
            prop_assert_eq!(by_string.can_terminate(), by_tokens.can_terminate());
        } else {
            // A rejected string leaves the matcher unchanged.
            prop_assert_eq!(by_string.num_accepted_tokens(), 0);
        }
    }
}

/// With the real Llama 3 vocabulary on the builtin JSON grammar: the exact mask equals brute
/// force at several points of a real document, including inside strings and numbers.
#[test]
fn llama3_json_mask_equals_brute_force() {
    let v = vocab("llama3").clone();
    let grammar = GrammarCompiler::new(v, CompilerConfig::default()).compile_builtin_json_grammar().unwrap();
    let text = r#"{"name": "Zoë \"Z\"", "n": [-12.5e3, 0, true], "o": {}}"#;
    let ids = encode("llama3", text);
    let mut m = GrammarMatcher::new(&grammar);
    for (i, &id) in ids.iter().enumerate() {
        if i % 3 == 0 || i + 1 == ids.len() {
            let mask = mask_of(&mut m);
            assert_eq!(mask, brute_force_mask(&mut m), "at token {i}");
            assert!(mask.get(id as usize));
        }
        assert!(m.accept_token(id));
    }
    let mask = mask_of(&mut m);
    assert_eq!(mask, brute_force_mask(&mut m));
    // Only whitespace and the stop token can follow a complete document.
    assert!(mask.get(m.stop_token_ids()[0] as usize));
    assert!(mask.allowed_ids().all(|id| m.stop_token_ids().contains(&(id as u32))
        || grammar.vocabulary().token_bytes(id as u32).iter().all(|b| b" \t\n\r".contains(b))));
}

#[test]
fn rollback_errors_and_invalid_ids() {
    let grammar = GrammarCompiler::new(small_vocab(), CompilerConfig::default())
        .compile_grammar(r#"root ::= "ab" "c"*"#)
        .unwrap();
    let mut m = GrammarMatcher::with_config(&grammar, maskforge::MatcherConfig::default().max_rollback_tokens(1));
    let id = |s: &str| (0..40u32).find(|&i| grammar.vocabulary().token_bytes(i) == s.as_bytes()).unwrap();
    assert!(m.accept_token(id("ab")) && m.accept_token(id("c")));
    assert!(matches!(m.rollback(2), Err(maskforge::MatcherError::RollbackTooFar { requested: 2, available: 1 })));
    m.rollback(1).unwrap();
    let vocab_size = grammar.vocabulary().vocab_size() as u32;
    assert!(matches!(m.try_accept_token(vocab_size), Err(maskforge::MatcherError::InvalidTokenId { .. })));
    assert!(!m.accept_token(vocab_size - 1), "padding ids are never accepted");
    let mut short = vec![0u32; 1];
    assert!(m.try_fill_next_token_bitmask(&mut short).is_err());
    assert_eq!(m.find_jump_forward_string(), "");
    m.reset();
    assert_eq!(m.find_jump_forward_string(), "ab");
}
