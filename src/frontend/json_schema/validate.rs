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

/// The verdict of the keyword `kw` of `k` (which `k` has).
fn keyword<'a>(doc: &mut Document<'a>, k: &Keywords<'a>, kw: Kw, x: &Value, depth: usize) -> Verdict {
    let root = doc.root();
    let mut sub = |s: &Schema<'a>, x: &Value| validate(doc, s, x, depth + 1);
    let set = "a listed keyword is set";
    match kw {
        Kw::Type => match k.types.as_ref().expect(set) {
            Field::Ok(TypeNames::One(t)) => bool_of(is_type(x, t)),
            Field::Ok(TypeNames::List(ts)) => bool_of(ts.iter().any(|t| t.ok().is_some_and(|t| is_type(x, t)))),
            Field::Wrong(_) => Unknown("type"),
        },
        Kw::Nullable => Valid, // handled with `type` only when it widens; values checked by `type`
        Kw::Enum => {
            bool_of(k.enum_values.as_ref().and_then(Field::ok).is_some_and(|e| e.iter().any(|v| json_equal(v, x))))
        }
        Kw::Const => bool_of(json_equal(k.const_value.expect(set), x)),
        Kw::Ref => {
            let Some(Field::Ok(r)) = k.reference else { return Unknown("$ref") };
            let Some(target) = resolve(root, r) else { return Unknown("$ref") };
            sub(&Schema::from_json(target), x)
        }
        Kw::AllOf => match k.all_of.as_ref().expect(set) {
            Field::Ok(a) => a.iter().fold(Valid, |acc, b| and(acc, || sub(b, x))),
            Field::Wrong(_) => Unknown("allOf"),
        },
        Kw::AnyOf => {
            let Some(Field::Ok(a)) = &k.any_of else { return Unknown("anyOf") };
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
        Kw::OneOf => {
            let Some(Field::Ok(a)) = &k.one_of else { return Unknown("oneOf") };
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
        Kw::Not => match sub(k.not.as_ref().expect(set), x) {
            Valid => Invalid,
            Invalid => Valid,
            u => u,
        },
        Kw::If => match sub(k.if_schema.as_ref().expect(set), x) {
            Valid => k.then_schema.as_ref().map_or(Valid, |t| sub(t, x)),
            Invalid => k.else_schema.as_ref().map_or(Valid, |e| sub(e, x)),
            u => u,
        },
        Kw::Then | Kw::Else => Valid, // evaluated with `if`
        Kw::Minimum => bound(k.minimum.as_ref(), x, |v, b| v >= b),
        Kw::Maximum => bound(k.maximum.as_ref(), x, |v, b| v <= b),
        Kw::ExclusiveMinimum => match k.exclusive_minimum.as_ref().expect(set) {
            b if b.flag().is_some() => Unknown("exclusiveMinimum"),
            b => bound(Some(b), x, |v, b| v > b),
        },
        Kw::ExclusiveMaximum => match k.exclusive_maximum.as_ref().expect(set) {
            b if b.flag().is_some() => Unknown("exclusiveMaximum"),
            b => bound(Some(b), x, |v, b| v < b),
        },
        Kw::MultipleOf => x.as_f64().map_or(Valid, |v| {
            let d = k.multiple_of.as_ref().and_then(Num::as_f64).unwrap_or(1.0);
            let q = v / d;
            bool_of((q - q.round()).abs() < 1e-9)
        }),
        Kw::MinLength | Kw::MaxLength => x.as_str().map_or(Valid, |t| {
            let n = t.chars().count() as f64;
            if kw == Kw::MinLength {
                bool_of(n >= count(&k.min_length))
            } else {
                bool_of(n <= count(&k.max_length))
            }
        }),
        Kw::Pattern => {
            x.as_str().map_or(Valid, |t| match k.pattern.as_ref().and_then(Field::ok).map(|p| Regex::parse(p)) {
                Some(Ok(r)) => bool_of(r.is_match(t, Anchoring::Search)),
                _ => Unknown("pattern"),
            })
        }
        Kw::Format => {
            x.as_str().map_or(Valid, |t| match k.format.as_ref().and_then(Field::ok).and_then(|f| format::pattern(f)) {
                Some(p) => match Regex::parse(p) {
                    Ok(r) => bool_of(r.is_match(t, Anchoring::FullMatch)),
                    Err(_) => Unknown("format"),
                },
                None => Valid,
            })
        }
        Kw::MinItems | Kw::MaxItems => x.as_array().map_or(Valid, |a| {
            let n = a.len() as f64;
            if kw == Kw::MinItems {
                bool_of(n >= count(&k.min_items))
            } else {
                bool_of(n <= count(&k.max_items))
            }
        }),
        Kw::MinProperties | Kw::MaxProperties => x.as_object().map_or(Valid, |o| {
            let n = o.len() as f64;
            if kw == Kw::MinProperties {
                bool_of(n >= count(&k.min_properties))
            } else {
                bool_of(n <= count(&k.max_properties))
            }
        }),
        Kw::UniqueItems => x.as_array().map_or(Valid, |a| {
            if !matches!(k.unique_items, Some(Field::Ok(true))) {
                return Valid;
            }
            bool_of((0..a.len()).all(|i| (i + 1..a.len()).all(|j| !json_equal(&a[i], &a[j]))))
        }),
        Kw::Required => x.as_object().map_or(Valid, |o| {
            let names = k.required.as_ref().and_then(Field::ok);
            bool_of(names.is_some_and(|r| r.iter().all(|n| n.as_str().is_some_and(|n| o.contains_key(n)))))
        }),
        Kw::Properties | Kw::PatternProperties | Kw::AdditionalProperties => {
            let Some(o) = x.as_object() else { return Valid };
            if kw != Kw::AdditionalProperties && k.has(Kw::AdditionalProperties) {
                return Valid; // evaluated with additionalProperties
            }
            object_props(doc, k, o, depth)
        }
        Kw::PropertyNames => x.as_object().map_or(Valid, |o| {
            let names = k.property_names.as_ref().expect(set);
            o.keys().fold(Valid, |acc, key| and(acc, || sub(names, &Value::String(key.clone()))))
        }),
        Kw::DependentRequired | Kw::Dependencies => x.as_object().map_or(Valid, |o| {
            let deps = if kw == Kw::Dependencies { &k.dependencies } else { &k.dependent_required };
            let Some(Field::Ok(d)) = deps else { return Unknown("dependentRequired") };
            let mut v = Valid;
            for (key, dep) in d.iter() {
                if !o.contains_key(key) {
                    continue;
                }
                let r = match dep {
                    Dep::Names(r) => bool_of(r.iter().all(|n| n.as_str().is_some_and(|n| o.contains_key(n)))),
                    Dep::Schema(schema) => sub(schema, x),
                };
                v = and(v, || r);
            }
            v
        }),
        Kw::DependentSchemas => x.as_object().map_or(Valid, |o| {
            let Some(Field::Ok(d)) = &k.dependent_schemas else { return Unknown("dependentSchemas") };
            d.iter().filter(|(key, _)| o.contains_key(*key)).fold(Valid, |acc, (_, sch)| and(acc, || sub(sch, x)))
        }),
        Kw::Items | Kw::PrefixItems | Kw::AdditionalItems => {
            let Some(a) = x.as_array() else { return Valid };
            if kw == Kw::AdditionalItems {
                return Valid; // with items
            }
            if kw == Kw::PrefixItems && k.has(Kw::Items) {
                return Valid; // with items
            }
            items(doc, k, a, depth)
        }
        Kw::Contains => x.as_array().map_or(Valid, |a| {
            let min = k.min_contains.as_ref().and_then(Num::as_u64).unwrap_or(1);
            let max = k.max_contains.as_ref().and_then(Num::as_u64);
            let contains = k.contains.as_ref().expect(set);
            let mut n = 0u64;
            for item in a {
                match sub(contains, item) {
                    Valid => n += 1,
                    Unknown(k) => return Unknown(k),
                    Invalid => {}
                }
            }
            bool_of(n >= min && max.is_none_or(|m| n <= m))
        }),
        Kw::MinContains | Kw::MaxContains => Valid,
        Kw::UnevaluatedProperties | Kw::UnevaluatedItems => {
            let s = if kw == Kw::UnevaluatedItems { &k.unevaluated_items } else { &k.unevaluated_properties };
            if s.as_ref().is_some_and(Schema::is_true) {
                Valid
            } else {
                Unknown(kw.name())
            }
        }
    }
}

/// A numeric bound `b` on a numeric instance `x` (a bound that is not a number fails).
fn bound(b: Option<&Num<'_>>, x: &Value, holds: impl Fn(f64, f64) -> bool) -> Verdict {
    x.as_f64().map_or(Valid, |v| bool_of(b.and_then(Num::as_f64).is_some_and(|b| holds(v, b))))
}

/// A count bound as `f64` (0 when it is not a number).
fn count(b: &Option<Num<'_>>) -> f64 {
    b.as_ref().and_then(Num::as_f64).unwrap_or(0.0)
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
}
