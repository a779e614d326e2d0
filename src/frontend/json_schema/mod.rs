//! The JSON Schema front-end: a schema (`serde_json::Value`) → grammar IR, plus an honest
//! report of what it could not enforce.
//!
//! # What is enforced
//!
//! Every keyword the converter meets is either enforced exactly, or *relaxed* — the grammar
//! accepts a superset of the valid instances there — with an entry in the
//! [`JsonSchemaReport`] (keyword, JSON pointer, what was relaxed), or, with
//! [`JsonSchemaOptions::strict_keywords`], rejected with a [`SchemaError`]. Annotations
//! (`title`, `description`, `default`, `examples`, `$comment`, `$schema`, `$id`, vendor
//! `x-...` keys, unknown keys) are ignored silently, as are formats the specification does not
//! define (they are annotations too).
//!
//! The schema is parsed once into a typed model (`model/`: a struct of typed keyword
//! fields per schema object, parsed when a pass first visits it, borrowing from the
//! `Value`), which the passes below read; a keyword's type is declared in one table
//! (`model/keywords.rs`). One file per keyword family:
//!
//! * `lower.rs`: the driver — `true`/`false`/`{}`, `type` (single and arrays), `nullable`,
//!   `$ref` (any JSON pointer into the document, recursion through grammar rules, siblings of
//!   `$ref` as an intersection — or ignored, as the specification says, when the document
//!   declares draft 7 or older), `anyOf`, `oneOf`, `allOf`, `not`, `enum`/`const`;
//! * `conditional.rs`: `if`/`then`/`else` and `dependentSchemas`, exact where the negated
//!   condition or the presence of a key can be said (a discriminator property, a type,
//!   `required`, scalar `enum`/`const`; up to 3 dependent keys);
//! * `merge.rs`: intersection of schemas (`allOf`, siblings of `$ref`, distribution of
//!   `anyOf`/`oneOf` over sibling keywords);
//! * `validate.rs`: a small instance validator, used to filter `enum`/`const` values by the
//!   other keywords of their schema (which makes `allOf: [{enum}, {not: ...}]` exact);
//! * `object.rs`: `properties`, `required`, `additionalProperties`, `patternProperties`,
//!   `propertyNames`, `minProperties`/`maxProperties`, `dependentRequired`,
//!   `unevaluatedProperties`;
//! * `array.rs`: `items`, `prefixItems`, `additionalItems`, `minItems`/`maxItems` (kept as
//!   repetitions, never unrolled), `contains`/`minContains`/`maxContains`, `uniqueItems`
//!   (`unique.rs`: exact over a few enumerated item values), `unevaluatedItems`;
//! * `string.rs`: string content as JSON characters (escapes allowed), `minLength`/`maxLength`
//!   in code points, `pattern` (via [`crate::frontend::regex`]), `format` (`format.rs`);
//!   `length.rs`: a length bound together with a pattern, as the product of the pattern's
//!   code-point DFA with a counter;
//! * `number.rs`: `minimum`/`maximum`/`exclusiveMinimum`/`exclusiveMaximum` enforced exactly
//!   by digit-level grammars for integers of any size and for decimals; `multiple_of.rs`:
//!   `multipleOf` as a residue automaton over the digits (any integer divisor, and decimal
//!   divisors `p / 10^j`, up to 4,096 automaton states); `multiple_range.rs`: on integers
//!   with bounds, the product of the range and residue automata (within the same budget);
//! * `value.rs`: a JSON value as an expression (for `enum`/`const`) and "any JSON value";
//! * `relax.rs`: the relaxations met (deduplicated), or the error with `strict_keywords`.
//!
//! # Policies
//!
//! * **Types**: a schema without `type` admits every type its keywords allow, as the
//!   specification says (`{"properties": ...}` also accepts a string).
//! * **Property order** ([`PropertyOrder`]): by default, declared properties appear in the
//!   order of `properties` (as XGrammar and LLGuidance do), and additional properties may
//!   appear between them. [`PropertyOrder::Any`] (part of
//!   [`JsonSchemaOptions::spec_compliant`], since the specification does not order
//!   properties) accepts any order while still enforcing `required`: with up to 3 declared
//!   properties no key may repeat; beyond, an optional key may repeat, and beyond 4 required
//!   properties a repeated required key may stand in for another (each occurrence is
//!   validated; reported, though no JSON value has a repeated key).
//! * **`oneOf`**: exact when the branches are provably disjoint (different JSON types,
//!   disjoint `const`/`enum` values, or a common required property with disjoint constant
//!   values); otherwise enforced as `anyOf` and reported.
//! * **Strings**: a character may be written raw or escaped (`\"`, `\n`, `\u00e9`, surrogate
//!   pairs); printable ASCII characters other than `"` and `\` are accepted raw only (no model
//!   and no serializer writes `\u0041`), which rejects a few valid but absurd encodings.
//! * **Numbers**: an `integer` is written without exponent; in strict mode also without
//!   fraction (`1.0` is rejected, as XGrammar does), otherwise a zero fraction is allowed (`1.0`
//!   is an integer by the specification). A bounded `number` is written in plain notation, or
//!   with an exponent when its value is surely in range (`1e-05` for `minimum: 0, maximum:
//!   1`); bounds are compared as decimals, exactly, however they are written (`6e-07`).
//! * **Strict mode** closes objects that declare `properties` or `patternProperties`; an
//!   object that declares no members (`{"type": "object"}`, free-form tool arguments) stays
//!   open, as in XGrammar.
//! * **Malformed keywords** (`"patternProperties": ["x"]`, `"required": [5]`, a count that is
//!   not a non-negative integer) are [`SchemaError`]s with the pointer of their schema, where
//!   the schema admits the type they constrain. `"prefixItems": [false]` is valid JSON Schema
//!   (an array whose first item cannot exist: only `[]`) and compiles, where XGrammar errors.
//! * **`pattern`** is a search, as the specification says: `"abc"` matches `"xxabcxx"`; use
//!   `^...$` to anchor.
//!
//! # Limits
//!
//! Untrusted schemas hit a [`SchemaError`] rather than a hang or a stack overflow: nesting
//! depth, `$ref` chains, `allOf` merge depth and the grammar size are bounded
//! ([`JsonSchemaLimits`]).

