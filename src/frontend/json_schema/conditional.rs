//! `if`/`then`/`else` and `dependentSchemas`: conditions on the instance, enforced exactly
//! where the negated condition (or the presence of a key) is something the grammar can say.
//!
//! * `if`/`then`/`else` is `(if ∧ then) ∨ (¬if ∧ else)`. The two branches are disjoint, so
//!   the choice is exact when `¬if` is: `if` a boolean; `if` one keyword among `type`,
//!   `required` (up to 4 names), `const`/`enum` of scalars (`¬if` is then `{"not": if}`, which
//!   the `not` lowering subtracts exactly, see `negation.rs`); or `if` a discriminator on one
//!   property, `{"properties": {"k": D}, "required": ["k"]}` with `D` a `const`/`enum` of
//!   scalars or a `type` (`required` optional): `¬if` is an object where `k` is absent
//!   (only when `if` requires `k`) or present with a value outside `D`. Other conditions keep
//!   the union of the two branches (the `else` branch does not check that `if` fails), reported.
//! * `dependentSchemas` (up to [`MAX_DEPENDENT_SCHEMAS`] keys): a choice over which of the keys
//!   are present, each variant the object schema merged with the dependent schemas of its
//!   present keys, the others forbidden. Exact when every merged variant is a plain object
//!   schema (no combinator, `not`, `enum`/`const` left in it); otherwise reported.

use std::rc::Rc;

use super::lower::{choice, is_never, Lowerer};
use super::model::{is_annotation, Field, Keywords, Kw, Members, Schema, View};
use super::negation::Excluded;
use super::SchemaError;
use crate::grammar::Expr;

/// The most `dependentSchemas` keys enforced exactly (2^n object variants).
pub(super) const MAX_DEPENDENT_SCHEMAS: usize = 3;

/// The most names of `if: {required}` negated exactly (as `not: {required}` is).
const MAX_NEGATED_REQUIRED: usize = 4;

/// `¬if`, when the grammar can say it.
enum Negation<'a> {
    /// A schema whose lowering enforces `¬if`.
    Schema(Schema<'a>),
    /// `if` is `{"properties": {key: value}}` (and `required: [key]` when `required`): `¬if`
    /// is an object where `key` is present with a value outside `value` (or absent, when
    /// `if` requires it).
    Discriminator { key: &'a str, value: Schema<'a>, required: bool },
}

/// The non-annotation keys of `k`.
fn keys<'k>(k: &'k Keywords<'_>) -> Vec<&'k str> {
    k.names().filter(|n| !is_annotation(n)).collect()
}

/// Whether `not: {k}` is subtracted exactly by the `not` lowering.
fn negates_exactly(k: &Keywords<'_>) -> bool {
    match keys(k).as_slice() {
        ["type"] => true,
        ["required"] => k.required.as_ref().and_then(Field::ok).is_some_and(|r| r.len() <= MAX_NEGATED_REQUIRED),
        names => Excluded::of(k, names).is_some(),
    }
}

