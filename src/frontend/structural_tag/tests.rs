//! Per-format lowering (printed as EBNF) and malformed inputs (error kind and JSON pointer).

use super::*;
use serde_json::json;

/// Three named tokens: `<a>` = 5, `<b>` = 6, `<eos>` = 7, in a vocabulary of 10.
struct Toks;

impl TokenLookup for Toks {
    fn token_id(&self, text: &str) -> Option<u32> {
        ["<a>", "<b>", "<eos>"].iter().position(|t| *t == text).map(|i| i as u32 + 5)
    }
    fn vocab_size(&self) -> usize {
        10
    }
}

fn ebnf(format: Value) -> String {
    let doc = json!({"type": "structural_tag", "format": format});
    match structural_tag_to_grammar(&doc, &Toks) {
        Ok((g, _)) => g.to_string(),
        Err(e) => panic!("{e}"),
    }
}

fn err(format: Value) -> StructuralTagError {
    structural_tag_to_grammar(&json!({"type": "structural_tag", "format": format}), &Toks).unwrap_err()
}

fn s(v: &str) -> Value {
    json!({"type": "const_string", "value": v})
}

#[test]
fn primitives() {
    assert_eq!(ebnf(s("hi")), "root ::= \"hi\"\n");
    assert_eq!(ebnf(json!({"type": "regex", "pattern": "a[0-9]{2}"})), "root ::= [a] [0-9]{2}\n");
    assert_eq!(
        ebnf(json!({"type": "grammar", "grammar": "root ::= x \"!\"\nx ::= \"y\" | \"n\""})),
        "root ::= grammar_root\ngrammar_root ::= grammar_x \"!\"\ngrammar_x ::= \"y\" | \"n\"\n"
    );
    let g = ebnf(json!({"type": "json_schema", "json_schema": {"type": "integer", "minimum": 1, "maximum": 3}}));
    assert!(g.starts_with("root ::= schema_root"), "{g}");
    assert!(g.contains("[1-3]"), "{g}");
    assert_eq!(
        ebnf(json!({"type": "any_text", "excludes": ["<x>"]})),
        "root ::= dispatch\ndispatch ::= TagDispatch(stop_eos=true, stop_str=(), loop_after_dispatch=true, excludes=(\"<x>\"))\n"
    );
}

#[test]
fn json_schema_options_reach_the_schema_front_end() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]});
    let declared = ebnf(json!({"type": "json_schema", "json_schema": schema}));
    let any = ebnf(json!({"type": "json_schema", "json_schema": schema, "any_order": true}));
    assert_ne!(declared, any);
    let ws = ebnf(json!({"type": "json_schema", "json_schema": schema, "max_whitespace_cnt": 2}));
    assert!(ws.contains("{0,2}"), "{ws}");
}

#[test]
fn composition() {
    assert_eq!(ebnf(json!({"type": "sequence", "elements": [s("a"), s("b")]})), "root ::= \"ab\"\n");
    assert_eq!(ebnf(json!({"type": "or", "elements": [s("a"), s("b")]})), "root ::= \"a\" | \"b\"\n");
    assert_eq!(ebnf(json!({"type": "optional", "content": s("a")})), "root ::= \"a\"?\n");
    assert_eq!(ebnf(json!({"type": "plus", "content": s("a")})), "root ::= \"a\"+\n");
    assert_eq!(ebnf(json!({"type": "star", "content": s("a")})), "root ::= \"a\"*\n");
    assert_eq!(ebnf(json!({"type": "repeat", "min": 2, "max": 4, "content": s("a")})), "root ::= \"a\"{2,4}\n");
    assert_eq!(ebnf(json!({"type": "repeat", "min": 2, "max": -1, "content": s("a")})), "root ::= \"a\"{2,}\n");
}

