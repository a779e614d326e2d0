//! The tool-calling benchmark (the library side of `maskforge toolbench`), after XGrammar-2 §4.1.
//!
//! A run compiles `requests` request grammars, each allowing one call of any of
//! `tools_per_request` tools drawn from a tool pool, in one of two settings:
//!
//! * **static**: every request allows the same tools (in the same order);
//! * **dynamic**: every request draws its tools at random.
//!
//! Each request also carries one ground-truth call (`cases.jsonl` next to the tool file): the
//! request's tools are the case's tools plus random others, so every request has a valid call
//! to check. The call is rendered by the request's [`ToolProtocol`], tokenized, and accepted
//! token by token with a mask filled before every token.
//!
//! Per request it measures the compile time (the whole-grammar cache lookup included, building
//! the request's JSON — [`ToolProtocol::request`], the client's work — excluded), the
//! time to first mask (compile + first mask: what a request waits for before decoding), and
//! the mask time per step of the valid call. Reuse is reported at two levels, as Table 1 of
//! the paper: *structure reuse* (the share of requests answered by the whole-grammar cache)
//! and *sub-structure reuse* (the share of cache entries acquired during the run that the
//! cross-grammar pool served, perfect or partial hits, instead of walking the vocabulary).
//!
//! # The protocol seam
//!
//! [`ToolProtocol`] turns the chosen tools into a request and a compiled grammar, and a ground-truth call into
//! the text a model would emit. [`PlainJson`] is the default (`{"name": ..., "arguments":
//! {...}}` with `anyOf` over the tools); model-specific formats plug in through the same trait.
//!
//! # Tool files
//!
//! One tool per line, OpenAI style: `{"id", "type": "function", "function": {"name",
//! "description", "parameters"}}`; cases: `{"id", "tool_ids", "calls": [{"name",
//! "arguments"}], "expect"}` (only `expect: "calls"` cases are used).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::stats::Summary;
use maskforge::CompiledGrammar;
use maskforge::Error;
use maskforge::GrammarCompiler;
use maskforge::GrammarMatcher;
use maskforge::JsonSchemaOptions;
use maskforge::PoolStats;
use maskforge::TextEncoder;
use maskforge::TokenBitmask;
use maskforge::{Protocol, ProtocolOptions, ToolChoice};

/// One tool of the pool.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    /// The pool's id of the tool.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The JSON Schema of the arguments.
    pub parameters: Value,
}

/// A ground-truth call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The function name.
    pub name: String,
    /// The arguments.
    pub arguments: Value,
}

/// A call known to be valid, with the tools its case offers.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidCall {
    /// The case id.
    pub case: String,
    /// The tool ids of the case.
    pub tool_ids: Vec<String>,
    /// The call.
    pub call: ToolCall,
}

/// How a request's tools become a grammar, and a call becomes text (see the module docs).
pub trait ToolProtocol: Send + Sync {
    /// The protocol's name in reports.
    fn name(&self) -> &str;
    /// The request a serving engine receives for `tools`, as JSON: the response schema (plain
    /// JSON) or the OpenAI-shaped tool list (protocols). Building it is the client's work, so
    /// [`run_setting`] does not time it.
    fn request(&self, tools: &[&Tool]) -> Value;
    /// Compiles the grammar of one call of any of the tools of `request` (from
    /// [`ToolProtocol::request`]).
    ///
    /// # Errors
    /// Whatever the compiler returns for the generated grammar.
    fn compile(&self, compiler: &GrammarCompiler, request: &Value) -> Result<CompiledGrammar, Error>;
    /// The text a model emits for `call` of `tool`.
    fn render_call(&self, call: &ToolCall, tool: &Tool) -> String;
    /// Whether special-token texts in the rendered call (`<|call|>`) stand for the special
    /// tokens (protocol formats) rather than for plain text (default: plain text).
    fn encodes_special_tokens(&self) -> bool {
        false
    }
}

/// Calls in a model family's protocol format (`protocols/NAME.json`): the request grammar is
/// [`GrammarCompiler::compile_protocol`] with the chosen tools, the rendered call is the file's
/// `example_response` (free text or reasoning around one call).
#[derive(Clone, Debug)]
pub struct ProtocolCalls {
    protocol: Protocol,
    /// The `tool_choice` of every request.
    pub tool_choice: ToolChoice,
    /// Reasoning and parallel-call options of every request.
    pub options: ProtocolOptions,
}

