//! The decoding loop of a serving engine: one `GrammarCompiler` per tokenizer for the life of
//! the server, one `GrammarMatcher` per request, and at each step: fill the token mask, sample
//! an allowed token, accept it. Also jump-forward decoding, rollback and the stop token.
//!
//! `cargo run --release --example serving_loop -- [TOKENIZER]`
//! (default `fixtures/tokenizers/qwen3.tokenizer.json.gz`, fetched by `scripts/fetch-tokenizers`)
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, TokenBitmask};

/// Stands in for the model: a real engine applies the mask to the logits and samples from them.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or("fixtures/tokenizers/qwen3.tokenizer.json.gz".into());
    let (vocab, encoder) = maskforge::tokenizer::load_tokenizer(&path)
        .map_err(|e| format!("{e} (the default is fetched by scripts/fetch-tokenizers)"))?;
    // Once per tokenizer: the compiler's caches (masks, grammars, automata) serve every request.
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    let schema = serde_json::json!({"type": "object", "properties": {
        "city": {"enum": ["Paris", "Tokyo", "Lima"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "metric": {"type": "boolean"}}, "required": ["city", "days", "metric"]});
    // An exact layout (no free whitespace), so jump-forward has whole keys to skip.
    let options = JsonSchemaOptions { any_whitespace: false, ..JsonSchemaOptions::default() };
    let first = compiler.compile_json_schema(&schema, &options)?;

    for seed in [1, 2, 3] {
        // Per request: compiling a schema seen before is a lookup; the matcher is the state.
        let grammar = compiler.compile_json_schema(&schema, &options)?;
        assert!(grammar.ptr_eq(&first));
        let mut matcher = GrammarMatcher::new(&grammar);
        let mut mask = TokenBitmask::new(vocab.vocab_size()); // reuse it across steps
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ seed);
        let (mut tokens, mut sampled, mut jumped) = (Vec::new(), 0, 0);
        while !matcher.is_terminated() {
            // Jump-forward: text every continuation starts with is appended without sampling
            // (the model then reads its tokens in one forward pass). It is re-tokenized with the
            // last tokens, so the sequence is the tokenizer's own (`{` + `"city"` is `{"`, ...).
            let jump = matcher.find_jump_forward_tokens(&encoder)?;
            if !jump.is_empty() {
                matcher.rollback(jump.rollback)?;
                tokens.truncate(tokens.len() - jump.rollback);
                for &id in &jump.tokens {
                    assert!(matcher.accept_token(id));
                    tokens.push(id);
                }
                jumped += jump.tokens.len();
                continue;
            }
            matcher.fill_next_token_bitmask(mask.as_words_mut());
            let allowed: Vec<usize> = mask.allowed_ids().collect();
            let id = allowed[rng.below(allowed.len())] as u32;
            assert!(matcher.accept_token(id), "a token of the mask is accepted");
            tokens.push(id);
            sampled += 1;
            if sampled == 2 {
                // Rollback, as when speculative decoding rejects a draft token: the state before
                // it comes back exactly, mask included. (Here the same token is taken again.)
                matcher.rollback(1)?;
                tokens.pop();
                let mut again = TokenBitmask::new(vocab.vocab_size());
                matcher.fill_next_token_bitmask(again.as_words_mut());
                assert_eq!(again.as_words(), mask.as_words());
                assert!(matcher.accept_token(id));
                tokens.push(id);
            }
        }
        // The loop ends on a stop token, which the mask allows only where the JSON is complete.
        let stop = tokens.pop().expect("at least the stop token");
        assert!(vocab.is_stop_token(stop));
        let text = String::from_utf8(vocab.concat_bytes(&tokens))?;
        let value: serde_json::Value = serde_json::from_str(&text)?;
        assert!((1..=14).contains(&value["days"].as_i64().unwrap()));
        let stop_text = vocab.token_text_lossy(stop);
        println!("request {seed}: {text} + {stop_text} ({sampled} tokens sampled, {jumped} jumped forward)");
    }
    Ok(())
}
