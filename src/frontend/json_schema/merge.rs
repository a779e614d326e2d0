//! Intersection of schemas: `allOf`, the sibling keywords of `$ref`, and the distribution of
//! `anyOf`/`oneOf` over their siblings.
//!
//! Schemas are merged keyword by keyword into one schema object whose instances are exactly
//! those of both (bounds tighten, `required` and `type` combine, `enum`s intersect, common
//! properties become a lazy `allOf` merged when lowered). Where two keywords cannot be
//! combined into one (two different `pattern`s, two `contains`), the first is kept and the
//! relaxation reported. `additionalProperties` of one side applies to the properties only
//! the other side declares, as the specification says.

use serde_json::{Map, Value};

use super::lower::{Lowerer, TYPES};
use super::validate::json_equal;
use super::SchemaError;
use crate::frontend::regex::{Anchoring, Regex};

/// Keywords that never constrain an instance.
pub(super) const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "example",
    "$comment",
    "$schema",
    "$id",
    "id",
    "$anchor",
    "$dynamicAnchor",
    "$defs",
    "definitions",
    "$vocabulary",
    "readOnly",
    "writeOnly",
    "deprecated",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "discriminator",
    "xml",
    "externalDocs",
];

/// How many `$ref`/`allOf` levels a merge may inline.
const MAX_INLINE_DEPTH: usize = 32;

/// The most alternatives a product of two `anyOf`s may have.
const MAX_PRODUCT: usize = 64;

/// `m` with its `$ref` and `allOf` inlined and merged into one schema (which has neither at
/// its top level).
pub(super) fn flatten(l: &mut Lowerer<'_>, m: &Map<String, Value>, ptr: &str) -> Result<Value, SchemaError> {
    let mut parts = Vec::new();
    collect(l, &Value::Object(m.clone()), ptr, 0, &mut parts)?;
    let mut acc = Value::Bool(true);
    for p in parts {
        acc = merge_flat(l, &acc, &p, ptr)?;
    }
    Ok(acc)
}

/// Splits a schema into parts without `$ref`/`allOf` (inlining both).
fn collect(l: &mut Lowerer<'_>, s: &Value, ptr: &str, depth: usize, out: &mut Vec<Value>) -> Result<(), SchemaError> {
    if depth > MAX_INLINE_DEPTH {
        return Err(Lowerer::invalid(ptr, "`$ref`/`allOf` chain too deep (a reference cycle through allOf?)"));
    }
    let m = match s {
        Value::Bool(_) => {
            out.push(s.clone());
            return Ok(());
        }
        Value::Object(m) => m,
        _ => return Err(Lowerer::invalid(ptr, "a schema must be an object or a boolean")),
    };
    let mut rest = m.clone();
    let reference = rest.remove("$ref");
    let all_of = rest.remove("allOf");
    normalize(&mut rest);
    out.push(Value::Object(rest));
    if let Some(r) = reference {
        let Some(r) = r.as_str() else { return Err(Lowerer::invalid(ptr, "`$ref` must be a string")) };
        match l.resolve(r, ptr) {
            Ok(target) => collect(l, target, ptr, depth + 1, out)?,
            Err(e) => {
                if !r.starts_with('#') && !r.is_empty() {
                    l.relax("$ref", ptr, format!("external reference `{r}` is not resolved: any value"))?;
                } else {
                    return Err(e);
                }
            }
        }
    }
    if let Some(all) = all_of {
        let Some(all) = all.as_array() else { return Err(Lowerer::invalid(ptr, "`allOf` must be an array")) };
        for (i, x) in all.iter().enumerate() {
            collect(l, x, &format!("{ptr}/allOf/{i}"), depth + 1, out)?;
        }
    }
    Ok(())
}