impl ProtocolCalls {
    /// The protocol `name` (or alias).
    ///
    /// # Errors
    /// An unknown protocol (the message lists the known ones), or one whose file has no
    /// `example_response` to render calls with.
    pub fn new(name: &str, tool_choice: ToolChoice, options: ProtocolOptions) -> Result<Self, String> {
        let protocol = Protocol::by_name(name).map_err(|e| e.to_string())?;
        if protocol.example_response("", "").is_none() {
            return Err(format!("{}.json has no `example_response`: toolbench cannot render its calls", protocol.name));
        }
        Ok(ProtocolCalls { protocol, tool_choice, options })
    }
}

impl ToolProtocol for ProtocolCalls {
    fn name(&self) -> &str {
        &self.protocol.name
    }
    fn request(&self, tools: &[&Tool]) -> Value {
        // Pools may hold several tools of one name (other schemas): a protocol names each
        // function once, so such tools become one function whose arguments follow any of them.
        let mut by_name: Vec<(&str, Vec<&Value>)> = Vec::new();
        for t in tools {
            match by_name.iter_mut().find(|(n, _)| *n == t.name) {
                Some((_, schemas)) => schemas.push(&t.parameters),
                None => by_name.push((&t.name, vec![&t.parameters])),
            }
        }
        let tools: Vec<Value> = by_name
            .into_iter()
            .map(|(name, schemas)| {
                let parameters = match schemas.as_slice() {
                    [one] => (*one).clone(),
                    many => json!({ "anyOf": many }),
                };
                json!({"type": "function", "function": {"name": name, "parameters": parameters}})
            })
            .collect();
        Value::Array(tools)
    }
    fn compile(&self, compiler: &GrammarCompiler, request: &Value) -> Result<CompiledGrammar, Error> {
        let tools = request.as_array().map_or(&[][..], Vec::as_slice);
        compiler.compile_protocol(&self.protocol.name, tools, &self.tool_choice, &self.options)
    }
    fn render_call(&self, call: &ToolCall, tool: &Tool) -> String {
        let args = order_like_schema(&call.arguments, &tool.parameters).to_string();
        self.protocol.example_response(&call.name, &args).expect("checked in ProtocolCalls::new")
    }
    fn encodes_special_tokens(&self) -> bool {
        true
    }
}

/// Plain JSON calls: `{"name": NAME, "arguments": ARGS}`, `anyOf` over the tools, arguments
/// following each tool's parameter schema.
#[derive(Clone, Debug, Default)]
pub struct PlainJson {
    /// The JSON Schema options (default: XGrammar's, properties in declared order).
    pub options: JsonSchemaOptions,
}

impl PlainJson {
    /// The request schema for `tools`.
    pub fn schema(tools: &[&Tool]) -> Value {
        let branches: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({
                    "type": "object",
                    "properties": {"name": {"const": t.name}, "arguments": t.parameters},
                    "required": ["name", "arguments"],
                    "additionalProperties": false,
                })
            })
            .collect();
        json!({ "anyOf": branches })
    }
}

impl ToolProtocol for PlainJson {
    fn name(&self) -> &str {
        "json"
    }
    fn request(&self, tools: &[&Tool]) -> Value {
        Self::schema(tools)
    }
    fn compile(&self, compiler: &GrammarCompiler, request: &Value) -> Result<CompiledGrammar, Error> {
        compiler.compile_json_schema(request, &self.options)
    }
    fn render_call(&self, call: &ToolCall, tool: &Tool) -> String {
        // Declared property order (what the grammar enforces with the default options), compact.
        let args = order_like_schema(&call.arguments, &tool.parameters);
        let mut m = Map::new();
        m.insert("name".into(), Value::String(call.name.clone()));
        m.insert("arguments".into(), args);
        Value::Object(m).to_string()
    }
}

