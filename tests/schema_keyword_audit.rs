//! No keyword dropped without a report entry: for every keyword the JSON Schema lowering
//! reads (`internals::json_schema_keywords`), probe schemas with instances that are invalid
//! *because of that keyword* (the `jsonschema` crate confirms each verdict, so the table cannot
//! lie). The grammar must reject each invalid instance, or the coverage report must name the
//! keyword; valid instances must always be accepted. Object shapes get one probe each for
//! `minProperties`/`maxProperties` (declared, additional, pattern, name-constrained, open,
//! any-order, enumerated, combined objects), where counts were once silently not enforced.
//! Instances are checked by the independent recognizer of `support/reference.rs`, on the
//! grammar IR (no tokenizer).

use std::collections::BTreeSet;

use maskforge::internals::json_schema_keywords;
use maskforge::{json_schema_to_grammar, JsonSchemaOptions};
use serde_json::{json, Value};

use crate::support::reference::recognizes;

/// A probe: a schema, instances it admits and instances it rejects (compact JSON text).
struct Probe {
    schema: Value,
    valid: &'static [&'static str],
    invalid: &'static [&'static str],
}

fn probe(schema: Value, valid: &'static [&'static str], invalid: &'static [&'static str]) -> Probe {
    Probe { schema, valid, invalid }
}

const DRAFT7: &str = "http://json-schema.org/draft-07/schema#";

