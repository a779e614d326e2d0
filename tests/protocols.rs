//! Every protocol case of `tests/data/protocols/cases.jsonl` (this project's test data, written
//! from each format's documentation in `protocols/`, with the tools of `tools.json`): a valid
//! output is accepted token by token with the family's real tokenizer and can end there; an
//! invalid one is rejected (a token refused, or the output cannot end). The protocol is found by
//! the case's `format` (protocol aliases), never by its id, so hold-out cases run the same way.
//! `MASKFORGE_PRINT_CASES=1 cargo test --release --tests protocols -- --nocapture` prints every
//! case's outcome (where an invalid output is rejected).

use std::collections::BTreeMap;

use maskforge::{protocol_names, Protocol, ProtocolOptions, ToolChoice};
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, Vocabulary};
use serde_json::Value;

use crate::support::fixtures::{encode_with_special, load};
use crate::support::small_vocab::byte_vocab;

/// The protocol cases and their tools, committed with the tests.
const CASES_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/protocols");

struct Case {
    id: String,
    family: String,
    format: String,
    tools: Vec<String>,
    tool_choice: String,
    reasoning: bool,
    output: String,
    valid: bool,
}

fn cases() -> (Vec<Case>, BTreeMap<String, Value>) {
    let read = |name: &str| {
        std::fs::read_to_string(format!("{CASES_DIR}/{name}")).unwrap_or_else(|e| panic!("{CASES_DIR}/{name}: {e}"))
    };
    let text = read("cases.jsonl");
    let tools: BTreeMap<String, Value> = serde_json::from_str(&read("tools.json")).unwrap();
    let cases = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap_or_else(|| panic!("{k} in {l}")).to_string();
            Case {
                id: s("id"),
                family: s("family"),
                format: s("format"),
                tools: v["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect(),
                tool_choice: s("tool_choice"),
                reasoning: v["reasoning"].as_bool().unwrap(),
                output: s("output"),
                valid: v["valid"].as_bool().unwrap(),
            }
        })
        .collect();
    (cases, tools)
}

/// The vocabulary and token ids of `text` for a tokenizer name (`bytes` = character level,
/// for the families without a tokenizer in the fixtures);
/// special tokens' texts are encoded as the special tokens.
fn encode(tokenizer: &str, text: &str) -> (Vocabulary, Vec<u32>) {
    if tokenizer == "bytes" {
        return (byte_vocab(), text.bytes().map(u32::from).collect());
    }
    let ids = encode_with_special(tokenizer, text);
    let mut vocab = load(tokenizer).0.clone();
    if tokenizer == "gptoss" {
        // gpt-oss's generation config stops at <|return|>, <|endoftext|> and <|call|>.
        let stops = ["<|return|>", "<|endoftext|>", "<|call|>"].map(|t| vocab.token_id(t).unwrap());
        vocab = vocab.with_stop_tokens(stops).unwrap();
    }
    (vocab, ids)
}

/// Runs one case with one tokenizer: `Ok(())` when the outcome matches `valid`.
fn run(case: &Case, tools: &BTreeMap<String, Value>, tokenizer: &str) -> Result<(), String> {
    let protocol = Protocol::by_name(&case.format).map_err(|e| e.to_string())?;
    let offered: Vec<Value> = case.tools.iter().map(|n| tools[n].clone()).collect();
    let choice = ToolChoice::from_json(&Value::String(case.tool_choice.clone())).unwrap();
    let options = ProtocolOptions { reasoning: case.reasoning, parallel_tool_calls: true };
    let tag = protocol.structural_tag(&offered, &choice, &options).map_err(|e| e.to_string())?;
    let (vocab, ids) = encode(tokenizer, &case.output);
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let grammar = compiler.compile_structural_tag(&tag).map_err(|e| format!("compile: {e}"))?;
    let mut m = GrammarMatcher::new(&grammar);
    let mut outcome = Ok(());
    for (i, &id) in ids.iter().enumerate() {
        if m.is_terminated() {
            outcome = Err(format!("token {i} after the end of generation"));
            break;
        }
        if !m.accept_token(id) {
            let before = String::from_utf8_lossy(&vocab.concat_bytes(&ids[..i])).into_owned();
            outcome = Err(format!("token {i} ({:?}) rejected after {before:?}", vocab.token_text_lossy(id)));
            break;
        }
    }
    if outcome.is_ok() && !(m.is_terminated() || m.can_terminate()) {
        outcome = Err("cannot end after the whole output".into());
    }
    if std::env::var_os("MASKFORGE_PRINT_CASES").is_some() {
        println!(
            "{:<26} {:<7} valid={:<5} {}",
            case.id,
            tokenizer,
            case.valid,
            outcome.as_ref().err().map_or("accepted", |s| s.as_str())
        );
    }
    match (case.valid, outcome) {
        (true, Ok(())) | (false, Err(_)) => Ok(()),
        (true, Err(why)) => Err(format!("valid but {why}")),
        (false, Ok(())) => Err("invalid but accepted".into()),
    }
}

/// The real tokenizers of a family; families without one run at character level and with the
/// Llama 3 tokenizer (whose tokens span their markup in other ways).
fn tokenizers(family: &str) -> &'static [&'static str] {
    match family {
        "harmony" => &["gptoss"],
        "llama" => &["llama3"],
        "qwen" => &["qwen3"],
        _ => &["bytes", "llama3"],
    }
}

