//! Jump-forward tokens: on random walks over schemas with long forced keys, with the Llama 3,
//! Qwen3 and Llama 2 tokenizers, the tokens to append spell the forced text after the
//! rolled-back tokens, are the tokenizer's own encoding of the re-tokenized window, and are
//! accepted by the matcher; and stop-token options (override, termination without a stop
//! token) behave as documented.

use maskforge::{
    CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, MatcherConfig, TokenBitmask,
    VocabularyBuilder,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::support::fixtures::{load, maskbench_files};

/// Long keys in a fixed order: with exact layout, each key is forced text.
const LONG_KEYS: &str = r#"{
  "type": "object",
  "properties": {
    "customer_shipping_address": {"type": "string", "maxLength": 12},
    "preferred_delivery_window": {"enum": ["morning", "afternoon", "evening"]},
    "number_of_packages_in_order": {"type": "integer", "minimum": 1, "maximum": 40},
    "is_gift": {"type": "boolean"},
    "métadonnées_supplémentaires": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 2}
  },
  "required": ["customer_shipping_address", "preferred_delivery_window", "number_of_packages_in_order",
               "is_gift", "métadonnées_supplémentaires"],
  "additionalProperties": false
}"#;

fn exact_layout() -> JsonSchemaOptions {
    JsonSchemaOptions { any_whitespace: false, strict_mode: false, ..Default::default() }
}

/// What the walks saw, for the non-vacuity checks.
#[derive(Default)]
struct Seen {
    jumps: usize,
    rollbacks: usize,
}

/// Walks `grammar` with random allowed tokens; wherever text is forced, appends the
/// jump-forward tokens instead of sampling and checks them.
fn walk_with_jumps(tokenizer: &str, grammar: &CompiledGrammar, seed: u64, seen: &mut Seen) {
    let (vocab, encoder) = load(tokenizer);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut matcher = GrammarMatcher::new(grammar);
    let mut ids: Vec<u32> = Vec::new();
    let mut mask = TokenBitmask::new(vocab.vocab_size());
    for _ in 0..400 {
        if matcher.is_terminated() {
            break;
        }
        let jump = matcher.find_jump_forward_tokens(encoder).unwrap();
        assert_eq!(matcher.find_jump_forward_tokens(encoder).unwrap(), jump, "finding a jump changes nothing");
        if !jump.is_empty() {
            seen.jumps += 1;
            seen.rollbacks += usize::from(jump.rollback > 0);
            assert!(jump.rollback <= jump.retokenized && jump.retokenized <= 8.min(ids.len()));
            let before = vocab.concat_bytes(&ids);
            let start = ids.len() - jump.retokenized;
            ids.truncate(ids.len() - jump.rollback);
            ids.extend_from_slice(&jump.tokens);
            let mut expected = before;
            expected.extend_from_slice(&jump.forced);
            assert_eq!(vocab.concat_bytes(&ids), expected, "{tokenizer}: the jump spells the forced text");
            let window = std::str::from_utf8(&vocab.concat_bytes(&ids[start..])).unwrap().to_owned();
            assert_eq!(
                encoder.encode_for_matching(&window).unwrap(),
                &ids[start..],
                "{tokenizer}: the window {window:?} is the tokenizer's own encoding"
            );
            matcher.rollback(jump.rollback).unwrap();
            assert_eq!(matcher.accept_tokens(&jump.tokens), jump.tokens.len(), "{tokenizer}: every token accepted");
            continue;
        }
        matcher.fill_next_token_bitmask(mask.as_words_mut());
        let allowed: Vec<u32> = mask.allowed_ids().map(|i| i as u32).collect();
        assert!(!allowed.is_empty(), "{tokenizer}: a live matcher allows some token");
        let stops: Vec<u32> = allowed.iter().copied().filter(|&t| vocab.is_stop_token(t)).collect();
        let pick = if !stops.is_empty() && rng.random_bool(0.3) {
            stops[0]
        } else {
            allowed[rng.random_range(0..allowed.len())]
        };
        assert!(matcher.accept_token(pick));
        if !vocab.is_stop_token(pick) {
            ids.push(pick);
        }
    }
}

#[test]
fn jump_forward_tokens_respell_forced_keys_with_three_tokenizers() {
    for tokenizer in ["llama3", "qwen3", "llama2"] {
        let compiler = GrammarCompiler::new(load(tokenizer).0.clone(), CompilerConfig::default());
        let mut grammars = vec![compiler.compile_json_schema_str(LONG_KEYS, &exact_layout()).unwrap()];
        for (_, file) in maskbench_files().iter().step_by(97).take(4) {
            if let Ok(g) = compiler.compile_json_schema(&file["schema"], &exact_layout()) {
                grammars.push(g);
            }
        }
        let mut seen = Seen::default();
        for (i, grammar) in grammars.iter().enumerate() {
            for seed in 0..3 {
                walk_with_jumps(tokenizer, grammar, 1000 * i as u64 + seed, &mut seen);
            }
        }
        assert!(seen.jumps >= 20, "{tokenizer}: only {} jumps", seen.jumps);
        if tokenizer != "llama2" {
            // Byte-level BPE merges `{` or `,` with the quote of the next key.
            assert!(seen.rollbacks > 0, "{tokenizer}: no jump re-tokenized an accepted token");
        }
    }
}