mod any_order;
mod array;
mod conditional;
mod counter;
mod format;
#[cfg(test)]
mod format_cases;
mod fragment;
mod length;
mod lower;
mod merge;
mod model;
mod multiple_of;
mod multiple_range;
mod negation;
mod number;
mod object;
mod object_count;
mod relax;
mod string;
mod unique;
mod validate;
mod value;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::grammar::{Grammar, GrammarError};

pub use fragment::{SchemaFragmentCache, SchemaFragmentStats};
pub use number::integer_range_expr;
// The EBNF `Regex(..., json_string=true)` macro reads a pattern as `pattern` does.
pub(crate) use string::json_char;

/// Options of [`json_schema_to_grammar`], compatible with XGrammar's `compile_json_schema`.
///
/// Deserializable from JSON with unknown fields rejected; missing fields take their defaults.
///
/// # Example
/// ```
/// use maskforge::JsonSchemaOptions;
/// let o: JsonSchemaOptions = serde_json::from_str(r#"{"strict_mode": false, "max_whitespace_cnt": 4}"#)?;
/// assert!(o.any_whitespace && !o.strict_mode && o.max_whitespace_cnt == Some(4));
/// assert!(serde_json::from_str::<JsonSchemaOptions>(r#"{"strictmode": false}"#).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JsonSchemaOptions {
    /// Any JSON whitespace between tokens (and around the value). Default `true`. When
    /// `false`, the layout is exact: [`JsonSchemaOptions::separators`] and
    /// [`JsonSchemaOptions::indent`].
    pub any_whitespace: bool,
    /// XGrammar's strict mode: in an object that declares `properties` or
    /// `patternProperties`, an absent `additionalProperties` / `unevaluatedProperties` means
    /// `false`, and an absent `items` after `prefixItems` means no extra items. An object
    /// that declares no members (`{"type": "object"}`) stays open. Default `true` (as
    /// XGrammar); the JSON Schema specification corresponds to `false`.
    pub strict_mode: bool,
    /// With `any_whitespace: false`: indent nested members by this many spaces, one per line
    /// (`None`: everything on one line).
    pub indent: Option<u32>,
    /// With `any_whitespace: false`: the item and key separators. Default: `(",", ": ")` with
    /// an indent, `(", ", ": ")` without (XGrammar's defaults).
    pub separators: Option<(String, String)>,
    /// With `any_whitespace: true`: the longest run of whitespace between two tokens, so a
    /// model cannot emit whitespace until the token limit. `None`: unbounded.
    pub max_whitespace_cnt: Option<u32>,
    /// The order of declared properties.
    pub property_order: PropertyOrder,
    /// When `true`, a keyword that cannot be enforced exactly is an error instead of a
    /// relaxation in the report. Default `false`.
    pub strict_keywords: bool,
    /// Enforce `format` (default `true`). When `false`, `format` is an annotation, as in the
    /// JSON Schema 2020-12 default vocabulary.
    pub enforce_format: bool,
    /// Size and depth limits for untrusted schemas.
    pub limits: JsonSchemaLimits,
}

