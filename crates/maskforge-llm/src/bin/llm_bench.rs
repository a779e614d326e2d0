//! End-to-end benchmark of the model loop: 50 JSON Schemas of `maskbench-dev` and 20 tool-calling
//! requests (10 in the Llama JSON format, 10 in Qwen's `<tool_call>` format, tools and calls from
//! `corpus/tools`), each generated constrained and unconstrained by the test model. Prints, per
//! task family and mode: the share of valid outputs, tokens/s, forward ms per step, mask µs, the
//! constraint's overhead (the mask work the forward pass did not hide) and the tokens jump-forward
//! fed without sampling.
//!
//! `cargo run --release -p maskforge-llm --bin llm_bench -- [--schemas N] [--tools N] [--max-tokens N] [--budget-s S] [--repeat-penalty P] [--tasks I,J,..] [--constrained-only] [--quantized]`
//!
//! Greedy decoding with a repetition penalty of 1.1 (`--repeat-penalty`, both modes; 1 is
//! off): without it SmolLM2 repeats a phrase inside a string until the token limit in a quarter
//! of the schema tasks.
//!
//! The weights are expanded to `f32` at load (`Weights::Auto`; `--quantized` keeps Q4_1, whose
//! candle kernel is several times slower).
//!
//! The tasks run interleaved (schema, tool, schema, ...); with `--budget-s`, no task starts after
//! that many seconds, and the table covers the tasks done.
//!
//! Validity: a schema output must parse as JSON (code fences around it are forgiven when
//! unconstrained) and validate (`jsonschema` as judge); a tool-calling output must be accepted,
//! with the stop token, by a fresh matcher of the protocol's grammar (what `maskforge check`
//! does).

use std::collections::HashMap;
use std::path::Path;

use maskforge::{
    CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, ProtocolOptions, ToolChoice,
};
use maskforge_llm::{median, GenerateOptions, Generation, Llm, Weights};
use serde_json::Value;

/// One request of the benchmark.
struct Task {
    family: &'static str,
    system: Option<String>,
    prompt: String,
    grammar: CompiledGrammar,
    judge: Judge,
}

enum Judge {
    Schema(Value),
    Protocol,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (n_schemas, n_tools, max_tokens) = (arg("--schemas", 50), arg("--tools", 20), arg("--max-tokens", 128));
    let budget_s = arg("--budget-s", usize::MAX) as f64;
    let repeat_penalty = args
        .iter()
        .position(|a| a == "--repeat-penalty")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.1f32);
    let weights = if args.iter().any(|a| a == "--quantized") { Weights::Quantized } else { Weights::Auto };
    let fixtures = maskforge::tokenizer::fixtures_dir();
    let mut llm = Llm::load_with(&fixtures.join("model/SmolLM2-135M-Instruct.Q4_1.gguf"), weights)
        .map_err(|e| format!("{e} (run scripts/fetch-model)"))?;
    let compiler = GrammarCompiler::new(llm.vocabulary().clone(), CompilerConfig::default());
    let schemas = schema_tasks(&compiler, &fixtures.join("corpus/maskbench-dev"), n_schemas)?;
    let tools = tool_tasks(&compiler, &fixtures.join("corpus/tools"), n_tools)?;
    let tasks = interleave(schemas, tools);
    println!(
        "{} tasks, max {max_tokens} tokens each, greedy decoding, repetition penalty {repeat_penalty}, weights {}",
        tasks.len(),
        if llm.model_mut().is_dequantized() { "f32" } else { "quantized" }
    );
    let started = std::time::Instant::now();

    let mut results: Vec<(&str, &str, bool, Generation)> = Vec::new();
    // `--tasks 3,17`: only these tasks (numbers as printed), e.g. to rerun the ones that hit
    // the token limit with a larger `--max-tokens`.
    let only: Option<Vec<usize>> = args
        .iter()
        .position(|a| a == "--tasks")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect());
    let constrained_only = args.iter().any(|a| a == "--constrained-only");
    for (i, task) in tasks.iter().enumerate() {
        if only.as_ref().is_some_and(|only| !only.contains(&i)) {
            continue;
        }
        if started.elapsed().as_secs_f64() > budget_s {
            println!("time budget reached after {i} tasks");
            break;
        }
        let prompt = llm.chat_prompt_with_system(task.system.as_deref(), &task.prompt)?;
        let modes = [("constrained", Some(&task.grammar)), ("unconstrained", None)];
        for (mode, grammar) in modes.into_iter().take(if constrained_only { 1 } else { 2 }) {
            let options = GenerateOptions { max_tokens, seed: i as u64, temperature: 0.0, repeat_penalty };
            let out = llm.generate(&prompt, grammar, &options)?;
            let valid = judge(task, &out);
            eprintln!(
                "{i:3} {:6} {mode:13} valid={valid:5} {} tokens: {:.80}",
                task.family,
                out.tokens.len(),
                out.text
            );
            results.push((task.family, mode, valid, out));
        }
    }
    report(&results);
    Ok(())
}

