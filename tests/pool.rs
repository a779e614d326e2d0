//! The cross-grammar mask pool and the whole-grammar cache: masks stay equal to the exact
//! oracle's when many grammars sharing sub-structures go through one warm pool in random order
//! under eviction pressure; the pool is actually hit for a shared tool object (perfect hits)
//! and for a shared rule under another follow set (partial hits); identical inputs compile to
//! the same grammar.

use std::sync::{Arc, OnceLock};

use maskforge::JsonSchemaOptions;
use maskforge::MaskPool;
use maskforge::VocabularyBuilder;
use maskforge::{CompiledGrammar, CompilerConfig, Error, GrammarCompiler, GrammarMatcher, TokenBitmask, Vocabulary};
use maskforge_bench::toolbench::{PlainJson, Tool};
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::support::gen;
use crate::support::small_vocab::small_vocab;

/// A small vocabulary of JSON pieces: single characters and typical multi-byte tokens.
fn json_vocab() -> &'static Vocabulary {
    static V: OnceLock<Vocabulary> = OnceLock::new();
    V.get_or_init(|| {
        let mut tokens: Vec<String> = "{}[]\":, 12-.abcdefghijklmnopqrstuvwxyz".chars().map(String::from).collect();
        for t in [
            "\"a\"",
            "\":",
            "\",",
            "\"}",
            "},",
            "\"a\":",
            "{\"",
            "1,",
            "12",
            "true",
            "false",
            "null",
            "ab",
            "\"b\"",
            "name",
            "\"name\":\"",
            "arguments",
            "\":{\"",
            "}}",
            "\"]",
            "[\"",
            "ba\"",
            "a\"}",
            ",\"",
            "\"ab\"",
        ] {
            tokens.push(t.to_owned());
        }
        tokens.push("</s>".to_owned());
        let stop = (tokens.len() - 1) as u32;
        VocabularyBuilder::new().tokens(tokens).special(stop).stop_tokens([stop]).build().unwrap()
    })
}

/// Tool parameter schemas that share pieces (strings, integers, the same nested object).
fn parameter_schemas() -> Vec<Value> {
    let inner = json!({"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]});
    vec![
        json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}, "b": {"type": "integer"}}, "required": ["a"]}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}, "required": ["a"]}),
        json!({"type": "object", "properties": {"b": {"enum": ["ab", "ba"]}}, "required": ["b"]}),
        json!({"type": "object", "properties": {"a": inner}, "required": ["a"]}),
        json!({"type": "object", "properties": {"b": inner, "a": {"type": "string"}}}),
    ]
}

fn tools(picks: &[(usize, usize)]) -> Vec<Tool> {
    let names = ["a", "b", "ab", "ba", "nab"];
    let params = parameter_schemas();
    picks
        .iter()
        .map(|&(n, p)| Tool { id: format!("{n}-{p}"), name: names[n].to_owned(), parameters: params[p].clone() })
        .collect()
}

/// Two process-wide pools for the small JSON vocabulary: a tiny one (constant eviction) and a
/// roomy one (many hits); proptest cases share them, so every case meets a warm pool.
fn shared_pool(tiny: bool) -> Arc<MaskPool> {
    static POOLS: OnceLock<[Arc<MaskPool>; 2]> = OnceLock::new();
    let pools = POOLS
        .get_or_init(|| [Arc::new(MaskPool::new(json_vocab(), 1500)), Arc::new(MaskPool::new(json_vocab(), 4 << 20))]);
    Arc::clone(&pools[tiny as usize])
}

