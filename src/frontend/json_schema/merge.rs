//! Intersection of schemas: `allOf`, the sibling keywords of `$ref`, and the distribution of
//! `anyOf`/`oneOf` over their siblings.
//!
//! Schemas are merged keyword by keyword into one schema whose instances are exactly those of
//! both (bounds tighten, `required` and `type` combine, `enum`s intersect, common properties
//! become a lazy `allOf` merged when lowered). Where two keywords cannot be combined into one
//! (two different `pattern`s, two `contains`), the first is kept and the relaxation reported.
//! `additionalProperties` of one side applies to the properties only the other side declares,
//! as the specification says.
//!
//! A merge result is the schema object a merge of the two JSON objects would give, key order
//! included (see [`super::model`]): lowering memoizes merged schemas by their JSON text.

use std::borrow::Cow;
use std::rc::Rc;

use serde_json::{Number, Value};

use super::lower::{Lowerer, TYPES};
use super::model::{Dep, Document, Entry, Field, FromJson, Items, Keywords, Kw, Members, Num, Schema, TypeNames, View};
use super::relax::Relaxations;
use super::validate::json_equal;
use super::SchemaError;
use crate::frontend::regex::{Anchoring, Regex};

/// How many `$ref`/`allOf` levels a merge may inline.
const MAX_INLINE_DEPTH: usize = 32;

/// The most alternatives a product of two `anyOf`s may have.
const MAX_PRODUCT: usize = 64;

/// What a merge reads and writes: the document (views, `$ref` targets) and the relaxations.
pub(super) struct Merger<'m, 'a> {
    pub(super) doc: &'m mut Document<'a>,
    pub(super) report: &'m mut Relaxations,
}

