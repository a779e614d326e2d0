//! Hostile input (issue 20): every case ends in a typed error or a correct result within the
//! configured limits, never a panic, a hang or unbounded memory.
//!
//! The fast cases run with the other tests; the slow ones are `#[ignore]`d here and run by
//! `scripts/adversarial` (every case in its own process, with its time and peak memory:
//! `docs/reliability.md`). Names start with `fast_` or `slow_` so the script can tell them apart.

use std::io::Read as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use maskforge::{
    CancelToken, CompiledGrammar, CompilerConfig, Error, GrammarCompiler, GrammarMatcher, InterruptReason,
    JsonSchemaOptions, MatcherConfig, MatcherError, Parser, SchemaErrorKind, TokenBitmask, Vocabulary,
    VocabularyBuilder,
};
use serde_json::json;

/// The time limit the slow cases compile under: a server's setting for untrusted input.
const TIMEOUT: Duration = Duration::from_secs(20);

/// One token per printable ASCII character and a stop token (`</s>`, the last id).
fn ascii_vocab() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = (0x20u8..0x7F).map(|b| vec![b]).collect();
    tokens.push(b"\n".to_vec());
    tokens.push(b"</s>".to_vec());
    let stop = (tokens.len() - 1) as u32;
    VocabularyBuilder::new().tokens(tokens).special(stop).stop_tokens([stop]).build().unwrap()
}

/// The source size limit of most cases: above the default, so that the million-way enum (16 MB
/// of JSON) reaches the phases behind the limit; the 50 MB cases use the default.
const SOURCE_BYTES: usize = 64 << 20;

fn config() -> CompilerConfig {
    CompilerConfig::default().max_source_bytes(SOURCE_BYTES)
}

fn compiler() -> GrammarCompiler {
    GrammarCompiler::new(ascii_vocab(), config().compile_timeout(TIMEOUT))
}

/// The id of a one-character token of [`ascii_vocab`].
fn tok(c: u8) -> u32 {
    match c {
        b'\n' => 0x7F - 0x20,
        _ => u32::from(c - 0x20),
    }
}

fn schema_options() -> JsonSchemaOptions {
    JsonSchemaOptions { any_whitespace: false, ..JsonSchemaOptions::default() }
}

/// Prints the outcome of a case (`--nocapture` shows it; `scripts/adversarial` tabulates it).
fn outcome(what: impl std::fmt::Display) {
    println!("outcome: {what}");
}

/// Whether `e` is the typed error of a limit: too large / too deep, or interrupted.
fn is_limit(e: &Error) -> bool {
    outcome(format_args!("error: {e}"));
    match e {
        Error::Schema(s) => matches!(s.kind(), SchemaErrorKind::TooLarge(_) | SchemaErrorKind::Interrupted(_)),
        Error::Grammar(maskforge::GrammarError::TooLarge { .. }) | Error::Interrupted(_) => true,
        other => other.to_string().contains("too large") || other.to_string().contains("deeper"),
    }
}

/// Accepts `text` byte by byte (one token per character) and says whether all were accepted.
fn accepts(m: &mut GrammarMatcher, text: &[u8]) -> bool {
    text.iter().all(|&c| m.accept_token(tok(c)))
}

// ---- Schemas ---------------------------------------------------------------------------------

