//! The JSON Schema front-end, keyword family by keyword family: each case is a schema with
//! valid and invalid instances, checked token by token with real tokenizers (`llama3`,
//! `qwen3`): a valid instance must be accepted and able to end, an invalid one rejected (a
//! token refused, or no way to end). Valid instances are written compactly, Python-style
//! (`", "`, `": "`) and indented with `\uXXXX` escapes (any whitespace is on); invalid ones
//! are given as text.

use maskforge::{CompiledGrammar, CompilerConfig, Error, GrammarCompiler, GrammarMatcher, TokenBitmask};
use maskforge::{JsonSchemaOptions, PropertyOrder, SchemaErrorKind};
use serde_json::{json, Value};

use crate::support::fixtures::{encode, load};
use crate::support::json_text::{dump, Layout};

const TOKENIZERS: [&str; 2] = ["llama3", "qwen3"];

fn compiler(tokenizer: &str) -> GrammarCompiler {
    GrammarCompiler::new(load(tokenizer).0.clone(), CompilerConfig::default())
}

/// Whether `text` is accepted token by token and can end.
pub fn accepts(grammar: &CompiledGrammar, tokenizer: &str, text: &str) -> bool {
    let mut m = GrammarMatcher::new(grammar);
    encode(tokenizer, text).into_iter().all(|id| m.accept_token(id)) && m.can_terminate()
}

struct Case {
    name: &'static str,
    schema: Value,
    valid: Vec<Value>,
    invalid: Vec<&'static str>,
}

fn case(name: &'static str, schema: Value, valid: Vec<Value>, invalid: Vec<&'static str>) -> Case {
    Case { name, schema, valid, invalid }
}

fn run_cases(cases: &[Case], options: &JsonSchemaOptions) {
    for tok in TOKENIZERS {
        let c = compiler(tok);
        for case in cases {
            let g = c.compile_json_schema(&case.schema, options).unwrap_or_else(|e| panic!("{}: {e}", case.name));
            for v in &case.valid {
                for layout in [Layout::Compact, Layout::Python, Layout::IndentedAscii] {
                    let text = dump(v, layout);
                    assert!(accepts(&g, tok, &text), "{} ({tok}): valid instance rejected: {text}", case.name);
                }
            }
            for text in &case.invalid {
                assert!(!accepts(&g, tok, text), "{} ({tok}): invalid instance accepted: {text}", case.name);
            }
        }
    }
}

fn spec() -> JsonSchemaOptions {
    JsonSchemaOptions::spec_compliant()
}

#[test]
fn types_enum_const() {
    let cases = [
        case("true", json!(true), vec![json!(1), json!({"a": [null]}), json!("x")], vec!["", "{", "nul"]),
        case("empty", json!({}), vec![json!([1, 2.5e3, "é"]), json!(false)], vec!["[1,]"]),
        case("null", json!({"type": "null"}), vec![json!(null)], vec!["0", "\"null\""]),
        case(
            "type array",
            json!({"type": ["string", "integer"]}),
            vec![json!("a"), json!(-3)],
            vec!["1.5", "true", "null"],
        ),
        case("nullable", json!({"type": "boolean", "nullable": true}), vec![json!(true), json!(null)], vec!["1"]),
        case(
            "enum",
            json!({"enum": ["red", 1, null, {"a": [1, 2]}, "é\"\n"]}),
            vec![json!("red"), json!(1), json!(null), json!({"a": [1, 2]}), json!("é\"\n")],
            vec!["\"blue\"", "2", "{\"a\":[1]}", "\"red \""],
        ),
        case("const", json!({"const": 3}), vec![json!(3), json!(3.0)], vec!["4", "\"3\""]),
        case(
            "enum and type",
            json!({"type": "string", "enum": ["a", 1, "b"]}),
            vec![json!("a"), json!("b")],
            vec!["1"],
        ),
    ];
    run_cases(&cases, &spec());
    let c = compiler("llama3");
    let err = c.compile_json_schema(&json!(false), &spec()).unwrap_err();
    assert!(matches!(&err, Error::Schema(e) if matches!(e.kind(), SchemaErrorKind::Unsatisfiable(_))), "{err}");
}

