//! Model tool-calling and reasoning formats as data: `protocols/*.json` at the top of the
//! repository, embedded in the binary and loaded by name.
//!
//! Each file holds one structural-tag template (see `protocols/README.md` for the template
//! language); [`protocol_structural_tag`] expands it for a request's tools, `tool_choice`
//! and options into a plain structural tag, which the structural-tag front-end lowers. Adding
//! a model family means adding a file and one line to [`PROTOCOL_FILES`].
//!
//! # Policies
//!
//! * `tool_choice: none` expands the template with no tools (so a call trigger becomes a
//!   forbidden string of the free text) and `required` false.
//! * `required` (or `allowed_tools` with `mode: required`) needs at least one tool; each
//!   template makes a call mandatory (for Harmony: messages may precede the call, but the
//!   output must end with a call — reasoning-only or empty outputs are rejected).
//! * A named function keeps only that tool and sets `forced` and `required`; `parallel` is
//!   then false (exactly one call).
//! * `parallel_tool_calls: false` allows at most one call.
//! * `reasoning` is ignored by templates without a reasoning section (Llama).

mod template;
mod tools;

use std::sync::OnceLock;

use serde_json::Value;

pub use tools::{Tool, ToolChoice, ToolKind};

/// The embedded protocol files: (file stem, text).
pub const PROTOCOL_FILES: &[(&str, &str)] = &[
    ("harmony", include_str!("../../../protocols/harmony.json")),
    ("llama", include_str!("../../../protocols/llama.json")),
    ("llama_function_tag", include_str!("../../../protocols/llama_function_tag.json")),
    ("llama4_pythonic", include_str!("../../../protocols/llama4_pythonic.json")),
    ("qwen", include_str!("../../../protocols/qwen.json")),
    ("qwen_coder", include_str!("../../../protocols/qwen_coder.json")),
    ("deepseek_r1", include_str!("../../../protocols/deepseek_r1.json")),
    ("deepseek_v3_1", include_str!("../../../protocols/deepseek_v3_1.json")),
    ("deepseek_v3_2", include_str!("../../../protocols/deepseek_v3_2.json")),
    ("deepseek_v4", include_str!("../../../protocols/deepseek_v4.json")),
    ("kimi", include_str!("../../../protocols/kimi.json")),
    ("glm", include_str!("../../../protocols/glm.json")),
    ("minimax", include_str!("../../../protocols/minimax.json")),
];

/// Options of a protocol request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtocolOptions {
    /// The output starts with a reasoning section (the prompt opened it) where the format has
    /// one. Default `false`.
    pub reasoning: bool,
    /// More than one call allowed. Default `true` (OpenAI's default).
    pub parallel_tool_calls: bool,
}

impl Default for ProtocolOptions {
    fn default() -> Self {
        ProtocolOptions { reasoning: false, parallel_tool_calls: true }
    }
}

/// Why a protocol request could not be turned into a structural tag.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct ProtocolError {
    kind: ProtocolErrorKind,
}

/// The kinds of [`ProtocolError`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolErrorKind {
    /// No protocol has this name or alias.
    #[error("unknown protocol `{name}`; known protocols: {known}")]
    UnknownProtocol {
        /// The requested name.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// A tool is malformed (the message starts with its JSON pointer, e.g. `/tools/1/function/name`).
    #[error("bad tool: {0}")]
    BadTool(String),
    /// Two tools share a name.
    #[error("bad tools: `{0}` is offered twice")]
    DuplicateTool(String),
    /// `tool_choice` is malformed.
    #[error("bad tool_choice: {0}")]
    BadToolChoice(String),
    /// `tool_choice` names a tool that is not offered.
    #[error("tool_choice names `{name}`, which is not among the offered tools: {offered}")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The offered names, comma-separated.
        offered: String,
    },
    /// A call is required but no tool is offered.
    #[error("tool_choice requires a call but no tool is offered")]
    NoTools,
    /// The protocol file itself is malformed (a bug in the data file).
    #[error("protocol file: {0}")]
    Template(String),
    /// A protocol file could not be read.
    #[error("cannot read protocol file {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        message: String,
    },
}

impl ProtocolError {
    pub(crate) fn new(kind: ProtocolErrorKind) -> Self {
        ProtocolError { kind }
    }
    /// What is wrong.
    pub fn kind(&self) -> &ProtocolErrorKind {
        &self.kind
    }
}

/// One protocol file, parsed.
#[derive(Clone, Debug)]
pub struct Protocol {
    /// The name it is loaded by.
    pub name: String,
    /// Other names (XGrammar's keys, corpus format names).
    pub aliases: Vec<String>,
    /// One line on the format.
    pub description: String,
    template: Value,
    /// A typical response holding one call, with `${name}` and `${arguments}` placeholders
    /// (the file's optional `example_response`), for benchmarks and examples.
    example_response: Option<String>,
}

