//! `not` over values: `not: {enum: [...]}` / `not: {const: ...}` with scalar values. Each JSON
//! type is narrowed on its own — `null` and booleans dropped, strings by the complement of a
//! trie of the excluded strings, numbers by splitting the number line into the open intervals
//! between the excluded values (each enforced exactly by the digit-level number grammars) —
//! so the negation is exact. Objects and arrays among the values are not handled (reported).

use serde_json::{Number, Value};

use super::model::{Field, Keywords};

/// The scalar values a `not` schema excludes, by type (borrowed from the schema).
#[derive(Debug, Default)]
pub(super) struct Excluded<'a> {
    pub(super) null: bool,
    pub(super) booleans: Vec<bool>,
    pub(super) strings: Vec<&'a str>,
    /// Sorted by value, without numerically equal duplicates (`1` and `1.0`).
    pub(super) numbers: Vec<&'a Number>,
}

impl<'a> Excluded<'a> {
    /// The values of a `not` schema made only of `enum` or `const` (annotations aside:
    /// `keys` are the others); `None` when a value is an object or an array, or when a number
    /// is out of `f64` range.
    pub(super) fn of(not: &Keywords<'a>, keys: &[&str]) -> Option<Excluded<'a>> {
        let values: Vec<&'a Value> = match keys {
            ["enum"] => match &not.enum_values {
                Some(Field::Ok(values)) => values.clone(),
                _ => return None,
            },
            ["const"] => vec![not.const_value?],
            _ => return None,
        };
        let mut ex = Excluded::default();
        for v in values {
            match v {
                Value::Null => ex.null = true,
                Value::Bool(b) => ex.booleans.push(*b),
                Value::String(s) => ex.strings.push(s),
                Value::Number(n) if n.as_f64().is_some_and(f64::is_finite) => ex.numbers.push(n),
                _ => return None,
            }
        }
        let key = |n: &Number| n.as_f64().expect("checked above");
        ex.numbers.sort_by(|a, b| key(a).total_cmp(&key(b)));
        ex.numbers.dedup_by(|a, b| key(a) == key(b));
        Some(ex)
    }

    /// The open intervals between the excluded numbers, as (after, before) pairs.
    pub(super) fn gaps(&self) -> Vec<(Option<&'a Number>, Option<&'a Number>)> {
        let mut out = Vec::with_capacity(self.numbers.len() + 1);
        let mut prev = None;
        for &v in &self.numbers {
            out.push((prev, Some(v)));
            prev = Some(v);
        }
        out.push((prev, None));
        out
    }
}
