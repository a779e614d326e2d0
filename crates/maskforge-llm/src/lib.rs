//! A real model in the loop: constrained generation with a quantized Llama-architecture model
//! (candle, CPU) read from a GGUF file, whose tokenizer comes from the same file.
//!
//! At every step the mask of the next position is computed on a worker thread while the model's
//! forward pass runs, and text the grammar forces (jump-forward) is fed to the model in the same
//! forward pass as the sampled token, without sampling. [`Timing`] says how much of the mask work
//! the forward pass did not hide.
//!
//! ```no_run
//! use maskforge::{CompilerConfig, GrammarCompiler, JsonSchemaOptions};
//! use maskforge_llm::{GenerateOptions, Llm};
//!
//! let mut llm = Llm::load("fixtures/model/SmolLM2-135M-Instruct.Q4_1.gguf".as_ref())?;
//! let compiler = GrammarCompiler::new(llm.vocabulary().clone(), CompilerConfig::default());
//! let schema = serde_json::json!({"type": "object", "properties": {"name": {"type": "string"}}});
//! let grammar = compiler.compile_json_schema(&schema, &JsonSchemaOptions::default())?;
//! let prompt = llm.chat_prompt("Give me a JSON object with a name.")?;
//! let out = llm.generate(&prompt, Some(&grammar), &GenerateOptions::default())?;
//! println!("{}\n{}", out.text, out.timing.summary(out.tokens.len()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod chat;
mod error;
mod generate;
mod model;
mod sample;
mod timing;
mod worker;

use std::path::Path;

use maskforge::{CompiledGrammar, GgufTokenizer, TextEncoder, Vocabulary};

pub use chat::{chatml_prompt, is_chatml};
pub use error::LlmError;
pub use generate::{GenerateOptions, Generation, REPEAT_WINDOW};
pub use model::{Model, Weights, AUTO_DEQUANTIZE_BYTES};
pub use sample::Sampler;
pub use timing::{median, Timing};

/// A model and its tokenizer, both read from one GGUF file.
pub struct Llm {
    model: Model,
    tokenizer: GgufTokenizer,
    vocab: Vocabulary,
}

impl Llm {
    /// Loads the tokenizer (maskforge's GGUF reader) and the weights (candle) of a GGUF file,
    /// the weights kept as [`Weights::Auto`] says.
    pub fn load(path: &Path) -> Result<Llm, LlmError> {
        Llm::load_with(path, Weights::Auto)
    }

    /// [`load`](Self::load), the weights kept as `weights` says.
    pub fn load_with(path: &Path, weights: Weights) -> Result<Llm, LlmError> {
        let tokenizer = GgufTokenizer::from_file(path)?;
        let model = Model::load_with(path, weights)?;
        let mut vocab = tokenizer.vocabulary().clone();
        if model.vocab_size() < vocab.vocab_size() {
            return Err(LlmError::VocabMismatch { logits: model.vocab_size(), tokens: vocab.vocab_size() });
        }
        // Masks cover every logit: ids past the tokenizer's tokens are padding, never allowed.
        vocab.set_vocab_size(model.vocab_size())?;
        Ok(Llm { model, tokenizer, vocab })
    }

    /// The vocabulary to compile grammars with (its size is the model's number of logits).
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.vocab
    }

    /// The tokenizer read from the GGUF file.
    pub fn tokenizer(&self) -> &GgufTokenizer {
        &self.tokenizer
    }

    /// The encoder of the tokenizer.
    pub fn encoder(&self) -> &TextEncoder {
        self.tokenizer.encoder()
    }

    /// The model.
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    /// The chat prompt of one user message, in ChatML with the template's default system prompt;
    /// an error if the file's chat template is not ChatML (or it has none).
    pub fn chat_prompt(&self, user: &str) -> Result<String, LlmError> {
        self.chat_prompt_with_system(None, user)
    }

    /// [`chat_prompt`](Self::chat_prompt) with a system message of the caller's.
    pub fn chat_prompt_with_system(&self, system: Option<&str>, user: &str) -> Result<String, LlmError> {
        match self.tokenizer.chat_template() {
            Some(template) if is_chatml(template) => Ok(chatml_prompt(Some(template), system, user)),
            _ => Err(LlmError::UnsupportedChatTemplate),
        }
    }

    /// Generates from a prompt (the text fed to the model as is: apply the chat template first
    /// for a chat model), constrained by `grammar` if given. The grammar must be compiled for
    /// [`vocabulary`](Self::vocabulary).
    pub fn generate(
        &mut self,
        prompt: &str,
        grammar: Option<&CompiledGrammar>,
        options: &GenerateOptions,
    ) -> Result<Generation, LlmError> {
        if let Some(grammar) = grammar {
            let size = grammar.vocabulary().vocab_size();
            if size != self.model.vocab_size() {
                return Err(LlmError::VocabMismatch { logits: self.model.vocab_size(), tokens: size });
            }
        }
        let mut ids = Vec::new();
        if let (true, Some(bos)) = (self.tokenizer.adds_bos(), self.tokenizer.bos_token_id()) {
            ids.push(bos);
        }
        ids.extend(self.tokenizer.encoder().encode(prompt)?);
        generate::generate(&mut self.model, self.tokenizer.encoder(), &ids, grammar, options)
    }
}
