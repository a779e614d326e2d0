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
    assert_eq!(err.to_string(), "saved grammar format version 3, this build reads version 2");
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

/// A fresh, empty directory for one test (removed when dropped).
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("maskforge-saved-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
    /// The grammar files in the directory (temporary files excluded), sorted.
    fn files(&self) -> Vec<std::path::PathBuf> {
        let mut files: Vec<_> = std::fs::read_dir(&self.0).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        files
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn disk_compiler(vocab: &Vocabulary, dir: &TempDir, max_bytes: u64) -> GrammarCompiler {
    GrammarCompiler::new(vocab.clone(), CompilerConfig::default().disk_cache(&dir.0, max_bytes))
}

const SCHEMA: &str = r#"{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}"#;

#[test]
fn a_restarted_compiler_loads_from_the_disk_cache() {
    let dir = TempDir::new("restart");
    let v = vocab("llama3");
    let options = JsonSchemaOptions::default();
    let first = disk_compiler(v, &dir, 1 << 30);
    let compiled = first.compile_json_schema_str(SCHEMA, &options).unwrap();
    let stats = first.grammar_cache_stats();
    assert_eq!((stats.disk_hits, stats.disk_misses, stats.disk_errors), (0, 1, 0));
    assert_eq!(dir.files().len(), 1);
    assert!(dir.files()[0].extension().is_some_and(|e| e == "mfg"));

    let restarted = disk_compiler(v, &dir, 1 << 30);
    let loaded = restarted.compile_json_schema_str(SCHEMA, &options).unwrap();
    let stats = restarted.grammar_cache_stats();
    assert_eq!((stats.disk_hits, stats.disk_misses, stats.disk_errors), (1, 0, 0));
    assert_eq!(loaded.grammar(), compiled.grammar());
    assert_eq!(loaded.json_schema_report(), compiled.json_schema_report());
    // Then from memory: the same product.
    assert!(restarted.compile_json_schema_str(SCHEMA, &options).unwrap().ptr_eq(&loaded));
    assert_eq!(restarted.grammar_cache_stats().disk_hits, 1);
    let (mut a, mut b) = (GrammarMatcher::new(&compiled), GrammarMatcher::new(&loaded));
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..20 {
        let (ma, mb) = (mask(&mut a), mask(&mut b));
        assert_eq!(ma, mb);
        let ids: Vec<usize> = ma.allowed_ids().collect();
        if ids.is_empty() || a.is_terminated() {
            break;
        }
        let id = ids[rng.random_range(0..ids.len())] as u32;
        assert!(a.accept_token(id) && b.accept_token(id));
    }
    // Other options, another tokenizer: other files.
    let strict = JsonSchemaOptions { strict_mode: !options.strict_mode, ..options.clone() };
    restarted.compile_json_schema_str(SCHEMA, &strict).unwrap();
    disk_compiler(vocab("qwen3"), &dir, 1 << 30).compile_json_schema_str(SCHEMA, &options).unwrap();
    assert_eq!(dir.files().len(), 3);
}

#[test]
fn a_corrupted_file_is_removed_and_rebuilt() {
    let dir = TempDir::new("corrupt");
    let vocab = small_vocab();
    disk_compiler(&vocab, &dir, 1 << 30).compile_grammar(r#"root ::= "ab"+"#).unwrap();
    let file = dir.files().pop().unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&file, &bytes).unwrap();

    let second = disk_compiler(&vocab, &dir, 1 << 30);
    let g = second.compile_grammar(r#"root ::= "ab"+"#).unwrap();
    let stats = second.grammar_cache_stats();
    assert_eq!((stats.disk_hits, stats.disk_misses, stats.disk_errors), (0, 1, 1));
    assert_eq!(std::fs::read(&file).unwrap(), g.serialize(), "rewritten whole");
    let third = disk_compiler(&vocab, &dir, 1 << 30);
    third.compile_grammar(r#"root ::= "ab"+"#).unwrap();
    assert_eq!(third.grammar_cache_stats().disk_hits, 1);
}

#[test]
fn the_disk_cache_stays_within_its_budget() {
    let dir = TempDir::new("budget");
    let vocab = small_vocab();
    let grammars: Vec<String> = (1..=6).map(|n| format!(r#"root ::= "a{n}" "b"+"#)).collect();
    // Measure one file, then allow about two and a half of them.
    let one = disk_compiler(&vocab, &dir, u64::MAX).compile_grammar(&grammars[0]).unwrap().serialize().len() as u64;
    let budget = one * 5 / 2;
    let compiler = disk_compiler(&vocab, &dir, budget);
    for g in &grammars[1..] {
        compiler.compile_grammar(g).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20)); // distinct modification times
    }
    let sizes: u64 = dir.files().iter().map(|f| std::fs::metadata(f).unwrap().len()).sum();
    assert!(sizes <= budget, "{sizes} bytes kept, budget {budget}");
    assert!(dir.files().len() >= 2);
    // The most recent grammars were kept, the oldest evicted.
    let later = disk_compiler(&vocab, &dir, budget);
    later.compile_grammar(&grammars[5]).unwrap();
    later.compile_grammar(&grammars[0]).unwrap();
    let stats = later.grammar_cache_stats();
    assert_eq!((stats.disk_hits, stats.disk_misses), (1, 1));
}

#[test]
fn two_compilers_share_a_directory_across_threads() {
    let dir = TempDir::new("threads");
    let vocab = small_vocab();
    let grammars: Vec<String> = (1..=8).map(|n| format!(r#"root ::= ("a" | "bc"){{1,{n}}} "c""#)).collect();
    std::thread::scope(|s| {
        for seed in 0..2 {
            let (vocab, dir, grammars) = (&vocab, &dir, &grammars);
            s.spawn(move || {
                let compiler = disk_compiler(vocab, dir, 1 << 30);
                for round in 0..3 {
                    for i in 0..grammars.len() {
                        let g = &grammars[(i + seed * 3 + round) % grammars.len()];
                        compiler.compile_grammar(g).unwrap();
                    }
                }
            });
        }
    });
    assert_eq!(dir.files().len(), grammars.len(), "one file per grammar, no temporary file left");
    let reader = disk_compiler(&vocab, &dir, 1 << 30);
    for g in &grammars {
        let loaded = reader.compile_grammar(g).unwrap();
        let fresh = GrammarCompiler::new(vocab.clone(), CompilerConfig::default()).compile_grammar(g).unwrap();
        assert_eq!(loaded.grammar(), fresh.grammar());
    }
    assert_eq!(reader.grammar_cache_stats().disk_hits, grammars.len() as u64);
}

#[test]
fn structural_tags_and_protocols_go_through_the_grammar_cache() {
    let compiler = GrammarCompiler::new(vocab("llama3").clone(), CompilerConfig::default());
    let tool = serde_json::json!({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}});
    let options = ProtocolOptions::default();
    let a = compiler.compile_protocol("qwen", std::slice::from_ref(&tool), &ToolChoice::Auto, &options).unwrap();
    let b = compiler.compile_protocol("qwen", &[tool], &ToolChoice::Auto, &options).unwrap();
    assert!(a.ptr_eq(&b));
    let tag = r#"{"type": "structural_tag", "format": {"type": "const_string", "value": "hi"}}"#;
    let c = compiler.compile_structural_tag_str(tag).unwrap();
    assert!(c.ptr_eq(&compiler.compile_structural_tag_str(tag).unwrap()));
    let value: serde_json::Value = serde_json::from_str(tag).unwrap();
    let d = compiler.compile_structural_tag(&value).unwrap();
    assert!(d.ptr_eq(&compiler.compile_structural_tag(&value).unwrap()));
    assert_eq!(compiler.grammar_cache_stats().hits, 3);
}
