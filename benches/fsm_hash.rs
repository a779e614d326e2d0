//! Time of the hierarchical structural hash (`fsm::hash::hash_rules`) on a tool-calling grammar:
//! one call of any of N tools from the tool corpus, `{"name": "<tool>", "arguments": {...}}`,
//! with each tool's JSON-schema parameters written as EBNF rules of their own (a small
//! converter below: properties in schema order, all present; untyped values are any JSON value).
//!
//! `cargo bench --bench fsm_hash -- [--tools FILE] [--count 50] [--iters 200]`
//! Prints the automaton size, how many rules got a hash, and hash time percentiles in
//! microseconds. The expected answer: the median is well under 1,000 µs for 50 tools.

use std::fmt::Write;
use std::time::Instant;

use maskforge::fsm::hash::hash_rules;
use maskforge::fsm::GrammarFsm;
use maskforge::internals::escape_literal;
use maskforge::parse_ebnf;
use maskforge_bench::stats::Summary;
use serde_json::Value;

mod common;
use common::arg;

fn main() {
    let default_tools = maskforge::tokenizer::fixtures_dir().join("corpus/tools/tools.jsonl");
    let path = arg("--tools", &default_tools.to_string_lossy());
    let count: usize = arg("--count", "50").parse().expect("--count takes a number");
    let iters: usize = arg("--iters", "200").parse().expect("--iters takes a number");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let tools: Vec<Value> =
        text.lines().take(count).map(|l| serde_json::from_str(l).expect("one JSON tool per line")).collect();
    assert_eq!(tools.len(), count, "{path} has fewer than {count} tools");

    let ebnf = tool_grammar(&tools);
    let grammar = parse_ebnf(&ebnf, "root").unwrap_or_else(|e| panic!("{e}\n{ebnf}"));
    let t = Instant::now();
    let fsm = GrammarFsm::new(&grammar).unwrap();
    let build_us = t.elapsed().as_secs_f64() * 1e6;
    let edges: usize = fsm.states().map(|s| fsm.byte_edges(s).len() + fsm.rule_edges(s).len()).sum();

    let mut times = Vec::with_capacity(iters);
    let mut hashes = hash_rules(&fsm);
    for _ in 0..iters {
        let t = Instant::now();
        hashes = std::hint::black_box(hash_rules(std::hint::black_box(&fsm)));
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let mut distinct: Vec<u64> =
        maskforge::fsm::FsmRuleId::range(fsm.rules().len()).filter_map(|r| hashes.rule_hash(r)).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let s = Summary::of(&times);
    println!(
        "{count} tools: {} rules ({} hashed, {} distinct hashes), {} states, {edges} edges; automata built in {build_us:.0} µs",
        fsm.rules().len(),
        hashes.hashed_rule_len(),
        distinct.len(),
        fsm.state_len(),
    );
    println!(
        "hash_rules µs: p50 {:.1}, p90 {:.1}, p99 {:.1}, max {:.1} ({} runs)",
        s.p50, s.p90, s.p99, s.max, s.count
    );
}

/// The grammar of one call of any of `tools`.
fn tool_grammar(tools: &[Value]) -> String {
    let mut rules = String::new();
    let mut calls = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let f = &tool["function"];
        let name = f["name"].as_str().expect("a tool name");
        let mut conv = Converter { prefix: format!("t{i}"), rules: &mut rules, next: 0 };
        let args = conv.value(&f["parameters"]);
        calls.push(format!(
            "\"{{\\\"name\\\": \\\"{}\\\", \\\"arguments\\\": \" {args} \"}}\"",
            escape_literal(name.as_bytes())
        ));
    }
    let mut out = format!("root ::= {}\n", calls.join(" | "));
    out.push_str(&rules);
    out
}

struct Converter<'a> {
    prefix: String,
    rules: &'a mut String,
    next: usize,
}

impl Converter<'_> {
    fn rule(&mut self, body: &str) -> String {
        let name = format!("{}_{}", self.prefix, self.next);
        self.next += 1;
        writeln!(self.rules, "{name} ::= {body}").unwrap();
        name
    }

    /// An EBNF expression for values of `schema`.
    fn value(&mut self, schema: &Value) -> String {
        if let Some(options) = schema["enum"].as_array() {
            let alts: Vec<String> =
                options.iter().map(|v| format!("\"{}\"", escape_literal(v.to_string().as_bytes()))).collect();
            return format!("({})", alts.join(" | "));
        }
        match schema["type"].as_str() {
            Some("string") => self.rule(r#""\"" ([^"\\] | "\\" ["\\/bfnrt])* "\"""#),
            Some("integer") => self.rule(r#""-"? ("0" | [1-9] [0-9]*)"#),
            Some("number") => self.rule(r#""-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+\-]? [0-9]+)?"#),
            Some("boolean") => "(\"true\" | \"false\")".to_string(),
            Some("array") => {
                let item = self.value(&schema["items"]);
                self.rule(&format!(r#""[" ({item} (", " {item})*)? "]""#))
            }
            Some("object") if schema["properties"].is_object() => {
                let props = schema["properties"].as_object().unwrap();
                let mut parts = Vec::new();
                for (k, v) in props {
                    let key = escape_literal(format!("\"{k}\": ").as_bytes());
                    parts.push(format!("\"{key}\" {}", self.value(v)));
                }
                let body = if parts.is_empty() {
                    "\"{}\"".to_string()
                } else {
                    format!("\"{{\" {} \"}}\"", parts.join(" \", \" "))
                };
                self.rule(&body)
            }
            _ => self.any(),
        }
    }

    /// Any JSON value (a non-simple reference cycle: not hashable).
    fn any(&mut self) -> String {
        let p = format!("{}_any{}", self.prefix, self.next);
        self.next += 1;
        writeln!(
            self.rules,
            r#"{p} ::= {p}_obj | {p}_arr | "\"" [^"\\]* "\"" | [0-9]+ | "true" | "false" | "null"
{p}_obj ::= "{{" ("\"" [a-z]* "\": " {p} (", \"" [a-z]* "\": " {p})*)? "}}"
{p}_arr ::= "[" ({p} (", " {p})*)? "]""#
        )
        .unwrap();
        p
    }
}
