//! The JSON Schema front-end beyond accept/reject cases (those are data:
//! `tests/data/json_schema/`, run by `data_cases`): error structure, the coverage report's
//! details, typed schemas, and the schema-fragment cache.

use maskforge::{CompiledGrammar, CompilerConfig, Error, GrammarCompiler, GrammarMatcher};
use maskforge::{JsonSchemaOptions, PropertyOrder, SchemaErrorKind};
use serde_json::{json, Value};

use crate::support::fixtures::{encode, load};
use crate::support::json_text::{dump, Layout};

fn compiler(tokenizer: &str) -> GrammarCompiler {
    GrammarCompiler::new(load(tokenizer).0.clone(), CompilerConfig::default())
}

/// Whether `text` is accepted token by token and can end.
fn accepts(grammar: &CompiledGrammar, tokenizer: &str, text: &str) -> bool {
    let mut m = GrammarMatcher::new(grammar);
    encode(tokenizer, text).into_iter().all(|id| m.accept_token(id)) && m.can_terminate()
}

fn spec() -> JsonSchemaOptions {
    JsonSchemaOptions::spec_compliant()
}

#[test]
fn false_schema_is_unsatisfiable() {
    let err = compiler("llama3").compile_json_schema(&json!(false), &spec()).unwrap_err();
    assert!(matches!(&err, Error::Schema(e) if matches!(e.kind(), SchemaErrorKind::Unsatisfiable(_))), "{err}");
}

#[test]
fn unresolvable_reference_names_its_pointer() {
    let c = compiler("llama3");
    let err = c.compile_json_schema(&json!({"properties": {"x": {"$ref": "#/nope"}}}), &spec()).unwrap_err();
    let Error::Schema(e) = &err else { panic!("{err}") };
    assert_eq!(e.pointer(), "#/properties/x");
    assert!(matches!(e.kind(), SchemaErrorKind::UnresolvableRef(_)));
}

/// Beyond the exact limit of any-order objects (`tests/data/json_schema/any_order.json` has
/// the instances), the report says where and what is relaxed.
#[test]
fn any_order_relaxations_say_where_and_what() {
    let c = compiler("llama3");
    let any = JsonSchemaOptions { property_order: PropertyOrder::Any, ..JsonSchemaOptions::default() };
    // Optional keys may repeat: reported at the object.
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}, "d": {"type": "null"}, "e": {"type": "integer"}},
        "required": ["a", "e"],
    });
    let g = c.compile_json_schema(&schema, &any).unwrap();
    let report = g.json_schema_report().unwrap();
    assert!(report.relaxations.iter().any(|r| r.keyword == "properties" && r.pointer == "#"), "{report:?}");
    // Beyond four required properties they are counted: the report says what a count lets
    // through.
    let many = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}, "d": {"type": "integer"}, "e": {"type": "integer"}, "f": {"type": "string"}},
        "required": ["a", "b", "c", "d", "e"],
        "maxProperties": 5,
    });
    let g = c.compile_json_schema(&many, &any).unwrap();
    let report = g.json_schema_report().unwrap();
    assert!(report.relaxations.iter().any(|r| r.keyword == "properties" && r.detail.contains("counted")), "{report:?}");
}

#[test]
fn coverage_report_and_strict_keywords() {
    let c = compiler("llama3");
    let schema = json!({
        "type": "object",
        "properties": {"tags": {"type": "array", "uniqueItems": true}, "n": {"type": "integer", "multipleOf": 4093, "minimum": 0, "maximum": 1000000000000u64}},
    });
    let g = c.compile_json_schema(&schema, &spec()).unwrap();
    let report = g.json_schema_report().unwrap();
    assert_eq!(report.relaxed_keywords(), vec!["multipleOf", "uniqueItems"]);
    assert!(report.relaxations.iter().any(|r| r.keyword == "uniqueItems" && r.pointer == "#/properties/tags"));
    let strict = JsonSchemaOptions { strict_keywords: true, ..spec() };
    let err = c.compile_json_schema(&schema, &strict).unwrap_err();
    let Error::Schema(e) = &err else { panic!("{err}") };
    assert!(matches!(e.kind(), SchemaErrorKind::Unsupported { keyword, .. } if keyword == "uniqueItems"), "{err}");
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    // Built programmatically (serde_json's parser would stop at 128 levels).
    let mut s = json!({"type": "integer"});
    for _ in 0..1000 {
        let mut m = serde_json::Map::new();
        m.insert("type".into(), "array".into());
        m.insert("items".into(), s);
        s = Value::Object(m);
    }
    let err = compiler("llama3").compile_json_schema(&s, &spec()).unwrap_err();
    assert!(matches!(&err, Error::Schema(e) if matches!(e.kind(), SchemaErrorKind::TooLarge(_))), "{err}");
}

