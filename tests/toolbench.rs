//! `maskforge_bench::toolbench` end to end: requests of real tools (the corpus pool) in plain JSON and
//! in protocol formats, each valid ground-truth call accepted token by token with a mask before
//! every token, with the family's real tokenizer.

use maskforge::{CompilerConfig, GrammarCompiler};
use maskforge::{ProtocolOptions, ToolChoice};
use maskforge_bench::toolbench::{
    load_tools, load_valid_calls, run_setting, PlainJson, ProtocolCalls, Setting, ToolBenchConfig, ToolProtocol,
};

use crate::support::fixtures::{corpus_dir, load};

fn run(tokenizer: &str, protocol: &dyn ToolProtocol, setting: Setting) -> maskforge_bench::toolbench::SettingReport {
    let dir = corpus_dir("tools");
    let tools = load_tools(&dir).expect("the corpus tool pool (scripts/fetch-corpus)");
    let calls = load_valid_calls(&dir).expect("the corpus ground-truth calls");
    let (vocab, encoder) = load(tokenizer);
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let config = ToolBenchConfig { tools_per_request: 4, setting, requests: 4, seed: 11, masks: true };
    run_setting(&compiler, encoder, protocol, &tools, &calls, &config).expect("toolbench runs")
}

#[test]
fn plain_json_calls_are_accepted_and_static_requests_reuse_the_grammar() {
    let r = run("llama3", &PlainJson::default(), Setting::Static);
    assert_eq!(r.requests, 4);
    // Strict mode may reject a ground-truth call with undeclared arguments; those are listed.
    assert_eq!(r.valid_calls_accepted + r.rejected.len(), r.valid_calls_total, "{:?}", r.rejected);
    assert!(r.valid_calls_accepted >= 3, "{:?}", r.rejected);
    assert!(r.structure_reuse_rate > 0.5, "static requests after the first are grammar-cache lookups");
}

#[test]
fn protocol_calls_are_accepted_with_the_family_tokenizer() {
    for (name, tokenizer) in [("llama", "llama3"), ("harmony", "gptoss")] {
        let options = ProtocolOptions { reasoning: true, parallel_tool_calls: true };
        let protocol = ProtocolCalls::new(name, ToolChoice::Auto, options).unwrap();
        let r = run(tokenizer, &protocol, Setting::Dynamic);
        assert_eq!(r.protocol, name);
        assert_eq!(r.valid_calls_accepted + r.rejected.len(), r.valid_calls_total, "{name}: {:?}", r.rejected);
        assert!(r.valid_calls_accepted >= 3, "{name}: {:?}", r.rejected);
    }
}

#[test]
fn a_protocol_without_an_example_response_is_a_clear_error() {
    let e = ProtocolCalls::new("kimi", ToolChoice::Auto, ProtocolOptions::default()).unwrap_err();
    assert!(e.to_string().contains("example_response"), "{e}");
    let e = ProtocolCalls::new("no_such_family", ToolChoice::Auto, ProtocolOptions::default()).unwrap_err();
    assert!(e.to_string().contains("harmony"), "the error lists the known protocols: {e}");
}

/// gpt-oss with a bare `tokenizer.json` (no `tokenizer_config.json`): `<|call|>` is then a default
/// stop token, so a call that ends with it terminates the matcher; the harness counts a
/// terminated matcher as a complete call, with either stop-token setup.
#[test]
fn harmony_calls_count_with_call_as_a_stop_token_or_not() {
    let dir = corpus_dir("tools");
    let tools = load_tools(&dir).expect("the corpus tool pool (scripts/fetch-corpus)");
    let calls = load_valid_calls(&dir).expect("the corpus ground-truth calls");
    let (vocab, encoder) = load("gptoss");
    let call = vocab.token_id("<|call|>").expect("gpt-oss has <|call|>");
    assert!(!vocab.is_stop_token(call), "with its config, gpt-oss stops on <|return|> only");
    let bare: Vec<u32> = maskforge::tokenizer::DEFAULT_STOP_TOKENS.iter().filter_map(|t| vocab.token_id(t)).collect();
    assert!(bare.contains(&call), "without a config, <|call|> is a default stop token");
    let options = ProtocolOptions { reasoning: true, parallel_tool_calls: true };
    let protocol = ProtocolCalls::new("harmony", ToolChoice::Auto, options).unwrap();
    let config =
        ToolBenchConfig { tools_per_request: 4, setting: Setting::Dynamic, requests: 4, seed: 11, masks: true };
    for stops in [vocab.stop_token_ids().to_vec(), bare] {
        let vocab = vocab.with_stop_tokens(stops.iter().copied()).unwrap();
        let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
        let r = run_setting(&compiler, encoder, &protocol, &tools, &calls, &config).expect("toolbench runs");
        assert_eq!(r.valid_calls_accepted + r.rejected.len(), r.valid_calls_total, "{stops:?}: {:?}", r.rejected);
        assert!(r.valid_calls_accepted >= 3, "stop tokens {stops:?}: {:?}", r.rejected);
    }
}
