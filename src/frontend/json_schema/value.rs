//! JSON values as expressions: one given value (for `enum`/`const`), and any value.
//!
//! A given value is matched up to layout (whitespace as the options say) and string escapes;
//! an integral number also matches with a `.0` fraction (`1` and `1.0` are equal in JSON
//! Schema); object members follow the value's key order, or any order with
//! [`PropertyOrder::Any`].

use serde_json::Value;

use super::any_order::MemberList;
use super::lower::{Layout, Lowerer};
use super::number::any_number;
use super::object::Prop;
use super::string::{any_string, literal_string};
use super::{PropertyOrder, SchemaError};
use crate::grammar::Expr;

impl Lowerer<'_> {
    /// The expression matching the JSON value `v` written at nesting `level`, for the
    /// `keyword` (`enum`/`const`, reported there when relaxed) of the schema at `ptr`. Object
    /// members follow the value's key order, or come in any order with
    /// [`PropertyOrder::Any`] (the members are all required: the any-order automaton over the
    /// keys written, exact up to `MAX_VALUE_SETS` keys, see `any_order.rs`).
    pub(super) fn value_expr(
        &mut self,
        v: &Value,
        level: u32,
        keyword: &'static str,
        ptr: &str,
    ) -> Result<Expr, SchemaError> {
        Ok(match v {
            Value::Null => Expr::literal("null"),
            Value::Bool(b) => Expr::literal(if *b { "true" } else { "false" }),
            Value::Number(n) => number_expr(n),
            Value::String(s) => literal_string(s),
            Value::Array(items) => {
                if items.is_empty() {
                    return Ok(self.layout.empty("[", "]"));
                }
                let mut seq = vec![self.layout.open("[", level)];
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        seq.push(self.layout.comma(level));
                    }
                    seq.push(self.value_expr(x, level + 1, keyword, ptr)?);
                }
                seq.push(self.layout.close("]", level));
                Expr::Seq(seq)
            }
            Value::Object(map) => {
                if map.is_empty() {
                    return Ok(self.layout.empty("{", "}"));
                }
                let mut members = Vec::with_capacity(map.len());
                for (k, x) in map {
                    let value = self.value_expr(x, level + 1, keyword, ptr)?;
                    members.push(Expr::Seq(vec![literal_string(k), self.layout.colon(), value]));
                }
                let body = if self.opts.property_order == PropertyOrder::Any && members.len() > 1 {
                    let props = members.into_iter().map(|member| Prop { member, required: true }).collect();
                    self.any_order(props, None, level, ptr, None, MemberList::Value(keyword))?.0
                } else {
                    let mut seq = Vec::with_capacity(2 * members.len());
                    for (i, m) in members.into_iter().enumerate() {
                        if i > 0 {
                            seq.push(self.layout.comma(level));
                        }
                        seq.push(m);
                    }
                    Expr::Seq(seq)
                };
                Expr::Seq(vec![self.layout.open("{", level), body, self.layout.close("}", level)])
            }
        })
    }
}

/// A number as written, or (integral) also with a `.0` fraction: `1` and `1.0` are equal in
/// JSON Schema.
fn number_expr(n: &serde_json::Number) -> Expr {
    if n.is_f64() {
        let f = n.as_f64().unwrap_or(0.0);
        if f.fract() == 0.0 && f.abs() < 1e15 {
            let i = f as i64;
            return Expr::Choice(vec![Expr::literal(i.to_string()), Expr::literal(format!("{i}.0"))]);
        }
        Expr::literal(n.to_string())
    } else {
        Expr::Choice(vec![Expr::literal(n.to_string()), Expr::literal(format!("{n}.0"))])
    }
}

/// Any JSON value at `level`; `nested` is the rule for values one level deeper.
pub(super) fn any_value(layout: &Layout, level: u32, nested: Expr) -> Expr {
    let member = Expr::Seq(vec![any_string(), layout.colon(), nested.clone()]);
    let object = Expr::Choice(vec![
        layout.empty("{", "}"),
        Expr::Seq(vec![
            layout.open("{", level),
            member.clone(),
            Expr::star(Expr::Seq(vec![layout.comma(level), member])),
            layout.close("}", level),
        ]),
    ]);
    let array = Expr::Choice(vec![
        layout.empty("[", "]"),
        Expr::Seq(vec![
            layout.open("[", level),
            nested.clone(),
            Expr::star(Expr::Seq(vec![layout.comma(level), nested])),
            layout.close("]", level),
        ]),
    ]);
    Expr::Choice(vec![
        object,
        array,
        any_string(),
        any_number(),
        Expr::literal("true"),
        Expr::literal("false"),
        Expr::literal("null"),
    ])
}