#[test]
fn tag_end_is_excluded_from_unlimited_content() {
    let g =
        ebnf(json!({"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": ["</think>", "</t>"]}));
    assert_eq!(
        g,
        "root ::= \"<think>\" dispatch (\"</think>\" | \"</t>\")\ndispatch ::= TagDispatch(stop_eos=true, stop_str=(), loop_after_dispatch=true, excludes=(\"</t>\", \"</think>\"))\n"
    );
    // Only the last element of a sequence is followed by the end.
    let g = ebnf(
        json!({"type": "tag", "begin": "<", "content": {"type": "sequence", "elements": [{"type": "any_text"}, s("|"), {"type": "any_text"}]}, "end": ">"}),
    );
    assert!(g.contains("excludes=())") && g.contains("excludes=(\">\")"), "{g}");
    // A tag nested in a tag sees only its own end.
    let inner = json!({"type": "tag", "begin": "(", "content": {"type": "any_text"}, "end": ")"});
    let g = ebnf(json!({"type": "tag", "begin": "<", "content": inner, "end": ">"}));
    assert!(g.contains("excludes=(\")\")") && !g.contains("excludes=(\">\")"), "{g}");
}

#[test]
fn triggered_tags_flags() {
    let tags = json!([
        {"type": "tag", "begin": "<f=a>", "content": s("1"), "end": "</f>"},
        {"type": "tag", "begin": "<f=b>", "content": s("2"), "end": "</f>"}
    ]);
    let tt = |alo: bool, saf: bool| {
        ebnf(
            json!({"type": "triggered_tags", "triggers": ["<f="], "tags": tags, "excludes": ["<x>"], "at_least_one": alo, "stop_after_first": saf}),
        )
    };
    assert_eq!(
        tt(false, false),
        "root ::= dispatch\ntag_body ::= \"a>1</f>\" | \"b>2</f>\"\ndispatch ::= TagDispatch((\"<f=\", tag_body), stop_eos=true, stop_str=(), loop_after_dispatch=true, excludes=(\"<x>\"))\n"
    );
    assert!(tt(false, true).contains("loop_after_dispatch=false"));
    assert_eq!(tt(true, true), "root ::= \"<f=a>1</f>\" | \"<f=b>2</f>\"\n");
    assert!(
        tt(true, false).starts_with("root ::= (\"<f=a>1</f>\" | \"<f=b>2</f>\") dispatch\n"),
        "{}",
        tt(true, false)
    );
    // Inside a tag, the free text also stops at the tag's end.
    let g = ebnf(
        json!({"type": "tag", "begin": "<r>", "content": {"type": "triggered_tags", "triggers": ["<f="], "tags": tags}, "end": "</r>"}),
    );
    assert!(g.contains("excludes=(\"</r>\")"), "{g}");
    // A trigger without tags is a forbidden string.
    let g = ebnf(json!({"type": "triggered_tags", "triggers": ["<f=", "<g="], "tags": tags}));
    assert!(g.contains("excludes=(\"<g=\")"), "{g}");
}

#[test]
fn tags_with_separator_flags() {
    let tags = json!([{"type": "tag", "begin": "<", "content": s("x"), "end": ">"}]);
    let tws = |alo: bool, saf: bool| {
        ebnf(
            json!({"type": "tags_with_separator", "tags": tags, "separator": ",", "at_least_one": alo, "stop_after_first": saf}),
        )
    };
    assert_eq!(tws(false, false), "root ::= (tags (\",\" tags)*)?\ntags ::= \"<x>\"\n");
    assert_eq!(tws(true, false), "root ::= tags (\",\" tags)*\ntags ::= \"<x>\"\n");
    assert_eq!(tws(true, true), "root ::= \"<x>\"\n");
    assert_eq!(tws(false, true), "root ::= \"<x>\"?\n");
    assert_eq!(ebnf(json!({"type": "tags_with_separator", "tags": [], "separator": ","})), "root ::= \"\"\n");
}