/// The tasks of `a` and `b` alternately, in proportion to their counts.
fn interleave(a: Vec<Task>, b: Vec<Task>) -> Vec<Task> {
    let (na, nb) = (a.len(), b.len());
    let mut out = Vec::with_capacity(na + nb);
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    while a.peek().is_some() || b.peek().is_some() {
        // Take from `b` when it is behind its share of what has been taken so far.
        let taken_b = out.len() - (na - a.len());
        let take_b = b.peek().is_some() && (a.peek().is_none() || taken_b * (na + nb) <= out.len() * nb);
        out.extend(if take_b { b.next() } else { a.next() });
    }
    out
}

/// `n` schemas of the dev split, spread over its files (sorted by name), of at most 2 kB each (the
/// prompt shows the schema to a small model), that compile.
fn schema_tasks(compiler: &GrammarCompiler, dir: &Path, n: usize) -> Result<Vec<Task>, Box<dyn std::error::Error>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    let mut small = Vec::new();
    for path in files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        let schema_text = serde_json::to_string(&doc["schema"])?;
        if schema_text.len() <= 2000 {
            small.push((doc, schema_text));
        }
    }
    let stride = (small.len() / n.max(1)).max(1);
    let options = JsonSchemaOptions { any_whitespace: false, ..JsonSchemaOptions::default() };
    let mut tasks = Vec::new();
    for (doc, schema_text) in small.into_iter().step_by(stride) {
        if tasks.len() == n {
            break;
        }
        let Ok(grammar) = compiler.compile_json_schema_str(&schema_text, &options) else { continue };
        let what = doc["description"].as_str().unwrap_or("a JSON value");
        tasks.push(Task {
            family: "schema",
            system: None,
            prompt: format!(
                "Write a JSON value for {what}. Output only the JSON. It must match this JSON Schema:\n{schema_text}"
            ),
            grammar,
            judge: Judge::Schema(doc["schema"].clone()),
        });
    }
    Ok(tasks)
}

/// `n` single-call requests (`simple_python`), half for the Llama JSON format, half for Qwen's.
fn tool_tasks(compiler: &GrammarCompiler, dir: &Path, n: usize) -> Result<Vec<Task>, Box<dyn std::error::Error>> {
    let mut tools = HashMap::new();
    for line in std::fs::read_to_string(dir.join("tools.jsonl"))?.lines() {
        let tool: Value = serde_json::from_str(line)?;
        tools.insert(tool["id"].as_str().unwrap_or_default().to_string(), tool);
    }
    let cases: Vec<Value> = std::fs::read_to_string(dir.join("cases.jsonl"))?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let cases: Vec<&Value> = cases.iter().filter(|c| c["category"] == "simple_python").collect();
    let stride = (cases.len() / n.max(1)).max(1);
    let choice = ToolChoice::from_json(&serde_json::json!("required"))?;
    let options = ProtocolOptions { reasoning: false, parallel_tool_calls: false };
    let mut tasks = Vec::new();
    for (k, case) in cases.into_iter().step_by(stride).take(n).enumerate() {
        let case_tools: Vec<Value> = case["tool_ids"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|id| tools.get(id.as_str()?))
            .map(|t| serde_json::json!({"type": "function", "function": t["function"]}))
            .collect();
        let (family, protocol, format) = if k % 2 == 0 {
            ("llama", "llama", "a JSON object {\"name\": TOOL, \"parameters\": ARGUMENTS}")
        } else {
            ("qwen", "qwen", "<tool_call>\n{\"name\": TOOL, \"arguments\": ARGUMENTS}\n</tool_call>")
        };
        let grammar = compiler.compile_protocol(protocol, &case_tools, &choice, &options)?;
        let call = &case["calls"][0];
        let args: Vec<String> =
            call["arguments"].as_object().into_iter().flatten().map(|(k, v)| format!("{k} = {v}")).collect();
        let task = format!("Use {} with {}.", call["name"].as_str().unwrap_or("the tool"), args.join(", "));
        tasks.push(Task {
            family,
            system: Some(format!(
                "You can call these tools:\n{}\nTo call one, answer with {format}.",
                serde_json::to_string(&case_tools)?
            )),
            prompt: task,
            grammar,
            judge: Judge::Protocol,
        });
    }
    Ok(tasks)
}