/// `value` with object keys in the order of the schema's `properties` (others after, as they
/// were), recursively through `properties` and `items`.
pub fn order_like_schema(value: &Value, schema: &Value) -> Value {
    match value {
        Value::Object(obj) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let mut out = Map::new();
            if let Some(props) = props {
                for (k, sub) in props {
                    if let Some(v) = obj.get(k) {
                        out.insert(k.clone(), order_like_schema(v, sub));
                    }
                }
            }
            for (k, v) in obj {
                if !out.contains_key(k) {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let sub = schema.get("items").cloned().unwrap_or(Value::Null);
            Value::Array(items.iter().map(|v| order_like_schema(v, &sub)).collect())
        }
        v => v.clone(),
    }
}

/// Reads tools: a `.jsonl` file, or a folder holding `tools.jsonl`.
///
/// # Errors
/// A message naming the file and line.
pub fn load_tools(path: &Path) -> Result<Vec<Tool>, String> {
    let file = tools_file(path);
    read_jsonl(&file)?
        .into_iter()
        .map(|(line, v)| {
            let f = v.get("function").unwrap_or(&v);
            let name = f.get("name").and_then(Value::as_str);
            let parameters = f.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"}));
            let id = v.get("id").and_then(Value::as_str).map(str::to_owned).or_else(|| name.map(str::to_owned));
            match (id, name) {
                (Some(id), Some(name)) => Ok(Tool { id, name: name.to_owned(), parameters }),
                _ => Err(format!("{}:{line}: a tool needs `function.name`", file.display())),
            }
        })
        .collect()
}

/// Reads the valid calls of `cases.jsonl` next to the tools (one [`ValidCall`] per call of
/// every case with `expect: "calls"`).
///
/// # Errors
/// A message naming the file and line.
pub fn load_valid_calls(tools_path: &Path) -> Result<Vec<ValidCall>, String> {
    let file = tools_file(tools_path).with_file_name("cases.jsonl");
    let mut out = Vec::new();
    for (line, v) in read_jsonl(&file)? {
        if v.get("expect").and_then(Value::as_str) != Some("calls") {
            continue;
        }
        let case = v.get("id").and_then(Value::as_str).unwrap_or("").to_owned();
        let tool_ids: Vec<String> = serde_json::from_value(v.get("tool_ids").cloned().unwrap_or(Value::Null))
            .map_err(|e| format!("{}:{line}: tool_ids: {e}", file.display()))?;
        let calls: Vec<ToolCall> = serde_json::from_value(v.get("calls").cloned().unwrap_or(Value::Null))
            .map_err(|e| format!("{}:{line}: calls: {e}", file.display()))?;
        out.extend(calls.into_iter().map(|call| ValidCall { case: case.clone(), tool_ids: tool_ids.clone(), call }));
    }
    Ok(out)
}

fn tools_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("tools.jsonl")
    } else {
        path.to_path_buf()
    }
}

fn read_jsonl(file: &Path) -> Result<Vec<(usize, Value)>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map(|v| (i + 1, v)).map_err(|e| format!("{}:{}: {e}", file.display(), i + 1))
        })
        .collect()
}

/// Static or dynamic tool sets (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// The same tools in every request.
    Static,
    /// Tools drawn at random per request.
    Dynamic,
}

/// One run's parameters.
#[derive(Clone, Debug)]
pub struct ToolBenchConfig {
    /// Tools allowed per request.
    pub tools_per_request: usize,
    /// Static or dynamic.
    pub setting: Setting,
    /// Number of requests.
    pub requests: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Fill a mask before every token of the valid call (else only the first mask).
    pub masks: bool,
}

/// p50, p99 and max of a sample, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

impl From<Summary> for Percentiles {
    fn from(s: Summary) -> Self {
        Percentiles { p50: s.p50, p99: s.p99, max: s.max }
    }
}

/// The pool counters at the end of a run, and the largest byte count seen after any request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PoolReport {
    /// Perfect hits.
    pub hits: u64,
    /// Partial hits (another follow set).
    pub partial_hits: u64,
    /// Misses (walks of shareable entries).
    pub misses: u64,
    /// Stored items at the end.
    pub entries: usize,
    /// Bytes at the end.
    pub bytes: usize,
    /// Largest byte count observed after a request.
    pub max_bytes: usize,
    /// Evictions.
    pub evictions: u64,
    /// The budget.
    pub budget: usize,
}

