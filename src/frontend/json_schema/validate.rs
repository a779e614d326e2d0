//! A small JSON Schema instance validator, used to keep only the `enum`/`const` values that
//! satisfy the other keywords of their schema.
//!
//! It answers [`Verdict::Unknown`] (naming the keyword) rather than guessing when it meets
//! something it does not evaluate, so the caller can keep the value and report a relaxation.

use serde_json::{Map, Value};

use super::format;
use super::model::{Dep, Document, Entry, Field, FromJson, Items, Keywords, Kw, Members, Num, Schema, TypeNames, View};
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

/// Validates `instance` against `schema` (`$ref`s resolve in the document).
pub(super) fn validate<'a>(doc: &mut Document<'a>, schema: &Schema<'a>, instance: &Value, depth: usize) -> Verdict {
    if depth > MAX_DEPTH {
        return Unknown("$ref");
    }
    let k = match doc.view(schema) {
        View::Bool(true) => return Valid,
        View::Bool(false) => return Invalid,
        View::Object(k) => k,
        View::NotASchema => return Unknown("schema"),
    };
    let mut v = Valid;
    // In key order: the first keyword that cannot be evaluated is the one named.
    for e in k.entries() {
        let Entry::Known(kw) = e else { continue }; // annotations and unknown keywords
        let r = keyword(doc, &k, *kw, instance, depth);
        v = and(v, || r);
        if v == Invalid {
            return Invalid;
        }
    }
    v
}

fn bool_of(b: bool) -> Verdict {
    if b {
        Valid
    } else {
        Invalid
    }
}

/// The verdict of the keyword `kw` of `k` (which `k` has) on the instance `x`.
fn keyword<'a>(doc: &mut Document<'a>, k: &Keywords<'a>, kw: Kw, x: &Value, depth: usize) -> Verdict {
    match kw {
        Kw::Ref | Kw::AllOf | Kw::AnyOf | Kw::OneOf | Kw::Not | Kw::If | Kw::Then | Kw::Else => {
            combinator(doc, k, kw, x, depth)
        }
        Kw::Type => match k.types.as_ref().expect(SET) {
            Field::Ok(TypeNames::One(t)) => bool_of(is_type(x, t)),
            Field::Ok(TypeNames::List(ts)) => bool_of(ts.iter().any(|t| t.ok().is_some_and(|t| is_type(x, t)))),
            Field::Wrong(_) => Unknown("type"),
        },
        Kw::Nullable => Valid, // handled with `type` only when it widens; values checked by `type`
        Kw::Enum => {
            bool_of(k.enum_values.as_ref().and_then(Field::ok).is_some_and(|e| e.iter().any(|v| json_equal(v, x))))
        }
        Kw::Const => bool_of(json_equal(k.const_value.expect(SET), x)),
        // A draft-4 flag is not evaluated, whatever the instance.
        Kw::ExclusiveMinimum if is_flag(&k.exclusive_minimum) => Unknown("exclusiveMinimum"),
        Kw::ExclusiveMaximum if is_flag(&k.exclusive_maximum) => Unknown("exclusiveMaximum"),
        Kw::Minimum | Kw::Maximum | Kw::ExclusiveMinimum | Kw::ExclusiveMaximum | Kw::MultipleOf => {
            x.as_f64().map_or(Valid, |v| number(k, kw, v))
        }
        Kw::MinLength | Kw::MaxLength | Kw::Pattern | Kw::Format => x.as_str().map_or(Valid, |t| string(k, kw, t)),
        // Not evaluated (unless `true`), whatever the instance.
        Kw::UnevaluatedItems => unevaluated(&k.unevaluated_items, "unevaluatedItems"),
        Kw::UnevaluatedProperties => unevaluated(&k.unevaluated_properties, "unevaluatedProperties"),
        Kw::Items
        | Kw::PrefixItems
        | Kw::AdditionalItems
        | Kw::Contains
        | Kw::MinItems
        | Kw::MaxItems
        | Kw::MinContains
        | Kw::MaxContains
        | Kw::UniqueItems => array(doc, k, kw, x, depth),
        Kw::Properties
        | Kw::Required
        | Kw::AdditionalProperties
        | Kw::PatternProperties
        | Kw::PropertyNames
        | Kw::MinProperties
        | Kw::MaxProperties
        | Kw::DependentRequired
        | Kw::DependentSchemas
        | Kw::Dependencies => object(doc, k, kw, x, depth),
    }
}

