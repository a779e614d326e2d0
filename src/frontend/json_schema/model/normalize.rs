//! Older forms rewritten into the 2020-12 ones before merging and lowering: draft-4 boolean
//! `exclusiveMinimum`/`exclusiveMaximum`, array `items` (→ `prefixItems`, and
//! `additionalItems` → `items`), `dependencies` (→ `dependentRequired` and
//! `dependentSchemas`), OpenAPI `nullable` (→ `"null"` in `type`).
//!
//! Each step edits the keywords as it would edit the JSON object (removals swap the last key
//! into place), so a normalized schema is the same JSON as before the model.

use super::keywords::Kw;
use super::{Dep, Field, FromJson, Items, Keywords, Members, Schema, TypeNames};

impl<'a> Keywords<'a> {
    /// Whether [`Keywords::normalize`] has something to rewrite.
    pub(in super::super) fn needs_normalize(&self) -> bool {
        self.exclusive_minimum.as_ref().is_some_and(|x| x.flag().is_some())
            || self.exclusive_maximum.as_ref().is_some_and(|x| x.flag().is_some())
            || matches!(self.items, Some(Items::Tuple(_)))
            || self.has(Kw::AdditionalItems)
            || self.has(Kw::Dependencies)
            || self.has(Kw::Nullable)
    }

    /// Rewrites the older forms (see the module docs).
    pub(in super::super) fn normalize(&mut self) {
        self.normalize_exclusive(Kw::ExclusiveMinimum, Kw::Minimum);
        self.normalize_exclusive(Kw::ExclusiveMaximum, Kw::Maximum);
        self.normalize_items();
        self.normalize_dependencies();
        self.normalize_nullable();
    }

    /// Draft 4: `exclusiveMinimum: true` makes `minimum` exclusive; `false` means nothing.
    fn normalize_exclusive(&mut self, exclusive: Kw, bound: Kw) {
        let (flag, bound_value) = match exclusive {
            Kw::ExclusiveMinimum => (self.exclusive_minimum.as_ref().and_then(|x| x.flag()), self.minimum.clone()),
            _ => (self.exclusive_maximum.as_ref().and_then(|x| x.flag()), self.maximum.clone()),
        };
        let Some(flag) = flag else { return };
        match bound_value.filter(|_| flag) {
            Some(v) => {
                self.remove(bound);
                self.source = None;
                match exclusive {
                    Kw::ExclusiveMinimum => self.exclusive_minimum = Some(v),
                    _ => self.exclusive_maximum = Some(v),
                }
            }
            None => self.remove(exclusive),
        }
    }

    /// Draft 4: an array `items` is `prefixItems`, and `additionalItems` then is `items`;
    /// `additionalItems` without `prefixItems` means nothing.
    fn normalize_items(&mut self) {
        if let Some(Items::Tuple(tuple)) = self.items {
            self.remove(Kw::Items);
            self.prefix_items = Some(FromJson::from_json(tuple));
            self.list(Kw::PrefixItems);
            if let Some(rest) = self.additional_items.take() {
                self.remove(Kw::AdditionalItems);
                self.items = Some(match rest {
                    Schema::Json(v) if v.is_array() => Items::Tuple(v),
                    s => Items::Each(s),
                });
                self.list(Kw::Items);
            }
        } else if !self.has(Kw::PrefixItems) {
            self.remove(Kw::AdditionalItems);
        }
    }

    /// `dependencies`: arrays of names are `dependentRequired`, schemas `dependentSchemas`
    /// (unless those are given); a malformed `dependencies` is dropped.
    fn normalize_dependencies(&mut self) {
        if !self.has(Kw::Dependencies) {
            return;
        }
        let deps = self.dependencies.take();
        self.remove(Kw::Dependencies);
        let Some(Field::Ok(deps)) = deps else { return };
        let mut names = Members::default();
        let mut schemas = Members::default();
        for (k, v) in deps.0 {
            match v {
                Dep::Names(_) => names.insert(k, v),
                Dep::Schema(s) => schemas.insert(k, s),
            }
        }
        if !names.is_empty() && !self.has(Kw::DependentRequired) {
            self.dependent_required = Some(Field::Ok(names));
            self.list(Kw::DependentRequired);
        }
        if !schemas.is_empty() && !self.has(Kw::DependentSchemas) {
            self.dependent_schemas = Some(Field::Ok(schemas));
            self.list(Kw::DependentSchemas);
        }
    }

    /// OpenAPI `nullable: true` adds `"null"` to `type`.
    fn normalize_nullable(&mut self) {
        if !matches!(self.nullable, Some(Field::Ok(true))) {
            return;
        }
        match &mut self.types {
            Some(Field::Ok(TypeNames::One(t))) => {
                self.types = Some(Field::Ok(TypeNames::List(vec![Field::Ok(*t), Field::Ok("null")])));
            }
            Some(Field::Ok(TypeNames::List(ts))) if !ts.iter().any(|t| t.ok() == Some(&"null")) => {
                ts.push(Field::Ok("null"));
            }
            _ => {}
        }
        self.source = None;
        self.remove(Kw::Nullable);
    }
}