#[test]
fn typed_schema() {
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Call {
        name: String,
        count: u8,
        tags: Vec<String>,
    }
    let c = compiler("qwen3");
    let g = c.compile_json_schema_for::<Call>(&spec()).unwrap();
    assert!(accepts(&g, "qwen3", r#"{"name": "x", "count": 255, "tags": []}"#));
    // schemars gives `u8` a `minimum: 0` (and a `format` annotation), not a maximum.
    assert!(!accepts(&g, "qwen3", r#"{"name": "x", "count": -1, "tags": []}"#));
    assert!(!accepts(&g, "qwen3", r#"{"name": "x", "tags": []}"#));
}

/// Self-contained `anyOf`/`oneOf` branches with properties come from the compiler's fragment
/// cache once another schema lowered them: the grammar accepts the same instances and the
/// report holds the same relaxations (pointers re-rooted at the branch) as a compiler without
/// the cache; branches with a `$ref` (which resolves against their document) are lowered
/// inline.
#[test]
fn schema_fragments_from_the_cache_keep_languages_and_reports() {
    let tool = json!({"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "object"}, "uniqueItems": true},
        "n": {"type": "integer", "minimum": 3, "maximum": 12}}, "required": ["n"]});
    let with_ref = json!({"type": "object", "properties": {"d": {"$ref": "#/$defs/d"}}, "required": ["d"]});
    let short = json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 2}}, "required": ["s"]});
    let warmup = json!({"anyOf": [tool.clone(), short.clone()]});
    let schema = json!({"$defs": {"d": {"enum": [1, 2]}},
        "oneOf": [{"type": "null"}, tool, short, with_ref]});
    let valid = [json!(null), json!({"tags": [{}], "n": 3}), json!({"s": "ab"}), json!({"d": 2})];
    let invalid = ["{\"n\": 13}", "{\"tags\": []}", "{\"s\": \"abc\"}", "{\"d\": 3}", "{\"n\": 3", "1", "\"ab\""];
    let options = JsonSchemaOptions::default();
    let tok = "llama3";
    let vocab = load(tok).0.clone();
    let warm = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let cold = GrammarCompiler::new(vocab, CompilerConfig::default().schema_fragment_cache_len(0));
    warm.compile_json_schema(&warmup, &options).unwrap();
    let g_warm = warm.compile_json_schema(&schema, &options).unwrap();
    let g_cold = cold.compile_json_schema(&schema, &options).unwrap();
    let stats = warm.schema_fragment_stats();
    assert!(stats.hits >= 2, "the tool and the short-string object are hits: {stats:?}");
    assert_eq!(cold.schema_fragment_stats().hits + cold.schema_fragment_stats().misses, 0);
    let sorted = |g: &CompiledGrammar| {
        let mut r: Vec<String> = g
            .json_schema_report()
            .unwrap()
            .relaxations
            .iter()
            .map(|r| format!("{} {} {}", r.keyword, r.pointer, r.detail))
            .collect();
        r.sort();
        r
    };
    assert_eq!(sorted(&g_warm), sorted(&g_cold));
    assert!(
        sorted(&g_warm).iter().any(|r| r.starts_with("uniqueItems #/oneOf/1/properties/tags")),
        "{:?}",
        sorted(&g_warm)
    );
    for v in &valid {
        let text = dump(v, Layout::Python);
        assert!(accepts(&g_warm, tok, &text) && accepts(&g_cold, tok, &text), "valid instance rejected: {text}");
    }
    for text in invalid {
        assert!(!accepts(&g_warm, tok, text) && !accepts(&g_cold, tok, text), "invalid instance accepted: {text}");
    }
}

/// The front-end removes unproductive parts itself, so the grammar builder skips its own
/// productivity pass for it: on every MaskBench schema, rebuilding the result through the
/// checking path (`GrammarBuilder::build`, which rejects a rule matching no string) succeeds.
#[test]
fn every_rule_of_every_maskbench_grammar_is_productive() {
    let dir = crate::support::fixtures::corpus_dir("maskbench-dev");
    let mut files: Vec<_> =
        std::fs::read_dir(&dir).expect("maskbench-dev fixture").map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() > 2000, "maskbench-dev has {} files", files.len());
    let mut checked = 0;
    for path in files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Ok((grammar, _)) = maskforge::json_schema_to_grammar(&doc["schema"], &spec()) else { continue };
        let mut b = maskforge::GrammarBuilder::new();
        let root = b.import(&grammar, "g").unwrap();
        b.add_rule("root", maskforge::Expr::Rule(root)).unwrap();
        if let Err(e) = b.build("root") {
            panic!("{}: {e}", path.display());
        }
        checked += 1;
    }
    assert!(checked > 2000, "{checked} schemas lowered");
}

