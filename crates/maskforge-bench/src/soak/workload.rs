//! What the soak serves: MaskBench schemas with one valid instance each, and tool-calling
//! requests (5–50 tools of the tool pool around a ground-truth call).

use std::collections::HashMap;
use std::path::Path;

use rand::Rng;
use serde_json::Value;

use crate::cli::json_files;
use crate::maskbench::compact_json;
use crate::toolbench::{
    load_tools, load_valid_calls, tool_set_for, usable_calls, PlainJson, Tool, ToolProtocol, ValidCall,
};
use maskforge::{CompiledGrammar, Error, GrammarCompiler, JsonSchemaOptions};

/// The fewest and the most tools of a tool-calling request.
pub const TOOLS_PER_REQUEST: (usize, usize) = (5, 50);

/// A MaskBench schema and the compact text of its first valid instance.
#[derive(Clone, Debug)]
pub struct SchemaCase {
    /// The file name.
    pub name: String,
    /// The schema.
    pub schema: Value,
    /// The instance, serialized as MaskBench checks it.
    pub instance: String,
}

/// Everything a soak draws its requests from.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    /// MaskBench schemas that have a valid instance.
    pub schemas: Vec<SchemaCase>,
    /// The tool pool.
    pub tools: Vec<Tool>,
    /// Ground-truth calls (`cases.jsonl` next to the tools).
    pub calls: Vec<ValidCall>,
}

impl Workload {
    /// Reads the MaskBench files of `maskbench_dir` (those without a valid instance are left
    /// out) and the tools and calls of `tools_dir`.
    ///
    /// # Errors
    /// A message naming the file that cannot be read, or saying that nothing usable was found.
    pub fn load(maskbench_dir: &Path, tools_dir: &Path) -> Result<Workload, String> {
        let dir = maskbench_dir.to_string_lossy().into_owned();
        let files = json_files(std::slice::from_ref(&dir))
            .map_err(|e| format!("cannot list {}: {e}", maskbench_dir.display()))?;
        let mut schemas = Vec::new();
        for path in files {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let file: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            if let Some(case) = schema_case(name, file) {
                schemas.push(case);
            }
        }
        let workload = Workload { schemas, tools: load_tools(tools_dir)?, calls: load_valid_calls(tools_dir)? };
        if workload.schemas.is_empty() && workload.calls.is_empty() {
            return Err(format!("no schema with a valid instance in {}, no call in {}", dir, tools_dir.display()));
        }
        Ok(workload)
    }
}

fn schema_case(name: String, mut file: Value) -> Option<SchemaCase> {
    let tests = file.get("tests")?.as_array()?;
    let valid = tests.iter().find(|t| t.get("valid").and_then(Value::as_bool).unwrap_or(true))?;
    let instance = compact_json(valid.get("data").unwrap_or(&Value::Null));
    let schema = file.get_mut("schema")?.take();
    Some(SchemaCase { name, schema, instance })
}

/// One request of the soak: a grammar to compile and the text to walk it along.
pub enum Request<'a> {
    /// A MaskBench schema (spec-compliant options, as MaskBench checks instances).
    Schema(&'a SchemaCase),
    /// One call of any of `tools` (plain JSON, `anyOf` over the tools).
    Tools {
        /// The request's tools.
        tools: Vec<&'a Tool>,
        /// The ground-truth call (its tools are among `tools`).
        call: &'a ValidCall,
    },
}

impl Request<'_> {
    /// What a report names the request by: the MaskBench file, or the case and its tool ids.
    pub fn label(&self) -> String {
        match self {
            Request::Schema(case) => case.name.clone(),
            Request::Tools { tools, call } => {
                let ids: Vec<&str> = tools.iter().map(|t| t.id.as_str()).collect();
                format!("tools case {} ({} tools: {})", call.case, tools.len(), ids.join(","))
            }
        }
    }

    /// Compiles the request's grammar.
    ///
    /// # Errors
    /// Whatever the compiler returns.
    pub fn compile(&self, compiler: &GrammarCompiler) -> Result<CompiledGrammar, Error> {
        match self {
            Request::Schema(case) => compiler.compile_json_schema(&case.schema, &JsonSchemaOptions::spec_compliant()),
            Request::Tools { tools, .. } => PlainJson::default().compile(compiler, &PlainJson::schema(tools)),
        }
    }

    /// The text the grammar must accept.
    pub fn text(&self) -> String {
        match self {
            Request::Schema(case) => case.instance.clone(),
            Request::Tools { tools, call } => {
                let tool = tools
                    .iter()
                    .find(|t| t.name == call.call.name && call.tool_ids.contains(&t.id))
                    .expect("requests are drawn with the call's tool");
                PlainJson::default().render_call(&call.call, tool)
            }
        }
    }
}

/// Draws requests from a [`Workload`] (the tool index is built once).
pub struct Draw<'a> {
    workload: &'a Workload,
    by_id: HashMap<&'a str, &'a Tool>,
    calls: Vec<&'a ValidCall>,
    tool_share: f64,
}

impl<'a> Draw<'a> {
    /// Draws tool-calling requests with probability `tool_share` (when there are calls and
    /// schemas; else only the kind there is).
    pub fn new(workload: &'a Workload, tool_share: f64) -> Draw<'a> {
        let by_id: HashMap<&str, &Tool> = workload.tools.iter().map(|t| (t.id.as_str(), t)).collect();
        let calls = usable_calls(&workload.calls, &by_id, TOOLS_PER_REQUEST.1);
        let tool_share = match (workload.schemas.is_empty(), calls.is_empty()) {
            (true, _) => 1.0,
            (_, true) => 0.0,
            _ => tool_share.clamp(0.0, 1.0),
        };
        Draw { workload, by_id, calls, tool_share }
    }

    /// A random request.
    pub fn draw(&self, rng: &mut impl Rng) -> Request<'a> {
        if rng.random_bool(self.tool_share) {
            let call = self.calls[rng.random_range(0..self.calls.len())];
            let n = rng.random_range(TOOLS_PER_REQUEST.0..=TOOLS_PER_REQUEST.1);
            let tools = tool_set_for(call, &self.by_id, &self.workload.tools, n, rng);
            Request::Tools { tools, call }
        } else {
            Request::Schema(&self.workload.schemas[rng.random_range(0..self.workload.schemas.len())])
        }
    }
}
