//! The model loop on the real test model (SmolLM2-135M-Instruct, fetched by `scripts/fetch-model`):
//! the GGUF vocabulary against candle's own reading of the file, a constrained generation for a
//! schema (judged by the `jsonschema` crate), a tool call for a protocol (accepted again by a
//! fresh matcher), and bad model files. A missing model fails with the fetch instruction.

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, ProtocolOptions, ToolChoice};
use maskforge_llm::{GenerateOptions, Llm, LlmError};

fn model_path() -> PathBuf {
    let path = maskforge::tokenizer::fixtures_dir().join("model").join("SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(path.is_file(), "the test model is missing at {}: run scripts/fetch-model", path.display());
    path
}

/// One model for the whole binary (the tests take turns: a forward pass uses every core).
fn llm() -> &'static Mutex<Llm> {
    static LLM: OnceLock<Mutex<Llm>> = OnceLock::new();
    LLM.get_or_init(|| Mutex::new(Llm::load(&model_path()).unwrap_or_else(|e| panic!("{e}"))))
}

/// The model, even after another test failed while holding it.
fn lock() -> std::sync::MutexGuard<'static, Llm> {
    llm().lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn gguf_vocabulary_agrees_with_candle() {
    use candle_core::quantized::gguf_file::{Content, Value};
    let mut file = std::fs::File::open(model_path()).unwrap();
    let content = Content::read(&mut file).unwrap();
    let Value::Array(tokens) = &content.metadata["tokenizer.ggml.tokens"] else { panic!("no token array") };
    let llm = lock();
    let vocab = llm.vocabulary();
    assert_eq!(vocab.vocab_size(), tokens.len());
    for (id, token) in tokens.iter().enumerate() {
        assert_eq!(vocab.token_str(id as u32), Some(token.to_string().unwrap().as_str()), "id {id}");
    }
    let eos = content.metadata["tokenizer.ggml.eos_token_id"].to_u32().unwrap();
    assert_eq!(vocab.stop_token_ids(), &[eos]);
    let bos = content.metadata["tokenizer.ggml.bos_token_id"].to_u32().unwrap();
    assert_eq!(llm.tokenizer().bos_token_id(), Some(bos));
}

#[test]
fn constrained_generation_for_a_schema_validates() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 20},
            "population": {"type": "integer", "minimum": 0, "maximum": 100000000},
            "capital": {"type": "boolean"}
        },
        "required": ["city", "population", "capital"],
        "additionalProperties": false
    });
    let mut llm = lock();
    let compiler = GrammarCompiler::new(llm.vocabulary().clone(), CompilerConfig::default());
    let options = JsonSchemaOptions { any_whitespace: false, ..JsonSchemaOptions::default() };
    let grammar = compiler.compile_json_schema(&schema, &options).unwrap();
    let prompt = llm.chat_prompt("Describe Paris as a JSON object with its population.").unwrap();
    let options = GenerateOptions { max_tokens: 64, seed: 1, temperature: 0.7, repeat_penalty: 1.0 };
    let out = llm.generate(&prompt, Some(&grammar), &options).unwrap();
    assert!(out.stopped, "no stop token within 64 tokens: {}", out.text);
    let value: serde_json::Value = serde_json::from_str(&out.text).unwrap_or_else(|e| panic!("{e}: {}", out.text));
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&value), "{}", out.text);
    // The keys are forced text: jump-forward fed them without sampling.
    assert!(out.jumped > 0, "{out:?}");
    assert_eq!(out.sampled + out.jumped, out.tokens.len());
    assert_eq!(out.timing.mask_us.len(), out.sampled);
}