impl Default for JsonSchemaOptions {
    fn default() -> Self {
        JsonSchemaOptions {
            any_whitespace: true,
            strict_mode: true,
            indent: None,
            separators: None,
            max_whitespace_cnt: None,
            property_order: PropertyOrder::Declared,
            strict_keywords: false,
            enforce_format: true,
            limits: JsonSchemaLimits::default(),
        }
    }
}

impl JsonSchemaOptions {
    /// The configuration that follows the JSON Schema specification (what MaskBench scores):
    /// strict mode off, any whitespace, properties in any order.
    pub fn spec_compliant() -> Self {
        JsonSchemaOptions { strict_mode: false, property_order: PropertyOrder::Any, ..Self::default() }
    }
}

/// The order in which an object's declared properties may appear.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PropertyOrder {
    /// The order of `properties` in the schema; additional properties may appear anywhere.
    #[default]
    Declared,
    /// Any order; `required` is enforced and declared keys appear at most once, except that
    /// beyond 3 declared properties an optional key may repeat, and beyond 4 required ones a
    /// required key may repeat in place of another (reported as relaxations of `properties`:
    /// tracking every set of keys written takes a rule per set).
    Any,
}

/// Limits for untrusted schemas; exceeding one is a [`SchemaError`] (`TooLarge`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JsonSchemaLimits {
    /// The deepest nesting of sub-schemas walked at once (default 128). A schema given as text
    /// may nest its JSON arrays and objects `JSON_LEVELS_PER_SUBSCHEMA` (4) times as deep.
    pub max_depth: usize,
    /// The most grammar rules (default 200,000).
    pub max_rules: usize,
    /// The most sub-schemas lowered in total (default 500,000), which bounds the work done
    /// for `anyOf` distribution and `allOf` merging.
    pub max_schemas: usize,
    /// The most bytes of literal text in the grammar's rules (default 64 MiB): what bounds the
    /// memory of layouts that grow with depth (`indent` under recursive `$ref`s).
    pub max_text_bytes: usize,
}

impl Default for JsonSchemaLimits {
    fn default() -> Self {
        JsonSchemaLimits { max_depth: 128, max_rules: 200_000, max_schemas: 500_000, max_text_bytes: 64 << 20 }
    }
}

/// One keyword (at one place) that the grammar does not enforce exactly: the grammar accepts
/// some instances the schema rejects there.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Relaxation {
    /// The keyword (`uniqueItems`, `not`, `oneOf`, ...).
    pub keyword: String,
    /// The JSON pointer of the schema holding the keyword (`#/properties/tags`).
    pub pointer: String,
    /// What is not enforced.
    pub detail: String,
}

/// The coverage report of one schema: every relaxation, in the order met.
///
/// A serving engine can refuse a schema whose report is not empty, log it, or tell the user
/// which constraints the output may violate.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonSchemaReport {
    /// The relaxations (deduplicated).
    pub relaxations: Vec<Relaxation>,
}

