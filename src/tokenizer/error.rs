//! [`VocabError`]: everything that can go wrong while loading a tokenizer, building a
//! [`Vocabulary`](super::Vocabulary) or encoding text. Messages name the file, the token or the id
//! involved, so that a serving engine can log them as they are.

use std::path::PathBuf;

/// An error of the tokenizer layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VocabError {
    /// A file could not be read.
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Data that starts with the gzip magic bytes could not be decompressed.
    #[error("cannot decompress the gzip data of {origin}: {source}")]
    Gzip {
        /// Where the data came from (a quoted path, or a description).
        origin: String,
        /// The decompression error.
        #[source]
        source: std::io::Error,
    },
    /// The data is gzip-compressed, and the library was built without its `gzip` feature.
    #[error(
        "{origin} is gzip-compressed: decompress it first, or build maskforge with its `gzip` feature \
         (`maskforge = {{ version = \"...\", features = [\"gzip\"] }}`)"
    )]
    GzipDisabled {
        /// Where the data came from (a quoted path, or a description).
        origin: String,
    },
    /// A JSON document is malformed or has an unexpected shape.
    #[error("invalid {what}: {message}")]
    Json {
        /// Which document (`tokenizer.json`, `tokenizer_config.json`, `generation_config.json`).
        what: &'static str,
        /// What is wrong, with the line and column when known.
        message: String,
    },
    /// The tokenizer model is of a type whose token strings do not map to bytes on their own.
    #[error("unsupported tokenizer model type `{model}`: only BPE, Unigram and WordLevel vocabularies are supported")]
    UnsupportedModel {
        /// The `model.type` of `tokenizer.json`.
        model: String,
    },
    /// Two different tokens claim the same id.
    #[error("token id {id} is assigned to both `{first}` and `{second}`")]
    DuplicateId {
        /// The id.
        id: u32,
        /// The string form of the first token.
        first: String,
        /// The string form of the second token.
        second: String,
    },
    /// A token id, a vocabulary size or the total size of the token bytes exceeds a limit.
    #[error("{what} is {actual}, the limit is {limit}")]
    TooLarge {
        /// Which quantity.
        what: &'static str,
        /// Its value.
        actual: u64,
        /// The limit.
        limit: u64,
    },
    /// The tokenizer defines no token at all.
    #[error("the vocabulary has no tokens")]
    EmptyVocabulary,
    /// A stop token named by `tokenizer_config.json` (`eos_token`) is not in the vocabulary.
    #[error("stop token `{token}` (eos_token of tokenizer_config.json) is not in the vocabulary")]
    UnknownStopToken {
        /// The token's string form.
        token: String,
    },
    /// An id given for a role (stop token, special token) is not a token of the vocabulary: it is
    /// at or past the vocabulary size, or a padding id.
    #[error("{role} id {id} is not a token of the vocabulary (vocab size {vocab_size}; padding ids are not tokens)")]
    NotAToken {
        /// The role: `"stop token"` or `"special token"`.
        role: &'static str,
        /// The id.
        id: u32,
        /// The vocabulary size.
        vocab_size: usize,
    },
    /// A test tokenizer named `llama3`, `qwen3`, `gptoss` or `llama2` is not in the fixtures folder.
    #[error(
        "tokenizer fixture `{name}` not found at `{}`: run scripts/fetch-tokenizers (from the repository root) to fetch the test tokenizers, or point MASKFORGE_FIXTURES at a folder holding tokenizers/{name}.tokenizer.json.gz",
        path.display()
    )]
    FixtureMissing {
        /// The fixture name.
        name: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A name given to the resolver is neither an existing path nor a known fixture name.
    #[error("no tokenizer `{name}`: not an existing file or folder, and not one of the fixture names {known}")]
    UnknownTokenizer {
        /// The name or path given.
        name: String,
        /// The known fixture names.
        known: &'static str,
    },
    /// The Hugging Face `tokenizers` crate failed to load the file or to encode text.
    #[error("tokenizers: {message}")]
    Encoder {
        /// The error message of the `tokenizers` crate.
        message: String,
    },
    /// Encoding for matching produced tokens whose bytes do not spell the input text (the
    /// tokenizer normalizes text in a way that cannot be undone, or maps characters to an
    /// unknown token).
    #[error("cannot encode {text:?} byte-exactly: the tokens spell {got:?}")]
    NotByteExact {
        /// The input text (truncated to 200 bytes).
        text: String,
        /// What the tokens spell, lossily decoded (truncated to 200 bytes).
        got: String,
    },
    /// The data does not start with the GGUF magic bytes.
    #[error("{origin} is not a GGUF file (it does not start with `GGUF`)")]
    NotGguf {
        /// Where the data came from (a quoted path, or a description).
        origin: String,
    },
    /// The metadata section of a GGUF file is malformed or truncated.
    #[error("malformed GGUF metadata in {origin} at byte {offset}: {message}")]
    Gguf {
        /// Where the data came from (a quoted path, or a description).
        origin: String,
        /// The byte offset where reading stopped.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A GGUF file holds no tokenizer (no `tokenizer.ggml.tokens`).
    #[error("{origin} has no tokenizer metadata (no `tokenizer.ggml.tokens`)")]
    GgufNoTokenizer {
        /// Where the data came from (a quoted path, or a description).
        origin: String,
    },
    /// A tokenizer key of a GGUF file is missing or has an unexpected type or value.
    #[error("GGUF tokenizer metadata of {origin}, key `{key}`: {message}")]
    GgufKey {
        /// Where the data came from (a quoted path, or a description).
        origin: String,
        /// The metadata key.
        key: String,
        /// What is wrong.
        message: String,
    },
}

impl VocabError {
    pub(crate) fn json(what: &'static str, err: impl std::fmt::Display) -> Self {
        VocabError::Json { what, message: err.to_string() }
    }

    pub(crate) fn too_large(what: &'static str, actual: impl TryInto<u64>, limit: impl TryInto<u64>) -> Self {
        VocabError::TooLarge {
            what,
            actual: actual.try_into().unwrap_or(u64::MAX),
            limit: limit.try_into().unwrap_or(u64::MAX),
        }
    }
}