fn judge(task: &Task, out: &Generation) -> bool {
    if !out.stopped {
        return false;
    }
    match &task.judge {
        Judge::Schema(schema) => {
            let text = out.text.trim().trim_start_matches("```json").trim_matches('`').trim();
            let Ok(value) = serde_json::from_str::<Value>(text) else { return false };
            jsonschema::validator_for(schema).is_ok_and(|v| v.is_valid(&value))
        }
        Judge::Protocol => {
            let mut matcher = GrammarMatcher::new(&task.grammar);
            let stop = *out.tokens.last().expect("stopped on a token");
            matcher.accept_string(out.text.as_bytes()) && matcher.accept_token(stop) && matcher.is_terminated()
        }
    }
}

fn report(results: &[(&str, &str, bool, Generation)]) {
    println!(
        "| tasks | mode | valid | tokens | tokens/s | decode tokens/s | forward ms (median) | mask us (median) | overhead median step | overhead all steps | jump-forward tokens |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for family in ["schema", "llama", "qwen", "all"] {
        for mode in ["constrained", "unconstrained"] {
            let rows: Vec<_> = results.iter().filter(|r| (family == "all" || r.0 == family) && r.1 == mode).collect();
            if rows.is_empty() {
                continue;
            }
            let valid = rows.iter().filter(|r| r.2).count();
            let tokens: usize = rows.iter().map(|r| r.3.tokens.len()).sum();
            let ms: f64 = rows.iter().map(|r| r.3.timing.total_ms).sum();
            let forward = median(rows.iter().flat_map(|r| r.3.timing.forward_ms.iter().skip(1).copied()));
            let mask = median(rows.iter().flat_map(|r| r.3.timing.mask_us.iter().copied()));
            let shares = rows.iter().flat_map(|r| {
                let t = &r.3.timing;
                t.wait_us.iter().zip(&t.step_ms).skip(1).map(|(w, s)| 100.0 * w / (s * 1e3))
            });
            let overhead = median(shares);
            let waited = rows.iter().flat_map(|r| r.3.timing.wait_us.iter().skip(1)).fold(0.0, |a, b| a + b);
            let decode: f64 = rows.iter().map(|r| r.3.timing.decode_ms()).sum();
            let decode_tokens: usize = rows.iter().map(|r| r.3.timing.decode_tokens()).sum();
            let jumped: usize = rows.iter().map(|r| r.3.jumped).sum();
            println!(
                "| {family} ({}) | {mode} | {valid}/{} ({:.0} %) | {tokens} | {:.1} | {:.1} | {forward:.2} | {mask:.1} | {overhead:.2} % | {:.2} % | {jumped} ({:.0} % of tokens) |",
                rows.len(),
                rows.len(),
                100.0 * valid as f64 / rows.len() as f64,
                tokens as f64 / (ms / 1e3),
                decode_tokens as f64 / (decode / 1e3).max(1e-9),
                100.0 * waited / (decode * 1e3).max(1e-9),
                100.0 * jumped as f64 / tokens.max(1) as f64,
            );
        }
    }
}