fn check_family(families: &[&str]) {
    let (cases, tools) = cases();
    let mut failures = Vec::new();
    let mut n = 0;
    for case in cases.iter().filter(|c| families.contains(&c.family.as_str())) {
        for tok in tokenizers(&case.family) {
            n += 1;
            if let Err(why) = run(case, &tools, tok) {
                failures.push(format!("{} [{tok}] (valid={}): {why}", case.id, case.valid));
            }
        }
    }
    assert!(n > 0, "no cases for {families:?}");
    assert!(failures.is_empty(), "{} of {n} runs failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn harmony_cases() {
    check_family(&["harmony"]);
}

#[test]
fn llama_cases() {
    check_family(&["llama"]);
}

#[test]
fn qwen_cases() {
    check_family(&["qwen"]);
}

#[test]
fn deepseek_kimi_glm_cases() {
    check_family(&["deepseek", "kimi", "glm"]);
}

#[test]
fn minimax_cases() {
    check_family(&["minimax"]);
}

/// Every case runs in one of the family tests above, and every embedded protocol has at least
/// one valid and one invalid case.
#[test]
fn every_protocol_has_valid_and_invalid_cases() {
    let (cases, tools) = cases();
    let families = ["harmony", "llama", "qwen", "deepseek", "kimi", "glm", "minimax"];
    let mut seen: BTreeMap<String, [bool; 2]> = BTreeMap::new();
    for c in &cases {
        assert!(families.contains(&c.family.as_str()), "{}: family {} is not tested", c.id, c.family);
        let protocol = Protocol::by_name(&c.format).unwrap_or_else(|e| panic!("{}: {e}", c.id));
        seen.entry(protocol.name).or_default()[usize::from(c.valid)] = true;
        for t in &c.tools {
            assert!(tools.contains_key(t), "{}: tool {t} is not in tools.json", c.id);
        }
    }
    for name in protocol_names() {
        assert_eq!(seen.get(name), Some(&[true, true]), "{name}: a valid and an invalid case are needed");
    }
}

/// A tool met in an earlier request is not lowered again: its JSON Schema comes from the
/// compiler's fragment cache, and the request grammar is the one a fresh compiler builds.
#[test]
fn a_tool_of_an_earlier_request_comes_from_the_fragment_cache() {
    let tool = |name: &str, prop: &str| {
        serde_json::json!({"type": "function", "function": {"name": name, "parameters": {
            "type": "object", "properties": {prop: {"type": "string"}}, "required": [prop]}}})
    };
    let (a, b, c) = (tool("alpha", "x"), tool("bravo", "y"), tool("charlie", "z"));
    let options = ProtocolOptions::default();
    let warm = GrammarCompiler::new(byte_vocab(), CompilerConfig::default());
    warm.compile_protocol("qwen", &[a, b.clone()], &ToolChoice::Auto, &options).unwrap();
    let before = warm.schema_fragment_stats();
    let g = warm.compile_protocol("qwen", &[b.clone(), c.clone()], &ToolChoice::Auto, &options).unwrap();
    let after = warm.schema_fragment_stats();
    assert_eq!((after.hits - before.hits, after.misses - before.misses), (1, 1), "bravo is a hit, charlie is lowered");
    let cold = GrammarCompiler::new(byte_vocab(), CompilerConfig::default());
    let fresh = cold.compile_protocol("qwen", &[b, c], &ToolChoice::Auto, &options).unwrap();
    assert_eq!(g.grammar().to_string(), fresh.grammar().to_string());
}

/// Requests of one protocol with other tools share the free-text base of their dispatch through
/// the pool (it depends on the triggers, not on the tools); the second request's masks, on a
/// path through free text, the trigger and a call, equal the oracle's (real qwen3 tokenizer).
#[test]
fn the_free_text_base_is_shared_by_requests_with_other_tools() {
    let tool = |name: &str, prop: &str| {
        serde_json::json!({"type": "function", "function": {"name": name, "parameters": {
            "type": "object", "properties": {prop: {"type": "string"}}, "required": [prop]}}})
    };
    let vocab = load("qwen3").0.clone();
    let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
    let options = ProtocolOptions { reasoning: false, ..ProtocolOptions::default() };
    let first = compiler.compile_protocol("qwen", &[tool("alpha", "x")], &ToolChoice::Auto, &options).unwrap();
    crate::support::oracle_check::checked_mask(&mut GrammarMatcher::new(&first)).unwrap();
    let second = compiler.compile_protocol("qwen", &[tool("bravo", "y")], &ToolChoice::Auto, &options).unwrap();
    let text = "Sure.<tool_call>\n{\"name\": \"bravo\", \"arguments\": {\"y\": \"ok\"}}\n</tool_call>";
    let mut m = GrammarMatcher::new(&second);
    for id in encode_with_special("qwen3", text) {
        crate::support::oracle_check::checked_mask(&mut m).unwrap();
        assert!(m.accept_token(id), "token {id} of {text:?} rejected");
    }
    let stats = compiler.pool_stats();
    assert_eq!((stats.free_text_misses, stats.free_text_hits), (1, 1), "{stats:?}");
    // Another protocol's dispatch (other triggers) gets a base of its own.
    let other = compiler.compile_protocol("deepseek_r1", &[tool("bravo", "y")], &ToolChoice::Auto, &options).unwrap();
    crate::support::oracle_check::checked_mask(&mut GrammarMatcher::new(&other)).unwrap();
    assert_eq!(compiler.pool_stats().free_text_misses, 2);
}