fn nested_array_schema(levels: usize) -> String {
    format!("{}{{\"type\":\"integer\"}}{}", r#"{"type":"array","items":"#.repeat(levels), "}".repeat(levels))
}

#[test]
fn fast_ten_thousand_deep_array_schema_is_a_limit_error() {
    let e = compiler().compile_json_schema_str(&nested_array_schema(10_000), &schema_options()).unwrap_err();
    assert!(is_limit(&e), "{e}");
}

#[test]
fn fast_ten_thousand_deep_instance_of_a_recursive_schema_is_read_exactly() {
    // Arrays of arrays of any depth: the instance nests 10,000 levels deep.
    let schema = json!({"$ref": "#/$defs/a", "$defs": {"a": {"type": "array", "items": {"$ref": "#/$defs/a"}}}});
    let g = compiler().compile_json_schema(&schema, &schema_options()).unwrap();
    let mut m = GrammarMatcher::new(&g);
    let mut mask = TokenBitmask::new(g.vocabulary().vocab_size());
    assert!(accepts(&mut m, "[".repeat(10_000).as_bytes()));
    m.fill_next_token_bitmask(mask.as_words_mut());
    assert!(mask.get(tok(b'[') as usize) && mask.get(tok(b']') as usize) && !mask.get(tok(b'1') as usize));
    assert!(accepts(&mut m, "]".repeat(10_000).as_bytes()));
    assert!(m.can_terminate() && !m.accept_token(tok(b']')));
}

#[test]
fn fast_ten_thousand_deep_instance_of_the_json_grammar_is_read_exactly() {
    let g = compiler().compile_builtin_json_grammar().unwrap();
    let mut m = GrammarMatcher::new(&g);
    let doc = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(accepts(&mut m, doc.as_bytes()));
    assert!(m.can_terminate() && !m.accept_token(tok(b']')));
}

fn enum_schema(n: usize) -> serde_json::Value {
    json!({"enum": (0..n).map(|i| format!("value-{i}")).collect::<Vec<_>>()})
}

/// An `n`-way enum compiles and reads its last value, or stops at a limit.
fn enum_compiles_or_hits_a_limit(n: usize) {
    match compiler().compile_json_schema(&enum_schema(n), &schema_options()) {
        Ok(g) => {
            let bytes = maskforge::last_compile_bytes();
            outcome(format_args!("compiled, {} automaton states, {bytes} bytes counted", g.fsm().state_len()));
            let last = format!("\"value-{}\"", n - 1);
            let mut m = GrammarMatcher::new(&g);
            assert!(accepts(&mut m, last.as_bytes()) && m.can_terminate());
        }
        Err(e) => assert!(is_limit(&e), "{e}"),
    }
}

#[test]
fn fast_hundred_thousand_way_enum_compiles_or_hits_a_limit() {
    enum_compiles_or_hits_a_limit(100_000);
}

#[test]
#[ignore = "slow: run by scripts/adversarial"]
fn slow_million_way_enum_compiles_or_hits_a_limit() {
    enum_compiles_or_hits_a_limit(1_000_000);
}

#[test]
fn fast_a_compile_over_its_byte_budget_is_an_error() {
    // The 100,000-way enum's one rule: millions of Thompson edges, copied by epsilon removal.
    let schema = enum_schema(100_000);
    let limit = 16 << 20;
    let c = GrammarCompiler::new(ascii_vocab(), config().compile_timeout(TIMEOUT).max_compile_bytes(limit));
    let start = Instant::now();
    let e = c.compile_json_schema(&schema, &schema_options()).unwrap_err();
    outcome(format_args!("{e}, after {:.1?}", start.elapsed()));
    assert!(matches!(e, Error::Interrupted(i) if i.reason == InterruptReason::TooLarge(limit)), "{e}");
    assert!(maskforge::last_compile_bytes() > limit);
    // Nothing of it was cached: the same compiler compiles a small schema, and the enum again
    // fails the same way.
    assert!(c.compile_json_schema(&enum_schema(10), &schema_options()).is_ok());
    assert!(matches!(c.compile_json_schema(&schema, &schema_options()), Err(Error::Interrupted(_))));
}

#[test]
fn fast_billion_max_length_is_a_counter() {
    let schema = json!({"type": "string", "minLength": 3, "maxLength": 1_000_000_000});
    let g = compiler().compile_json_schema(&schema, &schema_options()).unwrap();
    let mut m = GrammarMatcher::new(&g);
    assert!(accepts(&mut m, br#""ab"#) && !m.can_terminate());
    assert!(accepts(&mut m, br#"c""#) && m.can_terminate());
}

#[test]
fn fast_ref_cycles_without_content_are_errors() {
    let c = compiler();
    for schema in [
        json!({"$ref": "#"}),
        json!({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}),
        json!({"allOf": [{"$ref": "#"}]}),
    ] {
        // A cycle no instance can leave describes no value: an error, never a hang.
        let r = c.compile_json_schema(&schema, &schema_options());
        assert!(r.is_err(), "{schema}: compiled");
    }
}

#[test]
fn fast_ten_thousand_ref_chain_is_read_or_a_limit() {
    let n = 10_000;
    let mut defs = serde_json::Map::new();
    for i in 0..n {
        let next = if i + 1 == n { json!({"type": "integer"}) } else { json!({"$ref": format!("#/$defs/d{}", i + 1)}) };
        defs.insert(format!("d{i}"), next);
    }
    let schema = json!({"$ref": "#/$defs/d0", "$defs": defs});
    match compiler().compile_json_schema(&schema, &schema_options()) {
        Ok(g) => {
            outcome("compiled, reads an instance");
            assert!(accepts(&mut GrammarMatcher::new(&g), b"42"));
        }
        Err(e) => assert!(is_limit(&e), "{e}"),
    }
}

#[test]
fn fast_recursive_ref_under_indent_is_a_limit_error() {
    // design-notes problem 12: a recursive `$ref` under `indent` made a rule per nesting level,
    // each with a longer indentation literal, until memory ran out.
    let schema = json!({
        "type": "object",
        "properties": {"categories": {"type": "array", "items": {"$ref": "#/definitions/Category"}}},
        "required": ["categories"],
        "definitions": {"Category": {
            "type": "object",
            "properties": {
                "category_id": {"type": "integer"},
                "categories": {"type": "array", "items": {"$ref": "#/definitions/Category"}}
            },
            "required": ["category_id", "categories"]
        }}
    });
    let options = JsonSchemaOptions { indent: Some(2), ..schema_options() };
    let start = Instant::now();
    match compiler().compile_json_schema(&schema, &options) {
        // A fix of the cause may make it compile: then it reads an indented instance.
        Ok(g) => {
            outcome("compiled, reads an indented instance");
            let text =
                "{\n  \"categories\": [\n    {\n      \"category_id\": 1,\n      \"categories\": []\n    }\n  ]\n}";
            assert!(accepts(&mut GrammarMatcher::new(&g), text.as_bytes()));
        }
        Err(e) => assert!(is_limit(&e), "{e}"),
    }
    assert!(start.elapsed() < TIMEOUT + Duration::from_secs(5));
}

#[test]
fn fast_absurd_indent_is_an_error() {
    let options = JsonSchemaOptions { indent: Some(u32::MAX), ..schema_options() };
    let e = compiler().compile_json_schema(&json!({"type": "array"}), &options).unwrap_err();
    assert!(matches!(&e, Error::Schema(s) if matches!(s.kind(), SchemaErrorKind::Invalid(_))), "{e}");
}

// ---- Grammars and regexes --------------------------------------------------------------------

#[test]
fn fast_billion_repetition_in_ebnf_and_regex_is_a_counter() {
    let c = compiler();
    for r in [c.compile_grammar(r#"root ::= "a"{0,1000000000} "b""#), c.compile_regex("a{0,1000000000}b")] {
        match r {
            Ok(g) => {
                outcome("compiled (a counter)");
                let mut m = GrammarMatcher::new(&g);
                assert!(accepts(&mut m, "a".repeat(5_000).as_bytes()) && accepts(&mut m, b"b") && m.can_terminate());
            }
            // A front-end's own bound on counts (the regex parser's) is a syntax-level error.
            Err(e @ (Error::Regex(_) | Error::Ebnf(_))) => outcome(format_args!("error: {e}")),
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn fast_exponential_regexes_compile_and_match() {
    let c = compiler();
    for (pattern, good, bad) in [
        ("(a|a)*", "aaaa", "b"),
        ("(a*)*b", "aaab", "aaa|"),
        ("(a|aa)*c", "aaaaac", "aaab"),
        ("((a{0,30}){0,30}){0,30}", "aaaaaaaaaa", "b"),
        ("(.*a){20}", "aaaaaaaaaaaaaaaaaaaa", "b"),
        ("[ab]*a[ab]{15}", "babbbbbbbbbbbbbbb", "c"),
    ] {
        let g = match c.compile_regex(pattern) {
            Ok(g) => g,
            Err(e) => {
                assert!(is_limit(&e), "{pattern}: {e}");
                continue;
            }
        };
        let mut m = GrammarMatcher::new(&g);
        assert!(accepts(&mut m, good.as_bytes()) && m.can_terminate(), "{pattern} rejects {good}");
        let mut m = GrammarMatcher::new(&g);
        let all = bad.bytes().all(|ch| m.accept_token(tok(ch)));
        assert!(!(all && m.can_terminate()), "{pattern} accepts {bad}");
    }
}

#[test]
fn fast_nested_counted_repeats_in_ebnf_hit_a_limit_or_compile() {
    let c = compiler();
    let e = r#"root ::= (("a"{0,1000}){0,1000}){0,1000} "b""#;
    match c.compile_grammar(e) {
        Ok(g) => {
            outcome("compiled, reads an instance");
            assert!(accepts(&mut GrammarMatcher::new(&g), b"aaab"));
        }
        Err(e) => assert!(is_limit(&e), "{e}"),
    }
}

/// 50 MB of `[`.
fn brackets() -> String {
    "[".repeat(50 << 20)
}

#[test]
fn fast_fifty_megabytes_of_brackets_as_sources_are_errors() {
    // The default source limit refuses them before any parsing: a length comparison each.
    let c = GrammarCompiler::new(ascii_vocab(), CompilerConfig::default());
    let text = brackets();
    let start = Instant::now();
    let results = [
        c.compile_grammar(&text),
        c.compile_json_schema_str(&text, &schema_options()),
        c.compile_regex(&text),
        c.compile_structural_tag_str(&text),
    ];
    let elapsed = start.elapsed();
    for r in results {
        match r {
            Err(e @ Error::SourceTooLarge { bytes, limit, .. }) => {
                assert_eq!((bytes, limit), (50 << 20, maskforge::DEFAULT_MAX_SOURCE_BYTES), "{e}");
            }
            other => panic!("{:?}", other.map(|_| "compiled")),
        }
    }
    outcome(format_args!("four errors in {elapsed:?}"));
    assert!(elapsed < Duration::from_millis(100), "{elapsed:?}");
}

#[test]
fn fast_json_values_and_tools_over_the_source_limit_are_errors() {
    let c = GrammarCompiler::new(ascii_vocab(), CompilerConfig::default().max_source_bytes(1 << 20));
    // 1.5 MB as compact JSON: counted, not serialized, and the count stops at the limit.
    let schema = enum_schema(100_000);
    let e = c.compile_json_schema(&schema, &schema_options()).unwrap_err();
    assert!(matches!(e, Error::SourceTooLarge { bytes, .. } if bytes == (1 << 20) + 1), "{e}");
    let tool = json!({"type": "function", "function": {"name": "f", "parameters": schema}});
    let choice = maskforge::ToolChoice::from_json(&json!("auto")).unwrap();
    let e = c.compile_protocol("llama", &[tool], &choice, &maskforge::ProtocolOptions::default()).unwrap_err();
    assert!(matches!(e, Error::SourceTooLarge { what: "the tools", .. }), "{e}");
    let tag = json!({"type": "structural_tag", "format": {"type": "json_schema", "json_schema": schema}});
    assert!(matches!(c.compile_structural_tag(&tag), Err(Error::SourceTooLarge { .. })));
    // At the limit a source compiles.
    let small = json!({"enum": ["a"]});
    let c = GrammarCompiler::new(ascii_vocab(), CompilerConfig::default().max_source_bytes(14));
    assert_eq!(serde_json::to_string(&small).unwrap().len(), 14);
    assert!(c.compile_json_schema(&small, &schema_options()).is_ok());
    assert!(c.compile_json_schema_str(r#"{"enum":["a"]}"#, &schema_options()).is_ok());
    assert!(c.compile_json_schema_str(r#"{"enum": ["a"]}"#, &schema_options()).is_err());
}

#[test]
#[ignore = "slow: run by scripts/adversarial"]
fn slow_fifty_megabytes_of_brackets_as_an_instance() {
    // Every `[` opens an array of the JSON grammar: the parser state grows with the depth (one
    // kept position or stack frame per open level, compaction or not) until the default state
    // bound refuses a bracket; the masks stay exact and the matcher usable.
    let g = compiler().compile_builtin_json_grammar().unwrap();
    let mut m = GrammarMatcher::with_config(&g, MatcherConfig::default().max_rollback_tokens(0));
    let open = tok(b'[');
    let start = Instant::now();
    let mut result = Ok(true);
    for _ in 0..(50 << 20) {
        result = m.try_accept_token(open);
        if result != Ok(true) {
            break;
        }
    }
    let levels = m.num_accepted_tokens();
    outcome(format_args!("{levels} levels in {:.1?} ({}): {result:?}", start.elapsed(), engine(&m)));
    assert!(
        matches!(result, Err(MatcherError::StateTooLarge { limit: maskforge::DEFAULT_MAX_STATE_BYTES, .. })),
        "{result:?}"
    );
    let mut mask = TokenBitmask::new(g.vocabulary().vocab_size());
    m.fill_next_token_bitmask(mask.as_words_mut());
    assert!(mask.get(tok(b']') as usize) && !mask.get(tok(b'}') as usize));
}

/// Which parser a matcher runs, for outcomes.
fn engine(m: &GrammarMatcher) -> &'static str {
    if m.runs_pda() {
        "PDA"
    } else {
        "Earley"
    }
}

#[test]
fn fast_invalid_utf8_in_texts_is_rejected_not_a_panic() {
    let g = compiler().compile_json_schema(&json!({"type": "string"}), &schema_options()).unwrap();
    let mut m = GrammarMatcher::new(&g);
    assert!(m.accept_string(b"\""));
    assert!(!m.accept_string([0xFFu8]) && !m.accept_string([0xC3u8, 0x28]));
    assert!(m.accept_string("é\"".as_bytes()) && m.can_terminate());
}

#[test]
fn fast_invalid_utf8_in_a_tokenizer_and_grammar_bytes() {
    // Token bytes that are not UTF-8 (byte-fallback pieces) are legal and never match
    // half a character wrongly; grammar text is `&str`, so the CLI tests cover invalid files.
    let vocab = VocabularyBuilder::new().tokens([b"\"".to_vec(), vec![0xC3], vec![0xA9], vec![0xFF]]).build().unwrap();
    let c = GrammarCompiler::new(vocab, CompilerConfig::default());
    let g = c.compile_json_schema(&json!({"type": "string"}), &schema_options()).unwrap();
    let mut m = GrammarMatcher::new(&g);
    assert!(m.accept_token(0) && m.accept_token(1) && !m.accept_token(3) && m.accept_token(2) && m.accept_token(0));
}

// ---- Tokenizers ------------------------------------------------------------------------------

fn llama3_json() -> Vec<u8> {
    let path = maskforge::tokenizer::fixtures_dir().join("tokenizers/llama3.tokenizer.json.gz");
    let file =
        std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}: run scripts/fetch-tokenizers", path.display()));
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(file).read_to_end(&mut json).unwrap();
    json
}

#[test]
fn fast_truncated_tokenizer_json_is_an_error() {
    let json = llama3_json();
    for cut in [0, 1, 100, json.len() / 3, json.len() / 2, json.len() - 2] {
        assert!(Vocabulary::from_tokenizer_json(&json[..cut], None).is_err(), "cut at {cut}");
    }
}

#[test]
fn fast_inconsistent_tokenizer_json_is_an_error_or_consistent() {
    let bpe = |vocab: serde_json::Value, added: serde_json::Value| {
        serde_json::to_vec(&json!({
            "added_tokens": added,
            "decoder": {"type": "ByteLevel"},
            "model": {"type": "BPE", "vocab": vocab, "merges": []}
        }))
        .unwrap()
    };
    let cases = [
        // Two tokens with one id, an id past a hole, a huge id, an added token over a regular one
        // with other text, a negative id, an id that is not a number.
        bpe(json!({"a": 0, "b": 0}), json!([])),
        bpe(json!({"a": 0, "b": 5}), json!([])),
        bpe(json!({"a": 0, "b": 4_000_000_000u64}), json!([])),
        bpe(json!({"a": 0, "b": 1}), json!([{"id": 1, "content": "<s>", "special": true}])),
        bpe(json!({"a": 0, "b": -1}), json!([])),
        bpe(json!({"a": 0, "b": "1"}), json!([])),
        bpe(json!({"a": 0}), json!([{"id": 4_294_967_295u64, "content": "<s>", "special": true}])),
        serde_json::to_vec(&json!({"model": {"type": "Unigram", "vocab": [["a"]]}})).unwrap(),
        serde_json::to_vec(&json!({"model": 5})).unwrap(),
    ];
    for json in cases {
        let text = String::from_utf8_lossy(&json).into_owned();
        let start = Instant::now();
        if let Ok(v) = Vocabulary::from_tokenizer_json(&json, None) {
            // Accepted: then ids are dense and every one has bytes.
            assert!(v.vocab_size() < 1 << 20, "{text}: {} tokens", v.vocab_size());
            for id in 0..v.vocab_size() as u32 {
                let _ = v.token_bytes(id);
            }
        }
        assert!(start.elapsed() < Duration::from_secs(5), "{text}");
    }
}

// ---- Matchers --------------------------------------------------------------------------------

#[test]
fn fast_token_ids_out_of_range_are_rejected() {
    let g = compiler().compile_builtin_json_grammar().unwrap();
    let mut m = GrammarMatcher::new(&g);
    let size = g.vocabulary().vocab_size() as u32;
    for id in [size, size + 1, u32::MAX] {
        assert!(!m.accept_token(id));
        assert!(matches!(m.try_accept_token(id), Err(MatcherError::InvalidTokenId { .. })));
    }
    // Still usable.
    assert!(m.accept_token(tok(b'1')) && m.can_terminate());
}

#[test]
fn fast_rollback_past_the_limit_is_an_error_and_keeps_the_state() {
    let g = compiler().compile_builtin_json_grammar().unwrap();
    let mut m = GrammarMatcher::with_config(&g, maskforge::MatcherConfig::default().max_rollback_tokens(2));
    assert!(accepts(&mut m, b"[1,2"));
    assert!(matches!(m.rollback(3), Err(MatcherError::RollbackTooFar { .. })));
    assert!(matches!(m.rollback(usize::MAX), Err(MatcherError::RollbackTooFar { .. })));
    m.rollback(2).unwrap();
    assert!(accepts(&mut m, b"]") && m.can_terminate());
}

#[test]
fn fast_matcher_after_termination_rejects_everything() {
    let g = compiler().compile_regex("ab").unwrap();
    let mut m = GrammarMatcher::new(&g);
    let stop = g.vocabulary().stop_token_ids()[0];
    assert!(accepts(&mut m, b"ab") && m.accept_token(stop) && m.is_terminated());
    let mut mask = TokenBitmask::new(g.vocabulary().vocab_size());
    m.fill_next_token_bitmask(mask.as_words_mut());
    assert!(mask.as_words().iter().all(|&w| w == 0));
    assert!(!m.accept_token(tok(b'a')) && !m.accept_token(stop) && !m.accept_string(b"a"));
    assert!(m.try_fill_next_token_bitmask(&mut [0u32; 1]).is_err(), "a short buffer is still an error");
    m.rollback(1).unwrap();
    assert!(!m.is_terminated() && m.can_terminate());
}

#[test]
fn fast_a_panic_in_a_fill_poisons_that_matcher_until_reset() {
    let g = compiler().compile_builtin_json_grammar().unwrap();
    let (mut poisoned, mut other) = (GrammarMatcher::new(&g), GrammarMatcher::new(&g));
    assert!(accepts(&mut poisoned, b"[1") && accepts(&mut other, b"[1"));
    let mut mask = TokenBitmask::new(g.vocabulary().vocab_size());
    maskforge::inject_panic_into_next_fill();
    assert!(matches!(poisoned.try_fill_next_token_bitmask(mask.as_words_mut()), Err(MatcherError::Poisoned)));
    assert!(mask.as_words().iter().all(|&w| w == 0), "a poisoned fill allows nothing");
    assert!(matches!(poisoned.try_fill_next_token_bitmask(mask.as_words_mut()), Err(MatcherError::Poisoned)));
    assert!(matches!(poisoned.try_accept_token(tok(b']')), Err(MatcherError::Poisoned)));
    assert!(!poisoned.accept_token(tok(b']')) && !poisoned.accept_string(b"]"));
    assert!(matches!(poisoned.rollback(1), Err(MatcherError::Poisoned)));
    // Another matcher of the grammar (sharing its mask cache) goes on.
    other.try_fill_next_token_bitmask(mask.as_words_mut()).unwrap();
    assert!(mask.get(tok(b']') as usize) && mask.get(tok(b',') as usize) && !mask.get(tok(b'}') as usize));
    assert!(accepts(&mut other, b"]") && other.can_terminate());
    // `reset` recovers: the same fills as a new matcher.
    poisoned.reset();
    assert!(accepts(&mut poisoned, b"[1"));
    poisoned.try_fill_next_token_bitmask(mask.as_words_mut()).unwrap();
    assert!(mask.get(tok(b']') as usize) && accepts(&mut poisoned, b"]") && poisoned.can_terminate());
}

// ---- Per-step work and per-matcher state ------------------------------------------------------

/// The ambiguous grammar of issue 20: reading the n-th byte costs about n² parser item visits.
const AMBIGUOUS: &str = r#"root ::= root root | "a""#;

/// A matcher of `g` with a step budget of `items`.
fn budgeted(g: &CompiledGrammar, items: u64) -> GrammarMatcher {
    GrammarMatcher::with_config(g, MatcherConfig::default().max_step_items(items))
}

/// Fills a mask (into `mask`) and accepts `token`, again and again, until the matcher refuses
/// with an error (returned); every accepted step must be accepted and `within` its bound, and
/// the refusal must come within `cap` tokens.
fn fill_and_accept_until_refused(
    m: &mut GrammarMatcher,
    token: u32,
    mask: &mut TokenBitmask,
    cap: usize,
    within: impl Fn(&GrammarMatcher) -> bool,
) -> MatcherError {
    loop {
        m.try_fill_next_token_bitmask(mask.as_words_mut()).unwrap();
        match m.try_accept_token(token) {
            Ok(accepted) => assert!(accepted && within(m)),
            Err(e) => return e,
        }
        assert!(m.num_accepted_tokens() < cap, "no refusal within {cap} tokens");
    }
}

#[test]
fn fast_an_ambiguous_grammar_hits_the_step_budget_and_the_matcher_is_unchanged() {
    let g = compiler().compile_grammar(AMBIGUOUS).unwrap();
    let limit = 100_000;
    let mut m = budgeted(&g, limit);
    let size = g.vocabulary().vocab_size();
    let (mut before, mut after) = (TokenBitmask::new(size), TokenBitmask::new(size));
    let a = tok(b'a');
    let start = Instant::now();
    let err = fill_and_accept_until_refused(&mut m, a, &mut before, 5_000, |m| m.last_step_items() <= limit);
    let read = m.num_accepted_tokens();
    outcome(format_args!("refused byte {} after {:.1?}: {err}", read + 1, start.elapsed()));
    assert!(matches!(err, MatcherError::StepTooExpensive { items, limit: l } if items > limit && l == limit));
    // Exactly as before the call: the same mask, the same refusal, and valid input goes on.
    m.try_fill_next_token_bitmask(after.as_words_mut()).unwrap();
    assert_eq!((after, m.num_accepted_tokens()), (before, read));
    assert_eq!(m.try_accept_token(a), Err(err));
    assert!(!m.accept_token(a));
    m.rollback(1).unwrap();
    assert!(m.accept_token(a), "one byte earlier the same token fits the budget");
    let stop = g.vocabulary().stop_token_ids()[0];
    assert!(m.can_terminate() && m.accept_token(stop) && m.is_terminated());
    // A string too costly to read in one call: refused whole, nothing kept.
    let mut s = budgeted(&g, limit);
    let long = "a".repeat(read);
    assert!(matches!(s.try_accept_string(&long), Err(MatcherError::StepTooExpensive { .. })));
    assert!(!s.accept_string(&long) && s.num_accepted_tokens() == 0);
    assert!(s.accept_string("aaaa") && s.can_terminate());
}

#[test]
fn fast_a_fill_over_the_step_budget_is_an_error_and_the_matcher_is_unchanged() {
    // "ab", "aab", "aaab" leave rule `r`: the fill checks them with the parser, each costing
    // about as many visits as reading its `a`s, so the fill runs out before `a` does.
    let vocab = VocabularyBuilder::new()
        .tokens(["a", "b", "ab", "aab", "aaab", "</s>"])
        .special(5)
        .stop_tokens([5])
        .build()
        .unwrap();
    let g = GrammarCompiler::new(vocab, config()).compile_grammar("root ::= r \"b\"\nr ::= r r | \"a\"").unwrap();
    let limit = 100_000;
    let mut m = budgeted(&g, limit);
    let (mut mask, mut last_good) = (TokenBitmask::new(6), TokenBitmask::new(6));
    let start = Instant::now();
    let err = loop {
        match m.try_fill_next_token_bitmask(mask.as_words_mut()) {
            Ok(_) => last_good = mask.clone(),
            Err(e) => break e,
        }
        assert_eq!(m.try_accept_token(0), Ok(true), "the fill should run out first");
        assert!(m.num_accepted_tokens() < 5_000, "the budget never ran out");
    };
    outcome(format_args!("fill refused after {} bytes, {:.1?}: {err}", m.num_accepted_tokens(), start.elapsed()));
    assert!(matches!(err, MatcherError::StepTooExpensive { items, .. } if items > limit));
    assert!(mask.as_words().iter().all(|&w| w == 0), "a failed fill allows nothing");
    assert_eq!(m.try_fill_next_token_bitmask(mask.as_words_mut()), Err(err));
    // Unchanged: one token back the same mask as then, and at the failing state a valid token
    // (the cheap `b`) is accepted.
    m.rollback(1).unwrap();
    m.try_fill_next_token_bitmask(mask.as_words_mut()).unwrap();
    assert_eq!(mask, last_good);
    assert!(m.accept_token(0) && m.accept_token(1) && m.can_terminate());
}

#[test]
fn fast_a_pda_hand_over_is_paid_from_the_step_budget() {
    // Ambiguity overflows the PDA's threads after a while; the step that overflows replays the
    // input into an Earley parser, which costs that step more than any before it.
    let ebnf = r#"root ::= x "b"
        x ::= "a" x | "a" y | ""
        y ::= "a" x "c" | """#;
    let g = GrammarCompiler::new(ascii_vocab(), config().parser(Parser::Pda)).compile_grammar(ebnf).unwrap();
    let a = tok(b'a');
    let mut free = budgeted(&g, u64::MAX);
    let mut costs = Vec::new();
    while free.runs_pda() {
        assert!(free.accept_token(a));
        costs.push(free.last_step_items());
        assert!(costs.len() < 1_000, "the threads never overflowed");
    }
    let hand_over = costs.pop().unwrap();
    let before = costs.iter().copied().max().unwrap_or(0);
    outcome(format_args!("hand-over at byte {}: {hand_over} visits (earlier steps at most {before})", costs.len() + 1));
    assert!(hand_over > before + 1, "{hand_over} vs {before}");
    // The overflowing step is the PDA's attempt, the replay, then the byte read by Earley (what
    // an Earley matcher pays for it). A budget short of the replay refuses the step and the
    // matcher stays a PDA; one visit short of the whole step, the hand-over is done (the same
    // state, held by Earley) and the byte refused. Either way nothing is read.
    let earley = GrammarCompiler::new(ascii_vocab(), config().parser(Parser::Earley)).compile_grammar(ebnf).unwrap();
    let mut e = budgeted(&earley, u64::MAX);
    assert!(costs.iter().all(|_| e.accept_token(a)) && e.accept_token(a));
    let size = g.vocabulary().vocab_size();
    for (limit, stays_pda) in [(hand_over - e.last_step_items() - 1, true), (hand_over - 1, false)] {
        let mut m = budgeted(&g, limit);
        let (mut mask, mut after) = (TokenBitmask::new(size), TokenBitmask::new(size));
        assert!(costs.iter().all(|_| m.accept_token(a)));
        m.try_fill_next_token_bitmask(mask.as_words_mut()).unwrap();
        assert!(matches!(m.try_accept_token(a), Err(MatcherError::StepTooExpensive { .. })));
        assert_eq!((m.runs_pda(), m.num_accepted_tokens()), (stays_pda, costs.len()), "limit {limit}");
        m.try_fill_next_token_bitmask(after.as_words_mut()).unwrap();
        assert_eq!(after, mask);
        assert!(m.accept_token(tok(b'b')) && m.can_terminate(), "a valid token is still read");
    }
    // With the replay's cost the hand-over goes through.
    let mut m = budgeted(&g, hand_over);
    assert!(costs.iter().all(|_| m.accept_token(a)) && m.accept_token(a) && !m.runs_pda());
}

#[test]
fn fast_deep_nesting_hits_the_state_bound_and_the_matcher_stays_usable() {
    let limit = 1 << 20;
    let cases = [(Parser::Auto, None), (Parser::Earley, None), (Parser::Auto, Some(0)), (Parser::Earley, Some(0))];
    for (parser, rollback) in cases {
        let g = GrammarCompiler::new(ascii_vocab(), config().parser(parser)).compile_builtin_json_grammar().unwrap();
        let mut config = MatcherConfig::default().max_state_bytes(limit);
        if let Some(n) = rollback {
            config = config.max_rollback_tokens(n);
        }
        let mut m = GrammarMatcher::with_config(&g, config);
        let size = g.vocabulary().vocab_size();
        let (mut before, mut after) = (TokenBitmask::new(size), TokenBitmask::new(size));
        let (open, close) = (tok(b'['), tok(b']'));
        let start = Instant::now();
        let err = fill_and_accept_until_refused(&mut m, open, &mut before, 1 << 20, |m| m.state_bytes() <= limit);
        let levels = m.num_accepted_tokens();
        outcome(format_args!(
            "{} (rollback limit {rollback:?}): {levels} levels, {:.1?}: {err}",
            engine(&m),
            start.elapsed()
        ));
        assert!(matches!(err, MatcherError::StateTooLarge { bytes, limit: l } if bytes > limit && l == limit));
        m.try_fill_next_token_bitmask(after.as_words_mut()).unwrap();
        assert_eq!((&after, m.num_accepted_tokens()), (&before, levels));
        assert!(after.get(close as usize) && after.get(open as usize));
        if rollback.is_none() {
            // One level back a closing bracket takes less room than the refused opening one.
            m.rollback(1).unwrap();
            assert!(m.accept_token(close) && m.num_accepted_tokens() == levels);
        }
        m.reset();
        assert!(accepts(&mut m, b"[[1]]") && m.can_terminate());
    }
}

#[test]
#[ignore = "slow: run by scripts/adversarial"]
fn slow_an_ambiguous_grammar_under_the_default_bounds() {
    // Eight bytes per step, as a real tokenizer would give `a…a` (the session 9 measurement):
    // each step costs more than the last and the chart grows as n²; a default bound ends it.
    let g = compiler().compile_grammar(AMBIGUOUS).unwrap();
    let mut m = GrammarMatcher::new(&g);
    let start = Instant::now();
    let (mut result, mut last) = (Ok(true), 0);
    while result == Ok(true) {
        result = m.try_accept_string("aaaaaaaa");
        last = m.last_step_items();
    }
    outcome(format_args!(
        "byte {}, {:.1?}, last step {last} visits, state {} bytes: {result:?}",
        8 * m.num_accepted_tokens(),
        start.elapsed(),
        m.state_bytes()
    ));
    assert!(matches!(result, Err(MatcherError::StepTooExpensive { .. } | MatcherError::StateTooLarge { .. })));
    assert!(m.accept_token(g.vocabulary().stop_token_ids()[0]), "the matcher is usable");
}

// ---- Deadline and cancellation ---------------------------------------------------------------

#[test]
fn fast_a_zero_timeout_interrupts_every_kind_of_compile() {
    let c = GrammarCompiler::new(ascii_vocab(), config().compile_timeout(Duration::ZERO));
    let results = [
        c.compile_grammar(r#"root ::= "a""#),
        c.compile_json_schema(&json!({"type": "integer"}), &schema_options()),
        c.compile_regex("a+"),
        c.compile_builtin_json_grammar(),
    ];
    for r in results {
        match r {
            Err(Error::Interrupted(i)) => assert_eq!(i.reason, InterruptReason::Timeout(Duration::ZERO)),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn fast_a_timeout_stops_a_long_compile_in_time() {
    let schema = enum_schema(1_000_000);
    // 200 ms ends in the JSON Schema lowering; 2 s inside the enum's automaton construction
    // (one rule, ~10 s to build on a busy machine), whose passes check the watch as they go.
    // No byte budget: it would stop this compile first (`fast_a_compile_over_its_byte_budget`).
    for limit in [Duration::from_millis(200), Duration::from_secs(2)] {
        let c = GrammarCompiler::new(ascii_vocab(), config().compile_timeout(limit).max_compile_bytes(u64::MAX));
        let start = Instant::now();
        let phase = match c.compile_json_schema(&schema, &schema_options()) {
            Err(Error::Interrupted(i)) => {
                assert_eq!(i.reason, InterruptReason::Timeout(limit));
                i.phase
            }
            other => panic!("{:?}", other.map(|_| "compiled")),
        };
        // The bound leaves room for a loaded machine; docs/reliability.md has measured times.
        let elapsed = start.elapsed();
        outcome(format_args!("limit {limit:?}: stopped {:?} after it (in {phase})", elapsed.saturating_sub(limit)));
        assert!(elapsed < limit + Duration::from_secs(3), "{elapsed:?}");
    }
}

#[test]
fn fast_a_cancelled_token_stops_a_compile_from_another_thread() {
    // No byte budget, which would stop the million-way enum by itself.
    let compiler = GrammarCompiler::new(ascii_vocab(), config().max_compile_bytes(u64::MAX));
    let token = CancelToken::new();
    let handle = compiler.with_cancel_token(token.clone());
    let schema = enum_schema(1_000_000);
    let started = Arc::new(AtomicBool::new(false));
    let canceller = {
        let (token, started) = (token.clone(), started.clone());
        std::thread::spawn(move || {
            while !started.load(Ordering::Relaxed) {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(100));
            token.cancel();
            Instant::now()
        })
    };
    started.store(true, Ordering::Relaxed);
    let r = handle.compile_json_schema(&schema, &schema_options());
    let cancelled_at = canceller.join().unwrap();
    match r {
        Err(Error::Interrupted(i)) => assert_eq!(i.reason, InterruptReason::Cancelled),
        other => panic!("{:?}", other.map(|_| "compiled")),
    }
    // As with the timeout, whichever phase the cancel lands in.
    outcome(format_args!("stopped {:?} after the cancel", cancelled_at.elapsed()));
    assert!(cancelled_at.elapsed() < Duration::from_secs(3), "stopped {:?} after the cancel", cancelled_at.elapsed());
    // The interrupted compile left nothing behind: the compiler and its caches serve the next one.
    let g = compiler.compile_json_schema(&json!({"enum": ["x"]}), &schema_options()).unwrap();
    assert!(accepts(&mut GrammarMatcher::new(&g), br#""x""#));
}