/// `{"not": s}`.
fn not_schema(s: Schema<'_>) -> Schema<'_> {
    let mut k = Keywords::new();
    k.not = Some(s);
    k.list(Kw::Not);
    Schema::object(k)
}

/// Keywords that `Lowerer::object` does not read: a variant holding one is not exact.
const NOT_OBJECT_LEVEL: [Kw; 12] = [
    Kw::AnyOf,
    Kw::OneOf,
    Kw::AllOf,
    Kw::Ref,
    Kw::If,
    Kw::Then,
    Kw::Else,
    Kw::Not,
    Kw::Enum,
    Kw::Const,
    Kw::DependentSchemas,
    Kw::Dependencies,
];

impl<'a> Lowerer<'a> {
    /// `¬if` for the `if` schema `s`, when the grammar can say it (see the module docs).
    fn negation(&mut self, s: &Schema<'a>) -> Option<Negation<'a>> {
        let k = match self.doc.view(s) {
            View::Bool(b) => return Some(Negation::Schema(Schema::Bool(!b))),
            View::Object(k) => k,
            View::NotASchema => return None,
        };
        if negates_exactly(&k) {
            return Some(Negation::Schema(not_schema(s.clone())));
        }
        let names = keys(&k);
        let props = k.properties.as_ref().and_then(Field::ok)?;
        if props.len() != 1 {
            return None;
        }
        let (key, value) = props.iter().next().map(|(key, v)| (key, v.clone()))?;
        let required = match k.required.as_ref() {
            None => false,
            Some(Field::Ok(r)) if r.len() == 1 && r[0].as_str() == Some(key) => true,
            Some(_) => return None,
        };
        let expected: &[&str] = if required { &["properties", "required"] } else { &["properties"] };
        let mut sorted = names.clone();
        sorted.sort_unstable();
        if sorted != expected {
            return None;
        }
        let View::Object(v) = self.doc.view(&value) else { return None };
        negates_exactly(&v).then_some(Negation::Discriminator { key, value, required })
    }

    /// `if`/`then`/`else` (without `enum`), `k` holding the sibling keywords.
    pub(super) fn if_then_else(
        &mut self,
        k: &Keywords<'a>,
        if_schema: &Schema<'a>,
        ptr: &str,
        level: u32,
    ) -> Result<Expr, SchemaError> {
        let mut base = k.clone();
        base.remove(Kw::If);
        let then_s = base.then_schema.take();
        base.remove(Kw::Then);
        let else_s = base.else_schema.take();
        base.remove(Kw::Else);
        let base = Schema::object(base);
        if then_s.is_none() && else_s.is_none() {
            return self.schema(&base, ptr, level);
        }
        let if_ptr = format!("{ptr}/if");
        let mut then_branch = self.merger().merge_pair(&base, if_schema, &if_ptr)?;
        if let Some(t) = &then_s {
            then_branch = self.merger().merge_pair(&then_branch, t, &format!("{ptr}/then"))?;
        }
        let else_base = match &else_s {
            Some(e) => self.merger().merge_pair(&base, e, &format!("{ptr}/else"))?,
            None => base.clone(),
        };
        let else_branch = match self.negation(if_schema) {
            Some(Negation::Schema(not_if)) => {
                let e = self.merger().merge_pair(&else_base, &not_if, &if_ptr)?;
                self.schema(&e, ptr, level)?
            }
            Some(Negation::Discriminator { key, value, required }) => {
                match self.discriminated_else(&else_base, key, &value, required, ptr, level)? {
                    Some(e) => e,
                    None => self.relaxed_else(&else_base, ptr, level)?,
                }
            }
            None => self.relaxed_else(&else_base, ptr, level)?,
        };
        let then_branch = self.schema(&then_branch, ptr, level)?;
        Ok(choice(vec![then_branch, else_branch]))
    }

    /// The `else` branch without `¬if` (reported).
    fn relaxed_else(&mut self, else_base: &Schema<'a>, ptr: &str, level: u32) -> Result<Expr, SchemaError> {
        self.relax(
            "if",
            ptr,
            "the `else` branch does not check that `if` fails (enforced as anyOf of if+then and else)",
        )?;
        self.schema(else_base, ptr, level)
    }

    /// The `else` branch of a discriminator `if` (see [`Negation::Discriminator`]): objects of
    /// `else_base` where `key` holds a value outside `value`, or is absent when `if` requires
    /// it; `None` when a variant is not a plain object schema.
    fn discriminated_else(
        &mut self,
        else_base: &Schema<'a>,
        key: &'a str,
        value: &Schema<'a>,
        required: bool,
        ptr: &str,
        level: u32,
    ) -> Result<Option<Expr>, SchemaError> {
        let mut outside = Keywords::new();
        let mut props = Members::default();
        props.insert(key, not_schema(value.clone()));
        outside.properties = Some(Field::Ok(props));
        outside.list(Kw::Properties);
        let present = self.merger().merge_pair(else_base, &Schema::object(outside), &format!("{ptr}/if"))?;
        let mut alts = Vec::new();
        match self.object_variant(&present, ptr, level, &[], &[key])? {
            Some(e) => alts.push(e),
            None => return Ok(None),
        }
        if required {
            match self.object_variant(else_base, ptr, level, &[key], &[])? {
                Some(e) => alts.push(e),
                None => return Ok(None),
            }
        }
        Ok(Some(choice(alts)))
    }

    /// `dependentSchemas` of the object schema `k` (see the module docs), `forbidden` keys
    /// excluded; `None` when not exact (the caller reports it).
    pub(super) fn dependent_schemas(
        &mut self,
        k: &Keywords<'a>,
        deps: &Members<'a, Schema<'a>>,
        ptr: &str,
        level: u32,
        forbidden: &[&'a str],
    ) -> Result<Option<Expr>, SchemaError> {
        let deps: Vec<(&'a str, Schema<'a>)> =
            deps.iter().filter(|(key, _)| !forbidden.contains(key)).map(|(key, s)| (key, s.clone())).collect();
        if deps.len() > MAX_DEPENDENT_SCHEMAS {
            return Ok(None);
        }
        let mut rest = k.clone();
        rest.remove(Kw::DependentSchemas);
        // `not` was applied by the caller (as `forbidden`).
        rest.remove(Kw::Not);
        let rest = Schema::object(rest);
        let mut alts = Vec::new();
        for present_set in 0..1u32 << deps.len() {
            let mut merged = rest.clone();
            let (mut present, mut absent) = (Vec::new(), forbidden.to_vec());
            for (i, (key, s)) in deps.iter().enumerate() {
                if present_set & (1 << i) != 0 {
                    merged = self.merger().merge_pair(&merged, s, &format!("{ptr}/dependentSchemas"))?;
                    present.push(*key);
                } else {
                    absent.push(*key);
                }
            }
            match self.object_variant(&merged, ptr, level, &absent, &present)? {
                Some(e) => alts.push(e),
                None => return Ok(None),
            }
        }
        Ok(Some(choice(alts)))
    }

    /// The objects of `s` with the keys `absent` forbidden and `present` required, as a rule;
    /// never when `s` admits no object; `None` when `s` holds keywords `object` does not read.
    fn object_variant(
        &mut self,
        s: &Schema<'a>,
        ptr: &str,
        level: u32,
        absent: &[&'a str],
        present: &[&'a str],
    ) -> Result<Option<Expr>, SchemaError> {
        let k = match self.doc.view(s) {
            View::Bool(false) => return Ok(Some(super::lower::never())),
            View::Bool(true) => Rc::new(Keywords::new()),
            View::Object(k) => k,
            View::NotASchema => return Ok(None),
        };
        if NOT_OBJECT_LEVEL.iter().any(|kw| k.has(*kw)) {
            return Ok(None);
        }
        let admits_object = match &k.types {
            None => true,
            Some(Field::Ok(types)) => types.names().any(|t| t == "object"),
            Some(Field::Wrong(_)) => return Ok(None),
        };
        if !admits_object || present.iter().any(|p| absent.contains(p)) {
            return Ok(Some(super::lower::never()));
        }
        let body = self.object_with(&k, ptr, level, absent, present)?;
        if is_never(&body) {
            return Ok(Some(body));
        }
        Ok(Some(self.rule_for("obj", body)?))
    }
}
