//! Tool calling: OpenAI-shaped tools compiled with a model's protocol from `protocols/` (here
//! Qwen3's Hermes-style `<tool_call>` blocks after its thinking section), then model outputs
//! checked against it: a call and a plain answer are accepted, bad arguments are rejected, and
//! `tool_choice: required` rejects an answer without a call.
//!
//! `cargo run --release --example tool_calling -- [TOKENIZER]`
//! (default `fixtures/tokenizers/qwen3.tokenizer.json.gz`, fetched by `scripts/fetch-tokenizers`)
use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, TextEncoder};
use maskforge::{ProtocolOptions, ToolChoice};

/// Feeds the tokens of `output` then a stop token; returns where it was rejected, if it was.
fn check(
    grammar: &CompiledGrammar,
    encoder: &TextEncoder,
    output: &str,
) -> Result<Option<String>, Box<dyn std::error::Error>> {
    let mut matcher = GrammarMatcher::new(grammar);
    let vocab = grammar.vocabulary();
    // The tokens the model emitted (the tokenizer's own encoding: `<tool_call>` is one token).
    let tokens = encoder.encode(output)?;
    for (i, &id) in tokens.iter().enumerate() {
        if !matcher.accept_token(id) {
            let before = String::from_utf8_lossy(&vocab.concat_bytes(&tokens[..i])).into_owned();
            return Ok(Some(format!("at {:?} after {before:?}", vocab.token_text_lossy(id))));
        }
    }
    let stop = vocab.stop_token_ids()[0];
    Ok((!matcher.accept_token(stop)).then(|| "incomplete: the stop token is not allowed here".to_string()))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or("fixtures/tokenizers/qwen3.tokenizer.json.gz".into());
    let (vocab, encoder) = maskforge::tokenizer::load_tokenizer(&path)
        .map_err(|e| format!("{e} (the default is fetched by scripts/fetch-tokenizers)"))?;
    let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
    let tools = [serde_json::json!({"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}})];
    // The prompt opened Qwen3's thinking section; one call at most.
    let options = ProtocolOptions { reasoning: true, parallel_tool_calls: false };
    let auto = compiler.compile_protocol("qwen", &tools, &ToolChoice::Auto, &options)?;
    let required = compiler.compile_protocol("qwen", &tools, &ToolChoice::Required, &options)?;

    // With `required`, what follows the thinking section is calls only (no text first).
    let call = "The user wants the weather.</think>\n\n<tool_call>\n\
                {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>";
    let answer = "Just chatting.</think>\n\nHello! How can I help?";
    let bad_unit = call.replace("celsius", "kelvin");
    let cases = [
        ("auto, a call", &auto, call, true),
        ("auto, a plain answer", &auto, answer, true),
        ("auto, arguments off the schema", &auto, bad_unit.as_str(), false),
        ("required, a call", &required, call, true),
        ("required, a plain answer", &required, answer, false),
    ];
    for (name, grammar, output, expected) in cases {
        let verdict = check(grammar, &encoder, output)?;
        match &verdict {
            None => println!("{name}: accepted"),
            Some(why) => println!("{name}: rejected {why}"),
        }
        assert_eq!(verdict.is_none(), expected, "{name}");
    }
    Ok(())
}
