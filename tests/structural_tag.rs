//! Structural tags compiled for a vocabulary: random tags over every composable format type,
//! with masks equal to the oracle's at every step of random walks. The acceptance checks of the
//! semantics (end detection, triggered tags, token formats) are data:
//! `tests/data/structural_tag/`, run by `data_cases`.

use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler, Vocabulary};
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::support::oracle_check::checked_random_walk;
use crate::support::small_vocab::{token_vocab, SPECIAL_A};

fn compile(format: &Value, vocab: &Vocabulary) -> Result<CompiledGrammar, maskforge::Error> {
    GrammarCompiler::new(vocab.clone(), CompilerConfig::default())
        .compile_structural_tag(&json!({"type": "structural_tag", "format": format}))
}

fn word() -> impl Strategy<Value = String> {
    "[abc]{1,3}"
}

fn s(v: &str) -> Value {
    json!({"type": "const_string", "value": v})
}

/// Random formats: leaves are strings, regexes, free text and tokens; inner nodes every
/// composable format type, tags and dispatches with short triggers that overlap often.
fn format() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        word().prop_map(|w| s(&w)),
        Just(json!({"type": "regex", "pattern": "[ab]c?"})),
        prop::collection::vec(word(), 0..2).prop_map(|ex| json!({"type": "any_text", "excludes": ex})),
        Just(json!({"type": "token", "token": SPECIAL_A})),
        Just(json!({"type": "exclude_token", "exclude_tokens": ["<|a|>"]})),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..3).prop_map(|e| json!({"type": "sequence", "elements": e})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|e| json!({"type": "or", "elements": e})),
            inner.clone().prop_map(|c| json!({"type": "optional", "content": c})),
            inner.clone().prop_map(|c| json!({"type": "plus", "content": c})),
            (inner.clone(), 0u32..2, 1u32..3).prop_map(|(c, a, b)| json!({"type": "repeat", "min": a, "max": a + b, "content": c})),
            (word(), inner.clone(), word()).prop_map(|(b, c, e)| json!({"type": "tag", "begin": b, "content": c, "end": e})),
            (inner.clone(), word(), any::<bool>(), any::<bool>()).prop_map(|(c, trig, alo, saf)| {
                let tags = [format!("{trig}a"), format!("{trig}b")]
                    .map(|b| json!({"type": "tag", "begin": b, "content": c, "end": "c"}));
                json!({"type": "triggered_tags", "triggers": [trig], "tags": tags, "at_least_one": alo, "stop_after_first": saf})
            }),
            (inner.clone(), any::<bool>()).prop_map(|(c, alo)| {
                let tag = json!({"type": "tag", "begin": "a", "content": c, "end": "b"});
                json!({"type": "tags_with_separator", "tags": [tag], "separator": "c", "at_least_one": alo})
            }),
            (word(), inner.clone(), any::<bool>()).prop_map(|(p, c, l)| json!({"type": "dispatch", "rules": [[p, c]], "loop": l})),
            inner.clone().prop_map(|c| json!({"type": "tag", "begin": {"type": "token", "token": "<|a|>"}, "content": c, "end": {"type": "token", "token": "<|b|>"}})),
            inner.prop_map(|c| json!({"type": "token_triggered_tags", "trigger_tokens": ["<|a|>"],
                "tags": [{"type": "tag", "begin": {"type": "token", "token": "<|a|>"}, "content": c, "end": "c"}]})),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random walks under random structural tags: at every step the cached mask equals the
    /// oracle's and accept_token agrees with it.
    #[test]
    fn structural_tag_masks_equal_the_oracle(
        format in format(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let v = token_vocab();
        // Some random tags describe no string at all or an invalid dispatch: skip those.
        let Ok(g) = compile(&format, &v) else { return Ok(()) };
        checked_random_walk(&g, &picks)?;
    }
}

/// The property above skips random tags that do not compile; most must compile, else it
/// would check little.
#[test]
fn most_random_tags_compile() {
    use proptest::strategy::ValueTree;
    let v = token_vocab();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = format();
    let mut errors = Vec::new();
    for _ in 0..200 {
        let f = strategy.new_tree(&mut runner).unwrap().current();
        if let Err(e) = compile(&f, &v) {
            errors.push(format!("{f}: {e}"));
        }
    }
    assert!(errors.len() <= 40, "{} of 200 do not compile:\n{}", errors.len(), errors.join("\n"));
}