impl Protocol {
    fn parse(stem: &str, text: &str) -> Result<Protocol, ProtocolError> {
        let p = Protocol::parse_unnamed(&format!("{stem}.json"), text)?;
        if p.name != stem {
            let msg = format!("{stem}.json: `name` is `{}`, expected the file stem `{stem}`", p.name);
            return Err(ProtocolError::new(ProtocolErrorKind::Template(msg)));
        }
        Ok(p)
    }

    /// Reads a protocol file given at run time (the format of `protocols/*.json`, described in
    /// `protocols/README.md`), with the checks the embedded files get: the fields, and a trial
    /// expansion of the template for one probe tool under every tool choice and reasoning
    /// setting, so that a malformed template is an error here rather than at the first request.
    ///
    /// # Errors
    /// [`ProtocolErrorKind::Read`] when the file cannot be read, [`ProtocolErrorKind::Template`]
    /// (naming the file) when it is malformed.
    ///
    /// # Example
    /// ```
    /// use maskforge::{Protocol, ProtocolOptions, ToolChoice};
    /// let dir = std::env::temp_dir().join(format!("maskforge-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("mine.json");
    /// std::fs::write(&path, r#"{"name": "mine", "template": {"type": "triggered_tags",
    ///     "triggers": ["<call>"], "tags": [{"$for_each_tool": {"type": "tag",
    ///     "begin": "<call>${name}:", "content": {"type": "json_schema", "json_schema": "$parameters"},
    ///     "end": "</call>"}}]}}"#)?;
    /// let protocol = Protocol::from_file(&path)?;
    /// assert_eq!(protocol.name, "mine");
    /// std::fs::write(&path, r#"{"name": "mine"}"#)?;
    /// assert!(Protocol::from_file(&path).unwrap_err().to_string().contains("missing `template`"));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Protocol, ProtocolError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ProtocolError::new(ProtocolErrorKind::Read { path: shown.clone(), message: e.to_string() }))?;
        Protocol::from_json_str(&shown, &text)
    }

    /// As [`Protocol::from_file`], from the text of a protocol file; `origin` names it in
    /// error messages.
    ///
    /// # Errors
    /// [`ProtocolErrorKind::Template`] when it is malformed.
    pub fn from_json_str(origin: &str, text: &str) -> Result<Protocol, ProtocolError> {
        let protocol = Protocol::parse_unnamed(origin, text)?;
        protocol.trial_expansions()?;
        Ok(protocol)
    }

    /// Expands the template for a probe tool under every tool choice and reasoning setting.
    fn trial_expansions(&self) -> Result<(), ProtocolError> {
        let probe = serde_json::json!({"type": "function", "function": {"name": "probe",
            "description": "a probe", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}});
        let choices = [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required, ToolChoice::Function("probe".into())];
        for choice in &choices {
            for reasoning in [false, true] {
                for parallel_tool_calls in [false, true] {
                    let options = ProtocolOptions { reasoning, parallel_tool_calls };
                    self.structural_tag(std::slice::from_ref(&probe), choice, &options)?;
                }
            }
        }
        Ok(())
    }

    /// A protocol from the text of its file; `origin` names it in error messages.
    fn parse_unnamed(origin: &str, text: &str) -> Result<Protocol, ProtocolError> {
        let bad = |m: String| ProtocolError::new(ProtocolErrorKind::Template(format!("{origin}: {m}")));
        let v: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let name = v.get("name").and_then(Value::as_str).ok_or_else(|| bad("missing `name`".into()))?;
        let aliases = match v.get("aliases") {
            None => Vec::new(),
            Some(a) => serde_json::from_value(a.clone()).map_err(|e| bad(format!("`aliases`: {e}")))?,
        };
        let description = v.get("description").and_then(Value::as_str).unwrap_or_default().to_string();
        let template = v.get("template").cloned().ok_or_else(|| bad("missing `template`".into()))?;
        let example_response = match v.get("example_response") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(bad("`example_response` must be a string".into())),
        };
        Ok(Protocol { name: name.to_string(), aliases, description, template, example_response })
    }

    /// A typical response of this format holding one call of `tool` with `arguments` (compact
    /// JSON text), from the file's `example_response` template; `None` when the file has none.
    pub fn example_response(&self, tool: &str, arguments: &str) -> Option<String> {
        let t = self.example_response.as_ref()?;
        Some(t.replace("${name}", tool).replace("${arguments}", arguments))
    }

    /// The protocol named `name` (or with that alias).
    ///
    /// # Errors
    /// [`ProtocolErrorKind::UnknownProtocol`], listing the known names.
    pub fn by_name(name: &str) -> Result<Protocol, ProtocolError> {
        // The embedded files are parsed once per process.
        static REGISTRY: OnceLock<Result<Vec<Protocol>, ProtocolError>> = OnceLock::new();
        let all = REGISTRY
            .get_or_init(|| PROTOCOL_FILES.iter().map(|(stem, text)| Protocol::parse(stem, text)).collect())
            .as_ref()
            .map_err(Clone::clone)?;
        if let Some(p) = all.iter().find(|p| p.name == name || p.aliases.iter().any(|a| a == name)) {
            return Ok(p.clone());
        }
        let known = PROTOCOL_FILES.iter().map(|(s, _)| *s).collect::<Vec<_>>().join(", ");
        Err(ProtocolError::new(ProtocolErrorKind::UnknownProtocol { name: name.to_string(), known }))
    }

    /// The structural tag for these tools, choice and options.
    ///
    /// # Errors
    /// [`ProtocolError`] for malformed tools, a `tool_choice` naming an unknown tool, or a
    /// required call without tools.
    pub fn structural_tag(
        &self,
        tools: &[Value],
        tool_choice: &ToolChoice,
        options: &ProtocolOptions,
    ) -> Result<Value, ProtocolError> {
        let mut offered: Vec<Tool> = Vec::with_capacity(tools.len());
        for (i, t) in tools.iter().enumerate() {
            let tool = Tool::from_json(t, &format!("/tools/{i}"))?;
            if offered.iter().any(|o| o.name == tool.name) {
                return Err(ProtocolError::new(ProtocolErrorKind::DuplicateTool(tool.name)));
            }
            offered.push(tool);
        }
        let pick = |names: &[String]| -> Result<Vec<Tool>, ProtocolError> {
            names
                .iter()
                .map(|n| {
                    offered.iter().find(|t| &t.name == n).cloned().ok_or_else(|| {
                        ProtocolError::new(ProtocolErrorKind::UnknownTool {
                            name: n.clone(),
                            offered: offered.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", "),
                        })
                    })
                })
                .collect()
        };
        let (selected, required, forced) = match tool_choice {
            ToolChoice::Auto => (offered.clone(), false, false),
            ToolChoice::None => (Vec::new(), false, false),
            ToolChoice::Required => (offered.clone(), true, false),
            ToolChoice::Function(name) => (pick(std::slice::from_ref(name))?, true, true),
            ToolChoice::AllowedTools { names, required } => (pick(names)?, *required, false),
        };
        if required && selected.is_empty() {
            return Err(ProtocolError::new(ProtocolErrorKind::NoTools));
        }
        let cx = template::Context {
            reasoning: options.reasoning,
            required,
            parallel: options.parallel_tool_calls && !forced,
            forced,
            tools: &selected,
        };
        let mut out = template::expand(&self.template, &cx, None, &format!("{}.json/template", self.name))?;
        if out.len() != 1 {
            return Err(ProtocolError::new(ProtocolErrorKind::Template(format!(
                "{}.json: the template expands to {} values, expected one format",
                self.name,
                out.len()
            ))));
        }
        Ok(serde_json::json!({"type": "structural_tag", "format": out.pop().unwrap()}))
    }
}