/// The result of one setting (the `--json` object of `maskforge toolbench`).
#[derive(Clone, Debug, Serialize)]
pub struct SettingReport {
    /// The protocol's name.
    pub protocol: String,
    /// Tools per request.
    pub tools_per_request: usize,
    /// Static or dynamic.
    pub setting: Setting,
    /// Requests run.
    pub requests: usize,
    /// Share of cache entries acquired during the run that the pool served.
    pub reuse_rate: f64,
    /// Share of requests answered by the whole-grammar cache.
    pub structure_reuse_rate: f64,
    /// Compile time per request.
    pub compile_us: Percentiles,
    /// Compile + first mask per request.
    pub first_mask_us: Percentiles,
    /// Mask time per later step of the valid calls.
    pub tbm_us: Percentiles,
    /// Valid calls accepted token by token (and able to end).
    pub valid_calls_accepted: usize,
    /// Valid calls tried.
    pub valid_calls_total: usize,
    /// Entries acquired during the run, by origin: (pool hit, partial hit, walked).
    pub entries_acquired: (usize, usize, usize),
    /// Pool counters.
    pub pool: PoolReport,
    /// Ids of the first rejected valid calls (at most 10), for diagnosis.
    pub rejected: Vec<String>,
    /// Wall time of the run, seconds.
    pub wall_s: f64,
}

/// The tools and the valid call of one request.
struct Request<'a> {
    tools: Vec<&'a Tool>,
    call: &'a ValidCall,
}

/// Draws the requests of a run (deterministic for a seed).
fn draw_requests<'a>(
    tools: &'a [Tool],
    calls: &'a [ValidCall],
    config: &ToolBenchConfig,
) -> Result<Vec<Request<'a>>, String> {
    let by_id: HashMap<&str, &Tool> = tools.iter().map(|t| (t.id.as_str(), t)).collect();
    let n = config.tools_per_request;
    if n == 0 || n > tools.len() {
        return Err(format!("--tools-per-request {n}: the pool has {} tools", tools.len()));
    }
    // Calls whose tools are all in the pool and fit in a request.
    let usable = usable_calls(calls, &by_id, n);
    if usable.is_empty() {
        return Err("no valid call's tools are in the tool pool".into());
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(config.seed);
    let tool_set = |rng: &mut rand::rngs::StdRng, call: &ValidCall| tool_set_for(call, &by_id, tools, n, rng);
    let mut out = Vec::with_capacity(config.requests);
    match config.setting {
        Setting::Dynamic => {
            for _ in 0..config.requests {
                let call = usable[rng.random_range(0..usable.len())];
                out.push(Request { tools: tool_set(&mut rng, call), call });
            }
        }
        Setting::Static => {
            let first = usable[rng.random_range(0..usable.len())];
            let set = tool_set(&mut rng, first);
            let fits: Vec<&ValidCall> = usable
                .iter()
                .copied()
                .filter(|c| c.tool_ids.iter().all(|id| set.iter().any(|t| t.id == *id)))
                .collect();
            for _ in 0..config.requests {
                let call = fits[rng.random_range(0..fits.len())];
                out.push(Request { tools: set.clone(), call });
            }
        }
    }
    Ok(out)
}

/// A request's tools: the tools of `call`'s case plus random others from `tools`, `n` in all
/// (fewer only when the pool is smaller), in random order. `by_id` indexes `tools` by id and
/// holds every tool of the case ([`usable_calls`] keeps only such calls).
pub fn tool_set_for<'a>(
    call: &ValidCall,
    by_id: &HashMap<&str, &'a Tool>,
    tools: &'a [Tool],
    n: usize,
    rng: &mut impl Rng,
) -> Vec<&'a Tool> {
    let mut set: Vec<&Tool> = call.tool_ids.iter().map(|id| by_id[id.as_str()]).collect();
    set.dedup_by_key(|t| t.id.as_str());
    let n = n.min(tools.len());
    while set.len() < n {
        let t = &tools[rng.random_range(0..tools.len())];
        if !set.iter().any(|s| s.id == t.id) {
            set.push(t);
        }
    }
    set.shuffle(rng);
    set
}

/// The calls whose case's tools are all in the pool (`by_id`), at most `max_tools` of them, one
/// of them named as the call.
pub fn usable_calls<'a>(calls: &'a [ValidCall], by_id: &HashMap<&str, &Tool>, max_tools: usize) -> Vec<&'a ValidCall> {
    calls
        .iter()
        .filter(|c| {
            !c.tool_ids.is_empty()
                && c.tool_ids.len() <= max_tools
                && c.tool_ids.iter().all(|id| by_id.contains_key(id.as_str()))
                && c.tool_ids.iter().any(|id| by_id[id.as_str()].name == c.call.name)
        })
        .collect()
}

