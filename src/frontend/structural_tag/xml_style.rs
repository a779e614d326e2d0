//! The XML-like parameter styles of `json_schema` formats (`qwen_xml`, `minimax_xml`,
//! `deepseek_xml`, `glm_xml`, `cohere_xml`): an object's properties are written as tagged
//! key/value pairs instead of JSON.
//!
//! * A property whose schema has `"type": "string"` is raw text (no quotes, no escapes) that
//!   ends at the first closing tag; with `enum`/`const` it is one of the values written bare,
//!   optionally surrounded by whitespace. `minLength`, `maxLength`, `pattern` and `format` are
//!   not checked on raw text; each such keyword is reported as a relaxation.
//! * Any other value is JSON text for its schema (via the JSON Schema front-end), with
//!   whitespace around it.
//! * Pairs follow the declared order of `properties`, required ones must occur, optional ones
//!   may be left out, whitespace may come before each pair and after the last one. With
//!   `any_order`, XGrammar's relaxed semantics: any declared pair in any order, repeats
//!   allowed, at least as many pairs as required properties.
//! * `deepseek_xml` writes `string="true"` for string properties and `string="false"` for the
//!   others (as xgrammar 0.2.8 does).
//!
//! Only object schemas with `properties` make sense here; anything else is an error. Extra
//! (undeclared) properties are not allowed, as in XGrammar's strict mode.

use serde_json::{Map, Value};

use super::error::StructuralTagError as Error;
use super::format::SchemaStyle;
use super::lower::{join, Lowerer};
use crate::frontend::json_schema::{JsonSchemaOptions, Relaxation};
use crate::grammar::Expr;

/// JSON whitespace, any amount.
fn ws() -> Expr {
    Expr::star(Expr::class([(9, 10), (13, 13), (32, 32)], false))
}

/// What opens a pair for `key` (up to the value) and what closes it, per style.
fn pair_delimiters(style: SchemaStyle, key: &str, is_string: bool) -> (Expr, &'static str) {
    match style {
        SchemaStyle::QwenXml => (Expr::literal(format!("<parameter={key}>")), "</parameter>"),
        SchemaStyle::MinimaxXml => (Expr::literal(format!("<parameter name=\"{key}\">")), "</parameter>"),
        SchemaStyle::DeepseekXml => (
            Expr::literal(format!("<｜DSML｜parameter name=\"{key}\" string=\"{is_string}\">")),
            "</｜DSML｜parameter>",
        ),
        SchemaStyle::GlmXml => (
            Expr::Seq(vec![Expr::literal(format!("<arg_key>{key}</arg_key>")), ws(), Expr::literal("<arg_value>")]),
            "</arg_value>",
        ),
        SchemaStyle::CohereXml => (Expr::literal(format!("<cofl:tool_param name={key}>")), "</cofl:tool_param>"),
        SchemaStyle::Json | SchemaStyle::PythonKwargs => unreachable!("not an XML style"),
    }
}

/// Lowers `schema` (an object schema) in an XML style.
pub(super) fn lower(
    me: &mut Lowerer<'_>,
    schema: &Value,
    style: SchemaStyle,
    any_order: bool,
    pointer: &str,
) -> Result<Expr, Error> {
    let sp = join(pointer, "json_schema");
    let Some(obj) = schema.as_object() else {
        return Err(Error::invalid(&sp, "an XML style needs an object schema with `properties`"));
    };
    if obj.get("type").is_some_and(|t| t != "object") {
        return Err(Error::invalid(&join(&sp, "type"), "an XML style needs `\"type\": \"object\"`"));
    }
    let empty = Map::new();
    let props = match obj.get("properties") {
        None => &empty,
        Some(Value::Object(p)) => p,
        Some(_) => return Err(Error::invalid(&join(&sp, "properties"), "`properties` must be an object")),
    };
    let required: Vec<&str> = match obj.get("required") {
        None => Vec::new(),
        Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
        Some(_) => return Err(Error::invalid(&join(&sp, "required"), "`required` must be an array of strings")),
    };
    if let Some(missing) = required.iter().find(|r| !props.contains_key(**r)) {
        return Err(Error::invalid(
            &join(&sp, "required"),
            format!("required property `{missing}` is not declared in `properties` (the XML styles have no additional properties)"),
        ));
    }
    let mut pairs = Vec::with_capacity(props.len());
    for (key, sub) in props {
        let vp = join(&join(&sp, "properties"), key);
        let is_string = sub.get("type").and_then(Value::as_str) == Some("string");
        let (open, close) = pair_delimiters(style, key, is_string);
        let value = if is_string { raw_string(me, sub, close, &vp)? } else { json_value(me, schema, sub, &vp)? };
        pairs.push((key.as_str(), Expr::Seq(vec![open, value, Expr::literal(close)])));
    }
    let body = if any_order {
        let n_required = u32::try_from(required.len()).unwrap_or(u32::MAX);
        let any = Expr::Choice(pairs.into_iter().map(|(_, e)| Expr::Seq(vec![ws(), e])).collect());
        if props.is_empty() {
            Expr::Empty
        } else {
            Expr::repeat(any, n_required, None)
        }
    } else {
        Expr::Seq(
            pairs
                .into_iter()
                .map(|(key, e)| {
                    let item = Expr::Seq(vec![ws(), e]);
                    if required.contains(&key) {
                        item
                    } else {
                        Expr::opt(item)
                    }
                })
                .collect(),
        )
    };
    Ok(Expr::Seq(vec![body, ws()]))
}

/// A raw string value ended by `close`.
fn raw_string(me: &mut Lowerer<'_>, sub: &Value, close: &str, pointer: &str) -> Result<Expr, Error> {
    let values: Option<Vec<&Value>> = match (sub.get("enum"), sub.get("const")) {
        (_, Some(c)) => Some(vec![c]),
        (Some(Value::Array(e)), None) => Some(e.iter().collect()),
        _ => None,
    };
    if let Some(values) = values {
        let alts: Vec<Expr> = values.iter().filter_map(|v| v.as_str()).map(Expr::literal).collect();
        return Ok(Expr::Seq(vec![ws(), Expr::Choice(alts), ws()]));
    }
    for keyword in ["minLength", "maxLength", "pattern", "format"] {
        if sub.get(keyword).is_some() {
            let r = Relaxation {
                keyword: keyword.into(),
                pointer: format!("#{}", pointer.split_once("/json_schema").map_or("", |(_, rest)| rest)),
                detail: "raw string values of XML styles are not checked against this keyword".into(),
            };
            if !me.report.relaxations.contains(&r) {
                me.report.relaxations.push(r);
            }
        }
    }
    me.free_text(vec![close.as_bytes().to_vec()], pointer)
}

/// A JSON value for `sub`, which may use the definitions of the enclosing `root` schema.
fn json_value(me: &mut Lowerer<'_>, root: &Value, sub: &Value, pointer: &str) -> Result<Expr, Error> {
    let mut doc = sub.clone();
    if let (Value::Object(d), Value::Object(r)) = (&mut doc, root) {
        for defs in ["$defs", "definitions"] {
            if let (Some(v), false) = (r.get(defs), d.contains_key(defs)) {
                d.insert(defs.to_string(), v.clone());
            }
        }
    }
    me.json_schema(&doc, &JsonSchemaOptions::default(), pointer)
}
