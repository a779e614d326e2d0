//! The typed model of a schema: each schema object's keywords parsed once into typed fields
//! ([`Keywords`]), which validation, merging and lowering then read instead of looking keys up
//! in a `serde_json::Value`.
//!
//! # Why it looks the way it does
//!
//! * **Lazy and borrowed.** A sub-schema of the document stays a [`Schema::Json`] reference
//!   until a pass visits it; [`Document::view`] parses it then, once (cached by address), so
//!   unreferenced `$defs` and the schemas of untaken branches cost nothing, and strings,
//!   numbers and `enum` values are borrowed from the document, never copied.
//! * **Lenient.** A keyword whose value has the wrong JSON type is kept as written
//!   ([`Field::Wrong`]): the pass that needs it reports the error where it did before (a
//!   malformed `properties` is an error only when the schema admits objects).
//! * **The JSON it stands for.** Merged schemas are memoized by their JSON text, the
//!   validator names the first keyword it cannot evaluate in key order, and `allOf` drops a
//!   part equal to another: so the model keeps the keys in the order a JSON object would hold
//!   them (removals swap the last key into the hole, as `serde_json`'s ordered map does),
//!   keeps unknown keywords and annotations as written, serializes to exactly the JSON text it
//!   was parsed from (`json.rs`), and compares with JSON equality. Synthesized schemas (merge
//!   results) are the same values a merge of JSON objects would produce.
//!
//! `keywords.rs` lists the keywords and their types; `json.rs` converts from and to JSON;
//! `normalize.rs` rewrites draft-4 forms; `document.rs` parses on demand and resolves `$ref`.

mod document;
mod json;
mod keywords;
mod normalize;

use std::borrow::Cow;
use std::rc::Rc;

use serde_json::{Number, Value};

pub(super) use document::Document;
pub(super) use json::FromJson;
pub(super) use keywords::{Entry, Keywords, Kw};

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

/// Whether the keyword `name` is an annotation (see [`ANNOTATIONS`]).
pub(super) fn is_annotation(name: &str) -> bool {
    ANNOTATIONS.contains(&name)
}

/// A schema: a boolean, parsed keywords, or a part of the document not parsed yet.
#[derive(Clone, Debug)]
pub(super) enum Schema<'a> {
    /// `true` (any instance) or `false` (none).
    Bool(bool),
    /// A schema object's keywords (parsed from the document, or synthesized by a merge).
    Object(Rc<Keywords<'a>>),
    /// A value of the document in a sub-schema position, not a boolean: parsed when visited
    /// ([`Document::view`]); not a schema at all unless it is an object.
    Json(&'a Value),
}

impl<'a> Schema<'a> {
    /// A schema made of `keywords`.
    pub(super) fn object(keywords: Keywords<'a>) -> Self {
        Schema::Object(Rc::new(keywords))
    }

    /// Whether this is `true`.
    pub(super) fn is_true(&self) -> bool {
        matches!(self, Schema::Bool(true))
    }

    /// Whether this is the empty object `{}`.
    pub(super) fn is_empty_object(&self) -> bool {
        match self {
            Schema::Object(k) => k.is_empty(),
            Schema::Json(v) => v.as_object().is_some_and(|m| m.is_empty()),
            Schema::Bool(_) => false,
        }
    }

    /// The document value this schema was read from, when it is unchanged.
    pub(super) fn source(&self) -> Option<&'a Value> {
        match self {
            Schema::Json(v) => Some(v),
            Schema::Object(k) => k.source(),
            Schema::Bool(_) => None,
        }
    }
}

/// A schema as a pass sees it: parsed.
#[derive(Clone, Debug)]
pub(super) enum View<'a> {
    /// `true` or `false`.
    Bool(bool),
    /// The keywords of a schema object.
    Object(Rc<Keywords<'a>>),
    /// A value that is not a schema (a number, a string, an array, `null`).
    NotASchema,
}

/// A keyword's value: typed when it has the JSON type the keyword takes, else as written.
/// (Equality is JSON equality: a value of the right type never equals one of a wrong type.)
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Field<'a, T> {
    /// The value, typed.
    Ok(T),
    /// A value of the wrong JSON type (or, for `exclusiveMinimum`/`exclusiveMaximum`, the
    /// draft-4 boolean flag).
    Wrong(&'a Value),
}