#[test]
fn dispatch_and_token_formats() {
    let g = ebnf(
        json!({"type": "dispatch", "rules": [["<a>", s("1")], ["<b>", s("2")]], "loop": false, "excludes": ["</end>"]}),
    );
    assert!(g.contains("TagDispatch((\"<a>\", tag_body), (\"<b>\", tag_body_1), stop_eos=true, stop_str=(), loop_after_dispatch=false, excludes=(\"</end>\"))"), "{g}");
    assert_eq!(ebnf(json!({"type": "token", "token": "<a>"})), "root ::= Token(5)\n");
    assert_eq!(ebnf(json!({"type": "token", "token": 9})), "root ::= Token(9)\n");
    assert_eq!(ebnf(json!({"type": "exclude_token", "exclude_tokens": ["<eos>", 2]})), "root ::= ExcludeToken(2, 7)\n");
    assert_eq!(ebnf(json!({"type": "any_tokens", "exclude_tokens": ["<eos>"]})), "root ::= ExcludeToken(7)*\n");
    // A token end is excluded from token-level content.
    let g = ebnf(
        json!({"type": "tag", "begin": {"type": "token", "token": "<a>"}, "content": {"type": "any_tokens"}, "end": {"type": "token", "token": "<b>"}}),
    );
    assert_eq!(g, "root ::= Token(5) ExcludeToken(6)* Token(6)\n");
    let g = ebnf(json!({"type": "token_triggered_tags", "trigger_tokens": ["<a>"], "exclude_tokens": [7],
        "tags": [{"type": "tag", "begin": {"type": "token", "token": "<a>"}, "content": s("x"), "end": {"type": "token", "token": "<b>"}}]}));
    assert!(g.contains("TagDispatch((5, tag_body)") && g.contains("excludes=(7))"), "{g}");
    let g = ebnf(json!({"type": "token_dispatch", "rules": [["<a>", s("x")]], "exclude_tokens": ["<eos>"]}));
    assert!(g.contains("TagDispatch((5, tag_body)"), "{g}");
}