#[test]
fn objects() {
    let cases = [
        case(
            "properties and required",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]}),
            vec![
                json!({"a": 1}),
                json!({"a": 1, "b": "x"}),
                json!({"a": 1, "c": [true]}),
                json!({"z": 0, "a": 1, "y": {}, "b": "x"}),
            ],
            vec!["{}", "{\"b\":\"x\"}", "{\"a\":\"1\"}", "{\"a\":1,\"b\":2}", "{\"a\":1,\"a\":\"s\"}", "[]"],
        ),
        case(
            "additionalProperties false",
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false}),
            vec![json!({}), json!({"a": 5})],
            vec!["{\"b\":1}", "{\"a\":1,\"b\":1}"],
        ),
        case(
            "additionalProperties schema",
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}}),
            vec![json!({"a": 5, "x": "y"}), json!({"x": "y"})],
            vec!["{\"x\":1}", "{\"a\":\"s\"}"],
        ),
        case(
            "patternProperties",
            json!({"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": false}),
            vec![json!({"x-a": 1, "x-b": 2}), json!({})],
            vec!["{\"y\":1}", "{\"x-a\":\"s\"}"],
        ),
        case(
            "propertyNames and counts",
            json!({"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}, "minProperties": 1, "maxProperties": 2}),
            vec![json!({"ab": 1}), json!({"a": 1, "b": null})],
            vec!["{}", "{\"A\":1}", "{\"a\":1,\"b\":2,\"c\":3}"],
        ),
        case(
            "required without properties",
            json!({"type": "object", "required": ["id"], "additionalProperties": {"type": "integer"}}),
            vec![json!({"id": 1}), json!({"id": 1, "n": 2})],
            vec!["{}", "{\"id\":\"x\"}"],
        ),
        case(
            "false property",
            json!({"type": "object", "properties": {"secret": false}}),
            vec![json!({"a": 1}), json!({})],
            vec!["{\"secret\":1}"],
        ),
        case(
            "dependentRequired of a required property",
            json!({"type": "object", "required": ["a"], "dependentRequired": {"a": ["b"]}}),
            vec![json!({"a": 1, "b": 2})],
            vec!["{\"a\":1}"],
        ),
    ];
    run_cases(&cases, &spec());
}

#[test]
fn arrays() {
    let cases = [
        case(
            "items and bounds",
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3}),
            vec![json!([1, 2]), json!([1, 2, 3])],
            vec!["[]", "[1]", "[1,2,3,4]", "[1,\"a\"]"],
        ),
        case(
            "prefixItems",
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": {"type": "null"}}),
            vec![json!([]), json!(["a"]), json!(["a", true, null, null])],
            vec!["[true]", "[\"a\",1]", "[\"a\",true,1]"],
        ),
        case(
            "draft-4 tuple items",
            json!({"type": "array", "items": [{"type": "integer"}], "additionalItems": false}),
            vec![json!([1]), json!([])],
            vec!["[1,2]"],
        ),
        case(
            "contains",
            json!({"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 10}}),
            vec![json!([10]), json!([1, 20, 3])],
            vec!["[]", "[1,2]"],
        ),
        case(
            "large maxItems stays a repetition",
            json!({"type": "array", "maxItems": 100000, "items": {"const": 0}}),
            vec![json!([0, 0, 0]), json!([])],
            vec!["[1]"],
        ),
    ];
    run_cases(&cases, &spec());
}

