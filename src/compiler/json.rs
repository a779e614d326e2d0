//! JSON Schema and regex compilation: [`GrammarCompiler::compile_json_schema`] and friends.
//!
//! Kept apart from `mod.rs` so the front-end entry points evolve without touching the core
//! compile path. The JSON Schema coverage report travels with the product:
//! [`CompiledGrammar::json_schema_report`].

use std::sync::Arc;

use serde_json::Value;

use super::GrammarCompiler;
use crate::compiled::CompiledGrammar;
use crate::error::Error;
use crate::frontend::json_schema::{
    json_schema_to_grammar, json_schema_to_grammar_cached, JsonSchemaOptions, SchemaError, SchemaErrorKind,
};
use crate::frontend::regex::regex_to_expr;
use crate::grammar::GrammarBuilder;
use crate::util;

/// How many levels of JSON nesting a schema text may spend per level of sub-schema nesting
/// ([`JsonSchemaLimits::max_depth`](crate::JsonSchemaLimits)): `properties` → name → schema
/// takes two, and `const`/`enum` values may nest further on their own.
pub const JSON_LEVELS_PER_SUBSCHEMA: usize = 4;

/// Parses a schema text without serde_json's fixed recursion limit (128 levels, which refused
/// valid schemas nested 64 properties deep), bounding the nesting by the schema limits instead,
/// checked in one pass before parsing so that no text can overflow the parser's stack.
fn parse_schema_text(schema: &str, options: &JsonSchemaOptions) -> Result<Value, Error> {
    let max_depth = options.limits.max_depth;
    let cap = max_depth.saturating_mul(JSON_LEVELS_PER_SUBSCHEMA);
    if util::json::nesting_depth(schema.as_bytes(), cap) > cap {
        let message = format!(
            "the schema text nests arrays and objects more than {cap} levels deep \
             ({JSON_LEVELS_PER_SUBSCHEMA} per level of JsonSchemaLimits::max_depth = {max_depth})"
        );
        return Err(Error::Schema(SchemaError::new("#", SchemaErrorKind::TooLarge(message))));
    }
    util::json::parse_bounded(schema).map_err(|e| Error::Schema(SchemaError::not_json(&e)))
}

impl GrammarCompiler {
    /// Compiles a JSON Schema. The returned grammar carries the coverage report
    /// ([`CompiledGrammar::json_schema_report`]): every keyword that is not enforced exactly.
    ///
    /// # Errors
    /// [`Error::Schema`] (with the JSON pointer of the offending part) for malformed,
    /// unsatisfiable or too large schemas; [`Error::Grammar`] for automaton limits.
    ///
    /// # Example
    /// ```
    /// use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, VocabularyBuilder};
    /// use maskforge::JsonSchemaOptions;
    /// let vocab = VocabularyBuilder::new().tokens(["{", "}", "\"a\"", ":", "1", "2", "</s>"]).special(6).stop_tokens([6]).build()?;
    /// let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
    /// let schema = serde_json::json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 2, "maximum": 5}}, "required": ["a"]});
    /// let grammar = compiler.compile_json_schema(&schema, &JsonSchemaOptions::default())?;
    /// assert!(grammar.json_schema_report().unwrap().is_exact());
    /// let mut m = GrammarMatcher::new(&grammar);
    /// assert!(m.accept_token(0) && m.accept_token(2) && m.accept_token(3));
    /// assert!(!m.accept_token(4)); // no integer in 2..=5 starts with 1
    /// assert!(m.accept_token(5) && m.accept_token(1) && m.can_terminate());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compile_json_schema(&self, schema: &Value, options: &JsonSchemaOptions) -> Result<CompiledGrammar, Error> {
        self.check_source_json("the JSON Schema", &[schema])?;
        let opts = serde_json::to_string(options).map_err(|e| Error::Schema(SchemaError::not_json(&e)))?;
        self.cached(&[b"json-schema", opts.as_bytes()], Some(schema), || {
            let (grammar, report) = match &self.fragments {
                Some(fragments) => json_schema_to_grammar_cached(schema, options, fragments)?,
                None => json_schema_to_grammar(schema, options)?,
            };
            Ok(self.compile(grammar)?.with_json_schema_report(Arc::new(report)))
        })
    }

    /// Compiles a JSON Schema given as text.
    ///
    /// # Errors
    /// [`Error::Schema`] when the text is not JSON or nests deeper than
    /// [`JSON_LEVELS_PER_SUBSCHEMA`] × [`JsonSchemaLimits::max_depth`](crate::JsonSchemaLimits)
    /// levels of arrays and objects, else as [`GrammarCompiler::compile_json_schema`].
    pub fn compile_json_schema_str(&self, schema: &str, options: &JsonSchemaOptions) -> Result<CompiledGrammar, Error> {
        self.check_source_len("the JSON Schema text", schema.len())?;
        self.compile_json_schema(&parse_schema_text(schema, options)?, options)
    }

    /// Compiles the JSON Schema of a Rust type (via `schemars`).
    ///
    /// # Errors
    /// As [`GrammarCompiler::compile_json_schema`].
    ///
    /// # Example
    /// ```
    /// use maskforge::{CompilerConfig, GrammarCompiler, VocabularyBuilder};
    /// use maskforge::JsonSchemaOptions;
    /// #[derive(schemars::JsonSchema)]
    /// #[allow(dead_code)]
    /// struct Point { x: i32, y: Option<f64> }
    /// let vocab = VocabularyBuilder::new().tokens(["{", "}", "</s>"]).special(2).stop_tokens([2]).build()?;
    /// let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
    /// let grammar = compiler.compile_json_schema_for::<Point>(&JsonSchemaOptions::default())?;
    /// assert!(grammar.json_schema_report().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compile_json_schema_for<T: schemars::JsonSchema>(
        &self,
        options: &JsonSchemaOptions,
    ) -> Result<CompiledGrammar, Error> {
        let schema = schemars::schema_for!(T);
        let value = serde_json::to_value(&schema).map_err(|e| Error::Schema(SchemaError::not_json(&e)))?;
        self.compile_json_schema(&value, options)
    }

    /// Compiles an ECMA-262 regular expression; the whole output must match it (`^`/`$` at
    /// the ends are optional).
    ///
    /// # Errors
    /// [`Error::Regex`] for malformed patterns and constructs a grammar cannot enforce
    /// (backreferences, lookaround, `\b`), with their position.
    ///
    /// # Example
    /// ```
    /// use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, VocabularyBuilder};
    /// let vocab = VocabularyBuilder::new().tokens(["a", "b", "-", "</s>"]).special(3).stop_tokens([3]).build()?;
    /// let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
    /// let grammar = compiler.compile_regex(r"^[ab]{2}-?a$")?;
    /// let mut m = GrammarMatcher::new(&grammar);
    /// assert!(m.accept_token(1) && m.accept_token(0) && !m.accept_token(1) && m.accept_token(0) && m.can_terminate());
    /// assert!(compiler.compile_regex(r"(a)\1").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compile_regex(&self, pattern: &str) -> Result<CompiledGrammar, Error> {
        self.check_source_len("the regex", pattern.len())?;
        self.cached(&[b"regex", pattern.as_bytes()], None, || {
            let expr = regex_to_expr(pattern)?;
            let mut b = GrammarBuilder::new();
            b.add_rule("root", expr)?;
            self.compile(b.build("root")?)
        })
    }
}
