//! # maskforge
//!
//! A structured-generation engine for LLM serving. Given a structure (an EBNF grammar, a JSON
//! Schema, a regex, or a model's tool-calling protocol) and a model's tokenizer, maskforge
//! computes at every decoding step the bitmask of tokens that may come next, and advances as
//! tokens are sampled.
//!
//! ## Architecture
//!
//! ```text
//! front-ends (EBNF, ...) ──▶ Grammar IR ──▶ byte-level FSM per rule ──▶ Earley parser ──▶ token mask
//!                                              tokenizer.json ──▶ Vocabulary (bytes of every token)
//! ```
//!
//! Layers, lowest first (each imports only from the layers below it): `util` → `grammar` /
//! `tokenizer` → `frontend` → `fsm` → `earley` → `matcher` → `compiler`.
//! See `DESIGN.md` of the project for the algorithms (XGrammar and XGrammar-2); the
//! project README has a quick start, which runs as a doctest.

// Every public item is documented: the crate is a library for serving engines.
#![warn(missing_docs)]
// Broken intra-doc links are bugs in the documentation.
#![deny(rustdoc::broken_intra_doc_links)]
// Debug output is part of every public type's contract (serving engines log state).
#![warn(missing_debug_implementations)]
// Unsafe code is confined to the hot loops that justify it, each with an `allow`.
#![deny(unsafe_code)]

pub mod cache;
pub mod compiled;
pub mod compiler;
pub mod earley;
pub mod error;
pub mod frontend;
pub mod fsm;
pub mod grammar;
pub mod maskbench;
pub mod matcher;
pub mod tokenizer;
pub mod toolbench;
pub mod util;

pub use compiled::CompiledGrammar;
pub use compiler::{CompilerConfig, GrammarCompiler, JSON_GRAMMAR_EBNF};
pub use error::Error;
pub use frontend::ebnf::{parse_ebnf, EbnfError};
pub use frontend::json_schema::{
    json_schema_to_grammar, JsonSchemaOptions, JsonSchemaReport, PropertyOrder, Relaxation, SchemaError,
};
pub use frontend::regex::RegexError;
pub use frontend::{Position, Span, SyntaxError};
pub use grammar::{
    CharClass, Expr, Grammar, GrammarBuilder, GrammarError, GrammarLimits, Rule, RuleId, TagDispatch, TokenSet, Trigger,
};
pub use matcher::{GrammarMatcher, MatcherConfig, MatcherError};
pub use tokenizer::{TextEncoder, VocabError, VocabKind, Vocabulary, VocabularyBuilder};
pub use util::TokenBitmask;

/// The README's examples, run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
