//! Layer 6: [`CompiledGrammar`], the immutable product of compilation that many matchers share.
//!
//! It bundles the grammar IR, its frozen automata and the vocabulary it was compiled for. It is
//! an `Arc` inside: cloning is a reference-count increment, and it is `Send + Sync` so that a
//! serving engine can compile once and hand it to matchers on any thread.

mod saved;

use std::sync::{Arc, OnceLock};

use crate::cache::{MaskCache, MaskCacheStats, MaskPool};
use crate::frontend::json_schema::JsonSchemaReport;
use crate::fsm::GrammarFsm;
use crate::grammar::Grammar;
use crate::tokenizer::Vocabulary;

pub use saved::{LoadError, FORMAT_VERSION};

/// A grammar compiled for one vocabulary; see [`crate::GrammarCompiler`].
#[derive(Clone, Debug)]
pub struct CompiledGrammar {
    inner: Arc<CompiledInner>,
}

#[derive(Debug)]
struct CompiledInner {
    /// Set at compile time; for a loaded grammar, decoded from `saved_ir` on first use.
    grammar: OnceLock<Grammar>,
    /// For a loaded grammar, its IR in the saved encoding: matching never reads the IR, so
    /// loading skips building it (most of a load's cost otherwise).
    saved_ir: Option<Box<[u8]>>,
    fsm: Arc<GrammarFsm>,
    vocab: Vocabulary,
    cache: MaskCache,
    /// For grammars compiled from a JSON Schema: what is not enforced exactly.
    json_schema_report: Option<Arc<JsonSchemaReport>>,
    /// The parser matchers run: `Earley` or `Pda`, never `Auto`.
    parser: Parser,
}

/// Which parser the matchers of a grammar run (chosen with `CompilerConfig::parser`, reported
/// by [`CompiledGrammar::parser`]). Both give the same masks; they differ in speed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Parser {
    /// The compiler's choice: the PDA where it serves the grammar (measured at or below the
    /// Earley parser per step there), else Earley; [`CompiledGrammar::parser`] says which
    /// (`docs/design-notes.md`, "Decisions", the PDA path).
    #[default]
    Auto,
    /// The Earley parser: every grammar.
    Earley,
    /// The pushdown automaton (XGrammar's classic path): grammars without counted
    /// repetitions, token-level elements, `TagDispatch` or left recursion; asking for it on
    /// another grammar is an error.
    Pda,
}

impl Parser {
    /// The parser's name, as [`Parser::from_str`](std::str::FromStr) reads it: `auto`,
    /// `earley` or `pda`.
    pub fn name(self) -> &'static str {
        match self {
            Parser::Auto => "auto",
            Parser::Earley => "earley",
            Parser::Pda => "pda",
        }
    }
}

/// A parser name that is not `auto`, `earley` or `pda` (from [`Parser`]'s `FromStr`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownParser(pub String);

impl std::fmt::Display for UnknownParser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the parser is \"auto\", \"earley\" or \"pda\", not {:?}", self.0)
    }
}

impl std::error::Error for UnknownParser {}

impl std::str::FromStr for Parser {
    type Err = UnknownParser;

    /// # Example
    /// ```
    /// use maskforge::Parser;
    /// assert_eq!("pda".parse::<Parser>(), Ok(Parser::Pda));
    /// assert_eq!(Parser::Earley.name().parse::<Parser>(), Ok(Parser::Earley));
    /// assert!("lr1".parse::<Parser>().unwrap_err().to_string().contains("\"lr1\""));
    /// ```
    fn from_str(name: &str) -> Result<Self, UnknownParser> {
        [Parser::Auto, Parser::Earley, Parser::Pda]
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| UnknownParser(name.to_string()))
    }
}

impl CompiledGrammar {
    pub(crate) fn new(grammar: Grammar, fsm: GrammarFsm, vocab: Vocabulary, pool: Option<Arc<MaskPool>>) -> Self {
        let compiled = Self::assemble(None, fsm, vocab, pool);
        compiled.inner.grammar.set(grammar).expect("a fresh grammar cell is empty");
        compiled
    }
    /// A grammar whose IR is `saved_ir` (or set right after, with `saved_ir` `None`).
    fn assemble(saved_ir: Option<Box<[u8]>>, fsm: GrammarFsm, vocab: Vocabulary, pool: Option<Arc<MaskPool>>) -> Self {
        let cache = MaskCache::new(&fsm, pool);
        let fsm = Arc::new(fsm);
        let inner = CompiledInner {
            grammar: OnceLock::new(),
            saved_ir,
            fsm,
            vocab,
            cache,
            json_schema_report: None,
            parser: Parser::Earley,
        };
        CompiledGrammar { inner: Arc::new(inner) }
    }
    /// Whether `self` and `other` are the same compiled grammar (clones of one product, e.g. two
    /// answers of the whole-grammar cache), not merely equal ones.
    pub fn ptr_eq(&self, other: &CompiledGrammar) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
    /// The token-mask cache (entries are built on first use unless precomputed).
    pub fn mask_cache(&self) -> &MaskCache {
        &self.inner.cache
    }
    /// Counters of the token-mask cache.
    pub fn mask_cache_stats(&self) -> MaskCacheStats {
        self.inner.cache.stats()
    }
    /// Attaches a JSON Schema coverage report (the product must not be shared yet).
    pub(crate) fn with_json_schema_report(mut self, report: Arc<JsonSchemaReport>) -> Self {
        Arc::get_mut(&mut self.inner).expect("a fresh compiled grammar is not shared").json_schema_report =
            Some(report);
        self
    }
    /// Sets the parser matchers run (the product must not be shared yet; `Auto` is resolved by
    /// the compiler before, and the caller has checked that the PDA serves the grammar).
    pub(crate) fn with_parser(mut self, parser: Parser) -> Self {
        debug_assert_ne!(parser, Parser::Auto);
        Arc::get_mut(&mut self.inner).expect("a fresh compiled grammar is not shared").parser = parser;
        self
    }
    /// The parser matchers of this grammar run: [`Parser::Earley`] or [`Parser::Pda`].
    pub fn parser(&self) -> Parser {
        self.inner.parser
    }
    /// For a grammar compiled from a JSON Schema, the keywords it does not enforce exactly
    /// (an empty report means every keyword is enforced); `None` for other sources.
    pub fn json_schema_report(&self) -> Option<&JsonSchemaReport> {
        self.inner.json_schema_report.as_deref()
    }
    /// The grammar IR. For a grammar read by [`CompiledGrammar::deserialize`] it is decoded on
    /// the first call (loading does not need it); should the saved IR not decode, which only a
    /// crafted file with a valid checksum can cause, this is the grammar `root ::= ""` (the
    /// masks come from the automata and are not affected).
    pub fn grammar(&self) -> &Grammar {
        self.inner.grammar.get_or_init(|| saved::decode_ir(self.inner.saved_ir.as_deref().unwrap_or_default()))
    }
    /// The rule automata.
    pub fn fsm(&self) -> &Arc<GrammarFsm> {
        &self.inner.fsm
    }
    /// The vocabulary the grammar was compiled for.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.inner.vocab
    }
    /// Heap bytes used by the grammar's own structures (the vocabulary is shared and counted
    /// by [`Vocabulary::memory_usage`]).
    pub fn memory_usage(&self) -> usize {
        self.inner.fsm.memory_usage()
            + self.inner.cache.memory_usage()
            + self.inner.saved_ir.as_ref().map_or(0, |ir| ir.len())
    }
}
