//! Saved grammars (`CompiledGrammar::serialize` / `deserialize`): a loaded grammar gives the
//! masks of the original bit for bit (MaskBench schemas, a protocol, the builtin JSON grammar,
//! EBNF and regex), keeps the cache entries built before saving, and every damaged input is a
//! typed error, never a panic.

use maskforge::{
    CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, LoadError, ProtocolOptions,
    TokenBitmask, ToolChoice, Vocabulary, VocabularyBuilder, SAVED_FORMAT_VERSION,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::support::fixtures::{maskbench_files, vocab};
use crate::support::small_vocab::small_vocab;

/// The mask of `m` now.
fn mask(m: &mut GrammarMatcher) -> TokenBitmask {
    let mut mask = TokenBitmask::new(m.grammar().vocabulary().vocab_size());
    m.fill_next_token_bitmask(mask.as_words_mut());
    mask
}

/// A random walk of at most `steps` tokens through `g`, filling a mask at every step (which
/// builds cache entries); returns the tokens taken.
fn walk(g: &CompiledGrammar, steps: usize, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut m = GrammarMatcher::new(g);
    let mut taken = Vec::new();
    for _ in 0..steps {
        let ids: Vec<usize> = mask(&mut m).allowed_ids().collect();
        if ids.is_empty() || m.is_terminated() {
            break;
        }
        let id = ids[rng.random_range(0..ids.len())] as u32;
        assert!(m.accept_token(id));
        taken.push(id);
    }
    taken
}

/// Saves `original` after a walk, loads it back and checks: the same IR and automata, the
/// entries built before saving are there (replaying the walk builds none), saving again gives
/// the same bytes, and a longer walk gives the same masks on both (the loaded one also against
/// the oracle when `oracle`).
fn check_round_trip(original: &CompiledGrammar, seed: u64, oracle: bool) {
    let vocab = original.vocabulary();
    let prefix = walk(original, 12, seed);
    let bytes = original.serialize();
    let loaded = CompiledGrammar::deserialize(&bytes, vocab).unwrap();
    assert_eq!(loaded.grammar(), original.grammar());
    assert_eq!(**loaded.fsm(), **original.fsm());
    assert_eq!(loaded.json_schema_report(), original.json_schema_report());
    let built = original.mask_cache_stats();
    assert_eq!(loaded.mask_cache_stats().entries, built.entries);
    assert!(built.entries > 0, "the walk built entries");
    assert_eq!(loaded.serialize(), bytes, "saving a loaded grammar gives the same bytes");

    let (mut a, mut b) = (GrammarMatcher::new(original), GrammarMatcher::new(&loaded));
    for &id in &prefix {
        assert_eq!(mask(&mut a), mask(&mut b));
        assert!(a.accept_token(id) && b.accept_token(id));
    }
    assert_eq!(loaded.mask_cache_stats().entries, built.entries, "the saved entries served the replay");
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    for step in 0..24 {
        let (ma, mb) = (mask(&mut a), mask(&mut b));
        assert_eq!(ma, mb, "step {step} after the saved prefix");
        if oracle && step % 4 == 0 {
            let mut exact = TokenBitmask::new(vocab.vocab_size());
            b.fill_next_token_bitmask_exact(exact.as_words_mut()).unwrap();
            assert_eq!(mb, exact, "loaded grammar vs oracle at step {step}");
        }
        let ids: Vec<usize> = ma.allowed_ids().collect();
        if ids.is_empty() || a.is_terminated() {
            break;
        }
        let id = ids[rng.random_range(0..ids.len())] as u32;
        assert!(a.accept_token(id) && b.accept_token(id));
    }
}

#[test]
fn maskbench_schemas_round_trip_with_identical_masks() {
    let v = vocab("llama3");
    let compiler = GrammarCompiler::new(v.clone(), CompilerConfig::default());
    let options = JsonSchemaOptions::default();
    let mut checked = 0;
    // Every 75th file: about 30 files spread over all categories, deterministic.
    for (i, (name, file)) in maskbench_files().iter().step_by(75).enumerate() {
        let Ok(g) = compiler.compile_json_schema(&file["schema"], &options) else { continue };
        eprintln!("{name}"); // printed with a failure
        check_round_trip(&g, i as u64, i % 6 == 0);
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} files compiled");
}

#[test]
fn protocol_builtin_json_ebnf_and_regex_round_trip() {
    let v = vocab("llama3");
    let compiler = GrammarCompiler::new(v.clone(), CompilerConfig::default());
    let tool = serde_json::json!({"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}});
    let options = ProtocolOptions::default();
    let grammars = [
        compiler.compile_protocol("qwen", &[tool], &ToolChoice::Auto, &options).unwrap(),
        compiler.compile_builtin_json_grammar().unwrap(),
        compiler.compile_grammar(r#"root ::= "(" item ("," item){0,40} ")"  item ::= [a-z]+ | root"#).unwrap(),
        compiler.compile_regex(r"[A-Z][a-z]{2,8}( [0-9]{1,3})?").unwrap(),
    ];
    for (i, g) in grammars.iter().enumerate() {
        check_round_trip(g, 100 + i as u64, true);
    }
}

/// A small grammar over the small vocabulary, saved after one mask.
fn small_saved() -> (Vocabulary, Vec<u8>) {
    let vocab = small_vocab();
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let g = compiler.compile_grammar(r#"root ::= ("a" | "bc")+ "c"?"#).unwrap();
    mask(&mut GrammarMatcher::new(&g));
    (vocab, g.serialize())
}

#[test]
fn every_truncation_is_a_typed_error() {
    let (vocab, bytes) = small_saved();
    for len in 0..bytes.len() {
        match CompiledGrammar::deserialize(&bytes[..len], &vocab) {
            Err(LoadError::Truncated { len: l, needed }) => assert!(l == len && needed > len),
            other => panic!("truncated at {len}: {other:?}"),
        }
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(CompiledGrammar::deserialize(&longer, &vocab).unwrap_err(), LoadError::TrailingBytes { extra: 1 });
    assert!(CompiledGrammar::deserialize(&bytes, &vocab).is_ok());
}

#[test]
fn another_version_or_magic_is_a_typed_error() {
    let (vocab, mut bytes) = small_saved();
    bytes[8..12].copy_from_slice(&(SAVED_FORMAT_VERSION + 1).to_le_bytes());
    let err = CompiledGrammar::deserialize(&bytes, &vocab).unwrap_err();
    assert_eq!(err, LoadError::Version { found: SAVED_FORMAT_VERSION + 1, expected: SAVED_FORMAT_VERSION });
    assert_eq!(err.to_string(), "saved grammar format version 2, this build reads version 1");
    let err = CompiledGrammar::deserialize(b"{\"type\": \"object\"} and more text than a header", &vocab).unwrap_err();
    assert_eq!(err, LoadError::NotSaved);
}

#[test]
fn another_vocabulary_is_a_typed_error() {
    let (llama3, llama2) = (vocab("llama3"), vocab("llama2"));
    let g = GrammarCompiler::new(llama3.clone(), CompilerConfig::default()).compile_builtin_json_grammar().unwrap();
    let bytes = g.serialize();
    let err = CompiledGrammar::deserialize(&bytes, llama2).unwrap_err();
    assert_eq!(err, LoadError::Vocabulary { saved: llama3.fingerprint(), current: llama2.fingerprint() });
    assert!(err.to_string().starts_with("saved grammar was compiled for vocabulary 0x"), "{err}");
    // The same tokens with other stop tokens are another vocabulary too.
    let (small, bytes) = small_saved();
    let restopped = small.with_stop_tokens([0]).unwrap();
    assert!(matches!(CompiledGrammar::deserialize(&bytes, &restopped), Err(LoadError::Vocabulary { .. })));
    let other = VocabularyBuilder::new().tokens(["a", "b", "c", "</s>"]).special(3).build().unwrap();
    assert!(matches!(CompiledGrammar::deserialize(&bytes, &other), Err(LoadError::Vocabulary { .. })));
}

/// Bytes `bytes` with the checksum recomputed, as a crafted (not corrupted) input would have.
fn resigned(mut bytes: Vec<u8>) -> Vec<u8> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&bytes[..28]);
    h.update(&bytes[36..]);
    let sum = h.digest();
    bytes[28..36].copy_from_slice(&sum.to_le_bytes());
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Flipped bytes anywhere are caught: by the magic, version or length checks in the header,
    /// by the checksum everywhere else.
    #[test]
    fn flipped_bytes_are_a_typed_error(flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4)) {
        let (vocab, original) = small_saved();
        let mut bytes = original.clone();
        for (at, x) in &flips {
            let n = bytes.len();
            bytes[at.index(n)] ^= x;
        }
        prop_assume!(bytes != original); // two flips of one byte may cancel
        let err = CompiledGrammar::deserialize(&bytes, &vocab).unwrap_err();
        prop_assert!(matches!(err, LoadError::Checksum { .. } | LoadError::NotSaved | LoadError::Version { .. }
            | LoadError::Truncated { .. } | LoadError::TrailingBytes { .. }), "{err:?}");
    }

    /// A crafted payload (flipped bytes, checksum recomputed) is rejected as malformed or, when
    /// it still decodes to a consistent grammar, drives a matcher without panicking.
    #[test]
    fn crafted_payloads_never_panic(flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4)) {
        let (vocab, mut bytes) = small_saved();
        let n = bytes.len() - 36;
        for (at, x) in &flips {
            bytes[36 + at.index(n)] ^= x;
        }
        match CompiledGrammar::deserialize(&resigned(bytes), &vocab) {
            Err(e) => prop_assert!(matches!(e, LoadError::Malformed(_)), "{e:?}"),
            // Structurally sound, so usable; its masks are whatever the crafted entries say.
            Ok(g) => {
                let _ = g.grammar().to_string(); // the IR is decoded (and checked) here
                let mut m = GrammarMatcher::new(&g);
                for _ in 0..8 {
                    let first = mask(&mut m).allowed_ids().next();
                    let Some(id) = first else { break };
                    m.accept_token(id as u32);
                }
            }
        }
    }
}

#[test]
fn a_malformed_payload_says_why() {
    let (vocab, bytes) = small_saved();
    // The payload cut short but announced and signed as it is: postcard runs out of input.
    let mut cut = bytes[..bytes.len() - 3].to_vec();
    let len = (cut.len() - 36) as u64;
    cut[20..28].copy_from_slice(&len.to_le_bytes());
    let err = CompiledGrammar::deserialize(&resigned(cut), &vocab).unwrap_err();
    assert!(matches!(&err, LoadError::Malformed(m) if m.starts_with("payload does not decode")), "{err:?}");
    assert!(err.to_string().starts_with("saved grammar malformed: payload does not decode"), "{err}");
}
