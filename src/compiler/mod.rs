//! Layer 8: [`GrammarCompiler`], which turns grammar sources into [`CompiledGrammar`]s for one
//! vocabulary.
//!
//! The compiler is the builder of the "config, builder, immutable product, mutable state"
//! pattern: [`CompilerConfig`] → [`GrammarCompiler`] → [`CompiledGrammar`] →
//! [`crate::GrammarMatcher`]. It never depends on the matcher.
//!
//! # Special-token policy
//!
//! Grammars are compiled for one vocabulary, so this is where text meets special tokens:
//!
//! * grammar text equal to a special token's text (gpt-oss's `"<|channel|>"`) is matched by
//!   that special token, as one token; ordinary tokens spelling it byte by byte are accepted
//!   only with [`CompilerConfig::allow_special_token_text`] (default: not). `TagDispatch`
//!   triggers and stop strings equal to a special token's text become token triggers and stop
//!   tokens; patterns mixing one with other text are an error;
//! * a **stop token** the grammar can read as a terminal (gpt-oss's `<|call|>` after a tool
//!   call) is accepted as that terminal, and ends the generation when the grammar can end right
//!   after it; a stop token is allowed iff the grammar can end now, or it can be read as a
//!   terminal and the grammar can end after it (see [`crate::matcher`]).

mod builtin;
mod json;
mod special_tokens;
mod structural;

use crate::cache::{reachable_scannable_states, MaskCacheMode};
use crate::compiled::CompiledGrammar;
use crate::error::Error;
use crate::frontend::ebnf::parse_ebnf;
use crate::fsm::{build_grammar_fsm, FsmLimits};
use crate::grammar::Grammar;
use crate::tokenizer::Vocabulary;

pub use builtin::JSON_GRAMMAR_EBNF;

/// Compilation options. Setters take and return the config by value.
///
/// # Example
/// ```
/// use maskforge::CompilerConfig;
/// let config = CompilerConfig::default().max_expanded_repeat(8);
/// assert_eq!(config.get_max_expanded_repeat(), 8);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompilerConfig {
    fsm: FsmLimits,
    cache_mode: MaskCacheMode,
    allow_special_token_text: bool,
}

impl CompilerConfig {
    /// Repetitions up to this bound are expanded into automata; larger ones keep a counter.
    pub fn max_expanded_repeat(mut self, n: u32) -> Self {
        self.fsm.max_expanded_repeat = n;
        self
    }
    /// The configured expansion bound.
    pub fn get_max_expanded_repeat(&self) -> u32 {
        self.fsm.max_expanded_repeat
    }
    /// Replaces all automaton limits.
    pub fn fsm_limits(mut self, limits: FsmLimits) -> Self {
        self.fsm = limits;
        self
    }
    /// When token-mask cache entries are built (default: just in time).
    pub fn cache_mode(mut self, mode: MaskCacheMode) -> Self {
        self.cache_mode = mode;
        self
    }
    /// The cache mode.
    pub fn get_cache_mode(&self) -> MaskCacheMode {
        self.cache_mode
    }
    /// The automaton limits.
    pub fn get_fsm_limits(&self) -> &FsmLimits {
        &self.fsm
    }
    /// Whether grammar text that spells a special token's text (`"<|channel|>"`) also accepts
    /// ordinary tokens spelling it byte by byte. Default `false`: such text matches only the
    /// special token (see the special-token policy in the [module docs](self)).
    pub fn allow_special_token_text(mut self, yes: bool) -> Self {
        self.allow_special_token_text = yes;
        self
    }
    /// See [`CompilerConfig::allow_special_token_text`].
    pub fn get_allow_special_token_text(&self) -> bool {
        self.allow_special_token_text
    }
}

/// Compiles grammars for one vocabulary. Cheap to clone; `Send + Sync`.
///
/// # Example
/// ```
/// use maskforge::{GrammarCompiler, CompilerConfig, GrammarMatcher, VocabularyBuilder};
/// let vocab = VocabularyBuilder::new().tokens(["a", "b", "ab", "</s>"]).special(3).stop_tokens([3]).build()?;
/// let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
/// let grammar = compiler.compile_grammar(r#"root ::= "a"+ "b""#)?;
/// let mut m = GrammarMatcher::new(&grammar);
/// assert!(m.accept_token(0) && m.accept_token(2));
/// assert!(m.can_terminate() && m.accept_token(3) && m.is_terminated());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct GrammarCompiler {
    vocab: Vocabulary,
    config: CompilerConfig,
}

impl GrammarCompiler {
    /// A compiler for `vocab`.
    pub fn new(vocab: Vocabulary, config: CompilerConfig) -> Self {
        GrammarCompiler { vocab, config }
    }

    /// The vocabulary grammars are compiled for.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.vocab
    }

    /// The configuration.
    pub fn config(&self) -> &CompilerConfig {
        &self.config
    }

    /// Compiles EBNF text (XGrammar's dialect) whose start rule is `root`.
    ///
    /// # Errors
    /// [`Error::Ebnf`] for syntax errors and malformed grammars (with line and column),
    /// [`Error::Grammar`] for limits exceeded while building automata.
    pub fn compile_grammar(&self, ebnf: &str) -> Result<CompiledGrammar, Error> {
        self.compile_grammar_with_root(ebnf, "root")
    }

    /// Compiles EBNF text with a chosen start rule.
    ///
    /// # Errors
    /// As [`GrammarCompiler::compile_grammar`].
    pub fn compile_grammar_with_root(&self, ebnf: &str, root: &str) -> Result<CompiledGrammar, Error> {
        let grammar = parse_ebnf(ebnf, root)?;
        self.compile(grammar)
    }

    /// Compiles a grammar built with [`crate::GrammarBuilder`] or a front-end.
    ///
    /// Text equal to a special token's text is rewritten to that token first (see the
    /// special-token policy in the [module docs](self)).
    ///
    /// # Errors
    /// [`Error::Grammar`] when automaton limits are exceeded or a `TagDispatch` is malformed.
    pub fn compile(&self, grammar: Grammar) -> Result<CompiledGrammar, Error> {
        let texts = special_tokens::SpecialTexts::new(&self.vocab);
        let grammar = special_tokens::apply(grammar, &texts, self.config.allow_special_token_text)?;
        let fsm = build_grammar_fsm(&grammar, &self.config.fsm)?;
        let compiled = CompiledGrammar::new(grammar, fsm, self.vocab.clone());
        let wanted: Vec<_> = match self.config.cache_mode {
            MaskCacheMode::Jit => Vec::new(),
            MaskCacheMode::Aot => {
                reachable_scannable_states(compiled.fsm(), &self.vocab).into_iter().map(|(s, _)| s).collect()
            }
            MaskCacheMode::Precompute(k) => {
                let mut states = reachable_scannable_states(compiled.fsm(), &self.vocab);
                states.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                states.into_iter().take(k).map(|(s, _)| s).collect()
            }
        };
        if !wanted.is_empty() {
            compiled.mask_cache().precompute(compiled.fsm(), &self.vocab, &wanted);
        }
        Ok(compiled)
    }

    /// Compiles the builtin JSON grammar (ECMA-404: any JSON value, any whitespace between
    /// tokens); see [`JSON_GRAMMAR_EBNF`].
    ///
    /// # Errors
    /// Never in practice; the signature matches the other compile methods.
    pub fn compile_builtin_json_grammar(&self) -> Result<CompiledGrammar, Error> {
        self.compile_grammar(JSON_GRAMMAR_EBNF)
    }
}
