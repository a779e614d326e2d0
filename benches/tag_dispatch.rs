//! TagDispatch with many triggers on a real tokenizer: compile time, automaton size, the cost
//! of the first mask at a free-text state (a cache entry walks the whole vocabulary), and the
//! per-step mask time over an output that mixes free text and two tool calls (cold: entries
//! built on first use; warm: the same output again on the same compiled grammar).
//!
//! `cargo bench --bench tag_dispatch -- [--tokenizer llama3] [--tools 50]`; with
//! `TAG_DISPATCH_SLOW=1`, every step over 500 µs is printed with the token it precedes.

mod common;

use std::time::Instant;

use maskforge::tokenizer::load_tokenizer;
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, TokenBitmask};
use maskforge_bench::stats::Summary;

fn main() {
    let tokenizer = common::arg("--tokenizer", "llama3");
    let tools: usize = common::arg("--tools", "50").parse().expect("--tools N");
    let (vocab, encoder) = load_tokenizer(&tokenizer).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = (0..tools).map(|i| format!("get_weather_forecast_{i:02}")).collect();
    let mut ebnf = String::from("root ::= TagDispatch(");
    for (i, n) in names.iter().enumerate() {
        ebnf += &format!("(\"<function={n}>\", args{i}), ");
    }
    ebnf += "stop_eos=true, loop_after_dispatch=true)\n";
    for i in 0..tools {
        ebnf += &format!(
            "args{i} ::= \"{{\\\"city\\\": \\\"\" [A-Za-z ]+ \"\\\", \\\"days\\\": \" [0-9]+ \"}}</function>\"\n"
        );
    }
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let t = Instant::now();
    let grammar = compiler.compile_grammar(&ebnf).unwrap();
    let compile = t.elapsed();
    println!(
        "tokenizer {tokenizer}, {tools} triggers of ~32 bytes: compile {:.2} ms, {} automaton states",
        compile.as_secs_f64() * 1e3,
        grammar.fsm().state_len()
    );
    let output = format!(
        "Let me look that up for you. <function={}>{{\"city\": \"Paris\", \"days\": 3}}</function> and \
         <function={}>{{\"city\": \"New York\", \"days\": 10}}</function> Both calls are done; the \
         forecast follows shortly.",
        names[tools / 2],
        names[tools - 1]
    );
    let ids = encoder.encode_for_matching(&output).unwrap();
    let mut mask = TokenBitmask::new(vocab.vocab_size());
    for pass in ["cold", "warm"] {
        let mut m = GrammarMatcher::new(&grammar);
        let mut times = Vec::with_capacity(ids.len());
        let mut first = 0.0;
        for (k, &id) in ids.iter().enumerate() {
            let t = Instant::now();
            m.fill_next_token_bitmask(mask.as_words_mut());
            let us = t.elapsed().as_secs_f64() * 1e6;
            if k == 0 {
                first = us;
            }
            times.push(us);
            if us > 500.0 && std::env::var_os("TAG_DISPATCH_SLOW").is_some() {
                println!("  step {k}: {us:.0} µs before {:?}", vocab.token_text_lossy(id));
            }
            assert!(mask.get(id as usize), "token {k} not allowed");
            assert!(m.accept_token(id));
        }
        assert!(m.can_terminate());
        let s = Summary::of(&times);
        println!(
            "{pass}: {} steps, first mask {:.0} µs, mask p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs, max {:.0} µs; \
             {} cache entries",
            ids.len(),
            first,
            s.p50,
            s.p90,
            s.p99,
            s.max,
            grammar.mask_cache_stats().entries
        );
    }
}
