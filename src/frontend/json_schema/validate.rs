//! A small JSON Schema instance validator, used to keep only the `enum`/`const` values that
//! satisfy the other keywords of their schema.
//!
//! It answers [`Verdict::Unknown`] (naming the keyword) rather than guessing when it meets
//! something it does not evaluate, so the caller can keep the value and report a relaxation.

use serde_json::Value;

use super::format;
use crate::frontend::regex::{Anchoring, Regex};

/// The validator's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Valid,
    Invalid,
    /// The keyword could not be evaluated.
    Unknown(&'static str),
}

use Verdict::*;

const MAX_DEPTH: usize = 64;

/// JSON equality as the specification defines it (numbers by value, objects unordered).
pub(super) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
            (Some(p), Some(q), _, _) => p == q,
            (_, _, Some(p), Some(q)) => p == q,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn and(a: Verdict, b: impl FnOnce() -> Verdict) -> Verdict {
    match a {
        Invalid => Invalid,
        Valid => b(),
        Unknown(k) => match b() {
            Invalid => Invalid,
            _ => Unknown(k),
        },
    }
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

/// Validates `instance` against `schema` (`$ref`s resolve in `root`).
pub(super) fn validate(root: &Value, schema: &Value, instance: &Value, depth: usize) -> Verdict {
    if depth > MAX_DEPTH {
        return Unknown("$ref");
    }
    let m = match schema {
        Value::Bool(true) => return Valid,
        Value::Bool(false) => return Invalid,
        Value::Object(m) => m,
        _ => return Unknown("schema"),
    };
    let mut v = Valid;
    for (k, s) in m {
        let r = keyword(root, m, k, s, instance, depth);
        v = and(v, || r);
        if v == Invalid {
            return Invalid;
        }
    }
    v
}

fn keyword(root: &Value, m: &serde_json::Map<String, Value>, k: &str, s: &Value, x: &Value, depth: usize) -> Verdict {
    let sub = |s: &Value, x: &Value| validate(root, s, x, depth + 1);
    let bool_of = |b: bool| if b { Valid } else { Invalid };
    let num = |v: &Value| v.as_f64();
    match k {
        "type" => match s {
            Value::String(t) => bool_of(is_type(x, t)),
            Value::Array(ts) => bool_of(ts.iter().any(|t| t.as_str().is_some_and(|t| is_type(x, t)))),
            _ => Unknown("type"),
        },
        "nullable" => Valid, // handled with `type` only when it widens; values checked by `type`
        "enum" => bool_of(s.as_array().is_some_and(|e| e.iter().any(|v| json_equal(v, x)))),
        "const" => bool_of(json_equal(s, x)),
        "$ref" => {
            let Some(r) = s.as_str() else { return Unknown("$ref") };
            let Some(target) = resolve(root, r) else { return Unknown("$ref") };
            sub(target, x)
        }
        "allOf" => s.as_array().map_or(Unknown("allOf"), |a| a.iter().fold(Valid, |acc, b| and(acc, || sub(b, x)))),
        "anyOf" => {
            let Some(a) = s.as_array() else { return Unknown("anyOf") };
            let mut out = Invalid;
            for b in a {
                match sub(b, x) {
                    Valid => return Valid,
                    Unknown(k) => out = Unknown(k),
                    Invalid => {}
                }
            }
            out
        }
        "oneOf" => {
            let Some(a) = s.as_array() else { return Unknown("oneOf") };
            let mut n = 0;
            for b in a {
                match sub(b, x) {
                    Valid => n += 1,
                    Unknown(k) => return Unknown(k),
                    Invalid => {}
                }
            }
            bool_of(n == 1)
        }
        "not" => match sub(s, x) {
            Valid => Invalid,
            Invalid => Valid,
            u => u,
        },
        "if" => {
            let then = m.get("then");
            let els = m.get("else");
            match sub(s, x) {
                Valid => then.map_or(Valid, |t| sub(t, x)),
                Invalid => els.map_or(Valid, |e| sub(e, x)),
                u => u,
            }
        }
        "then" | "else" => Valid, // evaluated with `if`
        "minimum" => x.as_f64().map_or(Valid, |v| bool_of(num(s).is_some_and(|b| v >= b))),
        "maximum" => x.as_f64().map_or(Valid, |v| bool_of(num(s).is_some_and(|b| v <= b))),
        "exclusiveMinimum" => match s {
            Value::Bool(_) => Unknown("exclusiveMinimum"),
            _ => x.as_f64().map_or(Valid, |v| bool_of(num(s).is_some_and(|b| v > b))),
        },
        "exclusiveMaximum" => match s {
            Value::Bool(_) => Unknown("exclusiveMaximum"),
            _ => x.as_f64().map_or(Valid, |v| bool_of(num(s).is_some_and(|b| v < b))),
        },
        "multipleOf" => x.as_f64().map_or(Valid, |v| {
            let d = num(s).unwrap_or(1.0);
            let q = v / d;
            bool_of((q - q.round()).abs() < 1e-9)
        }),
        "minLength" | "maxLength" => x.as_str().map_or(Valid, |t| {
            let n = t.chars().count() as f64;
            let b = num(s).unwrap_or(0.0);
            bool_of(if k == "minLength" { n >= b } else { n <= b })
        }),
        "pattern" => x.as_str().map_or(Valid, |t| match s.as_str().map(Regex::parse) {
            Some(Ok(r)) => bool_of(r.is_match(t, Anchoring::Search)),
            _ => Unknown("pattern"),
        }),
        "format" => x.as_str().map_or(Valid, |t| match s.as_str().and_then(format::pattern) {
            Some(p) => match Regex::parse(p) {
                Ok(r) => bool_of(r.is_match(t, Anchoring::FullMatch)),
                Err(_) => Unknown("format"),
            },
            None => Valid,
        }),
        "minItems" | "maxItems" => x.as_array().map_or(Valid, |a| {
            let b = num(s).unwrap_or(0.0);
            bool_of(if k == "minItems" { a.len() as f64 >= b } else { a.len() as f64 <= b })
        }),
        "minProperties" | "maxProperties" => x.as_object().map_or(Valid, |o| {
            let b = num(s).unwrap_or(0.0);
            bool_of(if k == "minProperties" { o.len() as f64 >= b } else { o.len() as f64 <= b })
        }),
        "uniqueItems" => x.as_array().map_or(Valid, |a| {
            if s != &Value::Bool(true) {
                return Valid;
            }
            bool_of((0..a.len()).all(|i| (i + 1..a.len()).all(|j| !json_equal(&a[i], &a[j]))))
        }),
        "required" => x.as_object().map_or(Valid, |o| {
            bool_of(s.as_array().is_some_and(|r| r.iter().all(|k| k.as_str().is_some_and(|k| o.contains_key(k)))))
        }),
        "properties" | "patternProperties" | "additionalProperties" => {
            let Some(o) = x.as_object() else { return Valid };
            if k != "properties" && k != "additionalProperties" && m.contains_key("additionalProperties") {
                return Valid; // evaluated with additionalProperties
            }
            object_props(root, m, o, depth, k)
        }
        "propertyNames" => x
            .as_object()
            .map_or(Valid, |o| o.keys().fold(Valid, |acc, key| and(acc, || sub(s, &Value::String(key.clone()))))),
        "dependentRequired" | "dependencies" => x.as_object().map_or(Valid, |o| {
            let Some(d) = s.as_object() else { return Unknown("dependentRequired") };
            let mut v = Valid;
            for (key, req) in d {
                if !o.contains_key(key) {
                    continue;
                }
                let r = match req {
                    Value::Array(r) => bool_of(r.iter().all(|k| k.as_str().is_some_and(|k| o.contains_key(k)))),
                    schema => sub(schema, x),
                };
                v = and(v, || r);
            }
            v
        }),
        "dependentSchemas" => x.as_object().map_or(Valid, |o| {
            let Some(d) = s.as_object() else { return Unknown("dependentSchemas") };
            d.iter().filter(|(key, _)| o.contains_key(*key)).fold(Valid, |acc, (_, sch)| and(acc, || sub(sch, x)))
        }),
        "items" | "prefixItems" | "additionalItems" => {
            let Some(a) = x.as_array() else { return Valid };
            if k == "additionalItems" {
                return Valid; // with items
            }
            let (prefix, rest): (&[Value], Option<&Value>) = match (m.get("prefixItems"), m.get("items")) {
                (Some(Value::Array(p)), items) => (p, items),
                (_, Some(Value::Array(p))) => (p, m.get("additionalItems")),
                (_, items) => (&[], items),
            };
            if k == "prefixItems" && m.contains_key("items") {
                return Valid; // with items
            }
            let mut v = Valid;
            for (i, item) in a.iter().enumerate() {
                let s = match prefix.get(i) {
                    Some(p) => p,
                    None => match rest {
                        Some(r) => r,
                        None => continue,
                    },
                };
                let r = sub(s, item);
                v = and(v, || r);
            }
            v
        }
        "contains" => x.as_array().map_or(Valid, |a| {
            let min = m.get("minContains").and_then(Value::as_u64).unwrap_or(1);
            let max = m.get("maxContains").and_then(Value::as_u64);
            let mut n = 0u64;
            for item in a {
                match sub(s, item) {
                    Valid => n += 1,
                    Unknown(k) => return Unknown(k),
                    Invalid => {}
                }
            }
            bool_of(n >= min && max.is_none_or(|m| n <= m))
        }),
        "minContains" | "maxContains" => Valid,
        "unevaluatedProperties" | "unevaluatedItems" => {
            if s == &Value::Bool(true) {
                Valid
            } else {
                Unknown(if k == "unevaluatedItems" { "unevaluatedItems" } else { "unevaluatedProperties" })
            }
        }
        _ => Valid, // annotations and unknown keywords
    }
}

fn object_props(
    root: &Value,
    m: &serde_json::Map<String, Value>,
    o: &serde_json::Map<String, Value>,
    depth: usize,
    k: &str,
) -> Verdict {
    let props = m.get("properties").and_then(Value::as_object);
    let patterns = m.get("patternProperties").and_then(Value::as_object);
    let additional = m.get("additionalProperties");
    if k == "properties" && additional.is_some() {
        return Valid; // evaluated with additionalProperties
    }
    let mut v = Valid;
    for (key, val) in o {
        let mut matched = false;
        if let Some(s) = props.and_then(|p| p.get(key)) {
            matched = true;
            let r = validate(root, s, val, depth + 1);
            v = and(v, || r);
        }
        for (pat, s) in patterns.into_iter().flatten() {
            match Regex::parse(pat) {
                Ok(re) => {
                    if re.is_match(key, Anchoring::Search) {
                        matched = true;
                        let r = validate(root, s, val, depth + 1);
                        v = and(v, || r);
                    }
                }
                Err(_) => return Unknown("patternProperties"),
            }
        }
        if !matched {
            if let Some(a) = additional {
                let r = validate(root, a, val, depth + 1);
                v = and(v, || r);
            }
        }
        if v == Invalid {
            return Invalid;
        }
    }
    v
}

fn resolve<'v>(root: &'v Value, r: &str) -> Option<&'v Value> {
    let frag = &r[r.find('#')? + 1..];
    if frag.is_empty() {
        return Some(root);
    }
    let mut cur = root;
    for seg in frag.strip_prefix('/')?.split('/') {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        cur = match cur {
            Value::Object(m) => m.get(&seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filters_enum_values() {
        let root = json!({});
        let s = json!({"not": {"enum": [1, 2]}, "type": "integer", "minimum": 0});
        assert_eq!(validate(&root, &s, &json!(3), 0), Valid);
        assert_eq!(validate(&root, &s, &json!(2), 0), Invalid);
        assert_eq!(validate(&root, &s, &json!(-1), 0), Invalid);
        assert_eq!(validate(&root, &s, &json!(1.5), 0), Invalid);
        let s = json!({"properties": {"a": {"type": "string"}}, "additionalProperties": false});
        assert_eq!(validate(&root, &s, &json!({"a": "x"}), 0), Valid);
        assert_eq!(validate(&root, &s, &json!({"a": "x", "b": 1}), 0), Invalid);
        assert!(json_equal(&json!({"a": 1.0, "b": [1]}), &json!({"b": [1], "a": 1})));
    }
}