impl<'a> Merger<'_, 'a> {
    /// `k` with its `$ref` and `allOf` inlined and merged into one schema (which has neither
    /// at its top level).
    pub(super) fn flatten(&mut self, k: &Rc<Keywords<'a>>, ptr: &str) -> Result<Schema<'a>, SchemaError> {
        let mut parts = Vec::new();
        self.collect(&Schema::Object(Rc::clone(k)), ptr, 0, &mut parts)?;
        self.merge_parts(parts, ptr)
    }

    /// The intersection of two schemas, each possibly with `$ref`/`allOf`.
    pub(super) fn merge_pair(&mut self, a: &Schema<'a>, b: &Schema<'a>, ptr: &str) -> Result<Schema<'a>, SchemaError> {
        let mut parts = Vec::new();
        self.collect(a, ptr, 0, &mut parts)?;
        self.collect(b, ptr, 0, &mut parts)?;
        self.merge_parts(parts, ptr)
    }

    fn merge_parts(&mut self, parts: Vec<Schema<'a>>, ptr: &str) -> Result<Schema<'a>, SchemaError> {
        let mut acc = Schema::Bool(true);
        for p in parts {
            acc = self.merge_flat(&acc, &p, ptr)?;
        }
        Ok(acc)
    }

    /// Splits a schema into parts without `$ref`/`allOf` (inlining both), normalized.
    fn collect(
        &mut self,
        s: &Schema<'a>,
        ptr: &str,
        depth: usize,
        out: &mut Vec<Schema<'a>>,
    ) -> Result<(), SchemaError> {
        if depth > MAX_INLINE_DEPTH {
            return Err(Lowerer::invalid(ptr, "`$ref`/`allOf` chain too deep (a reference cycle through allOf?)"));
        }
        let k = match self.doc.view(s) {
            View::Bool(_) => {
                out.push(s.clone());
                return Ok(());
            }
            View::Object(k) => k,
            View::NotASchema => return Err(Lowerer::invalid(ptr, "a schema must be an object or a boolean")),
        };
        let mut rest = (*k).clone();
        let reference = rest.reference.take();
        rest.remove(Kw::Ref);
        let all_of = rest.all_of.take();
        rest.remove(Kw::AllOf);
        rest.normalize();
        out.push(Schema::object(rest));
        if let Some(r) = reference {
            let Field::Ok(r) = r else { return Err(Lowerer::invalid(ptr, "`$ref` must be a string")) };
            match self.doc.resolve(r, ptr) {
                Ok(target) => self.collect(&Schema::from_json(target), ptr, depth + 1, out)?,
                Err(e) => {
                    if !r.starts_with('#') && !r.is_empty() {
                        self.report.relax(
                            "$ref",
                            ptr,
                            format!("external reference `{r}` is not resolved: any value"),
                        )?;
                    } else {
                        return Err(e);
                    }
                }
            }
        }
        if let Some(all) = all_of {
            let Field::Ok(all) = all else { return Err(Lowerer::invalid(ptr, "`allOf` must be an array")) };
            for (i, x) in all.iter().enumerate() {
                self.collect(x, &format!("{ptr}/allOf/{i}"), depth + 1, out)?;
            }
        }
        Ok(())
    }

    /// Merges two schemas that have no `$ref`/`allOf` at their top level.
    fn merge_flat(&mut self, a: &Schema<'a>, b: &Schema<'a>, ptr: &str) -> Result<Schema<'a>, SchemaError> {
        match (a, b) {
            (Schema::Bool(true), x) | (x, Schema::Bool(true)) => return Ok(x.clone()),
            (Schema::Bool(false), _) | (_, Schema::Bool(false)) => return Ok(Schema::Bool(false)),
            _ => {}
        }
        let (View::Object(a), View::Object(b)) = (self.doc.view(a), self.doc.view(b)) else {
            return Err(Lowerer::invalid(ptr, "a schema must be an object or a boolean"));
        };
        let mut out = (*a).clone();
        for e in b.entries() {
            match e {
                // An unknown keyword on both sides: the first value is kept.
                Entry::Other(name, v) => out.insert_other(name, v),
                Entry::Known(kw) if !a.has(*kw) => out.insert_from(&b, *kw),
                Entry::Known(kw) if a.same_field(&b, *kw) => {}
                Entry::Known(kw) => {
                    if !self.merge_keyword(&mut out, &a, &b, *kw, ptr)? {
                        return Ok(Schema::Bool(false));
                    }
                }
            }
        }
        if a.has(Kw::Properties) || b.has(Kw::Properties) {
            out.properties = Some(Field::Ok(self.merge_properties(&a, &b, ptr)?));
            out.list(Kw::Properties);
        }
        Ok(Schema::object(out))
    }

    /// Sets `out`'s `kw` to the intersection of `a`'s and `b`'s (which both have, with
    /// different values); `false` when no instance can satisfy both.
    fn merge_keyword(
        &mut self,
        out: &mut Keywords<'a>,
        a: &Keywords<'a>,
        b: &Keywords<'a>,
        kw: Kw,
        ptr: &str,
    ) -> Result<bool, SchemaError> {
        let both = |f: for<'k> fn(&'k Keywords<'a>) -> &'k Option<Schema<'a>>| {
            let (x, y) = (f(a).as_ref().expect("present"), f(b).as_ref().expect("present"));
            Some(all_of(x, y))
        };
        match kw {
            Kw::Type => {
                let (ta, tb) = (type_set(a.types.as_ref()), type_set(b.types.as_ref()));
                let mut t = Vec::new();
                for x in TYPES {
                    let in_a = ta.contains(&x) || (x == "integer" && ta.contains(&"number"));
                    let in_b = tb.contains(&x) || (x == "integer" && tb.contains(&"number"));
                    if in_a && in_b && !(x == "integer" && ta.contains(&"number") && tb.contains(&"number")) {
                        t.push(Field::Ok(x));
                    }
                }
                if t.is_empty() {
                    return Ok(false);
                }
                out.types = Some(Field::Ok(TypeNames::List(t)));
            }
            Kw::Enum => {
                if let (Some(Field::Ok(ea)), Some(Field::Ok(eb))) = (&a.enum_values, &b.enum_values) {
                    let common = ea.iter().copied().filter(|x| eb.iter().any(|y| json_equal(x, y))).collect();
                    out.enum_values = Some(Field::Ok(common));
                }
            }
            Kw::Const => {
                if !json_equal(a.const_value.expect("present"), b.const_value.expect("present")) {
                    return Ok(false);
                }
            }
            Kw::Minimum | Kw::ExclusiveMinimum | Kw::MinLength | Kw::MinItems | Kw::MinProperties | Kw::MinContains => {
                let (x, y) = (num(a, kw), num(b, kw));
                if y.and_then(Num::as_f64) > x.and_then(Num::as_f64) {
                    *num_mut(out, kw) = y.cloned();
                }
            }
            Kw::Maximum | Kw::ExclusiveMaximum | Kw::MaxLength | Kw::MaxItems | Kw::MaxProperties | Kw::MaxContains => {
                let (x, y) = (num(a, kw), num(b, kw));
                if y.and_then(Num::as_f64) < x.and_then(Num::as_f64) {
                    *num_mut(out, kw) = y.cloned();
                }
            }
            Kw::Required => {
                let mut r: Vec<&'a Value> = a.required.as_ref().and_then(Field::ok).cloned().unwrap_or_default();
                for x in b.required.as_ref().and_then(Field::ok).into_iter().flatten() {
                    if !r.contains(x) {
                        r.push(x);
                    }
                }
                out.required = Some(Field::Ok(r));
            }
            Kw::PatternProperties => {
                out.pattern_properties =
                    Some(Field::Ok(merge_schema_members(&a.pattern_properties, &b.pattern_properties)));
            }
            Kw::DependentSchemas => {
                out.dependent_schemas =
                    Some(Field::Ok(merge_schema_members(&a.dependent_schemas, &b.dependent_schemas)));
            }
            Kw::DependentRequired => {
                let mut r = a.dependent_required.as_ref().and_then(Field::ok).cloned().unwrap_or_default();
                for (key, dep) in b.dependent_required.as_ref().and_then(Field::ok).into_iter().flat_map(Members::iter)
                {
                    let mut list: Vec<&'a Value> =
                        r.get(key).and_then(Dep::names).map(<[_]>::to_vec).unwrap_or_default();
                    for x in dep.names().into_iter().flatten() {
                        if !list.contains(x) {
                            list.push(x);
                        }
                    }
                    r.insert(key, Dep::Names(list));
                }
                out.dependent_required = Some(Field::Ok(r));
            }
            Kw::AdditionalProperties => out.additional_properties = both(|k| &k.additional_properties),
            Kw::PropertyNames => out.property_names = both(|k| &k.property_names),
            Kw::UnevaluatedProperties => out.unevaluated_properties = both(|k| &k.unevaluated_properties),
            Kw::UnevaluatedItems => out.unevaluated_items = both(|k| &k.unevaluated_items),
            Kw::Items => {
                let (x, y) = (a.items_schema().expect("present"), b.items_schema().expect("present"));
                out.items = Some(match all_of(&x, &y) {
                    Schema::Json(v) if v.is_array() => Items::Tuple(v),
                    s => Items::Each(s),
                });
            }
            Kw::PrefixItems => {
                let empty = Vec::new();
                let pa = a.prefix_items.as_ref().and_then(Field::ok).unwrap_or(&empty);
                let pb = b.prefix_items.as_ref().and_then(Field::ok).unwrap_or(&empty);
                let rest_a = a.items_schema().unwrap_or(Schema::Bool(true));
                let rest_b = b.items_schema().unwrap_or(Schema::Bool(true));
                let n = pa.len().max(pb.len());
                let merged = (0..n).map(|i| all_of(pa.get(i).unwrap_or(&rest_a), pb.get(i).unwrap_or(&rest_b)));
                out.prefix_items = Some(Field::Ok(merged.collect()));
            }
            Kw::UniqueItems => {
                let unique = |k: &Keywords<'_>| matches!(k.unique_items, Some(Field::Ok(true)));
                out.unique_items = Some(Field::Ok(unique(a) || unique(b)));
            }
            Kw::Not => {
                let (x, y) = (a.not.clone().expect("present"), b.not.clone().expect("present"));
                out.not = Some(Schema::object(Keywords::any_of_pair(x, y)));
            }
            Kw::MultipleOf => {
                let (x, y) = (a.multiple_of.as_ref().expect("present"), b.multiple_of.as_ref().expect("present"));
                match (x.as_u64(), y.as_u64()) {
                    (Some(p), Some(q)) if p > 0 && q > 0 => {
                        out.multiple_of = Some(Field::Ok(Cow::Owned(Number::from(lcm(p, q)))));
                    }
                    _ => {
                        let (p, q) = (x.as_f64().unwrap_or(1.0), y.as_f64().unwrap_or(1.0));
                        if (q / p).fract() == 0.0 {
                            out.multiple_of = Some(y.clone());
                        } else if (p / q).fract() != 0.0 {
                            self.report.relax(
                                "multipleOf",
                                ptr,
                                "two multipleOf in allOf: only the first is enforced",
                            )?;
                        }
                    }
                }
            }
            Kw::AnyOf | Kw::OneOf => {
                let name = kw.name();
                let branches = |k: &Keywords<'a>| {
                    let f = if kw == Kw::AnyOf { &k.any_of } else { &k.one_of };
                    f.as_ref().and_then(Field::ok).cloned().unwrap_or_default()
                };
                let (xa, xb) = (branches(a), branches(b));
                if xa.len() * xb.len() <= MAX_PRODUCT {
                    let prod = xa.iter().flat_map(|x| xb.iter().map(move |y| all_of(x, y))).collect();
                    if kw == Kw::OneOf {
                        self.report.relax(
                            "oneOf",
                            ptr,
                            "two oneOf in allOf: enforced as anyOf of their combinations",
                        )?;
                        out.one_of = Some(Field::Ok(prod));
                    } else {
                        out.any_of = Some(Field::Ok(prod));
                    }
                } else {
                    self.report.relax(
                        name,
                        ptr,
                        format!("two {name} in allOf with too many combinations: only the first is enforced"),
                    )?;
                }
            }
            Kw::Pattern | Kw::Format | Kw::Contains | Kw::If | Kw::Then | Kw::Else => {
                let name = kw.name();
                self.report.relax(name, ptr, format!("two different `{name}` in allOf: only the first is enforced"))?;
            }
            // Merged below (`properties`), or the first is kept.
            Kw::Properties | Kw::Ref | Kw::AllOf | Kw::Nullable | Kw::AdditionalItems | Kw::Dependencies => {}
        }
        Ok(true)
    }

    /// Properties: common ones intersect; one side's additionalProperties (and
    /// patternProperties) applies to the properties only the other side declares.
    fn merge_properties(
        &mut self,
        a: &Keywords<'a>,
        b: &Keywords<'a>,
        ptr: &str,
    ) -> Result<Members<'a, Schema<'a>>, SchemaError> {
        let empty = Members::default();
        let pa = a.properties.as_ref().and_then(Field::ok).unwrap_or(&empty);
        let pb = b.properties.as_ref().and_then(Field::ok).unwrap_or(&empty);
        let mut props = Vec::with_capacity(pa.len() + pb.len());
        for (k, v) in pa.iter() {
            let v = match pb.get(k) {
                Some(w) => all_of(v, w),
                None => all_of(v, &self.others_schema(b, k, ptr)?),
            };
            props.push((k, v));
        }
        for (k, v) in pb.iter() {
            if !pa.contains_key(k) {
                props.push((k, all_of(v, &self.others_schema(a, k, ptr)?)));
            }
        }
        Ok(Members(props))
    }

    /// The schema `side` applies to a property `key` it does not declare: its matching
    /// `patternProperties`, else its `additionalProperties`.
    fn others_schema(&mut self, side: &Keywords<'a>, key: &str, ptr: &str) -> Result<Schema<'a>, SchemaError> {
        let mut acc = Schema::Bool(true);
        let mut matched = false;
        for (pat, s) in side.pattern_properties.as_ref().and_then(Field::ok).into_iter().flat_map(Members::iter) {
            match Regex::parse(pat) {
                Ok(r) => {
                    if r.is_match(key, Anchoring::Search) {
                        matched = true;
                        acc = all_of(&acc, s);
                    }
                }
                Err(_) => self.report.relax(
                    "patternProperties",
                    ptr,
                    format!("pattern `{pat}` cannot be checked when merging"),
                )?,
            }
        }
        if !matched {
            if let Some(ap) = &side.additional_properties {
                acc = all_of(&acc, ap);
            }
        }
        Ok(acc)
    }

    /// Whether no instance can match two of `branches` (so `oneOf` is `anyOf`).
    pub(super) fn provably_disjoint(&mut self, branches: &[Schema<'a>], ptr: &str) -> bool {
        let flat: Vec<Schema<'a>> = branches
            .iter()
            .map(|b| match self.doc.view(b) {
                View::Object(k) => self.flatten(&k, ptr).unwrap_or(Schema::Bool(true)),
                _ => b.clone(),
            })
            .collect();
        let is_false: Vec<bool> = flat.iter().map(|s| matches!(s, Schema::Bool(false))).collect();
        let flat: Vec<Option<Rc<Keywords<'a>>>> = flat.iter().map(|s| self.object_of(s)).collect();
        let n = flat.len();
        let pairs = || (0..n).flat_map(move |i| (i + 1..n).map(move |j| (i, j)));
        // Different types (integer counts as number).
        if pairs().all(|(i, j)| match (admitted_types(flat[i].as_deref()), admitted_types(flat[j].as_deref())) {
            (Some(x), Some(y)) => !x.iter().any(|t| y.contains(t)),
            _ => false,
        }) {
            return true;
        }
        // Disjoint constants.
        if pairs().all(|(i, j)| match (constants(flat[i].as_deref()), constants(flat[j].as_deref())) {
            (Some(x), Some(y)) => !x.iter().any(|v| y.iter().any(|w| json_equal(v, w))),
            _ => is_false[i] || is_false[j],
        }) {
            return true;
        }
        // Objects with a common required property whose constants differ (a discriminator).
        pairs().collect::<Vec<_>>().into_iter().all(|(i, j)| self.discriminated(flat[i].as_deref(), flat[j].as_deref()))
    }

    fn object_of(&mut self, s: &Schema<'a>) -> Option<Rc<Keywords<'a>>> {
        match self.doc.view(s) {
            View::Object(k) => Some(k),
            _ => None,
        }
    }

    /// Whether `a` and `b` are objects with a common required property whose constants
    /// differ.
    fn discriminated(&mut self, a: Option<&Keywords<'a>>, b: Option<&Keywords<'a>>) -> bool {
        let is_object = |s: Option<&Keywords<'a>>| admitted_types(s).is_some_and(|t| t == ["object"]);
        let (Some(a), Some(b)) = (a, b) else { return false };
        if !is_object(Some(a)) || !is_object(Some(b)) {
            return false;
        }
        let (ra, rb) = (required_names(a), required_names(b));
        for k in ra.iter().filter(|k| rb.contains(k)) {
            let ca = self.property_constants(a, k);
            let cb = self.property_constants(b, k);
            if let (Some(x), Some(y)) = (ca, cb) {
                if !x.iter().any(|v| y.iter().any(|w| json_equal(v, w))) {
                    return true;
                }
            }
        }
        false
    }

    /// The constants the property `key` of `k` is limited to, when its schema says.
    fn property_constants(&mut self, k: &Keywords<'a>, key: &str) -> Option<Vec<&'a Value>> {
        let s = k.properties.as_ref()?.ok()?.get(key)?.clone();
        let p = self.object_of(&s)?;
        constants(Some(&p))
    }
}

/// `{"allOf": [a, b]}`, or one of them when that says the same.
fn all_of<'a>(a: &Schema<'a>, b: &Schema<'a>) -> Schema<'a> {
    match (a, b) {
        (Schema::Bool(true), x) | (x, Schema::Bool(true)) => x.clone(),
        (Schema::Bool(false), _) | (_, Schema::Bool(false)) => Schema::Bool(false),
        _ if a == b => a.clone(),
        _ => Schema::object(Keywords::all_of_pair(a.clone(), b.clone())),
    }
}

/// Members of `a` and `b` (`patternProperties`, `dependentSchemas`) with common keys
/// intersected.
fn merge_schema_members<'a>(
    a: &Option<Field<'a, Members<'a, Schema<'a>>>>,
    b: &Option<Field<'a, Members<'a, Schema<'a>>>>,
) -> Members<'a, Schema<'a>> {
    let mut r = a.as_ref().and_then(Field::ok).cloned().unwrap_or_default();
    for (key, s) in b.as_ref().and_then(Field::ok).into_iter().flat_map(Members::iter) {
        let v = r.get(key).map_or_else(|| s.clone(), |x| all_of(x, s));
        r.insert(key, v);
    }
    r
}

/// The numeric keyword `kw` of `k`.
fn num<'k, 'a>(k: &'k Keywords<'a>, kw: Kw) -> Option<&'k Num<'a>> {
    match kw {
        Kw::Minimum => k.minimum.as_ref(),
        Kw::ExclusiveMinimum => k.exclusive_minimum.as_ref(),
        Kw::MinLength => k.min_length.as_ref(),
        Kw::MinItems => k.min_items.as_ref(),
        Kw::MinProperties => k.min_properties.as_ref(),
        Kw::MinContains => k.min_contains.as_ref(),
        Kw::Maximum => k.maximum.as_ref(),
        Kw::ExclusiveMaximum => k.exclusive_maximum.as_ref(),
        Kw::MaxLength => k.max_length.as_ref(),
        Kw::MaxItems => k.max_items.as_ref(),
        Kw::MaxProperties => k.max_properties.as_ref(),
        Kw::MaxContains => k.max_contains.as_ref(),
        _ => None,
    }
}

fn num_mut<'k, 'a>(k: &'k mut Keywords<'a>, kw: Kw) -> &'k mut Option<Num<'a>> {
    match kw {
        Kw::Minimum => &mut k.minimum,
        Kw::ExclusiveMinimum => &mut k.exclusive_minimum,
        Kw::MinLength => &mut k.min_length,
        Kw::MinItems => &mut k.min_items,
        Kw::MinProperties => &mut k.min_properties,
        Kw::MinContains => &mut k.min_contains,
        Kw::Maximum => &mut k.maximum,
        Kw::ExclusiveMaximum => &mut k.exclusive_maximum,
        Kw::MaxLength => &mut k.max_length,
        Kw::MaxItems => &mut k.max_items,
        Kw::MaxProperties => &mut k.max_properties,
        _ => &mut k.max_contains,
    }
}

/// The known JSON types `type` names.
fn type_set(types: Option<&Field<'_, TypeNames<'_>>>) -> Vec<&'static str> {
    let names: Vec<&str> = types.and_then(Field::ok).map(|t| t.names().collect()).unwrap_or_default();
    TYPES.iter().copied().filter(|t| names.contains(t)).collect()
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
fn admitted_types(k: Option<&Keywords<'_>>) -> Option<Vec<&'static str>> {
    let k = k?;
    if let Some(c) = k.const_value {
        return Some(vec![value_type(c)]);
    }
    if let Some(Field::Ok(e)) = &k.enum_values {
        let mut t: Vec<&'static str> = e.iter().copied().map(value_type).collect();
        t.sort_unstable();
        t.dedup();
        return Some(t);
    }
    let t = type_set(Some(k.types.as_ref()?));
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
fn constants<'a>(k: Option<&Keywords<'a>>) -> Option<Vec<&'a Value>> {
    let k = k?;
    if let Some(c) = k.const_value {
        return Some(vec![c]);
    }
    k.enum_values.as_ref()?.ok().cloned()
}

/// The names in `required` that are strings.
fn required_names<'a>(k: &Keywords<'a>) -> Vec<&'a str> {
    k.required.as_ref().and_then(Field::ok).map(|r| r.iter().filter_map(|x| x.as_str()).collect()).unwrap_or_default()
}
