//! The model: candle's quantized Llama read from a GGUF file, on the CPU.

use std::fs::File;
use std::io::Cursor;
use std::path::Path;

use candle_core::quantized::{gguf_file, GgmlDType};
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;

use crate::LlmError;

/// How the weights of a GGUF file are kept in memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Weights {
    /// [`Dequantized`](Self::Dequantized) when the `f32` weights take at most
    /// [`AUTO_DEQUANTIZE_BYTES`], else [`Quantized`](Self::Quantized).
    #[default]
    Auto,
    /// As stored (Q4_1, Q8_0, ...): least memory. candle 0.11's CPU kernels for some formats
    /// (Q4_1 among them) are scalar, so this is the slow choice for a small model.
    Quantized,
    /// Every quantized tensor expanded to `f32` once at load: candle multiplies `f32` matrices
    /// with its SIMD GEMM, about 7× faster than the scalar Q4_1 kernel for SmolLM2-135M (60 ms
    /// against 410 ms per token here), for 4 bytes per parameter.
    Dequantized,
}

/// The largest `f32` weights [`Weights::Auto`] expands a model to (2 GiB: SmolLM2-135M takes
/// 0.5 GiB; a 7B model stays quantized).
pub const AUTO_DEQUANTIZE_BYTES: u64 = 2 << 30;

/// A quantized Llama-architecture model (SmolLM2, Llama, Mistral, Qwen 2 in llama.cpp's
/// `llama` layout) with its KV cache: feed it tokens, get the logits of the next one.
pub struct Model {
    weights: ModelWeights,
    device: Device,
    /// How many tokens the KV cache holds: the position of the next token fed.
    position: usize,
    vocab_size: usize,
    dequantized: bool,
}

impl Model {
    /// Loads the weights of a GGUF file ([`Weights::Auto`]).
    pub fn load(path: &Path) -> Result<Model, LlmError> {
        Model::load_with(path, Weights::Auto)
    }

    /// Loads the weights of a GGUF file, kept as `weights` says.
    pub fn load_with(path: &Path, weights: Weights) -> Result<Model, LlmError> {
        let io = |source| LlmError::Io { path: path.display().to_string(), source };
        let mut file = File::open(path).map_err(io)?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| e.with_path(path))?;
        let vocab_size = content
            .tensor_infos
            .get("token_embd.weight")
            .map(|info| info.shape.dims()[0])
            .ok_or_else(|| candle_core::Error::Msg("no tensor token_embd.weight".into()))?;
        let device = Device::Cpu;
        let dequantize = match weights {
            Weights::Auto => f32_bytes(&content) <= AUTO_DEQUANTIZE_BYTES,
            Weights::Quantized => false,
            Weights::Dequantized => true,
        };
        let weights = if dequantize {
            let (content, mut data) = dequantized(content, &mut file, &device)?;
            ModelWeights::from_gguf(content, &mut data, &device)?
        } else {
            ModelWeights::from_gguf(content, &mut file, &device)?
        };
        Ok(Model { weights, device, position: 0, vocab_size, dequantized: dequantize })
    }

    /// The number of logits per step (the embedding size; at least the tokenizer's ids).
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// Whether the weights were expanded to `f32` at load.
    pub fn is_dequantized(&self) -> bool {
        self.dequantized
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

/// Bytes of every tensor of the file as `f32`.
fn f32_bytes(content: &gguf_file::Content) -> u64 {
    content.tensor_infos.values().map(|info| 4 * info.shape.elem_count() as u64).sum()
}

/// The file's tensors expanded to `f32`, as a tensor directory and an in-memory data section
/// that `ModelWeights::from_gguf` reads like the file. candle keeps an `f32` tensor of a GGUF
/// file as a plain tensor (its `QMatMul::Tensor`), which is what makes the model use its GEMM.
/// (candle's own switch for this, the `CANDLE_DEQUANTIZE_ALL` environment variable, is read
/// once per thread; a library should not set the process environment.)
fn dequantized(
    mut content: gguf_file::Content,
    file: &mut File,
    device: &Device,
) -> Result<(gguf_file::Content, Cursor<Vec<u8>>), LlmError> {
    let mut names: Vec<String> = content.tensor_infos.keys().cloned().collect();
    names.sort();
    let mut data = Vec::with_capacity(f32_bytes(&content) as usize);
    for name in &names {
        let values: Vec<f32> = content.tensor(file, name, device)?.dequantize(device)?.flatten_all()?.to_vec1()?;
        let info = content.tensor_infos.get_mut(name).expect("a name of the directory");
        info.offset = data.len() as u64;
        info.ggml_dtype = GgmlDType::F32;
        data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    }
    content.tensor_data_offset = 0;
    Ok((content, Cursor::new(data)))
}