/// Runs one setting on `compiler` (use a fresh compiler per setting for a cold pool).
///
/// # Errors
/// A message when the requests cannot be drawn, a request does not compile, or a call cannot
/// be tokenized.
pub fn run_setting(
    compiler: &GrammarCompiler,
    encoder: &TextEncoder,
    protocol: &dyn ToolProtocol,
    tools: &[Tool],
    calls: &[ValidCall],
    config: &ToolBenchConfig,
) -> Result<SettingReport, String> {
    let wall = Instant::now();
    let requests = draw_requests(tools, calls, config)?;
    let vocab = compiler.vocabulary();
    let mut mask = TokenBitmask::new(vocab.vocab_size());
    let (mut compile_us, mut first_us, mut tbm_us) = (Vec::new(), Vec::new(), Vec::new());
    let (mut accepted, mut rejected) = (0usize, Vec::new());
    let mut acquired = (0usize, 0usize, 0usize);
    let mut max_bytes = 0usize;
    let grammar_hits_before = compiler.grammar_cache_stats().hits;
    for req in &requests {
        let request = protocol.request(&req.tools);
        let t = Instant::now();
        let grammar = protocol.compile(compiler, &request).map_err(|e| format!("request compile: {e}"))?;
        let c_us = t.elapsed().as_secs_f64() * 1e6;
        let before = grammar.mask_cache_stats();
        let mut m = GrammarMatcher::new(&grammar);
        let t = Instant::now();
        m.fill_next_token_bitmask(mask.as_words_mut());
        let f_us = t.elapsed().as_secs_f64() * 1e6;
        compile_us.push(c_us);
        first_us.push(c_us + f_us);
        let tool = req
            .tools
            .iter()
            .find(|t| t.name == req.call.call.name && req.call.tool_ids.contains(&t.id))
            .expect("requests are drawn with the call's tool");
        let text = protocol.render_call(&req.call.call, tool);
        let ids =
            if protocol.encodes_special_tokens() { encoder.encode(&text) } else { encoder.encode_for_matching(&text) }
                .map_err(|e| format!("{}: {e}", req.call.case))?;
        let mut ok = true;
        for (i, &id) in ids.iter().enumerate() {
            if i > 0 && config.masks {
                let t = Instant::now();
                m.fill_next_token_bitmask(mask.as_words_mut());
                tbm_us.push(t.elapsed().as_secs_f64() * 1e6);
            }
            let allowed = !config.masks || mask.get(id as usize);
            if !allowed || !m.accept_token(id) {
                ok = false;
                break;
            }
        }
        if ok && config.masks {
            let t = Instant::now();
            m.fill_next_token_bitmask(mask.as_words_mut());
            tbm_us.push(t.elapsed().as_secs_f64() * 1e6);
        }
        // A call that ends in a stop token the grammar reads as its last terminal (Harmony's `<|call|>`
        // with no tokenizer_config.json: a default stop token) has terminated the matcher.
        if ok && (m.is_terminated() || m.can_terminate()) {
            accepted += 1;
        } else if rejected.len() < 10 {
            rejected.push(req.call.case.clone());
        }
        let after = grammar.mask_cache_stats();
        acquired.0 += after.pool_hits - before.pool_hits;
        acquired.1 += after.pool_partial_hits - before.pool_partial_hits;
        acquired.2 += (after.pool_misses + after.unshared) - (before.pool_misses + before.unshared);
        max_bytes = max_bytes.max(compiler.pool_stats().bytes);
    }
    let total = acquired.0 + acquired.1 + acquired.2;
    let p: PoolStats = compiler.pool_stats();
    Ok(SettingReport {
        protocol: protocol.name().to_owned(),
        tools_per_request: config.tools_per_request,
        setting: config.setting,
        requests: requests.len(),
        reuse_rate: if total == 0 { 0.0 } else { (acquired.0 + acquired.1) as f64 / total as f64 },
        structure_reuse_rate: (compiler.grammar_cache_stats().hits - grammar_hits_before) as f64
            / requests.len().max(1) as f64,
        compile_us: Summary::of(&compile_us).into(),
        first_mask_us: Summary::of(&first_us).into(),
        tbm_us: Summary::of(&tbm_us).into(),
        valid_calls_accepted: accepted,
        valid_calls_total: requests.len(),
        entries_acquired: acquired,
        pool: PoolReport {
            hits: p.hits,
            partial_hits: p.partial_hits,
            misses: p.misses,
            entries: p.entries,
            bytes: p.bytes,
            max_bytes,
            evictions: p.evictions,
            budget: p.budget,
        },
        rejected,
        wall_s: wall.elapsed().as_secs_f64(),
    })
}
