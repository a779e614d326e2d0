//! What real grammars cost per matcher call and per matcher, in the units of the matcher's
//! hostile-input bounds (`MatcherConfig::max_step_items`, `MatcherConfig::max_state_bytes`):
//! the data behind their defaults (`docs/reliability.md`, "Limits").
//!
//! `cargo run --release -p maskforge-bench --bin step_cost -- [TOKENIZER] [EVERY] [TOOL_REQUESTS]`
//! (defaults: `llama3`, every MaskBench file, 200 tool requests per protocol; EVERY = 0 skips
//! MaskBench). Reads
//! `$MASKFORGE_FIXTURES/corpus` (default `fixtures/corpus`): the valid instances of every EVERY-th
//! MaskBench-dev file, walked under their own schema's grammar and under the builtin JSON
//! grammar; then TOOL_REQUESTS ground-truth calls of the tool corpus, 20 tools per request, as
//! plain JSON (`anyOf` over the tools) and in every protocol of `protocols/` whose texts the
//! tokenizer can spell. Every call runs with no bound (the measurement) and the default bounds
//! (a call that fails is printed: a default too tight). Prints, per family, the largest item
//! visits of a fill and of an accept (with their file), the 99th percentile of each, and the
//! largest state a matcher held, with its bytes per input byte. Then what each source's compile
//! charged to `CompilerConfig::max_compile_bytes`, compiled again cold (no cache of any kind).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use maskforge::tokenizer::load_tokenizer;
use maskforge::{
    CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, MatcherConfig,
    ProtocolOptions, TextEncoder, TokenBitmask, ToolChoice,
};
use maskforge_bench::toolbench::{self, PlainJson, ProtocolCalls, ToolProtocol};
use rand::SeedableRng;
use serde_json::Value;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The bytes cold compiles charged to the compile budget (`maskforge::last_compile_bytes`).
#[derive(Default)]
struct CompileBytes {
    all: Vec<u64>,
    max: (u64, String),
    failures: Vec<String>,
}

impl CompileBytes {
    /// Compiles again with every cache off, and notes what the compile charged.
    fn note(&mut self, vocab: &maskforge::Vocabulary, label: &str, compile: impl Fn(&GrammarCompiler) -> bool) {
        let config = CompilerConfig::default()
            .compile_timeout(Duration::from_secs(20))
            .grammar_cache_len(0)
            .rule_fsm_cache_states(0)
            .schema_fragment_cache_len(0)
            .pool_bytes(0);
        if !compile(&GrammarCompiler::new(vocab.clone(), config)) {
            self.failures.push(label.to_string());
        }
        let bytes = maskforge::last_compile_bytes();
        self.all.push(bytes);
        if bytes > self.max.0 {
            self.max = (bytes, label.to_string());
        }
    }

    fn print(&mut self, name: &str) {
        self.all.sort_unstable();
        let p99 = self.all.get(self.all.len().saturating_sub(1) * 99 / 100).copied().unwrap_or(0);
        println!("compile bytes, {name}: {} compiles, p99 {p99}, max {} ({})", self.all.len(), self.max.0, self.max.1);
        if !self.failures.is_empty() {
            println!("  {} did not compile cold (limits or errors): {:?}", self.failures.len(), self.failures);
        }
    }
}

/// The largest values seen in one family of walks, and where.
#[derive(Default)]
struct Family {
    walks: usize,
    fill: Vec<u64>,
    accept: Vec<u64>,
    /// The most item visits of a fill, where, and how long that fill took warm (µs).
    max_fill: (u64, String, f64),
    max_accept: (u64, String),
    max_state: (usize, usize, String),
    max_state_per_byte: (f64, String),
    failures: Vec<String>,
    /// Walks that started on the PDA, and those that handed over to Earley.
    pda_walks: usize,
    hand_overs: Vec<String>,
}