#[test]
fn a_jump_after_a_string_or_special_token_rolls_nothing_back() {
    let (vocab, encoder) = load("llama3");
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let grammar = compiler.compile_json_schema_str(LONG_KEYS, &exact_layout()).unwrap();
    let mut m = GrammarMatcher::new(&grammar);
    assert!(m.accept_string("{"));
    let jump = m.find_jump_forward_tokens(encoder).unwrap();
    assert_eq!(jump.forced, br#""customer_shipping_address": ""#);
    assert_eq!((jump.rollback, jump.retokenized), (0, 0), "a string from accept_string is not a token");
    assert_eq!(vocab.concat_bytes(&jump.tokens), jump.forced);

    // With a rollback limit of zero nothing may be re-tokenized.
    let mut m = GrammarMatcher::with_config(&grammar, MatcherConfig::default().max_rollback_tokens(0));
    assert!(m.accept_token(vocab.token_id("{").unwrap()));
    let jump = m.find_jump_forward_tokens(encoder).unwrap();
    assert_eq!((jump.rollback, jump.retokenized), (0, 0));
    assert_eq!(m.accept_tokens(&jump.tokens), jump.tokens.len());
}

#[test]
fn an_encoder_of_another_tokenizer_is_an_error() {
    let llama3 = load("llama3").0.clone();
    let compiler = GrammarCompiler::new(llama3.clone(), CompilerConfig::default());
    let grammar = compiler.compile_json_schema_str(LONG_KEYS, &exact_layout()).unwrap();
    let mut m = GrammarMatcher::new(&grammar);
    assert!(m.accept_token(llama3.token_id("{").unwrap()));
    let err = m.find_jump_forward_tokens(&load("qwen3").1).unwrap_err();
    assert!(err.to_string().contains("another tokenizer"), "{err}");
    assert_eq!(m.num_accepted_tokens(), 1, "nothing changed");
}

/// A vocabulary where `.` is a normal token and `</s>` the stop token.
fn dot_vocab() -> maskforge::Vocabulary {
    VocabularyBuilder::new().tokens(["a", "b", ".", "ab", "</s>"]).special(4).stop_tokens([4]).build().unwrap()
}

fn allowed(m: &mut GrammarMatcher) -> Vec<u32> {
    let mut mask = TokenBitmask::new(m.grammar().vocabulary().vocab_size());
    m.fill_next_token_bitmask(mask.as_words_mut());
    mask.allowed_ids().map(|i| i as u32).collect()
}

#[test]
fn overridden_stop_tokens_replace_the_vocabulary_stop_tokens() {
    let compiler = GrammarCompiler::new(dot_vocab(), CompilerConfig::default());
    let grammar = compiler.compile_grammar(r#"root ::= "a"+ "."?"#).unwrap();
    // `.` becomes the stop token: it is no longer read as text, only allowed where the grammar
    // may end, and `</s>` is an ordinary special token the grammar does not use.
    let mut m = GrammarMatcher::with_config(&grammar, MatcherConfig::default().stop_tokens([2]));
    assert_eq!(m.stop_token_ids(), &[2]);
    assert_eq!(allowed(&mut m), vec![0], "only `a` at the start");
    assert!(m.accept_token(0));
    assert_eq!(allowed(&mut m), vec![0, 2], "`a` or stop; `</s>` is not a stop token here");
    assert!(!m.accept_token(4));
    assert!(m.accept_token(2));
    assert!(m.is_terminated());
    assert_eq!(allowed(&mut m), Vec::<u32>::new());
    m.rollback(1).unwrap();
    assert!(!m.is_terminated());

    // No stop tokens at all: the matcher never terminates; the mask is empty at the end.
    let mut m = GrammarMatcher::with_config(&grammar, MatcherConfig::default().stop_tokens([]));
    assert!(m.accept_token(0) && m.accept_token(2));
    assert!(m.can_terminate() && !m.is_terminated());
    assert_eq!(allowed(&mut m), Vec::<u32>::new());
    assert!(!m.accept_token(4));

    // Default: the vocabulary's stop token.
    let mut m = GrammarMatcher::new(&grammar);
    assert!(m.accept_token(0));
    assert_eq!(allowed(&mut m), vec![0, 2, 4]);
}

#[test]
fn terminate_without_stop_token_ends_where_nothing_may_follow() {
    let compiler = GrammarCompiler::new(dot_vocab(), CompilerConfig::default());
    let grammar = compiler.compile_grammar(r#"root ::= "a" "b"?"#).unwrap();
    let config = MatcherConfig::default().terminate_without_stop_token(true);
    let mut m = GrammarMatcher::with_config(&grammar, config.clone());
    assert!(m.accept_token(0));
    assert!(!m.is_terminated(), "`b` may still follow");
    assert_eq!(allowed(&mut m), vec![1, 4]);
    assert!(m.accept_token(1));
    assert!(m.is_terminated(), "nothing may follow `ab`");
    assert_eq!(allowed(&mut m), Vec::<u32>::new());
    assert!(!m.accept_token(4), "no stop token after termination");
    m.rollback(1).unwrap();
    assert!(!m.is_terminated());
    // One token reaching the end terminates at once; a rollback past it un-terminates.
    assert!(m.rollback(1).is_ok() && m.accept_token(3));
    assert!(m.is_terminated());
    m.reset();
    assert!(!m.is_terminated() && m.num_accepted_tokens() == 0);

    // Without the option the same matcher waits for the stop token.
    let mut m = GrammarMatcher::new(&grammar);
    assert!(m.accept_token(3));
    assert!(!m.is_terminated());
    assert!(m.accept_token(4) && m.is_terminated());
}