#[test]
fn strings() {
    let cases = [
        case(
            "lengths in code points",
            json!({"type": "string", "minLength": 2, "maxLength": 3}),
            vec![json!("ab"), json!("éé"), json!("a\"\n"), json!("😀😀")],
            vec!["\"a\"", "\"abcd\"", "\"\\u00e9\"", "\"a\tb\""],
        ),
        case(
            "pattern is a search",
            json!({"type": "string", "pattern": "[0-9]{3}"}),
            vec![json!("abc123def"), json!("999")],
            vec!["\"12\"", "\"1a2b3c\""],
        ),
        case(
            "anchored pattern",
            json!({"type": "string", "pattern": "^[A-Z][a-z]+(-[A-Z][a-z]+)*$"}),
            vec![json!("Jean-Luc"), json!("Ab")],
            vec!["\"jean\"", "\"Jean-\"", "\"xJean\""],
        ),
        case(
            "pattern with non-ASCII and escapes",
            json!({"type": "string", "pattern": "^[äöü]+\\.$"}),
            vec![json!("äö.")],
            vec!["\"a.\"", "\"ä\""],
        ),
        case(
            "formats",
            json!({"type": "object", "properties": {
                "d": {"format": "date"}, "t": {"format": "date-time"}, "e": {"format": "email"},
                "u": {"format": "uuid"}, "i": {"format": "ipv4"}, "w": {"format": "uri"}}}),
            vec![
                json!({"d": "2024-02-29", "t": "2024-01-01T10:00:00Z", "e": "a@b.c", "u": "123e4567-e89b-12d3-a456-426614174000", "i": "10.0.0.1", "w": "https://x.y/z"}),
            ],
            vec![
                "{\"d\":\"2024-02-30\"}",
                "{\"t\":\"yesterday\"}",
                "{\"e\":\"nobody\"}",
                "{\"i\":\"300.1.1.1\"}",
                "{\"w\":\"no scheme\"}",
            ],
        ),
    ];
    run_cases(&cases, &spec());
}

/// Whether `schema` compiles with an empty coverage report (every keyword enforced).
fn is_exact(schema: &Value) -> bool {
    let g = compiler("llama3").compile_json_schema(schema, &spec()).unwrap();
    g.json_schema_report().unwrap().is_exact()
}