/// Rewrites older forms into the 2020-12 ones: draft-4 boolean `exclusiveMinimum`, array
/// `items` (→ `prefixItems` + `items` from `additionalItems`), `dependencies`, `nullable`.
pub(super) fn normalize(m: &mut Map<String, Value>) {
    for (ex, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if let Some(Value::Bool(b)) = m.get(ex) {
            if *b {
                if let Some(v) = m.remove(bound) {
                    m.insert(ex.into(), v);
                } else {
                    m.remove(ex);
                }
            } else {
                m.remove(ex);
            }
        }
    }
    if let Some(Value::Array(_)) = m.get("items") {
        let items = m.remove("items").unwrap();
        m.insert("prefixItems".into(), items);
        if let Some(a) = m.remove("additionalItems") {
            m.insert("items".into(), a);
        }
    } else if !m.contains_key("prefixItems") {
        m.remove("additionalItems");
    }
    if let Some(Value::Object(deps)) = m.remove("dependencies") {
        let mut req = Map::new();
        let mut schemas = Map::new();
        for (k, v) in deps {
            if v.is_array() {
                req.insert(k, v);
            } else {
                schemas.insert(k, v);
            }
        }
        if !req.is_empty() {
            m.entry("dependentRequired").or_insert(Value::Object(req));
        }
        if !schemas.is_empty() {
            m.entry("dependentSchemas").or_insert(Value::Object(schemas));
        }
    }
    if m.get("nullable") == Some(&Value::Bool(true)) {
        match m.get_mut("type") {
            Some(Value::String(t)) => {
                let t = t.clone();
                m.insert("type".into(), Value::Array(vec![Value::String(t), Value::String("null".into())]));
            }
            Some(Value::Array(ts)) if !ts.iter().any(|t| t == "null") => ts.push(Value::String("null".into())),
            _ => {}
        }
        m.remove("nullable");
    }
}

/// The intersection of two schemas, each possibly with `$ref`/`allOf`.
pub(super) fn merge_pair(l: &mut Lowerer<'_>, a: &Value, b: &Value, ptr: &str) -> Result<Value, SchemaError> {
    let mut parts = Vec::new();
    collect(l, a, ptr, 0, &mut parts)?;
    collect(l, b, ptr, 0, &mut parts)?;
    let mut acc = Value::Bool(true);
    for p in parts {
        acc = merge_flat(l, &acc, &p, ptr)?;
    }
    Ok(acc)
}

fn all_of(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Bool(true), x) | (x, Value::Bool(true)) => x.clone(),
        (Value::Bool(false), _) | (_, Value::Bool(false)) => Value::Bool(false),
        _ if a == b => a.clone(),
        _ => serde_json::json!({ "allOf": [a, b] }),
    }
}

fn type_set(v: &Value) -> Vec<&'static str> {
    let names: Vec<&str> = match v {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    TYPES.iter().copied().filter(|t| names.contains(t)).collect()
}