/// Walks `grammar` along random allowed tokens, asserting at each step that the cached mask
/// equals the oracle's.
fn walk_against_oracle(
    grammar: &CompiledGrammar,
    picks: &[prop::sample::Index],
    what: &str,
) -> Result<(), TestCaseError> {
    let n = grammar.vocabulary().vocab_size();
    let mut m = GrammarMatcher::new(grammar);
    let (mut cached, mut exact) = (TokenBitmask::new(n), TokenBitmask::new(n));
    for pick in picks {
        m.fill_next_token_bitmask(cached.as_words_mut());
        m.fill_next_token_bitmask_exact(exact.as_words_mut()).unwrap();
        prop_assert_eq!(&cached, &exact, "{}", what);
        let allowed: Vec<usize> = cached.allowed_ids().collect();
        if allowed.is_empty() || m.is_terminated() {
            break;
        }
        prop_assert!(m.accept_token(allowed[pick.index(allowed.len())] as u32));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Requests made of random subsets of shared tool schemas, in random order, through a
    /// shared warm pool (tiny or roomy): every mask equals the oracle's.
    #[test]
    fn tool_requests_through_a_shared_pool_equal_the_oracle(
        requests in prop::collection::vec(prop::collection::vec((0usize..5, 0usize..5), 1..4), 1..5),
        tiny in any::<bool>(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..24),
    ) {
        let pool = shared_pool(tiny);
        let compiler = GrammarCompiler::with_pool(json_vocab().clone(), CompilerConfig::default(), pool).unwrap();
        for request in &requests {
            let tools = tools(request);
            let chosen: Vec<&Tool> = tools.iter().collect();
            let schema = PlainJson::schema(&chosen);
            let grammar = compiler.compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
            walk_against_oracle(&grammar, &picks, &format!("tiny pool {tiny}, schema {schema}"))?;
        }
    }

    /// Random grammars (which often share rules and sub-expressions) through one pool with
    /// eviction pressure, each compiled twice under fresh compilers so the second meets its own
    /// entries in the pool: every mask equals the oracle's.
    #[test]
    fn random_grammars_through_one_pool_equal_the_oracle(
        grammars in prop::collection::vec(gen::grammar(), 1..5),
        budget in prop::sample::select(vec![0usize, 300, 1 << 20]),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let vocab = small_vocab();
        let pool = Arc::new(MaskPool::new(&vocab, budget));
        for round in 0..2 {
            for g in &grammars {
                let compiler = GrammarCompiler::with_pool(vocab.clone(), CompilerConfig::default(), Arc::clone(&pool)).unwrap();
                let grammar = compiler.compile(g.clone()).unwrap();
                walk_against_oracle(&grammar, &picks, &format!("round {round}, budget {budget}\n{g}"))?;
            }
        }
        prop_assert!(pool.stats().bytes <= budget);
    }
}

/// Accepts `text` token by token (one byte-token at a time through the JSON vocabulary's
/// single characters), filling a mask before each.
fn accept_text(grammar: &CompiledGrammar, text: &str) {
    let vocab = grammar.vocabulary();
    let mut m = GrammarMatcher::new(grammar);
    let mut mask = TokenBitmask::new(vocab.vocab_size());
    for ch in text.chars() {
        m.fill_next_token_bitmask(mask.as_words_mut());
        let id = vocab.token_id(&ch.to_string()).unwrap_or_else(|| panic!("no token for {ch:?}"));
        assert!(mask.get(id as usize), "{ch:?} not allowed in {text}");
        assert!(m.accept_token(id));
    }
    assert!(m.can_terminate(), "{text} cannot end");
}

#[test]
fn the_same_tool_in_two_requests_hits_the_pool() {
    let compiler = GrammarCompiler::new(json_vocab().clone(), CompilerConfig::default());
    let all = tools(&[(0, 3), (1, 1), (2, 2)]);
    let call = r#"{"name":"a","arguments":{"a":{"b":true}}}"#;
    // Request 1: tools 0 and 1; request 2: tools 2 and 0, in another order.
    let first = PlainJson::schema(&[&all[0], &all[1]]);
    let g1 = compiler.compile_json_schema(&first, &JsonSchemaOptions::default()).unwrap();
    accept_text(&g1, call);
    let s1 = g1.mask_cache_stats();
    assert_eq!(s1.pool_hits + s1.pool_partial_hits, 0, "a cold pool serves nothing: {s1:?}");
    let second = PlainJson::schema(&[&all[2], &all[0]]);
    let g2 = compiler.compile_json_schema(&second, &JsonSchemaOptions::default()).unwrap();
    accept_text(&g2, call);
    let s2 = g2.mask_cache_stats();
    // Once inside tool 0's arguments, the states are the same sub-structure as in request 1.
    assert!(s2.pool_hits >= 5, "the shared tool object is served by the pool: {s2:?}");
    assert!(s2.entries > s2.pool_hits, "the new tool's part is built: {s2:?}");
    assert_eq!(compiler.pool_stats().hits as usize, s2.pool_hits);
}

#[test]
fn a_shared_rule_under_another_follow_set_is_a_partial_hit() {
    let vocab = small_vocab();
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default().fsm_limits(no_inlining()));
    // Two use sites each, so no certain context: the entries of x and y depend on the rule
    // and its follow set ({c} and {b}) only. Reusing x's entry for y as is would reject "ab"
    // after "aa" (b cannot follow x), which y allows: the masks check the derivation.
    let g1 = compiler.compile_grammar(r#"root ::= x "c" x "cc"  x ::= "a" "a"+"#).unwrap();
    let g2 = compiler.compile_grammar(r#"root ::= y "b" y "bb"  y ::= "a" "a"+"#).unwrap();
    for (g, text) in [(&g1, &["a", "a", "c", "a", "a", "c", "c"][..]), (&g2, &["a", "a", "ab", "a", "ab", "b"][..])] {
        let mut m = GrammarMatcher::new(g);
        let mut mask = TokenBitmask::new(vocab.vocab_size());
        let mut exact = TokenBitmask::new(vocab.vocab_size());
        for t in text {
            m.fill_next_token_bitmask(mask.as_words_mut());
            m.fill_next_token_bitmask_exact(exact.as_words_mut()).unwrap();
            assert_eq!(mask, exact);
            assert!(m.accept_token(vocab.token_id(t).unwrap()));
        }
        assert!(m.can_terminate());
    }
    let stats = compiler.pool_stats();
    assert!(stats.partial_hits >= 1, "x and y have equal automata but other follow sets: {stats:?}");
}

fn no_inlining() -> maskforge::fsm::FsmLimits {
    maskforge::fsm::FsmLimits { max_inline_states: 0, ..maskforge::fsm::FsmLimits::default() }
}

#[test]
fn compiling_the_same_input_twice_is_a_lookup() {
    let compiler = GrammarCompiler::new(json_vocab().clone(), CompilerConfig::default());
    let schema = parameter_schemas()[0].clone();
    let a = compiler.compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
    let b = compiler.compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
    assert!(a.ptr_eq(&b));
    let c = compiler.compile_json_schema(&schema, &JsonSchemaOptions::spec_compliant()).unwrap();
    assert!(!a.ptr_eq(&c), "other options, another grammar");
    let e1 = compiler.compile_grammar(r#"root ::= "a"+"#).unwrap();
    assert!(e1.ptr_eq(&compiler.compile_grammar(r#"root ::= "a"+"#).unwrap()));
    let stats = compiler.grammar_cache_stats();
    assert_eq!((stats.hits, stats.misses), (2, 3));
    let off = GrammarCompiler::new(json_vocab().clone(), CompilerConfig::default().grammar_cache_len(0));
    let x = off.compile_grammar(r#"root ::= "a"+"#).unwrap();
    assert!(!x.ptr_eq(&off.compile_grammar(r#"root ::= "a"+"#).unwrap()));
}

#[test]
fn a_pool_serves_one_vocabulary() {
    let pool = Arc::new(MaskPool::new(json_vocab(), 1 << 20));
    let err = GrammarCompiler::with_pool(small_vocab(), CompilerConfig::default(), pool).unwrap_err();
    assert!(matches!(err, Error::PoolVocabulary { .. }), "{err}");
    assert!(err.to_string().contains("another") || err.to_string().contains("one vocabulary"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random grammars (sharing rules and sub-expressions) compiled twice through one compiler,
    /// whose rule-automaton cache is warm from the others: every automaton equals a build
    /// without the cache, state for state and edge for edge.
    #[test]
    fn rule_automata_from_a_warm_cache_equal_a_cold_build(grammars in prop::collection::vec(gen::grammar(), 1..6)) {
        let compiler = GrammarCompiler::new(small_vocab(), CompilerConfig::default().grammar_cache_len(0));
        for _round in 0..2 {
            for g in &grammars {
                let compiled = compiler.compile(g.clone()).unwrap();
                let cold = maskforge::fsm::build_grammar_fsm(compiled.grammar(), &maskforge::fsm::FsmLimits::default()).unwrap();
                prop_assert_eq!(&**compiled.fsm(), &cold, "{}", g);
            }
        }
        prop_assert!(compiler.rule_fsm_cache_stats().hits > 0);
    }
}

#[test]
fn the_same_tool_in_two_requests_reuses_its_rule_automaton() {
    let compiler = GrammarCompiler::new(json_vocab().clone(), CompilerConfig::default());
    // A parameter object large enough to stay a rule of its own (not inlined into the request).
    let properties: serde_json::Map<String, Value> = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
        .iter()
        .map(|k| (k.to_string(), json!({"type": "string"})))
        .collect();
    let big =
        Tool { id: "big".into(), name: "ab".into(), parameters: json!({"type": "object", "properties": properties}) };
    let all = tools(&[(0, 3), (1, 1)]);
    compiler.compile_json_schema(&PlainJson::schema(&[&big, &all[0]]), &JsonSchemaOptions::default()).unwrap();
    let before = compiler.rule_fsm_cache_stats();
    let g = compiler.compile_json_schema(&PlainJson::schema(&[&all[1], &big]), &JsonSchemaOptions::default()).unwrap();
    let after = compiler.rule_fsm_cache_stats();
    assert!(after.hits > before.hits, "the big tool's automaton comes from the cache: {before:?} → {after:?}");
    assert!(after.misses > before.misses, "the new request's own rule is built: {before:?} → {after:?}");
    accept_text(&g, r#"{"name":"ab","arguments":{"bravo":"x","echo":"y"}}"#);
}