impl<T> Field<'_, T> {
    /// The typed value, if the JSON type was right.
    pub(super) fn ok(&self) -> Option<&T> {
        match self {
            Field::Ok(t) => Some(t),
            Field::Wrong(_) => None,
        }
    }
}

/// A string keyword (`$ref`, `pattern`, `format`, an entry of `type`).
pub(super) type Text<'a> = Field<'a, &'a str>;

/// A numeric keyword (`minimum`, `maxLength`, ...): a number of the document, or one a merge
/// computed (the least common multiple of two `multipleOf`).
pub(super) type Num<'a> = Field<'a, Cow<'a, Number>>;

impl Num<'_> {
    /// The value as `f64` (as `serde_json` converts it); `None` when it is not a number.
    pub(super) fn as_f64(&self) -> Option<f64> {
        self.ok().and_then(|n| n.as_f64())
    }
    /// The value when it is a non-negative integer that fits `u64`.
    pub(super) fn as_u64(&self) -> Option<u64> {
        self.ok().and_then(|n| n.as_u64())
    }
    /// The number, if it is one.
    pub(super) fn number(&self) -> Option<&Number> {
        self.ok().map(|n| &**n)
    }
    /// The value when it is a boolean (draft-4 `exclusiveMinimum: true`).
    pub(super) fn flag(&self) -> Option<bool> {
        match self {
            Field::Wrong(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }
}

/// The members of an object-valued keyword (`properties`, `patternProperties`,
/// `dependentSchemas`, ...), in the order written; compared as a JSON object (unordered).
#[derive(Clone, Debug)]
pub(super) struct Members<'a, T>(pub(super) Vec<(&'a str, T)>);

impl<'a, T> Members<'a, T> {
    /// The value of `key`.
    pub(super) fn get(&self, key: &str) -> Option<&T> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
    /// Whether `key` is a member.
    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| *k == key)
    }
    /// Sets `key` to `value`: in place when it is a member, else appended (a JSON object's
    /// insertion).
    pub(super) fn insert(&mut self, key: &'a str, value: T) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }
    /// The members in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&'a str, &T)> {
        self.0.iter().map(|(k, v)| (*k, v))
    }
    /// The keys in order.
    pub(super) fn keys(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.0.iter().map(|(k, _)| *k)
    }
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<T> Default for Members<'_, T> {
    fn default() -> Self {
        Members(Vec::new())
    }
}

/// A value of `dependentRequired` or `dependencies`: the names a property requires, or (a
/// `dependencies` schema, or a malformed value) a schema.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Dep<'a> {
    /// An array (of names, as written: non-strings are kept).
    Names(Vec<&'a Value>),
    /// Anything else, as a schema.
    Schema(Schema<'a>),
}

impl<'a> Dep<'a> {
    /// The array, if this is one.
    pub(super) fn names(&self) -> Option<&[&'a Value]> {
        match self {
            Dep::Names(n) => Some(n),
            Dep::Schema(_) => None,
        }
    }
}

/// `items`: one schema for every item, or (draft 4) an array of schemas for the first items.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Items<'a> {
    /// A schema for each item.
    Each(Schema<'a>),
    /// The draft-4 array form, as written (always an array).
    Tuple(&'a Value),
}

impl<'a> Items<'a> {
    /// The schema as written: the draft-4 array is not a schema (its use reports that).
    pub(super) fn as_schema(&self) -> Schema<'a> {
        match self {
            Items::Each(s) => s.clone(),
            Items::Tuple(v) => Schema::Json(v),
        }
    }
}

/// `type`: one name, or an array of names (either may name unknown types; the array may
/// hold non-strings).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum TypeNames<'a> {
    /// `"type": "string"`.
    One(&'a str),
    /// `"type": ["string", "null"]`.
    List(Vec<Text<'a>>),
}

impl<'a> TypeNames<'a> {
    /// The names that are strings, in order.
    pub(super) fn names(&self) -> impl Iterator<Item = &'a str> + '_ {
        let (one, list) = match self {
            TypeNames::One(t) => (Some(*t), &[][..]),
            TypeNames::List(l) => (None, &l[..]),
        };
        one.into_iter().chain(list.iter().filter_map(|t| t.ok().copied()))
    }
}

#[cfg(test)]
mod tests;
