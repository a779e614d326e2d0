//! [`StructuralTagError`]: what is wrong, and the JSON pointer of the offending part.

use crate::frontend::ebnf::EbnfError;
use crate::frontend::json_schema::SchemaError;
use crate::frontend::regex::RegexError;
use crate::grammar::GrammarError;

/// Why a structural tag could not be turned into a grammar. `pointer` is the JSON pointer
/// (`/format/elements/1/end`) of the offending part of the input document.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pointer}: {kind}")]
pub struct StructuralTagError {
    pub(super) pointer: String,
    pub(super) kind: StructuralTagErrorKind,
}

/// The kinds of [`StructuralTagError`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StructuralTagErrorKind {
    /// The input is not JSON.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// A field is missing, has the wrong type, or a value is out of range.
    #[error("{0}")]
    Invalid(String),
    /// `type` names no format (the message lists the known ones).
    #[error("unknown format type `{found}`; expected one of: {expected}")]
    UnknownType {
        /// The type found.
        found: String,
        /// The known types, comma-separated.
        expected: String,
    },
    /// A field this format does not have (typos would otherwise be silently ignored).
    #[error("unknown field `{field}` in a `{format}` format; its fields are: {expected}")]
    UnknownField {
        /// The field found.
        field: String,
        /// The format type.
        format: String,
        /// The fields of that format, comma-separated.
        expected: String,
    },
    /// A token given by its text is not in the vocabulary, or an id is out of range.
    #[error("{0}")]
    UnknownToken(String),
    /// An embedded JSON Schema is invalid (its own pointer is inside the message).
    #[error("in the JSON Schema: {0}")]
    Schema(SchemaError),
    /// An embedded EBNF grammar is invalid.
    #[error("in the EBNF grammar: {0}")]
    Ebnf(EbnfError),
    /// An embedded regular expression is invalid.
    #[error("in the regex: {0}")]
    Regex(RegexError),
    /// The combined grammar is malformed or too large.
    #[error(transparent)]
    Grammar(GrammarError),
}

impl StructuralTagError {
    pub(super) fn new(pointer: &str, kind: StructuralTagErrorKind) -> Self {
        StructuralTagError { pointer: pointer.to_string(), kind }
    }
    pub(super) fn invalid(pointer: &str, message: impl Into<String>) -> Self {
        Self::new(pointer, StructuralTagErrorKind::Invalid(message.into()))
    }
    /// The JSON pointer of the offending part (`""` for the whole document).
    pub fn pointer(&self) -> &str {
        &self.pointer
    }
    /// What is wrong.
    pub fn kind(&self) -> &StructuralTagErrorKind {
        &self.kind
    }
}
