//! The model: candle's quantized Llama read from a GGUF file, on the CPU.

use std::fs::File;
use std::path::Path;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;

use crate::LlmError;

/// A quantized Llama-architecture model (SmolLM2, Llama, Mistral, Qwen 2 in llama.cpp's
/// `llama` layout) with its KV cache: feed it tokens, get the logits of the next one.
pub struct Model {
    weights: ModelWeights,
    device: Device,
    /// How many tokens the KV cache holds: the position of the next token fed.
    position: usize,
    vocab_size: usize,
}

impl Model {
    /// Loads the weights of a GGUF file.
    pub fn load(path: &Path) -> Result<Model, LlmError> {
        let io = |source| LlmError::Io { path: path.display().to_string(), source };
        let mut file = File::open(path).map_err(io)?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| e.with_path(path))?;
        let vocab_size = content
            .tensor_infos
            .get("token_embd.weight")
            .map(|info| info.shape.dims()[0])
            .ok_or_else(|| candle_core::Error::Msg("no tensor token_embd.weight".into()))?;
        let device = Device::Cpu;
        let weights = ModelWeights::from_gguf(content, &mut file, &device)?;
        Ok(Model { weights, device, position: 0, vocab_size })
    }

    /// The number of logits per step (the embedding size; at least the tokenizer's ids).
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// Empties the KV cache: the next [`forward`](Self::forward) starts a new sequence.
    pub fn reset(&mut self) {
        self.weights.clear_kv_cache();
        self.position = 0;
    }

    /// Feeds `tokens` (one or more, appended to the sequence so far) in one forward pass and
    /// returns the logits of the token after the last one.
    pub fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>, LlmError> {
        let input = Tensor::new(tokens, &self.device)?.unsqueeze(0)?;
        let logits = self.weights.forward(&input, self.position)?;
        self.position += tokens.len();
        Ok(logits.squeeze(0)?.to_dtype(candle_core::DType::F32)?.to_vec1()?)
    }
}
