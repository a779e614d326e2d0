//! The `python_kwargs` style of `json_schema` formats (a maskforge extension, for Llama 4's
//! pythonic tool calls `[name(key=value, ...)]`): an object's properties as Python keyword
//! arguments.
//!
//! * Arguments follow the declared order of `properties`; required ones must occur, optional
//!   ones may be left out; they are separated by `,` and an optional space.
//! * Values are Python literals: `True` / `False` for booleans, `None` for null, and the JSON
//!   text of the schema for every other type (a double-quoted JSON string is a valid Python
//!   string; numbers are the same). Inside arrays and objects the JSON spelling of booleans
//!   and null is kept (a relaxation reported for such sub-schemas is not attempted: nested
//!   booleans are rare in tool arguments). Single-quoted strings are not accepted.
//!
//! The separators make the layout context-dependent (no comma before the first argument
//! present), so the arguments lower to a chain of rules `rest_i ::= ("," " "? arg_i)? rest_{i+1}`
//! and the body chooses the first present argument: linear in the number of properties.

use serde_json::{Map, Value};

use super::error::StructuralTagError as Error;
use super::lower::{grammar_error, join, Lowerer};
use crate::frontend::json_schema::JsonSchemaOptions;
use crate::grammar::Expr;

/// Lowers an object schema to Python keyword arguments.
pub(super) fn lower(me: &mut Lowerer<'_>, schema: &Value, pointer: &str) -> Result<Expr, Error> {
    let sp = join(pointer, "json_schema");
    let Some(obj) = schema.as_object() else {
        return Err(Error::invalid(&sp, "the python_kwargs style needs an object schema with `properties`"));
    };
    if obj.get("type").is_some_and(|t| t != "object") {
        return Err(Error::invalid(&join(&sp, "type"), "the python_kwargs style needs `\"type\": \"object\"`"));
    }
    let empty = Map::new();
    let props = match obj.get("properties") {
        None => &empty,
        Some(Value::Object(p)) => p,
        Some(_) => return Err(Error::invalid(&join(&sp, "properties"), "`properties` must be an object")),
    };
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(missing) = required.iter().find(|r| !props.contains_key(**r)) {
        return Err(Error::invalid(&join(&sp, "required"), format!("required property `{missing}` is not declared")));
    }
    let mut args = Vec::with_capacity(props.len());
    for (key, sub) in props {
        let vp = join(&join(&sp, "properties"), key);
        let value = match sub.get("type").and_then(Value::as_str) {
            Some("boolean") => Expr::Choice(vec![Expr::literal("True"), Expr::literal("False")]),
            Some("null") => Expr::literal("None"),
            _ => {
                let options = JsonSchemaOptions { any_whitespace: false, ..JsonSchemaOptions::default() };
                me.json_schema(sub, &options, &vp)?
            }
        };
        args.push((required.contains(&key.as_str()), Expr::Seq(vec![Expr::literal(format!("{key}=")), value])));
    }
    let sep = || Expr::Seq(vec![Expr::literal(","), Expr::opt(Expr::literal(" "))]);
    // rest[i]: the arguments from i on, each preceded by a separator.
    let mut rest = vec![Expr::Empty; args.len() + 1];
    for i in (0..args.len()).rev() {
        let (req, arg) = &args[i];
        let item = Expr::Seq(vec![sep(), arg.clone()]);
        let body = Expr::Seq(vec![if *req { item } else { Expr::opt(item) }, rest[i + 1].clone()]);
        let rule = me.b.fresh_rule("kwargs");
        me.b.define(rule, body, None).map_err(|e| grammar_error(pointer, e))?;
        rest[i] = Expr::Rule(rule);
    }
    let first_required = args.iter().position(|(r, _)| *r).unwrap_or(args.len());
    let mut alts = Vec::new();
    if first_required == args.len() {
        alts.push(Expr::Empty);
    }
    for i in 0..args.len().min(first_required + 1) {
        alts.push(Expr::Seq(vec![args[i].1.clone(), rest[i + 1].clone()]));
    }
    Ok(Expr::Choice(alts))
}
