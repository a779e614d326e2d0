//! Structural tags in XGrammar's JSON format → grammar IR.
//!
//! A structural tag is `{"type": "structural_tag", "format": F}` where `F` is a tree of
//! format objects (XGrammar's names, fields and semantics):
//!
//! | kind | formats |
//! |---|---|
//! | primitive | `const_string` (`value`), `json_schema` (`json_schema`, `style`, `any_order`, `max_whitespace_cnt`), `qwen_xml_parameter` (`json_schema`: XGrammar's name for style `qwen_xml`), `grammar` (EBNF, root `root`), `regex` (`pattern`), `any_text` (`excludes`) |
//! | composition | `sequence` / `or` (`elements`), `optional` / `plus` / `star` (`content`), `repeat` (`content`, `min`, `max`, `-1` = unbounded) |
//! | tags | `tag` (`begin`: string or `token`; `content`; `end`: string, list of strings, or `token`), `triggered_tags` (`triggers`, `tags`, `excludes`, `at_least_one`, `stop_after_first`), `tags_with_separator` (`tags`, `separator`, `at_least_one`, `stop_after_first`), `dispatch` (`rules`: `[pattern, format]` pairs, `loop`, `excludes`) |
//! | tokens | `token` (`token`: id or text), `exclude_token` / `any_tokens` (`exclude_tokens`), `token_triggered_tags` (`trigger_tokens`, `tags`, `exclude_tokens`, ...), `token_dispatch` (`rules`, `loop`, `exclude_tokens`) |
//!
//! XGrammar's older form, `{"type": "structural_tag", "structures": [{"begin", "schema",
//! "end"}, ...], "triggers": [...]}` (its deprecated `from_structural_tag(tags, triggers)`), is
//! read as the `triggered_tags` format it means: free text in which a trigger starts one of
//! the structures that begin with it, errors pointing into `/structures/i`.
//!
//! One file per concern: `format.rs` reads and checks the JSON (unknown types and fields are
//! errors, so typos do not silently change the language), `lower.rs` builds the grammar
//! (free text and triggers become [`crate::grammar::TagDispatch`] rules, embedded JSON Schemas,
//! EBNF and regexes come from their own front-ends), `xml_style.rs` writes object schemas as
//! XML-like parameters, `python_style.rs` as Python keyword arguments (a maskforge
//! extension: `"style": "python_kwargs"`, for Llama 4's pythonic calls). `error.rs` holds [`StructuralTagError`], which carries the JSON
//! pointer of the offending part (`/format/elements/1/end`).
//!
//! # Semantics worth knowing
//!
//! * **End detection**: an unlimited format inside a `tag` may not contain the tag's `end`
//!   (strings for string-level formats, tokens for token-level ones); within a `sequence`
//!   only the last element is followed by the end. The free text is lowered as "no complete
//!   end inside, then the end", which equals XGrammar's stop-at-the-first-end for every end
//!   that cannot overlap itself (`</think>`, `<|end|>`); for a self-overlapping end such as
//!   `aa`, a text may end with a prefix of it (`xa` + `aa`).
//! * **`triggered_tags`**: each tag belongs to the longest trigger its `begin` starts with (an
//!   error if none); a trigger without tags is a forbidden string of the free text.
//!   `at_least_one` means a tag comes first (no leading text), `stop_after_first` that the
//!   structure ends after one tag (with `at_least_one`: exactly one tag, nothing else).
//! * **`json_schema`** uses [`crate::JsonSchemaOptions`]' defaults (XGrammar's: strict mode, any
//!   whitespace); `any_order` selects [`crate::PropertyOrder::Any`], which (unlike XGrammar's
//!   flag) still enforces `required` and forbids repeated keys.
//! * Token formats resolve token texts with a [`TokenLookup`] (the compiler's vocabulary);
//!   an unknown token is an error.
//! * `max_tokens` / `max_chars` of `any_text` are not supported (unknown fields).

mod error;
mod format;
mod lower;
mod python_style;
mod xml_style;

use serde_json::Value;

pub use error::{StructuralTagError, StructuralTagErrorKind};
pub use format::{parse_document, Format, Node};

use crate::frontend::json_schema::{JsonSchemaReport, SchemaFragmentCache};
use crate::grammar::Grammar;
use lower::{grammar_error, Ends, Lowerer};

