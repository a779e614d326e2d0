//! JSON values as expressions: one given value (for `enum`/`const`), and any value.
//!
//! A given value is matched up to layout (whitespace as the options say) and string escapes;
//! an integral number also matches with a `.0` fraction (`1` and `1.0` are equal in JSON
//! Schema); object members follow the value's key order.

use serde_json::Value;

use super::lower::Layout;
use super::number::any_number;
use super::string::{any_string, literal_string};
use crate::grammar::Expr;

/// The expression matching the JSON value `v` written at nesting `level`.
pub(super) fn value_expr(layout: &Layout, v: &Value, level: u32) -> Expr {
    match v {
        Value::Null => Expr::literal("null"),
        Value::Bool(b) => Expr::literal(if *b { "true" } else { "false" }),
        Value::Number(n) => {
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
        Value::String(s) => literal_string(s),
        Value::Array(items) => {
            if items.is_empty() {
                return layout.empty("[", "]");
            }
            let mut seq = vec![layout.open("[", level)];
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    seq.push(layout.comma(level));
                }
                seq.push(value_expr(layout, x, level + 1));
            }
            seq.push(layout.close("]", level));
            Expr::Seq(seq)
        }
        Value::Object(map) => {
            if map.is_empty() {
                return layout.empty("{", "}");
            }
            let mut seq = vec![layout.open("{", level)];
            for (i, (k, x)) in map.iter().enumerate() {
                if i > 0 {
                    seq.push(layout.comma(level));
                }
                seq.push(literal_string(k));
                seq.push(layout.colon());
                seq.push(value_expr(layout, x, level + 1));
            }
            seq.push(layout.close("}", level));
            Expr::Seq(seq)
        }
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