/// "A listed keyword's field is set."
const SET: &str = "a listed keyword is set";

/// Whether a bound is a draft-4 boolean flag.
fn is_flag(b: &Option<Num<'_>>) -> bool {
    b.as_ref().and_then(Num::flag).is_some()
}

/// `$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`.
fn combinator<'a>(doc: &mut Document<'a>, k: &Keywords<'a>, kw: Kw, x: &Value, depth: usize) -> Verdict {
    let root = doc.root();
    let mut sub = |s: &Schema<'a>| validate(doc, s, x, depth + 1);
    match kw {
        Kw::Ref => {
            let Some(Field::Ok(r)) = k.reference else { return Unknown("$ref") };
            let Some(target) = resolve(root, r) else { return Unknown("$ref") };
            sub(&Schema::from_json(target))
        }
        Kw::AllOf => match k.all_of.as_ref().expect(SET) {
            Field::Ok(a) => a.iter().fold(Valid, |acc, b| and(acc, || sub(b))),
            Field::Wrong(_) => Unknown("allOf"),
        },
        Kw::AnyOf => {
            let Some(Field::Ok(a)) = &k.any_of else { return Unknown("anyOf") };
            let mut out = Invalid;
            for b in a {
                match sub(b) {
                    Valid => return Valid,
                    Unknown(k) => out = Unknown(k),
                    Invalid => {}
                }
            }
            out
        }
        Kw::OneOf => {
            let Some(Field::Ok(a)) = &k.one_of else { return Unknown("oneOf") };
            let mut n = 0;
            for b in a {
                match sub(b) {
                    Valid => n += 1,
                    Unknown(k) => return Unknown(k),
                    Invalid => {}
                }
            }
            bool_of(n == 1)
        }
        Kw::Not => match sub(k.not.as_ref().expect(SET)) {
            Valid => Invalid,
            Invalid => Valid,
            u => u,
        },
        Kw::If => match sub(k.if_schema.as_ref().expect(SET)) {
            Valid => k.then_schema.as_ref().map_or(Valid, sub),
            Invalid => k.else_schema.as_ref().map_or(Valid, sub),
            u => u,
        },
        _ => Valid, // `then`/`else`: evaluated with `if`
    }
}

/// The numeric keyword `kw` on the number `v`.
fn number(k: &Keywords<'_>, kw: Kw, v: f64) -> Verdict {
    // A bound that is not a number fails.
    let bound = |b: &Option<Num<'_>>, holds: fn(f64, f64) -> bool| {
        bool_of(b.as_ref().and_then(Num::as_f64).is_some_and(|b| holds(v, b)))
    };
    match kw {
        Kw::Minimum => bound(&k.minimum, |v, b| v >= b),
        Kw::Maximum => bound(&k.maximum, |v, b| v <= b),
        Kw::ExclusiveMinimum => bound(&k.exclusive_minimum, |v, b| v > b),
        Kw::ExclusiveMaximum => bound(&k.exclusive_maximum, |v, b| v < b),
        Kw::MultipleOf => {
            let d = k.multiple_of.as_ref().and_then(Num::as_f64).unwrap_or(1.0);
            let q = v / d;
            bool_of((q - q.round()).abs() < 1e-9)
        }
        _ => Valid,
    }
}

/// The string keyword `kw` on the string `t`.
fn string(k: &Keywords<'_>, kw: Kw, t: &str) -> Verdict {
    match kw {
        Kw::MinLength => count_at_least(t.chars().count(), &k.min_length),
        Kw::MaxLength => count_at_most(t.chars().count(), &k.max_length),
        Kw::Pattern => match k.pattern.as_ref().and_then(Field::ok).map(|p| Regex::parse(p)) {
            Some(Ok(r)) => bool_of(r.is_match(t, Anchoring::Search)),
            _ => Unknown("pattern"),
        },
        Kw::Format => match k.format.as_ref().and_then(Field::ok).and_then(|f| format::pattern(f)) {
            Some(p) => match Regex::parse(p) {
                Ok(r) => bool_of(r.is_match(t, Anchoring::FullMatch)),
                Err(_) => Unknown("format"),
            },
            None => Valid,
        },
        _ => Valid,
    }
}

