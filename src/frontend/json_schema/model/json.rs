//! The model and JSON: parsing keyword values ([`FromJson`], lenient: a wrong type is kept as
//! written), writing them back (`Serialize`: exactly the text `serde_json` writes for the
//! JSON value the model stands for, which keys memoized merges), and JSON equality
//! (`PartialEq`: objects compare unordered, numbers by representation, as `serde_json::Value`
//! does; the other types of the model derive it from these).

use std::borrow::Cow;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{Number, Value};

use super::{Dep, Field, Items, Keywords, Members, Schema, TypeNames};

/// A keyword value read from its JSON (never fails: see [`Field`]).
pub(in super::super) trait FromJson<'a> {
    /// The value read from `v`.
    fn from_json(v: &'a Value) -> Self;
}

impl<'a> FromJson<'a> for Schema<'a> {
    fn from_json(v: &'a Value) -> Self {
        match v {
            Value::Bool(b) => Schema::Bool(*b),
            _ => Schema::Json(v),
        }
    }
}

impl<'a> FromJson<'a> for &'a Value {
    fn from_json(v: &'a Value) -> Self {
        v
    }
}

impl<'a> FromJson<'a> for Field<'a, &'a str> {
    fn from_json(v: &'a Value) -> Self {
        match v {
            Value::String(s) => Field::Ok(s),
            _ => Field::Wrong(v),
        }
    }
}

impl<'a> FromJson<'a> for Field<'a, bool> {
    fn from_json(v: &'a Value) -> Self {
        match v {
            Value::Bool(b) => Field::Ok(*b),
            _ => Field::Wrong(v),
        }
    }
}

impl<'a> FromJson<'a> for Field<'a, Cow<'a, Number>> {
    fn from_json(v: &'a Value) -> Self {
        match v {
            Value::Number(n) => Field::Ok(Cow::Borrowed(n)),
            _ => Field::Wrong(v),
        }
    }
}

impl<'a, T: FromJson<'a>> FromJson<'a> for Field<'a, Vec<T>> {
    fn from_json(v: &'a Value) -> Self {
        match v {
            Value::Array(a) => Field::Ok(a.iter().map(T::from_json).collect()),
            _ => Field::Wrong(v),
        }
    }
}

impl<'a, T: FromJson<'a>> FromJson<'a> for Field<'a, Members<'a, T>> {
    fn from_json(v: &'a Value) -> Self {
        match v {
            Value::Object(m) => Field::Ok(Members(m.iter().map(|(k, x)| (k.as_str(), T::from_json(x))).collect())),
            _ => Field::Wrong(v),
        }
    }
}

impl<'a> FromJson<'a> for Field<'a, TypeNames<'a>> {
    fn from_json(v: &'a Value) -> Self {
        match v {
            Value::String(s) => Field::Ok(TypeNames::One(s)),
            Value::Array(a) => Field::Ok(TypeNames::List(a.iter().map(FromJson::from_json).collect())),
            _ => Field::Wrong(v),
        }
    }
}

impl<'a> FromJson<'a> for Dep<'a> {
    fn from_json(v: &'a Value) -> Self {
        match v {
            Value::Array(a) => Dep::Names(a.iter().collect()),
            _ => Dep::Schema(Schema::from_json(v)),
        }
    }
}

impl<'a> FromJson<'a> for Items<'a> {
    fn from_json(v: &'a Value) -> Self {
        match v {
            Value::Array(_) => Items::Tuple(v),
            _ => Items::Each(Schema::from_json(v)),
        }
    }
}

impl Serialize for Schema<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Schema::Bool(b) => s.serialize_bool(*b),
            Schema::Object(k) => k.serialize(s),
            Schema::Json(v) => v.serialize(s),
        }
    }
}

impl Serialize for Keywords<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Some(v) = self.source() {
            return v.serialize(s);
        }
        let mut map = s.serialize_map(Some(self.entries().len()))?;
        self.serialize_map(&mut map)?;
        map.end()
    }
}

impl<T: Serialize> Serialize for Field<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Ok(t) => t.serialize(s),
            Field::Wrong(v) => v.serialize(s),
        }
    }
}

impl<T: Serialize> Serialize for Members<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl Serialize for Dep<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Dep::Names(n) => n.serialize(s),
            Dep::Schema(x) => x.serialize(s),
        }
    }
}

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Items::Each(x) => x.serialize(s),
            Items::Tuple(v) => v.serialize(s),
        }
    }
}

impl Serialize for TypeNames<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TypeNames::One(t) => s.serialize_str(t),
            TypeNames::List(l) => l.serialize(s),
        }
    }
}

impl PartialEq for Schema<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Schema::Bool(a), Schema::Bool(b)) => a == b,
            (Schema::Json(a), Schema::Json(b)) => a == b,
            (Schema::Object(a), Schema::Object(b)) => std::rc::Rc::ptr_eq(a, b) || a.json_eq(b),
            (Schema::Object(k), Schema::Json(v)) | (Schema::Json(v), Schema::Object(k)) => {
                if k.source().is_some_and(|s| std::ptr::eq(s, *v)) {
                    return true;
                }
                // Rare (a merge result against a document value): parse the value to compare.
                v.as_object().is_some_and(|m| Keywords::parse(m, v).json_eq(k))
            }
            (Schema::Bool(_), _) | (_, Schema::Bool(_)) => false,
        }
    }
}

impl<T: PartialEq> PartialEq for Members<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        json_eq_members(&self.0, &other.0, |a, b| a == b)
    }
}

/// Whether two objects' members are equal as JSON objects (same keys, in any order, with
/// equal values).
pub(in super::super) fn json_eq_members<K: PartialEq, T>(
    a: &[(K, T)],
    b: &[(K, T)],
    eq: impl Fn(&T, &T) -> bool,
) -> bool {
    if a.len() != b.len() {
        return false;
    }
    // The same order is the common case: no lookup then.
    if a.iter().zip(b).all(|((ka, _), (kb, _))| ka == kb) {
        return a.iter().zip(b).all(|((_, x), (_, y))| eq(x, y));
    }
    a.iter().all(|(k, x)| b.iter().any(|(kb, y)| kb == k && eq(x, y)))
}
