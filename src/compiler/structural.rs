//! Structural tags and model protocols: [`GrammarCompiler::compile_structural_tag`] and
//! [`GrammarCompiler::compile_protocol`].
//!
//! The compiler's vocabulary resolves the token formats' token texts. Text literals equal to
//! a special token's text (`<|channel|>`, `<tool_call>`) are left as text: the special-token
//! policy of the automata decides how a tokenizer matches them.

use std::sync::Arc;

use serde_json::Value;

use super::GrammarCompiler;
use crate::compiled::CompiledGrammar;
use crate::error::Error;
use crate::frontend::protocol::{protocol_structural_tag, Protocol, ProtocolOptions, ToolChoice};
use crate::frontend::structural_tag::{
    structural_tag_str_to_grammar, structural_tag_to_grammar, structural_tag_to_grammar_cached, TokenLookup,
};
use crate::tokenizer::Vocabulary;

impl TokenLookup for Vocabulary {
    fn token_id(&self, text: &str) -> Option<u32> {
        Vocabulary::token_id(self, text)
    }
    fn vocab_size(&self) -> usize {
        Vocabulary::vocab_size(self)
    }
}

impl GrammarCompiler {
    /// Compiles a structural tag in XGrammar's JSON format
    /// (`{"type": "structural_tag", "format": {...}}`). The coverage report of its JSON
    /// Schemas is [`CompiledGrammar::json_schema_report`].
    ///
    /// # Errors
    /// [`Error::StructuralTag`] with the JSON pointer of the offending part;
    /// [`Error::Grammar`] for automaton limits.
    ///
    /// # Example
    /// ```
    /// use maskforge::{CompilerConfig, GrammarCompiler, VocabularyBuilder};
    /// let vocab = VocabularyBuilder::new().tokens(["a", "b", "</s>"]).special(2).stop_tokens([2]).build()?;
    /// let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
    /// let tag = serde_json::json!({"type": "structural_tag", "format": {"type": "plus", "content": {"type": "const_string", "value": "ab"}}});
    /// assert!(compiler.compile_structural_tag(&tag).is_ok());
    /// let bad = serde_json::json!({"type": "structural_tag", "format": {"type": "plus"}});
    /// let err = compiler.compile_structural_tag(&bad).unwrap_err();
    /// assert_eq!(err.to_string(), "/format: missing field `content`");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compile_structural_tag(&self, tag: &Value) -> Result<CompiledGrammar, Error> {
        self.check_source_json("the structural tag", &[tag])?;
        // Keyed by the tag's JSON value (a protocol request's too: its tag is its canonical form).
        self.cached(&[b"structural-tag"], Some(tag), || {
            let (grammar, report) = match &self.fragments {
                Some(fragments) => structural_tag_to_grammar_cached(tag, &self.vocab, fragments)?,
                None => structural_tag_to_grammar(tag, &self.vocab)?,
            };
            Ok(self.compile(grammar)?.with_json_schema_report(Arc::new(report)))
        })
    }

    /// Compiles a structural tag given as JSON text.
    ///
    /// # Errors
    /// As [`GrammarCompiler::compile_structural_tag`], and when the text is not JSON.
    pub fn compile_structural_tag_str(&self, tag: &str) -> Result<CompiledGrammar, Error> {
        self.check_source_len("the structural tag text", tag.len())?;
        self.cached(&[b"structural-tag-text", tag.as_bytes()], None, || {
            let (grammar, report) = structural_tag_str_to_grammar(tag, &self.vocab)?;
            Ok(self.compile(grammar)?.with_json_schema_report(Arc::new(report)))
        })
    }

    /// Compiles model protocol `name` (a file of `protocols/`, or an alias such as XGrammar's
    /// key) for one request: OpenAI-shaped `tools`
    /// (`{"type": "function", "function": {"name", "description", "parameters", "strict"}}`),
    /// `tool_choice` and options. See the [`protocol`](crate::protocol) module for the policies.
    ///
    /// # Errors
    /// [`Error::Protocol`] for an unknown protocol (listing the known ones), malformed tools
    /// or `tool_choice`; [`Error::StructuralTag`] when a tool's schema is invalid.
    pub fn compile_protocol(
        &self,
        name: &str,
        tools: &[Value],
        tool_choice: &ToolChoice,
        options: &ProtocolOptions,
    ) -> Result<CompiledGrammar, Error> {
        self.check_source_json("the tools", &tools.iter().collect::<Vec<_>>())?;
        let tag = protocol_structural_tag(name, tools, tool_choice, options)?;
        self.compile_structural_tag(&tag)
    }

    /// As [`GrammarCompiler::compile_protocol`], for a protocol read at run time
    /// ([`Protocol::from_file`]) instead of an embedded one.
    ///
    /// # Errors
    /// As [`GrammarCompiler::compile_protocol`].
    pub fn compile_protocol_with(
        &self,
        protocol: &Protocol,
        tools: &[Value],
        tool_choice: &ToolChoice,
        options: &ProtocolOptions,
    ) -> Result<CompiledGrammar, Error> {
        self.check_source_json("the tools", &tools.iter().collect::<Vec<_>>())?;
        let tag = protocol.structural_tag(tools, tool_choice, options)?;
        self.compile_structural_tag(&tag)
    }
}