impl JsonSchemaReport {
    /// Whether every keyword is enforced exactly.
    pub fn is_exact(&self) -> bool {
        self.relaxations.is_empty()
    }
    /// The distinct keywords that were relaxed, sorted.
    pub fn relaxed_keywords(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.relaxations.iter().map(|r| r.keyword.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Why a schema could not be converted; carries the JSON pointer of the offending part.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pointer}: {kind}")]
pub struct SchemaError {
    kind: SchemaErrorKind,
    pointer: String,
}

/// The kinds of [`SchemaError`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaErrorKind {
    /// The schema (or a keyword's value) is malformed.
    #[error("invalid schema: {0}")]
    Invalid(String),
    /// A `$ref` that cannot be resolved (external, or a pointer to nothing).
    #[error("unresolvable $ref `{0}`")]
    UnresolvableRef(String),
    /// No instance can satisfy the schema.
    #[error("the schema is unsatisfiable: {0}")]
    Unsatisfiable(String),
    /// With `strict_keywords`: a keyword that cannot be enforced exactly.
    #[error("keyword `{keyword}` cannot be enforced exactly: {detail}")]
    Unsupported {
        /// The keyword.
        keyword: String,
        /// Why.
        detail: String,
    },
    /// A limit of [`JsonSchemaLimits`] was exceeded.
    #[error("schema too large: {0}")]
    TooLarge(String),
    /// The generated grammar is malformed (a bug) or too large.
    #[error(transparent)]
    Grammar(GrammarError),
    /// The compile ran past its deadline or was cancelled.
    #[error(transparent)]
    Interrupted(crate::util::cancel::Interrupted),
}

impl From<crate::util::cancel::Interrupted> for SchemaError {
    fn from(i: crate::util::cancel::Interrupted) -> Self {
        SchemaError::new("#", SchemaErrorKind::Interrupted(i))
    }
}

impl SchemaError {
    pub(crate) fn new(pointer: &str, kind: SchemaErrorKind) -> Self {
        SchemaError { kind, pointer: if pointer.is_empty() { "#".into() } else { pointer.to_string() } }
    }
    pub(crate) fn not_json(e: &serde_json::Error) -> Self {
        SchemaError::new("#", SchemaErrorKind::Invalid(format!("not JSON: {e}")))
    }
    /// What is wrong.
    pub fn kind(&self) -> &SchemaErrorKind {
        &self.kind
    }
    /// The JSON pointer (`#/properties/a`) of the offending sub-schema.
    pub fn pointer(&self) -> &str {
        &self.pointer
    }
}

/// Converts a JSON Schema into a grammar whose language is the JSON texts of the schema's
/// instances (as far as the report says), laid out as the options say.
///
/// # Errors
/// [`SchemaError`] for malformed or unsatisfiable schemas, unresolvable references, limits,
/// and (with `strict_keywords`) keywords that cannot be enforced exactly.
///
/// # Example
/// ```
/// use maskforge::{json_schema_to_grammar, JsonSchemaOptions};
/// let schema = serde_json::json!({
///     "type": "object",
///     "properties": {"age": {"type": "integer", "minimum": 18}, "tags": {"type": "array", "uniqueItems": true}},
///     "required": ["age"]
/// });
/// let (grammar, report) = json_schema_to_grammar(&schema, &JsonSchemaOptions::default())?;
/// assert!(grammar.rules().len() > 1);
/// assert_eq!(report.relaxed_keywords(), vec!["uniqueItems"]);
/// assert_eq!(report.relaxations[0].pointer, "#/properties/tags");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn json_schema_to_grammar(
    schema: &Value,
    options: &JsonSchemaOptions,
) -> Result<(Grammar, JsonSchemaReport), SchemaError> {
    lower::Lowerer::run(schema, options, None)
}

/// [`json_schema_to_grammar`], taking the self-contained branches of `anyOf`/`oneOf` (tool
/// schemas in a tool-calling request) from `fragments` and adding the ones it lowers; the
/// grammar accepts the same language and the report is the same as without the cache.
///
/// # Errors
/// As [`json_schema_to_grammar`].
///
/// # Example
/// ```
/// use maskforge::internals::{json_schema_to_grammar_cached, SchemaFragmentCache};
/// use maskforge::JsonSchemaOptions;
/// let cache = SchemaFragmentCache::new(64);
/// let tool = serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}});
/// let other = serde_json::json!({"type": "integer"});
/// let options = JsonSchemaOptions::default();
/// json_schema_to_grammar_cached(&serde_json::json!({"anyOf": [tool.clone(), other]}), &options, &cache)?;
/// json_schema_to_grammar_cached(&serde_json::json!({"anyOf": [{"type": "null"}, tool]}), &options, &cache)?;
/// assert_eq!(cache.stats().hits, 1); // the tool branch, lowered once
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn json_schema_to_grammar_cached(
    schema: &Value,
    options: &JsonSchemaOptions,
    fragments: &SchemaFragmentCache,
) -> Result<(Grammar, JsonSchemaReport), SchemaError> {
    lower::Lowerer::run(schema, options, Some(fragments))
}

/// The keywords the lowering reads (every other key is an annotation, ignored): each is
/// either enforced exactly or reported in the [`JsonSchemaReport`] where it is not.
pub fn json_schema_keywords() -> &'static [&'static str] {
    model::Kw::NAMES
}

/// Escapes a key for a JSON pointer segment (`~` → `~0`, `/` → `~1`).
pub(crate) fn pointer_segment(key: &str) -> std::borrow::Cow<'_, str> {
    // Most keys need no escape: no copy then (a pointer is built for every property).
    if !key.contains(['~', '/']) {
        return std::borrow::Cow::Borrowed(key);
    }
    std::borrow::Cow::Owned(key.replace('~', "~0").replace('/', "~1"))
}