/// Resolves the token formats' token texts and checks token ids: implemented by the
/// compiler's vocabulary, or by [`NoTokens`] for tags without token formats.
pub trait TokenLookup {
    /// The id of the token whose text is `text`.
    fn token_id(&self, text: &str) -> Option<u32>;
    /// The number of token ids.
    fn vocab_size(&self) -> usize;
}

/// A [`TokenLookup`] without tokens: every token format is an error.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTokens;

impl TokenLookup for NoTokens {
    fn token_id(&self, _: &str) -> Option<u32> {
        None
    }
    fn vocab_size(&self) -> usize {
        0
    }
}

/// Converts a structural tag (parsed JSON) into a grammar and the merged coverage report of
/// its JSON Schemas.
///
/// # Errors
/// [`StructuralTagError`] with the JSON pointer of the offending part.
///
/// # Example
/// ```
/// use maskforge::{structural_tag_to_grammar, NoTokens};
/// let tag = serde_json::json!({"type": "structural_tag", "format": {
///     "type": "sequence", "elements": [
///         {"type": "const_string", "value": "A: "},
///         {"type": "or", "elements": [{"type": "const_string", "value": "yes"}, {"type": "regex", "pattern": "[0-9]+"}]}
///     ]}});
/// let (grammar, _) = structural_tag_to_grammar(&tag, &NoTokens)?;
/// assert_eq!(grammar.to_string(), "root ::= \"A: \" (\"yes\" | [0-9]+)\n");
/// let bad = serde_json::json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [{"type": "const_strin"}]}});
/// let err = structural_tag_to_grammar(&bad, &NoTokens).unwrap_err();
/// assert_eq!(err.pointer(), "/format/elements/0/type");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn structural_tag_to_grammar(
    doc: &Value,
    tokens: &dyn TokenLookup,
) -> Result<(Grammar, JsonSchemaReport), StructuralTagError> {
    let node = parse_document(doc)?;
    format_to_grammar(&node, tokens)
}

/// [`structural_tag_to_grammar`], taking the lowering of each embedded JSON Schema (a tool's
/// parameters) from `fragments` when another document lowered the same schema with the same
/// options; the result is the same as without the cache.
///
/// # Errors
/// As [`structural_tag_to_grammar`].
pub fn structural_tag_to_grammar_cached(
    doc: &Value,
    tokens: &dyn TokenLookup,
    fragments: &SchemaFragmentCache,
) -> Result<(Grammar, JsonSchemaReport), StructuralTagError> {
    let node = parse_document(doc)?;
    lower_format(&node, tokens, Some(fragments))
}

/// Converts structural-tag JSON text; see [`structural_tag_to_grammar`].
///
/// # Errors
/// As [`structural_tag_to_grammar`], plus [`StructuralTagErrorKind::NotJson`].
pub fn structural_tag_str_to_grammar(
    text: &str,
    tokens: &dyn TokenLookup,
) -> Result<(Grammar, JsonSchemaReport), StructuralTagError> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| StructuralTagError::new("", StructuralTagErrorKind::NotJson(e.to_string())))?;
    structural_tag_to_grammar(&doc, tokens)
}

/// Lowers an already parsed format tree (the root of the grammar is named `root`).
///
/// # Errors
/// As [`structural_tag_to_grammar`].
pub fn format_to_grammar(
    node: &Node,
    tokens: &dyn TokenLookup,
) -> Result<(Grammar, JsonSchemaReport), StructuralTagError> {
    lower_format(node, tokens, None)
}

fn lower_format(
    node: &Node,
    tokens: &dyn TokenLookup,
    fragments: Option<&SchemaFragmentCache>,
) -> Result<(Grammar, JsonSchemaReport), StructuralTagError> {
    let mut me = Lowerer::new(tokens, fragments);
    let root = me.b.rule("root");
    let body = me.lower(node, &Ends::default())?;
    me.b.define(root, body, None).map_err(|e| grammar_error(&node.pointer, e))?;
    let grammar = me.b.build("root").map_err(|e| grammar_error(&node.pointer, e))?;
    Ok((grammar, me.report))
}

#[cfg(test)]
mod tests;