/// Merges two schemas that have no `$ref`/`allOf` at their top level.
fn merge_flat(l: &mut Lowerer<'_>, a: &Value, b: &Value, ptr: &str) -> Result<Value, SchemaError> {
    let (a, b) = match (a, b) {
        (Value::Bool(true), x) | (x, Value::Bool(true)) => return Ok(x.clone()),
        (Value::Bool(false), _) | (_, Value::Bool(false)) => return Ok(Value::Bool(false)),
        (Value::Object(a), Value::Object(b)) => (a, b),
        _ => return Err(Lowerer::invalid(ptr, "a schema must be an object or a boolean")),
    };
    let mut out = a.clone();
    for (k, bv) in b {
        let Some(av) = a.get(k) else {
            out.insert(k.clone(), bv.clone());
            continue;
        };
        if av == bv {
            continue;
        }
        let merged = match k.as_str() {
            "type" => {
                let (ta, tb) = (type_set(av), type_set(bv));
                let mut t: Vec<Value> = Vec::new();
                for x in TYPES {
                    let in_a = ta.contains(&x) || (x == "integer" && ta.contains(&"number"));
                    let in_b = tb.contains(&x) || (x == "integer" && tb.contains(&"number"));
                    if in_a && in_b && !(x == "integer" && ta.contains(&"number") && tb.contains(&"number")) {
                        t.push(Value::String(x.into()));
                    }
                }
                if t.is_empty() {
                    return Ok(Value::Bool(false));
                }
                Value::Array(t)
            }
            "enum" => {
                let (Some(ea), Some(eb)) = (av.as_array(), bv.as_array()) else { continue };
                Value::Array(ea.iter().filter(|x| eb.iter().any(|y| json_equal(x, y))).cloned().collect())
            }
            "const" => {
                if json_equal(av, bv) {
                    av.clone()
                } else {
                    return Ok(Value::Bool(false));
                }
            }
            "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties" | "minContains" => {
                if bv.as_f64() > av.as_f64() {
                    bv.clone()
                } else {
                    av.clone()
                }
            }
            "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties" | "maxContains" => {
                if bv.as_f64() < av.as_f64() {
                    bv.clone()
                } else {
                    av.clone()
                }
            }
            "required" => {
                let mut r: Vec<Value> = av.as_array().cloned().unwrap_or_default();
                for x in bv.as_array().into_iter().flatten() {
                    if !r.contains(x) {
                        r.push(x.clone());
                    }
                }
                Value::Array(r)
            }
            "properties" => continue, // below, with additionalProperties
            "patternProperties" | "dependentSchemas" => {
                let mut r = av.as_object().cloned().unwrap_or_default();
                for (pk, pv) in bv.as_object().into_iter().flatten() {
                    let v = r.get(pk).map_or(pv.clone(), |x| all_of(x, pv));
                    r.insert(pk.clone(), v);
                }
                Value::Object(r)
            }
            "dependentRequired" => {
                let mut r = av.as_object().cloned().unwrap_or_default();
                for (pk, pv) in bv.as_object().into_iter().flatten() {
                    let mut list = r.get(pk).and_then(Value::as_array).cloned().unwrap_or_default();
                    for x in pv.as_array().into_iter().flatten() {
                        if !list.contains(x) {
                            list.push(x.clone());
                        }
                    }
                    r.insert(pk.clone(), Value::Array(list));
                }
                Value::Object(r)
            }
            "additionalProperties" | "propertyNames" | "items" | "unevaluatedProperties" | "unevaluatedItems" => {
                all_of(av, bv)
            }
            "prefixItems" => {
                let (pa, pb) = (av.as_array().cloned().unwrap_or_default(), bv.as_array().cloned().unwrap_or_default());
                let rest_a = a.get("items").cloned().unwrap_or(Value::Bool(true));
                let rest_b = b.get("items").cloned().unwrap_or(Value::Bool(true));
                let n = pa.len().max(pb.len());
                Value::Array(
                    (0..n).map(|i| all_of(pa.get(i).unwrap_or(&rest_a), pb.get(i).unwrap_or(&rest_b))).collect(),
                )
            }
            "uniqueItems" => Value::Bool(av == &Value::Bool(true) || bv == &Value::Bool(true)),
            "not" => serde_json::json!({ "anyOf": [av, bv] }),
            "multipleOf" => match (av.as_u64(), bv.as_u64()) {
                (Some(x), Some(y)) if x > 0 && y > 0 => Value::from(lcm(x, y)),
                _ => {
                    let (x, y) = (av.as_f64().unwrap_or(1.0), bv.as_f64().unwrap_or(1.0));
                    if (y / x).fract() == 0.0 {
                        bv.clone()
                    } else if (x / y).fract() == 0.0 {
                        av.clone()
                    } else {
                        l.relax("multipleOf", ptr, "two multipleOf in allOf: only the first is enforced")?;
                        av.clone()
                    }
                }
            },
            "anyOf" | "oneOf" => {
                let (xa, xb) = (av.as_array().cloned().unwrap_or_default(), bv.as_array().cloned().unwrap_or_default());
                if xa.len() * xb.len() <= MAX_PRODUCT {
                    let mut prod = Vec::new();
                    for x in &xa {
                        for y in &xb {
                            prod.push(all_of(x, y));
                        }
                    }
                    if k == "oneOf" {
                        l.relax("oneOf", ptr, "two oneOf in allOf: enforced as anyOf of their combinations")?;
                    }
                    Value::Array(prod)
                } else {
                    l.relax(
                        k,
                        ptr,
                        format!("two {k} in allOf with too many combinations: only the first is enforced"),
                    )?;
                    av.clone()
                }
            }
            "pattern" | "format" | "contains" | "if" | "then" | "else" => {
                l.relax(k, ptr, format!("two different `{k}` in allOf: only the first is enforced"))?;
                av.clone()
            }
            _ => av.clone(),
        };
        out.insert(k.clone(), merged);
    }
    // Properties: common ones intersect; one side's additionalProperties (and
    // patternProperties) applies to the properties only the other side declares.
    if a.contains_key("properties") || b.contains_key("properties") {
        let empty = Map::new();
        let pa = a.get("properties").and_then(Value::as_object).unwrap_or(&empty);
        let pb = b.get("properties").and_then(Value::as_object).unwrap_or(&empty);
        let mut props = Map::new();
        for (k, v) in pa {
            let v = match pb.get(k) {
                Some(w) => all_of(v, w),
                None => all_of(v, &others_schema(l, b, k, ptr)?),
            };
            props.insert(k.clone(), v);
        }
        for (k, v) in pb {
            if !pa.contains_key(k) {
                props.insert(k.clone(), all_of(v, &others_schema(l, a, k, ptr)?));
            }
        }
        out.insert("properties".into(), Value::Object(props));
    }
    Ok(Value::Object(out))
}