#[test]
fn tool_call_for_a_protocol_is_accepted_again() {
    let tools = vec![serde_json::json!({"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"], "additionalProperties": false}}})];
    let mut llm = lock();
    let compiler = GrammarCompiler::new(llm.vocabulary().clone(), CompilerConfig::default());
    let choice = ToolChoice::from_json(&serde_json::json!("required")).unwrap();
    let options = ProtocolOptions { reasoning: false, parallel_tool_calls: false };
    let grammar = compiler.compile_protocol("qwen", &tools, &choice, &options).unwrap();
    let system = "You call tools. Tools: get_weather(city). Answer with <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call>.";
    let prompt = llm.chat_prompt_with_system(Some(system), "What is the weather in Oslo?").unwrap();
    let out = llm
        .generate(
            &prompt,
            Some(&grammar),
            &GenerateOptions { max_tokens: 64, seed: 2, temperature: 0.7, repeat_penalty: 1.0 },
        )
        .unwrap();
    assert!(out.stopped, "{}", out.text);
    assert!(out.text.contains("<tool_call>") && out.text.contains("\"name\": \"get_weather\""), "{}", out.text);
    // The check: a fresh matcher accepts the whole output, stop token included, and terminates.
    let mut matcher = GrammarMatcher::new(&grammar);
    for &id in &out.tokens {
        assert!(matcher.accept_token(id), "{}", out.text);
    }
    assert!(matcher.is_terminated());
    // The arguments parse as JSON.
    let start = out.text.find("\"arguments\": ").unwrap() + "\"arguments\": ".len();
    let end = out.text.rfind("}\n</tool_call>").unwrap();
    let args: serde_json::Value =
        serde_json::from_str(&out.text[start..end]).unwrap_or_else(|e| panic!("{e}: {}", out.text));
    assert!(args["city"].is_string(), "{}", out.text);
}

#[test]
fn unconstrained_generation_runs_the_same_loop() {
    let mut llm = lock();
    let prompt = llm.chat_prompt("Say hello.").unwrap();
    let out = llm
        .generate(&prompt, None, &GenerateOptions { max_tokens: 8, seed: 0, temperature: 0.0, repeat_penalty: 1.0 })
        .unwrap();
    assert_eq!(out.jumped, 0);
    assert!(out.tokens.len() <= 8 && !out.tokens.is_empty());
    assert!(out.timing.mask_us.is_empty());
    // Greedy decoding is deterministic.
    let again = llm
        .generate(&prompt, None, &GenerateOptions { max_tokens: 8, seed: 9, temperature: 0.0, repeat_penalty: 1.0 })
        .unwrap();
    assert_eq!(out.tokens, again.tokens);
}

#[test]
fn bad_model_files_are_clear_errors() {
    let err = Llm::load("/nonexistent/model.gguf".as_ref()).err().expect("an error");
    assert!(err.to_string().contains("/nonexistent/model.gguf"), "{err}");
    let path = std::env::temp_dir().join(format!("maskforge-llm-not-gguf-{}.gguf", std::process::id()));
    std::fs::write(&path, b"not a model").unwrap();
    let err = Llm::load(&path).err().expect("an error");
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(err, LlmError::Vocab(_)) && err.to_string().contains("not a GGUF file"), "{err}");
}

#[test]
fn dequantized_weights_compute_the_quantized_model() {
    use maskforge_llm::{Model, Weights};
    let prompt_ids: Vec<u32> = {
        let llm = lock();
        assert!(llm.vocabulary().vocab_size() > 0);
        llm.encoder().encode("The capital of France is").unwrap()
    };
    let mut quantized = Model::load_with(&model_path(), Weights::Quantized).unwrap();
    let mut expanded = Model::load_with(&model_path(), Weights::Dequantized).unwrap();
    assert!(!quantized.is_dequantized() && expanded.is_dequantized());
    let a = quantized.forward(&prompt_ids).unwrap();
    let b = expanded.forward(&prompt_ids).unwrap();
    assert_eq!(a.len(), b.len());
    let argmax = |v: &[f32]| (0..v.len()).max_by(|&i, &j| v[i].total_cmp(&v[j])).unwrap();
    assert_eq!(argmax(&a), argmax(&b), "the same next token");
    // The Q4_1 kernel rounds the activations to 8 bits before its dot products; the f32 weights
    // are the same values without that rounding: the logits agree to a small fraction of their
    // spread.
    let spread = a.iter().fold(f32::MIN, |m, &x| m.max(x)) - a.iter().fold(f32::MAX, |m, &x| m.min(x));
    let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
    assert!(worst < 0.05 * spread, "max difference {worst} against a spread of {spread}");
}
