//! [`LlmError`]: what can go wrong while loading the model or generating.

/// An error of the model loop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The model file could not be opened.
    #[error("cannot read the model `{path}`: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// candle failed to read the weights or to run the model.
    #[error("model: {0}")]
    Candle(#[from] candle_core::Error),
    /// The tokenizer of the GGUF file, or encoding a text with it, failed.
    #[error("tokenizer: {0}")]
    Vocab(#[from] maskforge::VocabError),
    /// The grammar could not be compiled.
    #[error("grammar: {0}")]
    Grammar(#[from] maskforge::Error),
    /// The matcher rejected a token that its own mask allowed, or forced text: a bug.
    #[error("the matcher rejected token {id} ({text:?}) after {accepted} tokens")]
    Rejected {
        /// The token.
        id: u32,
        /// Its text.
        text: String,
        /// How many tokens the matcher had accepted before.
        accepted: usize,
    },
    /// The grammar allows no token at all at some step (its mask is empty).
    #[error("the grammar allows no token after {0} tokens")]
    EmptyMask(usize),
    /// The model's logits cover fewer ids than the tokenizer defines.
    #[error("the model has {logits} logits, the tokenizer {tokens} tokens")]
    VocabMismatch {
        /// The model's output size.
        logits: usize,
        /// The tokenizer's number of ids.
        tokens: usize,
    },
    /// `--chat` needs a ChatML chat template in the GGUF file.
    #[error("the model's chat template is not ChatML (or the file has none): give the prompt without --chat")]
    UnsupportedChatTemplate,
    /// The mask worker thread stopped unexpectedly.
    #[error("the mask worker thread stopped: {0}")]
    Worker(String),
}