#[test]
fn length_bounds_with_pattern_or_format() {
    let cases = [
        case(
            "anchored pattern and both bounds",
            json!({"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 4}),
            vec![json!("ab"), json!("abcd")],
            vec!["\"a\"", "\"abcde\"", "\"aB\"", "\"\""],
        ),
        case(
            "search pattern and maxLength",
            json!({"type": "string", "pattern": "[0-9]{2}", "maxLength": 4}),
            vec![json!("12"), json!("a12b"), json!("é\n99")],
            vec!["\"a12bc\"", "\"1a2\"", "\"123456\""],
        ),
        case(
            "search pattern and minLength, escapes counted as one character",
            json!({"type": "string", "pattern": "x", "minLength": 3}),
            vec![json!("x\"\n"), json!("abx"), json!("xxxxxxxx")],
            vec!["\"xx\"", "\"x\\n\"", "\"abc\""],
        ),
        case(
            "alternation of lengths",
            json!({"type": "string", "pattern": "^(ab|abcdef|a+)$", "minLength": 3, "maxLength": 5}),
            vec![json!("aaa"), json!("aaaaa")],
            vec!["\"ab\"", "\"abcdef\"", "\"aaaaaa\"", "\"aa\""],
        ),
        case(
            "format and maxLength",
            json!({"type": "string", "format": "ipv4", "maxLength": 8}),
            vec![json!("10.0.0.1"), json!("1.2.3.4")],
            vec!["\"10.0.0.10\"", "\"1.2.3\""],
        ),
        case(
            "bounds exclude every match",
            json!({"anyOf": [{"type": "string", "pattern": "^a{5}$", "maxLength": 3}, {"type": "integer"}]}),
            vec![json!(1)],
            vec!["\"aaaaa\"", "\"aaa\""],
        ),
    ];
    run_cases(&cases, &spec());
    for c in &cases {
        assert!(is_exact(&c.schema), "{}: reported as relaxed", c.name);
    }
    // A pattern whose automaton is too large with the counter stays reported.
    let huge = json!({"type": "string", "pattern": "[ab]*a[ab]{20}", "maxLength": 1000});
    let g = compiler("llama3").compile_json_schema(&huge, &spec()).unwrap();
    assert_eq!(g.json_schema_report().unwrap().relaxed_keywords(), vec!["maxLength"]);
}

#[test]
fn property_counts_with_optional_properties() {
    let cases = [
        case(
            "optional declared properties, no additional",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
                   "required": ["a"], "additionalProperties": false, "minProperties": 2, "maxProperties": 2}),
            vec![json!({"a": 1, "b": 2}), json!({"a": 1, "c": 3})],
            vec!["{\"a\": 1}", "{\"a\": 1, \"b\": 2, \"c\": 3}", "{}"],
        ),
        case(
            "additional properties count",
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 2, "maxProperties": 3}),
            vec![json!({"a": 1, "x": true}), json!({"x": 1, "y": 2}), json!({"x": 1, "a": 2, "y": null})],
            vec!["{\"a\": 1}", "{\"x\": 1}", "{}", "{\"x\": 1, \"y\": 2, \"z\": 3, \"a\": 4}"],
        ),
        case(
            "minProperties only, required below it",
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["b"],
                   "minProperties": 2}),
            vec![json!({"a": "x", "b": "y"}), json!({"b": "y", "z": 0}), json!({"b": "y", "z": 0, "w": 1})],
            vec!["{\"b\": \"y\"}", "{\"a\": \"x\"}"],
        ),
    ];
    run_cases(&cases, &spec());
    // Declared order too (strict mode off so that additional properties may appear).
    let declared = JsonSchemaOptions { strict_mode: false, ..JsonSchemaOptions::default() };
    run_cases(&cases[..2], &declared);
    for c in &cases {
        assert!(is_exact(&c.schema), "{}: reported as relaxed", c.name);
    }
    let g = compiler("llama3").compile_json_schema(&cases[1].schema, &declared).unwrap();
    assert!(g.json_schema_report().unwrap().is_exact());
    assert!(!accepts(&g, "llama3", r#"{"x": 1, "y": 2, "a": 3, "z": 4}"#));
    // A count too large to track stays reported.
    let big = json!({"type": "object", "minProperties": 2, "maxProperties": 100000, "properties": {"a": {}}});
    let g = compiler("llama3").compile_json_schema(&big, &spec()).unwrap();
    assert_eq!(g.json_schema_report().unwrap().relaxed_keywords(), vec!["maxProperties", "minProperties"]);
}

#[test]
fn not_over_values_and_required() {
    let cases = [
        case(
            "not const string",
            json!({"type": "string", "not": {"const": "é"}}),
            vec![json!("e"), json!("éé"), json!("")],
            vec!["\"é\"", "\"\\u00e9\"", "\"\\u00E9\""],
        ),
        case(
            "not enum of mixed scalars",
            json!({"not": {"enum": ["a", 1, null, true]}}),
            vec![json!("b"), json!(2), json!(1.5), json!(false), json!([1]), json!({"a": 1})],
            vec!["\"a\"", "1", "1.0", "1e0", "null", "true"],
        ),
        case(
            "not enum of integers within bounds",
            json!({"type": "integer", "minimum": 0, "maximum": 10, "not": {"enum": [0, 5, 10, 20]}}),
            vec![json!(1), json!(4), json!(6), json!(9)],
            vec!["0", "5", "10", "11", "-1"],
        ),
        case(
            "not const number with decimals",
            json!({"type": "number", "not": {"const": 2.5}}),
            vec![json!(2.25), json!(-2.5), json!(3)],
            vec!["2.5", "2.50", "25e-1"],
        ),
        case(
            "not required with several names",
            json!({"type": "object", "properties": {"a": {}, "b": {}}, "not": {"required": ["a", "b"]}}),
            vec![json!({}), json!({"a": 1}), json!({"b": 2})],
            vec!["{\"a\": 1, \"b\": 2}", "{\"b\": 2, \"a\": 1}"],
        ),
    ];
    run_cases(&cases, &spec());
    for c in &cases {
        assert!(is_exact(&c.schema), "{}: reported as relaxed", c.name);
    }
    // Objects among the excluded values stay reported.
    assert!(!is_exact(&json!({"not": {"enum": [{"a": 1}]}})));
}

#[test]
fn unique_items_over_few_values() {
    let cases = [
        case(
            "enum items",
            json!({"type": "array", "items": {"enum": ["a", "b", 1]}, "uniqueItems": true}),
            vec![json!([]), json!(["a"]), json!(["b", 1, "a"]), json!([1, "a"])],
            vec!["[\"a\", \"a\"]", "[1, \"b\", 1]", "[1, 1.0]", "[\"c\"]"],
        ),
        case(
            "booleans with a minimum",
            json!({"type": "array", "items": {"type": "boolean"}, "uniqueItems": true, "minItems": 2}),
            vec![json!([true, false]), json!([false, true])],
            vec!["[true, true]", "[true]", "[true, false, true]"],
        ),
        case(
            "typed enum with maxItems",
            json!({"type": "array", "items": {"type": "string", "enum": ["x", "y", "z", 3]}, "uniqueItems": true, "maxItems": 2}),
            vec![json!(["x", "z"]), json!(["y"])],
            vec!["[3]", "[\"x\", \"y\", \"z\"]", "[\"y\", \"y\"]"],
        ),
    ];
    run_cases(&cases, &spec());
    for c in &cases {
        assert!(is_exact(&c.schema), "{}: reported as relaxed", c.name);
    }
    // Open item domains stay reported.
    assert!(!is_exact(&json!({"type": "array", "items": {"type": "integer"}, "uniqueItems": true})));
}

#[test]
fn numbers() {
    let cases = [
        case(
            "integer range",
            json!({"type": "integer", "minimum": -20, "maximum": 1000}),
            vec![json!(-20), json!(0), json!(999), json!(1000)],
            vec!["-21", "1001", "1.5", "01", "10000"],
        ),
        case(
            "big integers",
            json!({"type": "integer", "exclusiveMinimum": 99999999999999999999u128 as f64, "maximum": 1e30}),
            vec![],
            vec!["5", "1000000000000000000000000000001"],
        ),
        case(
            "decimal bounds",
            json!({"type": "number", "exclusiveMinimum": 0, "maximum": 2.5}),
            vec![json!(0.001), json!(2.5), json!(1), json!(2.49)],
            vec!["0", "-1", "2.51", "3", "0.0"],
        ),
        case(
            "draft-4 exclusive flags",
            json!({"type": "number", "minimum": 1, "exclusiveMinimum": true}),
            vec![json!(1.01), json!(2)],
            vec!["1", "0.5"],
        ),
        case(
            "multipleOf",
            json!({"type": "integer", "multipleOf": 7}),
            vec![json!(0), json!(14), json!(-21), json!(700)],
            vec!["15", "1", "-8"],
        ),
        case(
            "multipleOf with range",
            json!({"type": "integer", "multipleOf": 5, "minimum": 3, "maximum": 30}),
            vec![json!(5), json!(30)],
            vec!["0", "35", "7"],
        ),
        case(
            "decimal multipleOf",
            json!({"type": "number", "multipleOf": 0.01}),
            vec![json!(1.25), json!(3)],
            vec!["1.255"],
        ),
    ];
    run_cases(&cases, &spec());
}

#[test]
fn combinators() {
    let cases = [
        case(
            "anyOf",
            json!({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 5}]}),
            vec![json!("ab"), json!(7)],
            vec!["\"abc\"", "4"],
        ),
        case(
            "anyOf distributes siblings",
            json!({"type": "object", "properties": {"a": {}, "b": {}}, "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            vec![json!({"a": 1}), json!({"b": 1}), json!({"a": 1, "b": 2})],
            vec!["{}", "{\"c\":1}"],
        ),
        case(
            "allOf merges",
            json!({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                             {"properties": {"a": {"minimum": 3}, "b": {"type": "string"}}, "required": ["b"]}]}),
            vec![json!({"a": 3, "b": "x"})],
            vec!["{\"a\":2,\"b\":\"x\"}", "{\"a\":3}", "{\"b\":\"x\"}"],
        ),
        case(
            "allOf of enum and not (test-suite style)",
            json!({"allOf": [{"enum": [1, 2, "a", null]}, {"not": {"type": "integer"}}]}),
            vec![json!("a"), json!(null)],
            vec!["1", "2"],
        ),
        case("not type", json!({"not": {"type": "string"}}), vec![json!(1), json!([])], vec!["\"s\""]),
        case(
            "oneOf disjoint by type",
            json!({"oneOf": [{"type": "string"}, {"type": "number"}]}),
            vec![json!("s"), json!(1.5)],
            vec!["null"],
        ),
    ];
    run_cases(&cases, &spec());
}