impl Family {
    fn print(&mut self, name: &str) {
        let p99 = |v: &mut Vec<u64>| {
            v.sort_unstable();
            v.get(v.len().saturating_sub(1) * 99 / 100).copied().unwrap_or(0)
        };
        println!(
            "{name}: {} walks, {} fills, {} accepts\n  fill items: p99 {}, max {} ({}; {:.0} us warm)\n  accept \
             items: p99 {}, max {} ({})\n  state: max {} bytes after {} input bytes ({}); max {:.0} bytes per input \
             byte ({})",
            self.walks,
            self.fill.len(),
            self.accept.len(),
            p99(&mut self.fill),
            self.max_fill.0,
            self.max_fill.1,
            self.max_fill.2,
            p99(&mut self.accept),
            self.max_accept.0,
            self.max_accept.1,
            self.max_state.0,
            self.max_state.1,
            self.max_state.2,
            self.max_state_per_byte.0,
            self.max_state_per_byte.1,
        );
        println!(
            "  PDA walks: {}, handed over to Earley: {} {:?}",
            self.pda_walks,
            self.hand_overs.len(),
            self.hand_overs
        );
        for f in &self.failures {
            println!("  FAILED under the default bounds: {f}");
        }
    }

    /// Walks `ids` with a mask before every token and after the last; `label` names the walk.
    fn walk(&mut self, grammar: &CompiledGrammar, ids: &[u32], label: &str) {
        self.walks += 1;
        let mut m = GrammarMatcher::with_config(grammar, MatcherConfig::default().max_step_items(u64::MAX));
        let mut bounded = GrammarMatcher::new(grammar);
        let on_pda = m.runs_pda();
        self.pda_walks += usize::from(on_pda);
        let mut mask = TokenBitmask::new(grammar.vocabulary().vocab_size());
        let mut bytes = 0;
        for (i, &id) in ids.iter().enumerate() {
            // The unbounded fill builds the cache entries; the bounded one, timed, is warm.
            m.fill_next_token_bitmask(mask.as_words_mut());
            let t = Instant::now();
            if let Err(e) = bounded.try_fill_next_token_bitmask(mask.as_words_mut()) {
                self.failures.push(format!("{label} fill before token {i}: {e}"));
                return;
            }
            self.note_fill(&m, label, i, t.elapsed().as_secs_f64() * 1e6);
            if !m.accept_token(id) {
                return;
            }
            self.note_accept(m.last_step_items(), label, i);
            if let Err(e) = bounded.try_accept_token(id) {
                self.failures.push(format!("{label} token {i}: {e}"));
                return;
            }
            bytes += grammar.vocabulary().token_bytes(id).len().max(1);
        }
        m.fill_next_token_bitmask(mask.as_words_mut());
        self.note_fill(&m, label, ids.len(), f64::NAN);
        if on_pda && !m.runs_pda() {
            self.hand_overs.push(label.to_string());
        }
        let state = m.state_bytes();
        if state > self.max_state.0 {
            self.max_state = (state, bytes, label.to_string());
        }
        let per_byte = state as f64 / bytes.max(1) as f64;
        if bytes >= 64 && per_byte > self.max_state_per_byte.0 {
            self.max_state_per_byte = (per_byte, label.to_string());
        }
    }

    fn note_fill(&mut self, m: &GrammarMatcher, label: &str, i: usize, warm_us: f64) {
        let items = m.last_step_items();
        self.fill.push(items);
        if items > self.max_fill.0 {
            let engine = if m.runs_pda() { "PDA" } else { "Earley" };
            let at = format!("{label} before token {i}, {engine}, {} current items", m.current_items());
            self.max_fill = (items, at, warm_us);
        }
    }