/// Deeply nested `anyOf` branches go through the fragment cache only near the top (checking and
/// hashing every level would cost the schema's size times its depth), and inline below.
#[test]
fn only_top_level_branches_become_fragments() {
    let mut schema = json!({"type": "integer"});
    for _ in 0..30 {
        schema =
            json!({"anyOf": [{"type": "object", "properties": {"a": schema}, "required": ["a"]}, {"type": "null"}]});
    }
    let c = compiler("llama3");
    let g = c.compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
    let stats = c.schema_fragment_stats();
    assert!(stats.misses <= 4, "only the branches of the top levels are fragments: {stats:?}");
    let mut instance = json!(1);
    for _ in 0..30 {
        instance = json!({ "a": instance });
    }
    assert!(accepts(&g, "llama3", &instance.to_string()));
    assert!(!accepts(&g, "llama3", "{\"a\": \"x\"}"));
}

/// A branch that cannot be a fragment (here: no string satisfies it) is remembered as such: the
/// next schema holding it lowers it inline without trying again, with the same result.
#[test]
fn a_branch_that_is_not_a_fragment_is_remembered() {
    let impossible = json!({
        "type": "object",
        "properties": {"a": {"type": "string", "minLength": 5, "maxLength": 2}},
        "required": ["a"],
    });
    let c = compiler("llama3");
    let options = JsonSchemaOptions::default();
    c.compile_json_schema(&json!({"anyOf": [impossible.clone(), {"type": "null"}]}), &options).unwrap();
    let before = c.schema_fragment_stats();
    let g = c.compile_json_schema(&json!({"anyOf": [{"type": "boolean"}, impossible]}), &options).unwrap();
    let after = c.schema_fragment_stats();
    // The impossible branch is remembered; the small ones never go through the cache.
    assert_eq!(after.hits - before.hits, 1, "{before:?} → {after:?}");
    assert_eq!(after.misses, before.misses, "{before:?} → {after:?}");
    assert!(
        accepts(&g, "llama3", "true") && !accepts(&g, "llama3", r#"{"a": "abcdef"}"#) && !accepts(&g, "llama3", "null")
    );
}

/// `multipleOf` with bounds too wide to list the multiples: the product of the range and
/// residue automata accepts exactly the multiples in range (brute force over values around
/// the bounds and zero), and reports nothing.
#[test]
fn bounded_multiple_of_is_the_product_of_range_and_residue() {
    use crate::support::reference::recognizes;
    let bounds: [(Option<i64>, Option<i64>); 6] = [
        (Some(-1000), Some(2000)),
        (Some(5), None),
        (None, Some(-7)),
        (Some(-2500), Some(-1000)),
        (Some(0), Some(1999)),
        (None, Some(800)),
    ];
    for k in [3i64, 7, 12] {
        for (lo, hi) in bounds {
            let mut schema = json!({"type": "integer", "multipleOf": k});
            if let Some(lo) = lo {
                schema["minimum"] = json!(lo);
            }
            if let Some(hi) = hi {
                schema["maximum"] = json!(hi);
            }
            let (grammar, report) = maskforge::json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
            assert!(report.is_exact(), "{schema}: {report:?}");
            let near = |b: Option<i64>| b.map_or(Vec::new(), |b| (b - 15..=b + 15).collect::<Vec<_>>());
            let values: Vec<i64> =
                near(lo).into_iter().chain(near(hi)).chain(-15..=15).chain([-3003, 3003, 12345]).collect();
            for x in values {
                let valid = lo.is_none_or(|lo| x >= lo) && hi.is_none_or(|hi| x <= hi) && x % k == 0;
                assert_eq!(recognizes(&grammar, x.to_string().as_bytes()), valid, "{schema}: {x}");
            }
            assert_eq!(
                recognizes(&grammar, b"-0"),
                lo.is_none_or(|lo| lo <= 0) && hi.is_none_or(|hi| hi >= 0),
                "{schema}: -0"
            );
        }
    }
}

/// A pattern with length bounds whose automaton reaches states accepting every continuation
/// (an unanchored pattern after its match), or accepting states that loop on themselves alone
/// (an anchored pattern's last loop): from there only the count is left, lowered as a counted
/// repetition rather than one rule per count. Every string of up to five characters over a
/// small alphabet (with a quote, which the loop's JSON characters escape) is recognized
/// exactly when the pattern matches somewhere in it and its length is within the bounds.
#[test]
fn patterns_with_lengths_count_the_rest_after_a_match() {
    use crate::support::reference::recognizes;
    type Matches = fn(&[char]) -> bool;
    let patterns: [(&str, Matches); 6] = [
        ("[a-z0-9_.-]+", |t| t.iter().any(|c| c.is_ascii_lowercase() || c.is_ascii_digit())),
        ("^a", |t| t.first() == Some(&'a')),
        ("x[0-9]", |t| t.windows(2).any(|w| w[0] == 'x' && w[1].is_ascii_digit())),
        ("b$", |t| t.last() == Some(&'b')),
        ("^[ax][ab1\"]*$", |t| {
            t.first().is_some_and(|c| "ax".contains(*c)) && t[1..].iter().all(|c| "ab1\"".contains(*c))
        }),
        ("^[^x]+$", |t| !t.is_empty() && !t.contains(&'x')),
    ];
    let alphabet = ['a', 'b', 'x', '1', 'é', '"'];
    let mut texts: Vec<Vec<char>> = vec![Vec::new()];
    let mut last = texts.clone();
    for _ in 0..5 {
        last = last.iter().flat_map(|t| alphabet.iter().map(move |&c| [t.as_slice(), &[c]].concat())).collect();
        texts.extend(last.iter().cloned());
    }
    for (pattern, matches) in patterns {
        for (min, max) in [(1, Some(4)), (0, Some(3)), (2, None)] {
            let mut schema = json!({"type": "string", "pattern": pattern, "minLength": min});
            if let Some(max) = max {
                schema["maxLength"] = json!(max);
            }
            let (grammar, _) = maskforge::json_schema_to_grammar(&schema, &spec()).unwrap();
            for t in &texts {
                let valid = matches(t) && t.len() >= min && max.is_none_or(|m| t.len() <= m);
                let json = serde_json::to_string(&t.iter().collect::<String>()).unwrap();
                assert_eq!(recognizes(&grammar, json.as_bytes()), valid, "{schema}: {json}");
            }
        }
    }
    // With `maxLength: 255` the rest after `[a-z0-9_.-]` is one counted repetition.
    let schema = json!({"type": "string", "pattern": "[a-z0-9_.-]+", "maxLength": 255});
    let (grammar, _) = maskforge::json_schema_to_grammar(&schema, &spec()).unwrap();
    assert!(grammar.to_string().contains("{0,254}"), "{grammar}");
    // So is an anchored pattern's last loop (reached after two characters: the automaton is
    // not minimal): one repetition of what it reads, not 259 rules.
    let schema = json!({"type": "string", "pattern": "^[A-Za-z0-9_][^<>*#.%&:\\\\+?/]*$", "maxLength": 260});
    let (grammar, _) = maskforge::json_schema_to_grammar(&schema, &spec()).unwrap();
    let text = grammar.to_string();
    assert!(text.contains("{0,258}") && text.lines().count() < 10, "{grammar}");
}

/// With a pattern and length bounds, a counted state reads a character's raw form inline and
/// only its escapes through a shared rule: were the raw characters behind that rule too, every
/// counted state's entry would end inside a rule called from all of them, and every token
/// longer than one character would be left to the parser at each mask.
#[test]
fn counted_pattern_characters_share_only_their_escapes() {
    let schema = json!({"type": "string", "pattern": "[a-z0-9_.-]+", "minLength": 3, "maxLength": 40});
    let (grammar, _) = maskforge::json_schema_to_grammar(&schema, &spec()).unwrap();
    let text = grammar.to_string();
    let shared: Vec<&str> = text.lines().filter(|l| l.starts_with("strchar")).collect();
    assert!(!shared.is_empty(), "no shared character rule:\n{text}");
    for line in shared {
        let body = line.split_once("::=").unwrap().1.trim_start();
        assert!(body.starts_with(r#""\\""#), "a shared character rule holds raw characters: {line}");
    }
}
