//! # maskforge
//!
//! A structured-generation engine for LLM serving. Given a structure (an EBNF grammar, a JSON
//! Schema, a regex, an XGrammar structural tag, or a model's tool-calling protocol) and a
//! model's tokenizer, maskforge computes at every decoding step the bitmask of tokens that may
//! come next, and advances as tokens are sampled.
//!
//! ## What to use
//!
//! * [`GrammarCompiler`] — one per tokenizer for the life of a server (clones share its caches
//!   and its [`MaskPool`]); configured by [`CompilerConfig`]. It compiles EBNF
//!   ([`GrammarCompiler::compile_grammar`]), JSON Schema, regexes, the builtin JSON grammar,
//!   structural tags and protocols into a [`CompiledGrammar`] (`Send + Sync`, shared by requests).
//! * [`GrammarMatcher`] — one per request: [`fill_next_token_bitmask`] into a [`TokenBitmask`]
//!   (the `int32` layout of engines' bitmask tensors), [`accept_token`], rollback, jump-forward.
//! * [`Vocabulary`] — the token bytes of a model: [`load_tokenizer`] for a `tokenizer.json` (with
//!   its [`TextEncoder`]), [`VocabularyBuilder`] for an engine with its own tokenizer.
//! * Front-ends without a tokenizer, returning the [`Grammar`] IR: [`parse_ebnf`],
//!   [`json_schema_to_grammar`] (with [`JsonSchemaOptions`] and a [`JsonSchemaReport`] of every
//!   relaxed keyword), [`regex_to_expr`], [`structural_tag_to_grammar`],
//!   [`protocol_structural_tag`]. Grammars can also be built with [`GrammarBuilder`].
//! * Saved grammars: [`CompiledGrammar::serialize`] and [`CompiledGrammar::deserialize`] (a
//!   versioned, checksummed format; a bad input is a [`LoadError`]), and a directory of them
//!   shared by processes, [`CompilerConfig::disk_cache`].
//! * Errors: [`Error`] wraps each front-end's typed error; every message is precise and none of
//!   them is a panic.
//!
//! [`fill_next_token_bitmask`]: GrammarMatcher::fill_next_token_bitmask
//! [`accept_token`]: GrammarMatcher::accept_token
//!
//! ## Architecture
//!
//! ```text
//! front-ends (EBNF, JSON Schema, regex, tags) ──▶ Grammar IR ──▶ byte-level FSM per rule
//!     ──▶ Earley parser ──▶ adaptive token-mask cache (+ cross-grammar pool) ──▶ token mask
//!                           tokenizer.json ──▶ Vocabulary (bytes of every token)
//! ```
//!
//! Layers, lowest first (each imports only from the layers below it): `util` → `grammar` /
//! `tokenizer` → `frontend` → `fsm` → `earley` → `cache` → `compiled` → `matcher` → `compiler`.
//! `docs/ARCHITECTURE.md` in the repository describes each layer and the invariants between
//! them; the README has a quick start, which runs as a doctest.
//!
//! ## Cargo features
//!
//! * `gzip` (off by default): [`load_tokenizer`] and [`Vocabulary::from_files`] also read
//!   gzip-compressed `tokenizer.json.gz` files (through `flate2`). Without it such a file is a
//!   typed error that names the feature.

// Every public item is documented: the crate is a library for serving engines.
#![warn(missing_docs)]
// Broken intra-doc links are bugs in the documentation.
#![deny(rustdoc::broken_intra_doc_links)]
// Debug output is part of every public type's contract (serving engines log state).
#![warn(missing_debug_implementations)]
// Unsafe code is confined to the hot loops that justify it, each with an `allow`.
#![deny(unsafe_code)]

// The product modules: their public items are re-exported below, which is how users name them.
mod compiled;
mod compiler;
mod error;
mod frontend;
mod grammar;
mod matcher;

// The vocabulary layer is public as a module too: loading helpers and constants that only some
// users need live there.
pub mod tokenizer;
// Two front-ends whose module documentation is user documentation (the EBNF dialect; the
// tool-calling policies): their items are also re-exported at the root.
pub use frontend::{ebnf, protocol};

// Internals. Hidden from the documentation and not part of the API: they are public only for
// the project's own integration tests, benchmarks and profiling programs
// (`crates/maskforge-bench`), which measure and check the layers one by one.
#[doc(hidden)]
pub mod cache;
#[doc(hidden)]
pub mod earley;
#[doc(hidden)]
pub mod fsm;
#[doc(hidden)]
pub mod pda;
mod util;

/// Internal front-end items that the project's own tests and benchmarks name by path.
#[doc(hidden)]
pub mod internals {
    pub use crate::frontend::json_schema::{
        integer_range_expr, json_schema_keywords, json_schema_to_grammar_cached, SchemaFragmentCache,
    };
    pub use crate::frontend::structural_tag::{format_to_grammar, parse_document, Format};
    pub use crate::grammar::{escape_literal, write_expr};
    pub use crate::matcher::oracle;
}

pub use cache::{MaskCacheMode, MaskCacheStats, MaskPool, PoolStats};
pub use compiled::{CompiledGrammar, LoadError, Parser, UnknownParser, FORMAT_VERSION as SAVED_FORMAT_VERSION};
pub use compiler::{
    CompilerConfig, GrammarCacheStats, GrammarCompiler, DEFAULT_GRAMMAR_CACHE_LEN, DEFAULT_MAX_COMPILE_BYTES,
    DEFAULT_MAX_SOURCE_BYTES, DEFAULT_POOL_BYTES, DEFAULT_RULE_FSM_CACHE_STATES, DEFAULT_SCHEMA_FRAGMENT_CACHE_LEN,
    JSON_GRAMMAR_EBNF, JSON_LEVELS_PER_SUBSCHEMA,
};
pub use error::Error;
pub use frontend::ebnf::{parse_ebnf, EbnfError};
pub use frontend::json_schema::{
    json_schema_to_grammar, JsonSchemaLimits, JsonSchemaOptions, JsonSchemaReport, PropertyOrder, Relaxation,
    SchemaError, SchemaErrorKind, SchemaFragmentStats,
};
pub use frontend::protocol::{
    protocol_names, protocol_structural_tag, Protocol, ProtocolError, ProtocolErrorKind, ProtocolOptions, Tool,
    ToolChoice, ToolKind,
};
pub use frontend::regex::{regex_to_expr, RegexError};
pub use frontend::structural_tag::{
    structural_tag_str_to_grammar, structural_tag_to_grammar, NoTokens, StructuralTagError, StructuralTagErrorKind,
    TokenLookup,
};
pub use frontend::{Position, Span, SyntaxError};
pub use fsm::{FsmLimits, RuleFsmCacheStats};
pub use grammar::{
    CharClass, Expr, Grammar, GrammarBuilder, GrammarError, GrammarLimits, Repeat, Rule, RuleAttrs, RuleId,
    TagDispatch, TokenSet, Trigger,
};
#[doc(hidden)]
pub use matcher::inject_panic_into_next_fill;
pub use matcher::{
    BatchGrammarMatcher, GrammarMatcher, JumpForwardTokens, MatcherConfig, MatcherError, Prefetch,
    DEFAULT_MAX_STATE_BYTES, DEFAULT_MAX_STEP_ITEMS,
};
pub use pda::PdaError;
pub use tokenizer::{load_tokenizer, GgufTokenizer, TextEncoder, VocabError, VocabKind, Vocabulary, VocabularyBuilder};
pub use util::cancel::{last_compile_bytes, CancelToken, InterruptReason, Interrupted};
pub use util::TokenBitmask;

/// The README's examples, run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