/// The array keyword `kw` on the instance `x` (which it constrains only if an array).
fn array<'a>(doc: &mut Document<'a>, k: &Keywords<'a>, kw: Kw, x: &Value, depth: usize) -> Verdict {
    let Some(a) = x.as_array() else { return Valid };
    match kw {
        Kw::Items => items(doc, k, a, depth),
        // With `items` when there is one.
        Kw::PrefixItems if !k.has(Kw::Items) => items(doc, k, a, depth),
        Kw::MinItems => count_at_least(a.len(), &k.min_items),
        Kw::MaxItems => count_at_most(a.len(), &k.max_items),
        Kw::UniqueItems if matches!(k.unique_items, Some(Field::Ok(true))) => {
            bool_of((0..a.len()).all(|i| (i + 1..a.len()).all(|j| !json_equal(&a[i], &a[j]))))
        }
        Kw::Contains => {
            let min = k.min_contains.as_ref().and_then(Num::as_u64).unwrap_or(1);
            let max = k.max_contains.as_ref().and_then(Num::as_u64);
            let contains = k.contains.as_ref().expect(SET);
            let mut n = 0u64;
            for item in a {
                match validate(doc, contains, item, depth + 1) {
                    Valid => n += 1,
                    Unknown(k) => return Unknown(k),
                    Invalid => {}
                }
            }
            bool_of(n >= min && max.is_none_or(|m| n <= m))
        }
        // `additionalItems` with `items`; `minContains`/`maxContains` with `contains`.
        _ => Valid,
    }
}

/// The object keyword `kw` on the instance `x` (which it constrains only if an object).
fn object<'a>(doc: &mut Document<'a>, k: &Keywords<'a>, kw: Kw, x: &Value, depth: usize) -> Verdict {
    let Some(o) = x.as_object() else { return Valid };
    match kw {
        // Evaluated with additionalProperties.
        Kw::Properties | Kw::PatternProperties if k.has(Kw::AdditionalProperties) => Valid,
        Kw::Properties | Kw::PatternProperties | Kw::AdditionalProperties => object_props(doc, k, o, depth),
        Kw::Required => {
            let names = k.required.as_ref().and_then(Field::ok);
            bool_of(names.is_some_and(|r| r.iter().all(|n| n.as_str().is_some_and(|n| o.contains_key(n)))))
        }
        Kw::MinProperties => count_at_least(o.len(), &k.min_properties),
        Kw::MaxProperties => count_at_most(o.len(), &k.max_properties),
        Kw::PropertyNames => {
            let names = k.property_names.as_ref().expect(SET);
            o.keys().fold(Valid, |acc, key| and(acc, || validate(doc, names, &Value::String(key.clone()), depth + 1)))
        }
        Kw::DependentRequired | Kw::Dependencies => {
            let deps = if kw == Kw::Dependencies { &k.dependencies } else { &k.dependent_required };
            let Some(Field::Ok(d)) = deps else { return Unknown("dependentRequired") };
            let mut v = Valid;
            for (_, dep) in d.iter().filter(|(key, _)| o.contains_key(*key)) {
                let r = match dep {
                    Dep::Names(r) => bool_of(r.iter().all(|n| n.as_str().is_some_and(|n| o.contains_key(n)))),
                    Dep::Schema(schema) => validate(doc, schema, x, depth + 1),
                };
                v = and(v, || r);
            }
            v
        }
        Kw::DependentSchemas => {
            let Some(Field::Ok(d)) = &k.dependent_schemas else { return Unknown("dependentSchemas") };
            let present = d.iter().filter(|(key, _)| o.contains_key(*key));
            present.fold(Valid, |acc, (_, s)| and(acc, || validate(doc, s, x, depth + 1)))
        }
        _ => Valid,
    }
}

/// A count of at least `min` (0 when `min` is not a number).
fn count_at_least(n: usize, min: &Option<Num<'_>>) -> Verdict {
    bool_of(n as f64 >= min.as_ref().and_then(Num::as_f64).unwrap_or(0.0))
}

/// A count of at most `max` (0 when `max` is not a number).
fn count_at_most(n: usize, max: &Option<Num<'_>>) -> Verdict {
    bool_of(n as f64 <= max.as_ref().and_then(Num::as_f64).unwrap_or(0.0))
}

