//! A real model in the loop, in library calls: load SmolLM2-135M-Instruct from its GGUF file
//! (weights by candle, tokenizer by maskforge), compile a JSON Schema for its vocabulary, and
//! generate with the mask applied to the logits — the mask of each next step computed on a
//! worker thread during the forward pass, forced text fed without sampling.
//!
//! `cargo run --release -p maskforge-llm --example model_loop -- [MODEL.gguf]`
//! (default `fixtures/model/SmolLM2-135M-Instruct.Q4_1.gguf`, fetched by `scripts/fetch-model`)
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions};
use maskforge_llm::{GenerateOptions, Llm};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let default = maskforge::tokenizer::fixtures_dir().join("model/SmolLM2-135M-Instruct.Q4_1.gguf");
    let path = std::env::args().nth(1).map_or(default, Into::into);
    let mut llm = Llm::load(&path).map_err(|e| format!("{e} (the default is fetched by scripts/fetch-model)"))?;

    // Once per model: the compiler and its caches serve every request.
    let compiler = GrammarCompiler::new(llm.vocabulary().clone(), CompilerConfig::default());
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 40},
            "year": {"type": "integer", "minimum": 1900, "maximum": 2030},
            "genres": {"type": "array", "items": {"enum": ["drama", "comedy", "sci-fi", "action"]}, "maxItems": 3}
        },
        "required": ["title", "year", "genres"],
        "additionalProperties": false
    });
    // No free whitespace: the keys and separators are forced text, which jump-forward skips.
    let options = JsonSchemaOptions { any_whitespace: false, ..JsonSchemaOptions::default() };
    let grammar = compiler.compile_json_schema(&schema, &options)?;

    let prompt = llm.chat_prompt("Recommend one movie as JSON with its title, year and genres.")?;
    for seed in [1, 2] {
        let options = GenerateOptions { max_tokens: 96, seed, temperature: 0.8, repeat_penalty: 1.0 };
        let out = llm.generate(&prompt, Some(&grammar), &options)?;
        // The output is a complete JSON value of the schema, ended by the model's stop token.
        assert!(out.stopped, "the token limit came first: {}", out.text);
        let movie: serde_json::Value = serde_json::from_str(&out.text)?;
        let year = movie["year"].as_i64().expect("an integer year");
        assert!((1900..=2030).contains(&year));
        // A fresh matcher accepts the same tokens: the output is exactly what the grammar allows.
        let mut check = GrammarMatcher::new(&grammar);
        assert!(out.tokens.iter().all(|&id| check.accept_token(id)) && check.is_terminated());
        println!("seed {seed}: {}", out.text);
        println!("  {} sampled + {} jumped forward", out.sampled, out.jumped);
        println!("  {}", out.timing.summary(out.tokens.len()));
    }

    // The same loop without the grammar, for comparison.
    let out = llm.generate(
        &prompt,
        None,
        &GenerateOptions { max_tokens: 48, seed: 1, temperature: 0.8, repeat_penalty: 1.0 },
    )?;
    println!("unconstrained: {}", out.text.trim());
    println!("  {}", out.timing.summary(out.tokens.len()));
    Ok(())
}