/// The schema `side` applies to a property `key` it does not declare: its matching
/// `patternProperties`, else its `additionalProperties`.
fn others_schema(l: &mut Lowerer<'_>, side: &Map<String, Value>, key: &str, ptr: &str) -> Result<Value, SchemaError> {
    let mut acc = Value::Bool(true);
    let mut matched = false;
    if let Some(pp) = side.get("patternProperties").and_then(Value::as_object) {
        for (pat, s) in pp {
            match Regex::parse(pat) {
                Ok(r) => {
                    if r.is_match(key, Anchoring::Search) {
                        matched = true;
                        acc = all_of(&acc, s);
                    }
                }
                Err(_) => {
                    l.relax("patternProperties", ptr, format!("pattern `{pat}` cannot be checked when merging"))?
                }
            }
        }
    }
    if !matched {
        if let Some(ap) = side.get("additionalProperties") {
            acc = all_of(&acc, ap);
        }
    }
    Ok(acc)
}

fn lcm(a: u64, b: u64) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    (a / gcd(a, b)).saturating_mul(b)
}

/// The JSON types a (flattened) schema admits, when it says.
fn admitted_types(s: &Value) -> Option<Vec<&'static str>> {
    let m = s.as_object()?;
    if let Some(c) = m.get("const") {
        return Some(vec![value_type(c)]);
    }
    if let Some(Value::Array(e)) = m.get("enum") {
        let mut t: Vec<&'static str> = e.iter().map(value_type).collect();
        t.sort_unstable();
        t.dedup();
        return Some(t);
    }
    let t = type_set(m.get("type")?);
    Some(if t.contains(&"number") { t.into_iter().chain(["integer"]).collect() } else { t })
}

fn value_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(n) if n.is_f64() && n.as_f64().is_some_and(|f| f.fract() != 0.0) => "number",
        Value::Number(_) => "integer",
    }
}

/// The constant values a schema allows, when it is an `enum`/`const`.
fn constants(s: &Value) -> Option<Vec<Value>> {
    let m = s.as_object()?;
    if let Some(c) = m.get("const") {
        return Some(vec![c.clone()]);
    }
    m.get("enum")?.as_array().cloned()
}

/// Whether no instance can match two of `branches` (so `oneOf` is `anyOf`).
pub(super) fn provably_disjoint(l: &mut Lowerer<'_>, branches: &[Value], ptr: &str) -> bool {
    let flat: Vec<Value> = branches
        .iter()
        .map(|b| match b {
            Value::Object(m) => flatten(l, m, ptr).unwrap_or(Value::Bool(true)),
            b => b.clone(),
        })
        .collect();
    let pairwise = |f: &dyn Fn(&Value, &Value) -> bool| {
        (0..flat.len()).all(|i| (i + 1..flat.len()).all(|j| f(&flat[i], &flat[j])))
    };
    // Different types (integer counts as number).
    if pairwise(&|a, b| match (admitted_types(a), admitted_types(b)) {
        (Some(x), Some(y)) => !x.iter().any(|t| y.contains(t)),
        _ => false,
    }) {
        return true;
    }
    // Disjoint constants.
    if pairwise(&|a, b| match (constants(a), constants(b)) {
        (Some(x), Some(y)) => !x.iter().any(|v| y.iter().any(|w| json_equal(v, w))),
        _ => matches!(a, Value::Bool(false)) || matches!(b, Value::Bool(false)),
    }) {
        return true;
    }
    // Objects with a common required property whose constants differ (a discriminator).
    let discriminated = |a: &Value, b: &Value| -> bool {
        let req = |s: &Value| -> Vec<String> {
            s.get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(|x| x.as_str().map(String::from)).collect())
                .unwrap_or_default()
        };
        let is_object = |s: &Value| admitted_types(s).is_some_and(|t| t == ["object"]);
        if !is_object(a) || !is_object(b) {
            return false;
        }
        let (ra, rb) = (req(a), req(b));
        ra.iter().filter(|k| rb.contains(k)).any(|k| {
            let ca = a.get("properties").and_then(|p| p.get(k)).and_then(constants);
            let cb = b.get("properties").and_then(|p| p.get(k)).and_then(constants);
            match (ca, cb) {
                (Some(x), Some(y)) => !x.iter().any(|v| y.iter().any(|w| json_equal(v, w))),
                _ => false,
            }
        })
    };
    pairwise(&discriminated)
}