#[test]
fn references() {
    let tree = json!({
        "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
        "$ref": "#/$defs/node"
    });
    let cases = [
        case(
            "recursive $ref",
            tree,
            vec![json!({"v": 1}), json!({"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]})],
            vec!["{\"v\":1,\"kids\":[{}]}", "{\"kids\":[]}"],
        ),
        case(
            "definitions and siblings",
            json!({"definitions": {"pos": {"type": "integer", "minimum": 0}}, "properties": {"n": {"$ref": "#/definitions/pos", "maximum": 9}}}),
            vec![json!({"n": 0}), json!({"n": 9})],
            vec!["{\"n\":-1}", "{\"n\":10}"],
        ),
        case(
            "pointer escapes",
            json!({"$defs": {"a/b": {"const": 1}, "c%25d": {"const": 2}}, "anyOf": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/$defs/c%2525d"}]}),
            vec![json!(1), json!(2)],
            vec!["3"],
        ),
    ];
    run_cases(&cases, &spec());
    let c = compiler("llama3");
    let err = c.compile_json_schema(&json!({"properties": {"x": {"$ref": "#/nope"}}}), &spec()).unwrap_err();
    let Error::Schema(e) = &err else { panic!("{err}") };
    assert_eq!(e.pointer(), "#/properties/x");
    assert!(matches!(e.kind(), SchemaErrorKind::UnresolvableRef(_)));
}

#[test]
fn options() {
    let c = compiler("llama3");
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "integer"}}}, "required": ["a", "b"]});
    // Strict mode (XGrammar's default): no extra properties.
    let strict = c.compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
    assert!(accepts(&strict, "llama3", r#"{"a": 1, "b": [2]}"#));
    assert!(!accepts(&strict, "llama3", r#"{"a": 1, "b": [2], "c": 3}"#));
    // Exact layout: XGrammar's default separators without indent.
    let exact = JsonSchemaOptions { any_whitespace: false, ..JsonSchemaOptions::default() };
    let g = c.compile_json_schema(&schema, &exact).unwrap();
    assert!(accepts(&g, "llama3", r#"{"a": 1, "b": [2, 3]}"#));
    assert!(!accepts(&g, "llama3", r#"{"a":1,"b":[2,3]}"#));
    let indented = JsonSchemaOptions { any_whitespace: false, indent: Some(2), ..JsonSchemaOptions::default() };
    let g = c.compile_json_schema(&schema, &indented).unwrap();
    assert!(accepts(&g, "llama3", "{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}"));
    assert!(!accepts(&g, "llama3", r#"{"a": 1, "b": [2]}"#));
    // Bounded whitespace.
    let bounded = JsonSchemaOptions { max_whitespace_cnt: Some(2), ..JsonSchemaOptions::default() };
    let g = c.compile_json_schema(&schema, &bounded).unwrap();
    assert!(accepts(&g, "llama3", "{ \"a\":  1, \"b\": []}"));
    assert!(!accepts(&g, "llama3", "{ \"a\":   1, \"b\": []}"));
    // Any property order, still enforcing `required` and no duplicates.
    let any = JsonSchemaOptions { property_order: PropertyOrder::Any, ..JsonSchemaOptions::default() };
    let g = c.compile_json_schema(&schema, &any).unwrap();
    assert!(accepts(&g, "llama3", r#"{"b": [], "a": 1}"#));
    assert!(!accepts(&g, "llama3", r#"{"b": []}"#));
    assert!(!accepts(&g, "llama3", r#"{"b": [], "a": 1, "a": 2}"#));
    // Declared order by default.
    assert!(!accepts(&strict, "llama3", r#"{"b": [], "a": 1}"#));
}

#[test]
fn any_order_beyond_the_exact_limit_tracks_required_keys_and_reports_repeatable_ones() {
    let c = compiler("llama3");
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}, "d": {"type": "null"}, "e": {"type": "integer"}},
        "required": ["a", "e"],
    });
    let any = JsonSchemaOptions { property_order: PropertyOrder::Any, ..JsonSchemaOptions::default() };
    let g = c.compile_json_schema(&schema, &any).unwrap();
    assert!(accepts(&g, "llama3", r#"{"d": null, "e": 2, "b": "x", "a": 1}"#));
    assert!(accepts(&g, "llama3", r#"{"e": 2, "a": 1}"#));
    // Required keys: all of them, once each.
    assert!(!accepts(&g, "llama3", r#"{"d": null, "b": "x", "a": 1}"#));
    assert!(!accepts(&g, "llama3", r#"{"a": 1, "e": 2, "a": 1}"#));
    // Optional keys may repeat, every occurrence validated, and the report says so.
    assert!(accepts(&g, "llama3", r#"{"c": true, "a": 1, "c": false, "e": 2}"#));
    assert!(!accepts(&g, "llama3", r#"{"c": true, "a": 1, "c": 3, "e": 2}"#));
    let report = g.json_schema_report().unwrap();
    assert_eq!(report.relaxed_keywords(), vec!["properties"]);
    assert_eq!(report.relaxations[0].pointer, "#");
    // Beyond four required properties, the required ones are counted: every order of them is
    // accepted, a missing one rejected, and the report says what a count lets through.
    let many = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}, "d": {"type": "integer"}, "e": {"type": "integer"}, "f": {"type": "string"}},
        "required": ["a", "b", "c", "d", "e"],
        "maxProperties": 5,
    });
    let g = c.compile_json_schema(&many, &any).unwrap();
    assert!(accepts(&g, "llama3", r#"{"e": 5, "c": 3, "a": 1, "d": 4, "b": 2}"#));
    assert!(!accepts(&g, "llama3", r#"{"e": 5, "c": 3, "a": 1, "d": 4}"#));
    assert!(!accepts(&g, "llama3", r#"{"e": 5, "c": 3, "a": 1, "d": 4, "b": 2, "f": "x"}"#), "maxProperties");
    assert!(!accepts(&g, "llama3", r#"{"e": 5, "c": 3, "a": 1, "d": 4, "b": "2"}"#));
    let report = g.json_schema_report().unwrap();
    assert!(report.relaxations.iter().any(|r| r.keyword == "properties" && r.detail.contains("counted")), "{report:?}");
    // Up to three declared properties, no key repeats and nothing is reported.
    let small = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}});
    let g = c.compile_json_schema(&small, &any).unwrap();
    assert!(accepts(&g, "llama3", r#"{"c": 1, "a": 2}"#));
    assert!(!accepts(&g, "llama3", r#"{"c": 1, "a": 2, "c": 3}"#));
    assert!(g.json_schema_report().unwrap().is_exact());
}

#[test]
fn coverage_report_and_strict_keywords() {
    let c = compiler("llama3");
    let schema = json!({
        "type": "object",
        "properties": {"tags": {"type": "array", "uniqueItems": true}, "n": {"type": "integer", "multipleOf": 7, "minimum": 0, "maximum": 1000000}},
    });
    let g = c.compile_json_schema(&schema, &spec()).unwrap();
    let report = g.json_schema_report().unwrap();
    assert_eq!(report.relaxed_keywords(), vec!["multipleOf", "uniqueItems"]);
    assert!(report.relaxations.iter().any(|r| r.keyword == "uniqueItems" && r.pointer == "#/properties/tags"));
    let strict = JsonSchemaOptions { strict_keywords: true, ..spec() };
    let err = c.compile_json_schema(&schema, &strict).unwrap_err();
    let Error::Schema(e) = &err else { panic!("{err}") };
    assert!(matches!(e.kind(), SchemaErrorKind::Unsupported { keyword, .. } if keyword == "uniqueItems"), "{err}");
    // Annotations are not relaxations.
    let g = c
        .compile_json_schema(
            &json!({"title": "t", "description": "d", "examples": [1], "x-foo": 1, "type": "integer"}),
            &spec(),
        )
        .unwrap();
    assert!(g.json_schema_report().unwrap().is_exact());
}

#[test]
fn limits_are_errors_not_crashes() {
    let c = compiler("llama3");
    // Deep nesting built programmatically (serde_json's parser would stop at 128 levels).
    let mut s = json!({"type": "integer"});
    for _ in 0..1000 {
        let mut m = serde_json::Map::new();
        m.insert("type".into(), "array".into());
        m.insert("items".into(), s);
        s = Value::Object(m);
    }
    let err = c.compile_json_schema(&s, &spec()).unwrap_err();
    assert!(matches!(&err, Error::Schema(e) if matches!(e.kind(), SchemaErrorKind::TooLarge(_))), "{err}");
    // A reference cycle through allOf.
    let cyc = json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}], "type": "object"}}, "$ref": "#/$defs/a", "minProperties": 1});
    assert!(c.compile_json_schema(&cyc, &spec()).is_err());
    // Huge bounds stay cheap.
    let big = json!({"type": "string", "minLength": 3, "maxLength": 100000});
    let g = c.compile_json_schema(&big, &spec()).unwrap();
    assert!(accepts(&g, "llama3", "\"abcd\"") && !accepts(&g, "llama3", "\"ab\""));
}

#[test]
fn masks_agree_with_accept_token_on_a_schema() {
    // A few steps with the exact mask (slow), to tie the acceptance tests above to masks.
    let c = compiler("llama3");
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 10, "maximum": 12}}, "required": ["n"], "additionalProperties": false});
    let g = c
        .compile_json_schema(&schema, &JsonSchemaOptions { any_whitespace: false, ..JsonSchemaOptions::default() })
        .unwrap();
    let ids = encode("llama3", r#"{"n": 11}"#);
    let mut m = GrammarMatcher::new(&g);
    let mut mask = TokenBitmask::new(g.vocabulary().vocab_size());
    for &id in &ids {
        m.fill_next_token_bitmask(mask.as_words_mut());
        assert!(mask.get(id as usize));
        assert!(m.accept_token(id));
    }
    m.fill_next_token_bitmask(mask.as_words_mut());
    assert_eq!(mask.count_allowed(), m.stop_token_ids().len());
}

#[test]
fn typed_schema_and_regex() {
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
    let r = c.compile_regex(r"^\d{3}-[A-Z]{2,}(\.v\d+)?$").unwrap();
    assert!(accepts(&r, "qwen3", "123-AB.v2") && accepts(&r, "qwen3", "000-XYZ"));
    assert!(!accepts(&r, "qwen3", "12-AB") && !accepts(&r, "qwen3", "123-A"));
    let err = c.compile_regex("a(?=b)").unwrap_err();
    assert!(err.to_string().contains("lookahead") && err.to_string().starts_with("1:2"), "{err}");
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
