//! Expansion of a protocol file's template into a structural tag (the language is described
//! in `protocols/README.md`): `$if` conditionals, `$for_each_tool` loops spliced into arrays,
//! `${name}` in strings and `"$parameters"` inside a loop.

use serde_json::{Map, Value};

use super::tools::{Tool, ToolKind};
use super::{ProtocolError, ProtocolErrorKind as Kind};

/// The facts conditions test.
#[derive(Clone, Debug)]
pub(super) struct Context<'a> {
    pub reasoning: bool,
    pub required: bool,
    pub parallel: bool,
    pub forced: bool,
    pub tools: &'a [Tool],
}

impl Context<'_> {
    /// `cond` is atoms joined by `&`, each optionally negated with `!`.
    fn holds(&self, cond: &str, at: &str) -> Result<bool, ProtocolError> {
        let mut all = true;
        for atom in cond.split('&').map(str::trim) {
            let (neg, name) = match atom.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, atom),
            };
            let v = match name {
                "reasoning" => self.reasoning,
                "required" => self.required,
                "parallel" => self.parallel,
                "forced" => self.forced,
                "tools" => !self.tools.is_empty(),
                _ => {
                    return Err(template_error(
                        at,
                        format!("unknown condition `{name}` (reasoning, required, parallel, forced, tools)"),
                    ))
                }
            };
            all &= v != neg;
        }
        Ok(all)
    }
}

fn template_error(at: &str, msg: String) -> ProtocolError {
    ProtocolError::new(Kind::Template(format!("{at}: {msg}")))
}

/// Expands `v` (at pointer `at`) into zero or more values.
pub(super) fn expand(v: &Value, cx: &Context<'_>, tool: Option<&Tool>, at: &str) -> Result<Vec<Value>, ProtocolError> {
    match v {
        Value::Object(o) if o.contains_key("$if") => {
            let cond = o
                .get("$if")
                .and_then(Value::as_str)
                .ok_or_else(|| template_error(at, "`$if` needs a string".into()))?;
            for k in o.keys() {
                if !matches!(k.as_str(), "$if" | "then" | "else") {
                    return Err(template_error(at, format!("unexpected key `{k}` next to `$if`")));
                }
            }
            let branch = if cx.holds(cond, at)? { o.get("then") } else { o.get("else") };
            match branch {
                Some(b) => expand(b, cx, tool, at),
                None => Ok(Vec::new()),
            }
        }
        Value::Object(o) if o.contains_key("$for_each_tool") => {
            let kind = match o.get("kind").and_then(Value::as_str) {
                None | Some("function") => ToolKind::Function,
                Some("builtin") => ToolKind::Builtin,
                Some(k) => return Err(template_error(at, format!("unknown tool kind `{k}`"))),
            };
            let body = &o["$for_each_tool"];
            let mut out = Vec::new();
            for t in cx.tools.iter().filter(|t| t.kind == kind) {
                out.extend(expand(body, cx, Some(t), &format!("{at}/$for_each_tool"))?);
            }
            Ok(out)
        }
        Value::Object(o) => {
            let mut m = Map::new();
            for (k, x) in o {
                let mut vals = expand(x, cx, tool, &format!("{at}/{k}"))?;
                match vals.len() {
                    0 => {}
                    1 => {
                        m.insert(k.clone(), vals.pop().unwrap());
                    }
                    _ => return Err(template_error(at, format!("`{k}` expands to several values outside an array"))),
                }
            }
            Ok(vec![Value::Object(m)])
        }
        Value::Array(a) => {
            let mut out = Vec::new();
            for (i, x) in a.iter().enumerate() {
                out.extend(expand(x, cx, tool, &format!("{at}/{i}"))?);
            }
            Ok(vec![Value::Array(out)])
        }
        Value::String(s) => match tool {
            Some(t) if s == "$parameters" => Ok(vec![t.parameters.clone()]),
            Some(t) => Ok(vec![Value::String(s.replace("${name}", &t.name))]),
            None if s.contains("${name}") || s == "$parameters" => {
                Err(template_error(at, format!("`{s}` is only meaningful inside `$for_each_tool`")))
            }
            None => Ok(vec![v.clone()]),
        },
        _ => Ok(vec![v.clone()]),
    }
}