    fn note_accept(&mut self, items: u64, label: &str, i: usize) {
        self.accept.push(items);
        if items > self.max_accept.0 {
            self.max_accept = (items, format!("{label} token {i}"));
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    maskforge_bench::allocator::configure();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tokenizer = args.first().map_or("llama3", String::as_str);
    let every: usize = args.get(1).map_or(Ok(1), |s| s.parse())?;
    let tool_requests: usize = args.get(2).map_or(Ok(200), |s| s.parse())?;
    let fixtures = PathBuf::from(std::env::var("MASKFORGE_FIXTURES").unwrap_or_else(|_| "fixtures".into()));
    let corpus = fixtures.join("corpus");
    let (vocab, encoder) = load_tokenizer(tokenizer)?;
    let config = CompilerConfig::default().compile_timeout(Duration::from_secs(20));
    let compiler = GrammarCompiler::new(vocab, config);
    let json = compiler.compile_builtin_json_grammar()?;

    let (mut schemas, mut builtin) = (Family::default(), Family::default());
    let mut compile_bytes = CompileBytes::default();
    let vocab = compiler.vocabulary().clone();
    compile_bytes.note(&vocab, "builtin JSON grammar", |c| c.compile_builtin_json_grammar().is_ok());
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(corpus.join("maskbench-dev"))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    // EVERY = 0: the tool requests only.
    files.truncate(if every == 0 { 0 } else { files.len() });
    for path in files.iter().step_by(every.max(1)) {
        let name = path.file_name().unwrap_or_default().to_string_lossy().to_string();
        let file: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        let Some(schema) = file.get("schema") else { continue };
        let grammar = compiler.compile_json_schema(schema, &JsonSchemaOptions::default()).ok();
        if grammar.is_some() {
            compile_bytes.note(&vocab, &name, |c| c.compile_json_schema(schema, &JsonSchemaOptions::default()).is_ok());
        }
        for test in file.get("tests").and_then(Value::as_array).into_iter().flatten() {
            if !test.get("valid").and_then(Value::as_bool).unwrap_or(true) {
                continue;
            }
            let text = serde_json::to_string(test.get("data").unwrap_or(&Value::Null))?;
            let Ok(ids) = encoder.encode_for_matching(&text) else { continue };
            if let Some(g) = &grammar {
                schemas.walk(g, &ids, &name);
            }
            builtin.walk(&json, &ids, &name);
        }
    }
    schemas.print("MaskBench schemas");
    builtin.print("builtin JSON grammar on the MaskBench instances");

    let tools = toolbench::load_tools(&corpus.join("tools"))?;
    let calls = toolbench::load_valid_calls(&corpus.join("tools"))?;
    let by_id: HashMap<&str, &toolbench::Tool> = tools.iter().map(|t| (t.id.as_str(), t)).collect();
    let usable = toolbench::usable_calls(&calls, &by_id, 20);
    let mut protocols: Vec<Box<dyn ToolProtocol>> = vec![Box::new(PlainJson::default())];
    for entry in std::fs::read_dir("protocols")? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path.file_stem().unwrap_or_default().to_string_lossy().to_string();
            let choice = ToolChoice::from_json(&Value::from("auto"))?;
            // Harmony's example response starts with its analysis channel.
            let options = ProtocolOptions { reasoning: name == "harmony", ..ProtocolOptions::default() };
            if let Ok(p) = ProtocolCalls::new(&name, choice, options) {
                protocols.push(Box::new(p));
            }
        }
    }
    for protocol in &protocols {
        let mut family = Family::default();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mut skipped = 0;
        for call in usable.iter().take(tool_requests) {
            let set = toolbench::tool_set_for(call, &by_id, &tools, 20, &mut rng);
            let request = protocol.request(&set);
            let Ok(grammar) = protocol.compile(&compiler, &request) else {
                skipped += 1;
                continue;
            };
            let label = format!("{} {}", protocol.name(), call.case);
            compile_bytes.note(&vocab, &label, |c| protocol.compile(c, &request).is_ok());
            let tool = set.iter().find(|t| t.name == call.call.name && call.tool_ids.contains(&t.id)).expect("drawn");
            let text = protocol.render_call(&call.call, tool);
            let ids = encode(&encoder, &text, protocol.encodes_special_tokens());
            match ids {
                Some(ids) => family.walk(&grammar, &ids, &call.case),
                None => skipped += 1,
            }
        }
        family.print(&format!("tools, {} ({skipped} requests skipped)", protocol.name()));
    }
    compile_bytes.print("every source above");
    Ok(())
}

fn encode(encoder: &TextEncoder, text: &str, special: bool) -> Option<Vec<u32>> {
    if special { encoder.encode(text) } else { encoder.encode_for_matching(text) }.ok()
}
