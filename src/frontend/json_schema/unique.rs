//! `uniqueItems` over a small finite item domain: when every item is one of a few values
//! (`enum`, `const`, `boolean`, `null`), a unique array is a sequence of distinct values, and
//! the states of its automaton are the sets of values written so far (up to
//! [`MAX_UNIQUE_VALUES`] values: 2^k rules). The length bounds come for free: the length is
//! the size of the set. Other item schemas are reported.

use serde_json::Value;

use super::lower::{choice, Lowerer};
use super::model::{is_annotation, Field, Schema, TypeNames, View};
use super::validate::{json_equal, validate, Verdict};
use super::SchemaError;
use crate::grammar::{Expr, RuleId};

/// The most distinct item values enumerated for `uniqueItems`.
pub(super) const MAX_UNIQUE_VALUES: usize = 8;

/// The values of `boolean` and `null` items.
static FALSE: Value = Value::Bool(false);
static TRUE: Value = Value::Bool(true);
static NULL: Value = Value::Null;

impl<'a> Lowerer<'a> {
    /// The distinct values an item schema admits, when it only enumerates a few.
    fn item_domain(&mut self, items: &Schema<'a>) -> Option<Vec<&'a Value>> {
        let View::Object(k) = self.doc.view(items) else { return None };
        let allowed = |name: &str| is_annotation(name) || ["type", "enum", "const"].contains(&name);
        if !k.names().all(allowed) {
            return None;
        }
        let one_type = match &k.types {
            Some(Field::Ok(TypeNames::One(t))) => Some(*t),
            _ => None,
        };
        let candidates: Vec<&'a Value> = match (k.const_value, &k.enum_values, one_type) {
            (Some(c), _, _) => vec![c],
            (None, Some(Field::Ok(e)), _) => e.clone(),
            (None, None, Some("boolean")) => vec![&FALSE, &TRUE],
            (None, None, Some("null")) => vec![&NULL],
            _ => return None,
        };
        let mut out: Vec<&'a Value> = Vec::new();
        for v in candidates {
            match validate(&mut self.doc, items, v, 0) {
                Verdict::Valid => {}
                Verdict::Invalid => continue,
                Verdict::Unknown(_) => return None,
            }
            if !out.iter().any(|x| json_equal(x, v)) {
                out.push(v);
            }
        }
        (out.len() <= MAX_UNIQUE_VALUES).then_some(out)
    }

    /// A unique array of `items` with `min..=max` items, or `None` when the item domain is not
    /// a few enumerated values.
    pub(super) fn unique_array(
        &mut self,
        items: &Schema<'a>,
        (min, max): (u64, Option<u64>),
        level: u32,
        ptr: &str,
    ) -> Result<Option<Expr>, SchemaError> {
        let Some(domain) = self.item_domain(items) else { return Ok(None) };
        let k = domain.len();
        let mut values = Vec::with_capacity(domain.len());
        for v in &domain {
            values.push(self.value_expr(v, level + 1, "enum", &format!("{ptr}/items"))?);
        }
        let comma = self.layout.comma(level);
        let max = max.unwrap_or(k as u64).min(k as u64);
        if max < min {
            return Ok(Some(super::lower::never()));
        }
        let ids: Vec<RuleId> = (0..1usize << k).map(|_| self.new_rule("unique")).collect();
        for set in 0..1usize << k {
            let n = set.count_ones() as u64;
            let mut alts = Vec::new();
            if n >= min {
                alts.push(Expr::Empty);
            }
            if n < max {
                for (i, v) in values.iter().enumerate().filter(|(i, _)| set & 1 << i == 0) {
                    alts.push(Expr::Seq(vec![comma.clone(), v.clone(), Expr::Rule(ids[set | 1 << i])]));
                }
            }
            self.define(ids[set], choice(alts));
        }
        let mut alts = Vec::new();
        if min == 0 {
            alts.push(self.layout.empty("[", "]"));
        }
        if max > 0 {
            let first: Vec<Expr> =
                values.iter().enumerate().map(|(i, v)| Expr::Seq(vec![v.clone(), Expr::Rule(ids[1 << i])])).collect();
            alts.push(Expr::Seq(vec![self.layout.open("[", level), choice(first), self.layout.close("]", level)]));
        }
        Ok(Some(choice(alts)))
    }
}
