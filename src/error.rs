//! The crate-wide [`Error`]: one variant per layer, each wrapping that layer's typed error.

use crate::frontend::ebnf::EbnfError;
use crate::grammar::GrammarError;
use crate::tokenizer::VocabError;

/// Any error maskforge returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The grammar IR is malformed (undefined rule, empty language, ...).
    #[error(transparent)]
    Grammar(#[from] GrammarError),
    /// An EBNF grammar text is malformed or describes an ill-formed grammar.
    #[error(transparent)]
    Ebnf(#[from] EbnfError),
    /// The tokenizer could not be loaded, or text could not be encoded.
    #[error(transparent)]
    Vocab(#[from] VocabError),
    /// A JSON Schema is malformed, unsatisfiable or too large (with the JSON pointer).
    #[error(transparent)]
    Schema(#[from] crate::frontend::json_schema::SchemaError),
    /// A regular expression is malformed or uses a construct a grammar cannot enforce.
    #[error(transparent)]
    Regex(#[from] crate::frontend::regex::RegexError),
    /// A mask pool was given to a compiler for another vocabulary than the pool's.
    #[error("the mask pool serves vocabulary {pool:#018x}, the compiler's is {vocab:#018x}: a pool is shared only by compilers of one vocabulary")]
    PoolVocabulary {
        /// The fingerprint of the pool's vocabulary.
        pool: u64,
        /// The fingerprint of the compiler's vocabulary.
        vocab: u64,
    },
    /// A structural tag is malformed (with the JSON pointer of the offending part).
    #[error(transparent)]
    StructuralTag(#[from] crate::frontend::structural_tag::StructuralTagError),
    /// A protocol request is malformed (unknown protocol, bad tools or tool_choice).
    #[error(transparent)]
    Protocol(#[from] crate::frontend::protocol::ProtocolError),
    /// A matcher call failed (invalid token id, rollback too far, short mask buffer).
    #[error(transparent)]
    Matcher(#[from] crate::matcher::MatcherError),
    /// The PDA parser was asked for (`CompilerConfig::parser`) on a grammar it does not serve.
    #[error(transparent)]
    Pda(#[from] crate::pda::PdaError),
    /// A saved grammar could not be read (truncated, corrupted, another format version or
    /// vocabulary).
    #[error(transparent)]
    Load(#[from] crate::compiled::LoadError),
    /// A compile ran past [`crate::CompilerConfig::compile_timeout`] or its
    /// [`crate::CancelToken`] was cancelled (with the phase it was in). Reported as this variant
    /// whichever layer noticed.
    #[error(transparent)]
    Interrupted(#[from] crate::util::cancel::Interrupted),
    /// A compile's source is larger than [`crate::CompilerConfig::max_source_bytes`] (checked
    /// before any parsing; a JSON value is measured as compact JSON text).
    #[error("{what} is too large: {bytes} bytes, the limit is {limit} (CompilerConfig::max_source_bytes)")]
    SourceTooLarge {
        /// Which source (`"the EBNF grammar"`, `"the JSON Schema"`, `"the tools"`, ...).
        what: &'static str,
        /// Its size in bytes (for a JSON value: counted up to one past the limit).
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// A compile panicked (a bug, perhaps in a rayon job): caught at the compiler's boundary and
    /// reported with the panic's message instead of unwinding into the caller.
    #[error("internal error (a bug; please report): {0}")]
    Internal(String),
}