/// `unevaluatedItems`/`unevaluatedProperties`: not evaluated unless `true`.
fn unevaluated(s: &Option<Schema<'_>>, name: &'static str) -> Verdict {
    if s.as_ref().is_some_and(Schema::is_true) {
        Valid
    } else {
        Unknown(name)
    }
}

/// `prefixItems`/`items` (or draft-4 array `items`/`additionalItems`) on the array `a`.
fn items<'a>(doc: &mut Document<'a>, k: &Keywords<'a>, a: &[Value], depth: usize) -> Verdict {
    let tuple: Vec<Schema<'a>>;
    let (prefix, rest): (&[Schema<'a>], Option<Schema<'a>>) = match (&k.prefix_items, &k.items) {
        (Some(Field::Ok(p)), items) => (p, items.as_ref().map(Items::as_schema)),
        (_, Some(Items::Tuple(t))) => {
            tuple = t.as_array().into_iter().flatten().map(Schema::from_json).collect();
            (&tuple, k.additional_items.clone())
        }
        (_, items) => (&[], items.as_ref().map(Items::as_schema)),
    };
    let mut v = Valid;
    for (i, item) in a.iter().enumerate() {
        let s = match prefix.get(i) {
            Some(p) => p,
            None => match &rest {
                Some(r) => r,
                None => continue,
            },
        };
        let r = validate(doc, s, item, depth + 1);
        v = and(v, || r);
    }
    v
}

/// `properties`, `patternProperties` and `additionalProperties` on the object `o`.
fn object_props<'a>(doc: &mut Document<'a>, k: &Keywords<'a>, o: &Map<String, Value>, depth: usize) -> Verdict {
    let props = k.properties.as_ref().and_then(Field::ok);
    let patterns = k.pattern_properties.as_ref().and_then(Field::ok);
    let additional = k.additional_properties.as_ref();
    let mut v = Valid;
    for (key, val) in o {
        let mut matched = false;
        if let Some(s) = props.and_then(|p| p.get(key)) {
            matched = true;
            let r = validate(doc, s, val, depth + 1);
            v = and(v, || r);
        }
        for (pat, s) in patterns.into_iter().flat_map(Members::iter) {
            match Regex::parse(pat) {
                Ok(re) => {
                    if re.is_match(key, Anchoring::Search) {
                        matched = true;
                        let r = validate(doc, s, val, depth + 1);
                        v = and(v, || r);
                    }
                }
                Err(_) => return Unknown("patternProperties"),
            }
        }
        if !matched {
            if let Some(a) = additional {
                let r = validate(doc, a, val, depth + 1);
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

    fn validate(root: &Value, s: &Value, x: &Value, depth: usize) -> Verdict {
        super::validate(&mut Document::new(root), &Schema::from_json(s), x, depth)
    }

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

    #[test]
    fn names_the_first_keyword_it_cannot_evaluate_in_key_order() {
        let root = json!({});
        let s = json!({"pattern": "[", "unevaluatedItems": false});
        assert_eq!(validate(&root, &s, &json!("a"), 0), Unknown("pattern"));
        let s = json!({"unevaluatedItems": false, "pattern": "["});
        assert_eq!(validate(&root, &s, &json!("a"), 0), Unknown("unevaluatedItems"));
        // An invalid keyword decides, wherever it is.
        let s = json!({"unevaluatedItems": false, "maxLength": 0});
        assert_eq!(validate(&root, &s, &json!("a"), 0), Invalid);
        // Whatever the instance's type.
        assert_eq!(
            validate(&root, &json!({"unevaluatedProperties": false}), &json!(3), 0),
            Unknown("unevaluatedProperties")
        );
        assert_eq!(validate(&root, &json!({"unevaluatedProperties": true}), &json!(3), 0), Valid);
        // Draft-4 forms as written.
        let s = json!({"items": [{"type": "string"}], "additionalItems": false});
        assert_eq!(validate(&root, &s, &json!(["a"]), 0), Valid);
        assert_eq!(validate(&root, &s, &json!([1]), 0), Invalid);
        assert_eq!(validate(&root, &s, &json!(["a", "b"]), 0), Invalid);
        assert_eq!(
            validate(&root, &json!({"minimum": 1, "exclusiveMinimum": true}), &json!(2), 0),
            Unknown("exclusiveMinimum")
        );
        assert_eq!(validate(&root, &json!({"exclusiveMaximum": false}), &json!("a"), 0), Unknown("exclusiveMaximum"));
    }
}