fn probes() -> Vec<Probe> {
    vec![
        // Combinators and references.
        probe(json!({"$ref": "#/$defs/a", "$defs": {"a": {"type": "integer"}}}), &["1"], &["\"x\""]),
        probe(json!({"allOf": [{"type": "integer"}, {"minimum": 3}]}), &["3"], &["2", "\"x\""]),
        probe(json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}), &["1", "\"a\""], &["true"]),
        probe(json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}), &["1", "2.5"], &["3"]),
        probe(json!({"not": {"type": "string"}}), &["1"], &["\"a\""]),
        probe(
            json!({"if": {"minimum": 0}, "then": {"multipleOf": 2}, "else": {"multipleOf": 3}}),
            &["4", "-3"],
            &["3", "-2"],
        ),
        probe(json!({"enum": [1, "a", {"b": null}]}), &["1", "\"a\"", "{\"b\":null}"], &["2", "{\"b\":1}"]),
        probe(json!({"const": {"a": [1, 2]}}), &["{\"a\":[1,2]}"], &["{\"a\":[2,1]}", "{}"]),
        // Types and scalars.
        probe(json!({"type": ["string", "null"]}), &["\"a\"", "null"], &["1", "[]"]),
        probe(json!({"type": "integer", "minimum": -3, "maximum": 5}), &["-3", "5"], &["-4", "6"]),
        probe(json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}), &["0.5"], &["0", "1"]),
        probe(json!({"type": "integer", "multipleOf": 3}), &["-9", "0"], &["4"]),
        probe(json!({"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 7}), &["0", "98"], &["8", "105"]),
        probe(json!({"type": "string", "minLength": 2, "maxLength": 3}), &["\"ab\""], &["\"a\"", "\"abcd\""]),
        probe(json!({"type": "string", "pattern": "^a+$", "maxLength": 3}), &["\"aa\""], &["\"ab\"", "\"aaaa\""]),
        probe(json!({"type": "string", "format": "ipv4"}), &["\"1.2.3.4\""], &["\"1.2.3\""]),
        // Arrays.
        probe(json!({"type": "array", "items": {"type": "integer"}}), &["[1]"], &["[\"a\"]"]),
        probe(json!({"prefixItems": [{"type": "string"}], "items": false}), &["[\"a\"]"], &["[1]", "[\"a\",1]"]),
        probe(
            json!({"$schema": DRAFT7, "items": [{"type": "string"}], "additionalItems": {"type": "integer"}}),
            &["[\"a\",1]"],
            &["[\"a\",\"b\"]"],
        ),
        probe(json!({"prefixItems": [{"type": "string"}], "unevaluatedItems": false}), &["[\"a\"]"], &["[\"a\",1]"]),
        probe(json!({"type": "array", "contains": {"type": "string"}}), &["[1,\"a\"]"], &["[1]"]),
        probe(
            json!({"type": "array", "contains": {"type": "string"}, "minContains": 2, "maxContains": 2}),
            &["[\"a\",\"b\"]"],
            &["[\"a\"]", "[\"a\",\"b\",\"c\"]"],
        ),
        probe(json!({"type": "array", "minItems": 1, "maxItems": 2}), &["[1]"], &["[]", "[1,2,3]"]),
        probe(json!({"type": "array", "items": {"enum": [1, 2]}, "uniqueItems": true}), &["[1,2]"], &["[1,1]"]),
        probe(json!({"type": "array", "uniqueItems": true}), &["[1,2]"], &["[1,1]"]),
        // Objects.
        probe(
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
            &["{\"a\":1}"],
            &["{\"a\":\"x\"}", "{}"],
        ),
        probe(
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"}}),
            &["{\"a\":\"x\",\"b\":1}"],
            &["{\"b\":\"x\"}"],
        ),
        probe(
            json!({"type": "object", "properties": {"a": {}}, "unevaluatedProperties": false}),
            &["{\"a\":1}"],
            &["{\"b\":1}"],
        ),
        probe(
            json!({"type": "object", "patternProperties": {"^x": {"type": "integer"}}}),
            &["{\"x1\":1}"],
            &["{\"x1\":\"a\"}"],
        ),
        probe(json!({"type": "object", "propertyNames": {"maxLength": 2}}), &["{\"ab\":1}"], &["{\"abc\":1}"]),
        probe(
            json!({"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}}),
            &["{\"a\":1,\"b\":2}", "{\"b\":2}"],
            &["{\"a\":1}"],
        ),
        probe(
            json!({"type": "object", "properties": {"a": {}, "b": {}}, "dependentSchemas": {"a": {"required": ["b"]}}}),
            &["{\"a\":1,\"b\":2}", "{\"b\":2}"],
            &["{\"a\":1}"],
        ),
        probe(
            json!({"$schema": DRAFT7, "type": "object", "properties": {"a": {}, "b": {}}, "dependencies": {"a": ["b"]}}),
            &["{\"a\":1,\"b\":2}", "{}"],
            &["{\"a\":1}"],
        ),
        probe(json!({"type": "object", "nullable": true}), &["{}", "null"], &["1"]),
        // minProperties / maxProperties in every object shape.
        probe(
            json!({"type": "object", "properties": {"a": {}, "b": {}}, "maxProperties": 1}),
            &["{\"a\":1}", "{}"],
            &["{\"a\":1,\"b\":2}"],
        ),
        probe(
            json!({"type": "object", "properties": {"a": {}, "b": {}}, "additionalProperties": true, "minProperties": 2}),
            &["{\"a\":1,\"c\":2}"],
            &["{\"a\":1}", "{}"],
        ),
        probe(
            json!({"type": "object", "patternProperties": {"^x": {}}, "maxProperties": 1}),
            &["{\"x1\":1}"],
            &["{\"x1\":1,\"x2\":2}"],
        ),
        probe(
            json!({"type": "object", "propertyNames": {"pattern": "^x"}, "minProperties": 2}),
            &["{\"x1\":1,\"x2\":2}"],
            &["{\"x1\":1}"],
        ),
        probe(json!({"type": "object", "maxProperties": 1}), &["{\"a\":1}", "{}"], &["{\"a\":1,\"b\":2}"]),
        probe(
            json!({"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 1}),
            &["{\"a\":1}"],
            &["{}"],
        ),
        probe(
            json!({"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {}}, "maxProperties": 2}),
            &["{\"a\":1,\"e\":2}"],
            &["{\"a\":1,\"b\":2,\"c\":3}"],
        ),
        probe(
            json!({"type": "object", "properties": {"a": {}}, "required": ["a"], "unevaluatedProperties": true, "maxProperties": 1}),
            &["{\"a\":1}"],
            &["{\"a\":1,\"b\":2}"],
        ),
        probe(
            json!({"enum": [{"a": 1}, {"a": 1, "b": 2}], "maxProperties": 1}),
            &["{\"a\":1}"],
            &["{\"a\":1,\"b\":2}"],
        ),
        probe(
            json!({"type": "object", "not": {"required": ["a", "b"]}, "maxProperties": 1}),
            &["{\"c\":1}"],
            &["{\"c\":1,\"d\":2}"],
        ),
        probe(
            json!({"allOf": [{"type": "object", "maxProperties": 1}, {"properties": {"a": {}, "b": {}}}]}),
            &["{\"a\":1}"],
            &["{\"a\":1,\"b\":2}"],
        ),
        probe(
            json!({"anyOf": [{"type": "object", "minProperties": 2}, {"type": "string"}]}),
            &["{\"a\":1,\"b\":2}", "\"x\""],
            &["{\"a\":1}"],
        ),
        probe(
            json!({"type": "object", "if": {"required": ["a"]}, "then": {"maxProperties": 1}}),
            &["{\"a\":1}", "{\"b\":1,\"c\":2}"],
            &["{\"a\":1,\"b\":2}"],
        ),
        probe(
            json!({"type": "object", "properties": {"a": {}}, "dependentRequired": {"a": ["b"]}, "maxProperties": 1}),
            &["{\"b\":1}"],
            &["{\"a\":1,\"b\":2}"],
        ),
    ]
}

/// The keywords the report names as relaxed.
fn relaxed(schema: &Value, options: &JsonSchemaOptions) -> Result<(maskforge::Grammar, Vec<String>), String> {
    let (grammar, report) = json_schema_to_grammar(schema, options).map_err(|e| e.to_string())?;
    let keywords = report.relaxed_keywords().into_iter().map(str::to_string).collect();
    Ok((grammar, keywords))
}

/// The keywords of a schema, at any depth.
fn keys_of(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                keys_of(x, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|x| keys_of(x, out)),
        _ => {}
    }
}

#[test]
fn every_keyword_is_enforced_or_reported() {
    let probes = probes();
    let mut covered = BTreeSet::new();
    probes.iter().for_each(|p| keys_of(&p.schema, &mut covered));
    let missing: Vec<&str> = json_schema_keywords().iter().copied().filter(|k| !covered.contains(*k)).collect();
    assert!(missing.is_empty(), "keywords without a probe: {missing:?}");

    let mut failures = Vec::new();
    for options in [JsonSchemaOptions::default(), JsonSchemaOptions::spec_compliant()] {
        for p in &probes {
            // `nullable` is OpenAPI's, not JSON Schema's: the judge does not know it.
            let judged = !p.schema.as_object().is_some_and(|m| m.contains_key("nullable"));
            let judge = jsonschema::options().should_validate_formats(true).build(&p.schema).expect("a valid schema");
            let (grammar, relaxed) = match relaxed(&p.schema, &options) {
                Ok(x) => x,
                Err(e) => {
                    failures.push(format!("{}: {e}", p.schema));
                    continue;
                }
            };
            // Strict mode and declared order reject some valid instances on purpose: valid
            // instances are checked under the specification's options only.
            let spec = !options.strict_mode;
            for text in p.valid {
                let value: Value = serde_json::from_str(text).unwrap();
                assert!(!judged || judge.is_valid(&value), "{}: {text} is not valid", p.schema);
                if spec && !recognizes(&grammar, text.as_bytes()) {
                    failures.push(format!("{} (strict {}): valid {text} rejected", p.schema, options.strict_mode));
                }
            }
            for text in p.invalid {
                let value: Value = serde_json::from_str(text).unwrap();
                assert!(!judged || !judge.is_valid(&value), "{}: {text} is valid", p.schema);
                if recognizes(&grammar, text.as_bytes()) && relaxed.is_empty() {
                    failures.push(format!(
                        "{} (strict {}): invalid {text} accepted, nothing reported",
                        p.schema, options.strict_mode
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
