//! OpenAI-shaped tools and `tool_choice`, read from JSON with pointers in the errors.

use serde_json::Value;

use super::{ProtocolError, ProtocolErrorKind as Kind};

/// What kind of tool: a function (`functions.NAME` in Harmony) or a model's built-in tool
/// (Harmony's `browser.search`, `python`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// `{"type": "function", ...}`.
    Function,
    /// `{"type": "builtin", ...}` (a maskforge extension; same inner shape as a function).
    Builtin,
}

/// One offered tool: its name and the JSON Schema of its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    /// Function or built-in.
    pub kind: ToolKind,
    /// The name, verbatim (checked against `[A-Za-z0-9_.:-]{1,128}`).
    pub name: String,
    /// The arguments' schema (`{"type": "object"}` when absent).
    pub parameters: Value,
}

impl Tool {
    /// Reads `{"type": "function", "function": {"name", "description", "parameters", "strict"}}`
    /// (or `"type": "builtin"`), `pointer` being its place for errors (e.g. `/tools/2`).
    ///
    /// # Errors
    /// [`ProtocolError`] naming the offending field.
    pub fn from_json(v: &Value, pointer: &str) -> Result<Tool, ProtocolError> {
        let bad = |at: &str, msg: String| ProtocolError::new(Kind::BadTool(format!("{pointer}{at}: {msg}")));
        let obj = v.as_object().ok_or_else(|| bad("", "a tool must be an object".into()))?;
        let kind = match obj.get("type").and_then(Value::as_str) {
            Some("function") => ToolKind::Function,
            Some("builtin") => ToolKind::Builtin,
            other => return Err(bad("/type", format!("expected \"function\" or \"builtin\", found {other:?}"))),
        };
        let inner_key = if kind == ToolKind::Function { "function" } else { "builtin" };
        let f = obj
            .get(inner_key)
            .or_else(|| obj.get("function"))
            .and_then(Value::as_object)
            .ok_or_else(|| bad(&format!("/{inner_key}"), "missing or not an object".into()))?;
        let name = f.get("name").and_then(Value::as_str).ok_or_else(|| bad("/function/name", "missing".into()))?;
        if name.is_empty()
            || name.len() > 128
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
        {
            return Err(bad("/function/name", format!("`{name}` is not a tool name ([A-Za-z0-9_.:-]{{1,128}})")));
        }
        let parameters = match f.get("parameters") {
            None | Some(Value::Null) => serde_json::json!({"type": "object", "properties": {}}),
            Some(p @ (Value::Object(_) | Value::Bool(_))) => p.clone(),
            Some(_) => return Err(bad("/function/parameters", "must be a JSON Schema object".into())),
        };
        for (key, ok) in [
            ("description", f.get("description").is_none_or(Value::is_string)),
            ("strict", f.get("strict").is_none_or(|s| s.is_boolean() || s.is_null())),
        ] {
            if !ok {
                return Err(bad(&format!("/function/{key}"), "has the wrong type".into()));
            }
        }
        Ok(Tool { kind, name: name.to_string(), parameters })
    }
}

/// OpenAI's `tool_choice`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model may call tools or answer.
    #[default]
    Auto,
    /// No tool call.
    None,
    /// At least one tool call.
    Required,
    /// Exactly one call of this function.
    Function(String),
    /// Only these tools; `required` says whether a call is mandatory.
    AllowedTools {
        /// The allowed tool names.
        names: Vec<String>,
        /// `mode: "required"`.
        required: bool,
    },
}

impl ToolChoice {
    /// Reads `"auto"`, `"none"`, `"required"`, a bare function name (CLI convenience),
    /// `{"type": "function", "function": {"name": ...}}` or
    /// `{"type": "allowed_tools", "allowed_tools": {"mode": "auto" | "required", "tools": [...]}}`.
    ///
    /// # Errors
    /// [`ProtocolError`] for any other shape.
    ///
    /// # Example
    /// ```
    /// use maskforge::ToolChoice;
    /// let c = ToolChoice::from_json(&serde_json::json!({"type": "function", "function": {"name": "f"}}))?;
    /// assert_eq!(c, ToolChoice::Function("f".into()));
    /// assert_eq!(ToolChoice::from_json(&"required".into())?, ToolChoice::Required);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_json(v: &Value) -> Result<ToolChoice, ProtocolError> {
        let bad = |msg: String| ProtocolError::new(Kind::BadToolChoice(msg));
        match v {
            Value::String(s) => Ok(match s.as_str() {
                "auto" => ToolChoice::Auto,
                "none" => ToolChoice::None,
                "required" => ToolChoice::Required,
                name => ToolChoice::Function(name.to_string()),
            }),
            Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                Some("function") => o
                    .get("function")
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .map(|n| ToolChoice::Function(n.to_string()))
                    .ok_or_else(|| bad("/function/name is missing".into())),
                Some("allowed_tools") => {
                    let a = o.get("allowed_tools").ok_or_else(|| bad("/allowed_tools is missing".into()))?;
                    let required = match a.get("mode").and_then(Value::as_str) {
                        Some("auto") | None => false,
                        Some("required") => true,
                        Some(m) => return Err(bad(format!("/allowed_tools/mode: `{m}` is not auto or required"))),
                    };
                    let tools = a
                        .get("tools")
                        .and_then(Value::as_array)
                        .ok_or_else(|| bad("/allowed_tools/tools must be an array".into()))?;
                    let names = tools
                        .iter()
                        .enumerate()
                        .map(|(i, t)| {
                            t.get("function")
                                .and_then(|f| f.get("name"))
                                .or_else(|| t.get("name"))
                                .and_then(Value::as_str)
                                .map(str::to_string)
                                .ok_or_else(|| bad(format!("/allowed_tools/tools/{i}: no function name")))
                        })
                        .collect::<Result<_, _>>()?;
                    Ok(ToolChoice::AllowedTools { names, required })
                }
                other => Err(bad(format!("/type: expected \"function\" or \"allowed_tools\", found {other:?}"))),
            },
            other => Err(bad(format!("expected a string or an object, found {other}"))),
        }
    }
}