#[test]
fn xml_styles() {
    let schema = json!({"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["city"]});
    let qwen = ebnf(json!({"type": "json_schema", "json_schema": schema, "style": "qwen_xml"}));
    assert!(qwen.starts_with("root ::= [\\t-\\n\\r ]* \"<parameter=city>\" dispatch \"</parameter>\" ([\\t-\\n\\r ]* \"<parameter=days>\" schema_root_0 \"</parameter>\")? ([\\t-\\n\\r ]* \"<parameter=unit>\" [\\t-\\n\\r ]* (\"c\" | \"f\") [\\t-\\n\\r ]* \"</parameter>\")? [\\t-\\n\\r ]*\n"), "{qwen}");
    assert!(qwen.contains("excludes=(\"</parameter>\")"), "{qwen}");
    let glm = ebnf(json!({"type": "json_schema", "json_schema": schema, "style": "glm_xml"}));
    assert!(
        glm.contains("\"<arg_key>city</arg_key>\" [\\t-\\n\\r ]* \"<arg_value>\" dispatch \"</arg_value>\""),
        "{glm}"
    );
    let ds = ebnf(json!({"type": "json_schema", "json_schema": schema, "style": "deepseek_xml"}));
    assert!(
        ds.contains("string=\\\"true\\\">\" dispatch") && ds.contains("name=\\\"days\\\" string=\\\"false\\\">"),
        "{ds}"
    );
    let mm = ebnf(json!({"type": "json_schema", "json_schema": schema, "style": "minimax_xml"}));
    assert!(mm.contains("<parameter name=\\\"city\\\">"), "{mm}");
    let co = ebnf(json!({"type": "json_schema", "json_schema": schema, "style": "cohere_xml"}));
    assert!(co.contains("<cofl:tool_param name=city>"), "{co}");
    let any = ebnf(json!({"type": "json_schema", "json_schema": schema, "style": "qwen_xml", "any_order": true}));
    assert!(any.contains(")+ [\\t-\\n\\r ]*"), "{any}");
    let e = err(json!({"type": "json_schema", "json_schema": {"type": "array"}, "style": "qwen_xml"}));
    assert_eq!(e.pointer(), "/format/json_schema/type");
    let e =
        err(json!({"type": "json_schema", "json_schema": {"type": "object", "required": ["x"]}, "style": "glm_xml"}));
    assert_eq!(e.pointer(), "/format/json_schema/required");
}

#[test]
fn xml_raw_string_constraints_are_reported() {
    let doc = json!({"type": "structural_tag", "format": {"type": "json_schema", "style": "qwen_xml",
        "json_schema": {"type": "object", "properties": {"code": {"type": "string", "maxLength": 3}}}}});
    let (_, report) = structural_tag_to_grammar(&doc, &Toks).unwrap();
    assert_eq!(report.relaxed_keywords(), vec!["maxLength"]);
    assert_eq!(report.relaxations[0].pointer, "#/properties/code");
}

#[test]
fn malformed_inputs_name_the_offending_part() {
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!([1]), "", "JSON object"),
        (json!({"type": "structural", "format": s("a")}), "/type", "structural_tag"),
        (json!({"type": "structural_tag"}), "", "missing field `format`"),
        (json!({"type": "structural_tag", "format": s("a"), "extra": 1}), "/extra", "unknown field"),
        (json!({"type": "structural_tag", "format": {"type": "seq"}}), "/format/type", "const_string"),
        (json!({"type": "structural_tag", "format": {"type": "const_string"}}), "/format", "missing field `value`"),
        (
            json!({"type": "structural_tag", "format": {"type": "const_string", "value": 3}}),
            "/format/value",
            "expected a string",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "const_string", "value": "a", "valu": "b"}}),
            "/format/valu",
            "value",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "or", "elements": []}}),
            "/format/elements",
            "at least one",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "repeat", "min": 3, "max": 2, "content": s("a")}}),
            "/format/max",
            "below",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "repeat", "min": -2, "max": 2, "content": s("a")}}),
            "/format/min",
            "non-negative",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [s("a"), {"type": "regex", "pattern": "(a"}]}}),
            "/format/elements/1/pattern",
            "regex",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "grammar", "grammar": "root ::= x"}}),
            "/format/grammar",
            "EBNF",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "json_schema", "json_schema": {"type": "nope"}}}),
            "/format/json_schema",
            "JSON Schema",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "json_schema", "json_schema": {}, "style": "xml"}}),
            "/format/style",
            "qwen_xml",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "tag", "begin": 1, "content": s("a"), "end": "b"}}),
            "/format/begin",
            "string",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "tag", "begin": "a", "content": s("a"), "end": ["b", 2]}}),
            "/format/end/1",
            "string",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "tag", "begin": "a", "content": s("a"), "end": []}}),
            "/format/end",
            "at least one",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<f"], "tags": [{"type": "tag", "begin": "<g>", "content": s("a"), "end": "b"}]}}),
            "/format/tags/0/begin",
            "none of the triggers",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": [""], "tags": []}}),
            "/format/triggers/0",
            "empty",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<"], "tags": [s("x")]}}),
            "/format/tags/0",
            "`tag`",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "dispatch", "rules": [["a"]]}}),
            "/format/rules/0",
            "pair",
        ),
        (json!({"type": "structural_tag", "format": {"type": "token", "token": "<zz>"}}), "/format", "not a token"),
        (json!({"type": "structural_tag", "format": {"type": "token", "token": 10}}), "/format", "out of range"),
        (
            json!({"type": "structural_tag", "format": {"type": "exclude_token", "exclude_tokens": [true]}}),
            "/format/exclude_tokens/0",
            "token",
        ),
        (
            json!({"type": "structural_tag", "format": {"type": "token_triggered_tags", "trigger_tokens": ["<a>"], "tags": [{"type": "tag", "begin": "<a>", "content": s("x"), "end": "y"}]}}),
            "/format/tags/0/begin",
            "`token` begin",
        ),
    ];
    for (doc, pointer, needle) in cases {
        let e = structural_tag_to_grammar(&doc, &Toks).unwrap_err();
        assert_eq!(e.pointer(), pointer, "{doc}: {e}");
        assert!(e.to_string().contains(needle), "{doc}: `{e}` lacks `{needle}`");
    }
    let e = structural_tag_str_to_grammar("{", &NoTokens).unwrap_err();
    assert!(matches!(e.kind(), StructuralTagErrorKind::NotJson(_)));
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let mut f = s("x");
    for _ in 0..200 {
        f = json!({"type": "optional", "content": f});
    }
    // serde_json's own recursion limit may refuse the text first; the value route is checked here.
    let e = structural_tag_to_grammar(&json!({"type": "structural_tag", "format": f}), &NoTokens).unwrap_err();
    assert!(e.to_string().contains("deeper"), "{e}");
}