/// The names of the embedded protocols.
pub fn protocol_names() -> Vec<&'static str> {
    PROTOCOL_FILES.iter().map(|(s, _)| *s).collect()
}

/// The structural tag of protocol `name` for a request; see [`Protocol::structural_tag`].
///
/// # Errors
/// As [`Protocol::by_name`] and [`Protocol::structural_tag`].
///
/// # Example
/// ```
/// use maskforge::{protocol_structural_tag, ProtocolOptions, ToolChoice};
/// let tools = [serde_json::json!({"type": "function", "function": {"name": "get_time",
///     "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}})];
/// let tag = protocol_structural_tag("qwen", &tools, &ToolChoice::Required, &ProtocolOptions::default())?;
/// assert_eq!(tag["type"], "structural_tag");
/// assert!(protocol_structural_tag("qwen", &[], &ToolChoice::Required, &ProtocolOptions::default()).is_err());
/// let err = protocol_structural_tag("gpt5", &tools, &ToolChoice::Auto, &ProtocolOptions::default()).unwrap_err();
/// assert!(err.to_string().contains("harmony"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn protocol_structural_tag(
    name: &str,
    tools: &[Value],
    tool_choice: &ToolChoice,
    options: &ProtocolOptions,
) -> Result<Value, ProtocolError> {
    Protocol::by_name(name)?.structural_tag(tools, tool_choice, options)
}

#[cfg(test)]
mod tests;
