//! Layer 8: [`GrammarCompiler`], which turns grammar sources into [`CompiledGrammar`]s for one
//! vocabulary.
//!
//! The compiler is the builder of the "config, builder, immutable product, mutable state"
//! pattern: [`CompilerConfig`] → [`GrammarCompiler`] → [`CompiledGrammar`] →
//! [`crate::GrammarMatcher`]. It never depends on the matcher. Its special-token policy is
//! documented on [`GrammarCompiler`].

mod builtin;
mod disk_cache;
mod grammar_cache;
mod json;
mod special_tokens;
mod structural;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cache::{reachable_scannable_states, MaskCacheMode, MaskPool, PoolStats};
use crate::compiled::{CompiledGrammar, Parser};
use crate::error::Error;
use crate::frontend::ebnf::parse_ebnf;
use crate::frontend::json_schema::{SchemaFragmentCache, SchemaFragmentStats};
use crate::fsm::{build_grammar_fsm_cached, FsmLimits, RuleFsmCache, RuleFsmCacheStats};
use crate::grammar::Grammar;
use crate::pda::check_servable;
use crate::tokenizer::Vocabulary;
use crate::util::cancel::{self, CancelToken, Watch};

pub use builtin::JSON_GRAMMAR_EBNF;
pub use grammar_cache::GrammarCacheStats;
pub use json::JSON_LEVELS_PER_SUBSCHEMA;

use grammar_cache::GrammarCache;

/// Default byte budget of the cross-grammar mask pool: 256 MiB (about 16,000 bitset entries for
/// a 128k-token vocabulary; most entries are far smaller lists).
pub const DEFAULT_POOL_BYTES: usize = 256 << 20;
/// Default number of whole grammars a compiler keeps.
pub const DEFAULT_GRAMMAR_CACHE_LEN: usize = 64;
/// Default state budget of the cache of finished rule automata: 1,000,000 states (tens of
/// megabytes; a tool's parameter object is a few hundred states).
pub const DEFAULT_RULE_FSM_CACHE_STATES: usize = 1_000_000;
/// Default number of lowered JSON Schema fragments (self-contained `anyOf`/`oneOf` branches,
/// such as the tools of a request) a compiler keeps.
pub const DEFAULT_SCHEMA_FRAGMENT_CACHE_LEN: usize = 1_024;
/// Default limit on the size of one compile's source (EBNF text, regex, JSON Schema, structural
/// tag, tool list): 4 MiB, eight times MaskBench's largest file (0.5 MB, schema and instances).
pub const DEFAULT_MAX_SOURCE_BYTES: usize = 4 << 20;
/// Default byte budget of one compile's growth points (see [`CompilerConfig::max_compile_bytes`]):
/// 256 MiB. Measured cold (no cache of any kind; `maskforge-bench`'s `step_cost`): every
/// MaskBench-dev schema, the builtin JSON grammar and 896 tool-calling requests of 20 tools
/// count at most 16.5 MB (p99 3.8 MB), the 100,000-way enum 76 MB; the 1,000,000-way enum,
/// which peaked at 1.4 GB, counts about ten times that and is refused.
pub const DEFAULT_MAX_COMPILE_BYTES: u64 = 256 << 20;

/// Compilation options. Setters take and return the config by value.
///
/// # Example
/// ```
/// use maskforge::CompilerConfig;
/// let config = CompilerConfig::default().max_expanded_repeat(8);
/// assert_eq!(config.get_max_expanded_repeat(), 8);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompilerConfig {
    fsm: FsmLimits,
    cache_mode: MaskCacheMode,
    precompute_budget: Option<Duration>,
    pool_bytes: usize,
    grammar_cache_len: usize,
    rule_fsm_cache_states: usize,
    schema_fragment_cache_len: usize,
    allow_special_token_text: bool,
    /// A directory of saved grammars and its byte budget.
    disk_cache: Option<(PathBuf, u64)>,
    compile_timeout: Option<Duration>,
    parser: Parser,
    max_source_bytes: usize,
    max_compile_bytes: u64,
}

impl Default for CompilerConfig {
    fn default() -> Self {
        CompilerConfig {
            fsm: FsmLimits::default(),
            cache_mode: MaskCacheMode::default(),
            precompute_budget: None,
            pool_bytes: DEFAULT_POOL_BYTES,
            grammar_cache_len: DEFAULT_GRAMMAR_CACHE_LEN,
            rule_fsm_cache_states: DEFAULT_RULE_FSM_CACHE_STATES,
            schema_fragment_cache_len: DEFAULT_SCHEMA_FRAGMENT_CACHE_LEN,
            allow_special_token_text: false,
            disk_cache: None,
            compile_timeout: None,
            parser: Parser::Auto,
            max_source_bytes: DEFAULT_MAX_SOURCE_BYTES,
            max_compile_bytes: DEFAULT_MAX_COMPILE_BYTES,
        }
    }
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
    /// A time budget for the ahead-of-time part of [`MaskCacheMode::Aot`] and
    /// [`MaskCacheMode::Precompute`]: states are built most expensive first, and none is started
    /// after the budget; the rest are built on first use (default: no budget).
    pub fn precompute_budget(mut self, budget: Option<Duration>) -> Self {
        self.precompute_budget = budget;
        self
    }
    /// The precompute time budget.
    pub fn get_precompute_budget(&self) -> Option<Duration> {
        self.precompute_budget
    }
    /// The byte budget of the cross-grammar mask pool a [`GrammarCompiler::new`] creates
    /// (default [`DEFAULT_POOL_BYTES`]; 0 turns sharing off: no pool, no structural hashing).
    pub fn pool_bytes(mut self, bytes: usize) -> Self {
        self.pool_bytes = bytes;
        self
    }
    /// The pool budget.
    pub fn get_pool_bytes(&self) -> usize {
        self.pool_bytes
    }
    /// How many whole compiled grammars the compiler keeps for identical inputs (default
    /// [`DEFAULT_GRAMMAR_CACHE_LEN`]; 0 turns the cache off).
    pub fn grammar_cache_len(mut self, n: usize) -> Self {
        self.grammar_cache_len = n;
        self
    }
    /// The whole-grammar cache capacity.
    pub fn get_grammar_cache_len(&self) -> usize {
        self.grammar_cache_len
    }
    /// How many automaton states the cache of finished rule automata keeps (default
    /// [`DEFAULT_RULE_FSM_CACHE_STATES`]; 0 turns it off). A rule whose automaton another grammar
    /// of this compiler already built (the same tool schema in the next request) skips subset
    /// construction and minimization; see [`RuleFsmCache`].
    pub fn rule_fsm_cache_states(mut self, states: usize) -> Self {
        self.rule_fsm_cache_states = states;
        self
    }
    /// The rule-automaton cache budget.
    pub fn get_rule_fsm_cache_states(&self) -> usize {
        self.rule_fsm_cache_states
    }
    /// How many lowered JSON Schema fragments the compiler keeps (default
    /// [`DEFAULT_SCHEMA_FRAGMENT_CACHE_LEN`]; 0 turns the cache off): a self-contained branch of
    /// `anyOf`/`oneOf` met again in another schema (the same tool in the next request) is not
    /// lowered again; see [`crate::frontend::json_schema::SchemaFragmentCache`].
    pub fn schema_fragment_cache_len(mut self, n: usize) -> Self {
        self.schema_fragment_cache_len = n;
        self
    }
    /// The schema-fragment cache capacity.
    pub fn get_schema_fragment_cache_len(&self) -> usize {
        self.schema_fragment_cache_len
    }
    /// Whether grammar text that spells a special token's text (`"<|channel|>"`) also accepts
    /// ordinary tokens spelling it byte by byte. Default `false`: such text matches only the
    /// special token (see the [special-token policy](GrammarCompiler#special-token-policy)).
    pub fn allow_special_token_text(mut self, yes: bool) -> Self {
        self.allow_special_token_text = yes;
        self
    }
    /// See [`CompilerConfig::allow_special_token_text`].
    pub fn get_allow_special_token_text(&self) -> bool {
        self.allow_special_token_text
    }
    /// Keeps compiled grammars in directory `dir` too (created when needed), at most
    /// `max_bytes` of them (least recently used out): a compiler started later, in this
    /// process or another, loads a grammar compiled before instead of compiling it again.
    /// Files are content-addressed by input, options, vocabulary and format version, written
    /// atomically (several processes may share a directory), and a file that does not load is
    /// removed and rebuilt. Only inputs the whole-grammar cache keys go there (EBNF, JSON
    /// Schema, regex, structural tags, protocols; not [`GrammarCompiler::compile`]'s IR), and
    /// only as they are at compile time (entries built later are not written back). See
    /// [`CompiledGrammar::serialize`] for the file format.
    pub fn disk_cache(mut self, dir: impl Into<PathBuf>, max_bytes: u64) -> Self {
        self.disk_cache = Some((dir.into(), max_bytes));
        self
    }
    /// The disk cache directory and byte budget, if any.
    pub fn get_disk_cache(&self) -> Option<(&Path, u64)> {
        self.disk_cache.as_ref().map(|(dir, max)| (dir.as_path(), *max))
    }
    /// A time limit for each compile call (default: none): the front-end, automaton
    /// construction and the ahead-of-time precompute check it as they go, and a compile past it
    /// fails with [`Error::Interrupted`] (nothing of it is cached). A server compiling
    /// untrusted input should set one; [`CompilerConfig::precompute_budget`] is the soft bound
    /// that only cuts the precompute short.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use maskforge::CompilerConfig;
    /// let config = CompilerConfig::default().compile_timeout(Duration::from_secs(5));
    /// assert_eq!(config.get_compile_timeout(), Some(Duration::from_secs(5)));
    /// ```
    pub fn compile_timeout(mut self, limit: Duration) -> Self {
        self.compile_timeout = Some(limit);
        self
    }
    /// The compile time limit, if any.
    pub fn get_compile_timeout(&self) -> Option<Duration> {
        self.compile_timeout
    }

    /// The largest source a compile call reads (default [`DEFAULT_MAX_SOURCE_BYTES`]): EBNF
    /// text, a regex, a JSON Schema (its text, or a value's length as compact JSON), a
    /// structural tag, a protocol request's tools. A larger one fails with
    /// [`Error::SourceTooLarge`] before any parsing, so its cost is a length (or, for a JSON
    /// value, a walk of its first `limit` bytes).
    ///
    /// # Example
    /// ```
    /// use maskforge::{CompilerConfig, Error, GrammarCompiler, VocabularyBuilder};
    /// let vocab = VocabularyBuilder::new().tokens(["a", "</s>"]).special(1).stop_tokens([1]).build()?;
    /// let compiler = GrammarCompiler::new(vocab, CompilerConfig::default().max_source_bytes(8));
    /// let err = compiler.compile_regex("aaaaaaaaa").unwrap_err();
    /// assert!(matches!(err, Error::SourceTooLarge { bytes: 9, limit: 8, .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_source_bytes(mut self, limit: usize) -> Self {
        self.max_source_bytes = limit;
        self
    }
    /// The source size limit.
    pub fn get_max_source_bytes(&self) -> usize {
        self.max_source_bytes
    }

    /// The byte budget of one compile call (default [`DEFAULT_MAX_COMPILE_BYTES`]; `u64::MAX`:
    /// none), counted at its dominant growth points: the Thompson automaton of each rule built
    /// (16 bytes per edge), epsilon removal's copies of it (its edges bucketed by source and
    /// its epsilon-free output), the grammar IR's nodes and the JSON Schema lowering's literal
    /// text. The count is cumulative over the compile (what a pass frees is not given back), so
    /// it bounds the peak of these structures from above; a rule whose finished automaton comes
    /// from the cache counts its Thompson automaton (the cache key) but not the passes. Over the budget the compile stops like a timeout, with
    /// [`Error::Interrupted`] and [`InterruptReason::TooLarge`](crate::InterruptReason); nothing
    /// of it is cached.
    ///
    /// # Example
    /// ```
    /// use maskforge::{CompilerConfig, Error, GrammarCompiler, InterruptReason, VocabularyBuilder};
    /// let vocab = VocabularyBuilder::new().tokens(["a", "</s>"]).special(1).stop_tokens([1]).build()?;
    /// let compiler = GrammarCompiler::new(vocab, CompilerConfig::default().max_compile_bytes(1_000));
    /// let err = compiler.compile_grammar(&format!("root ::= {}", "\"a\" ".repeat(1_000))).unwrap_err();
    /// assert!(matches!(err, Error::Interrupted(i) if i.reason == InterruptReason::TooLarge(1_000)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_compile_bytes(mut self, limit: u64) -> Self {
        self.max_compile_bytes = limit;
        self
    }
    /// The byte budget of one compile.
    pub fn get_max_compile_bytes(&self) -> u64 {
        self.max_compile_bytes
    }

    /// The parser matchers run (default [`Parser::Auto`]). [`Parser::Pda`] makes compiling a
    /// grammar the PDA does not serve an error ([`Error::Pda`]); `Auto` never fails for it.
    /// Which parser a grammar got is [`CompiledGrammar::parser`].
    pub fn parser(mut self, parser: Parser) -> Self {
        self.parser = parser;
        self
    }
    /// The parser asked for.
    pub fn get_parser(&self) -> Parser {
        self.parser
    }
}

/// Compiles grammars for one vocabulary. Cheap to clone (clones share the pool and the
/// whole-grammar cache); `Send + Sync`.
///
/// A compiler owns an `Arc` to a cross-grammar [`MaskPool`] (its own, or one shared with other
/// compilers through [`GrammarCompiler::with_pool`]): cache entries of every grammar it compiles
/// are looked up there first. It also keeps the last compiled grammars by input, so compiling
/// the same input twice returns the same [`CompiledGrammar`].
///
/// # Special-token policy
///
/// Grammars are compiled for one vocabulary, so this is where text meets special tokens:
///
/// * grammar text equal to a special token's text (gpt-oss's `"<|channel|>"`) is matched by
///   that special token, as one token; ordinary tokens spelling it byte by byte are accepted
///   only with [`CompilerConfig::allow_special_token_text`] (default: not). `TagDispatch`
///   triggers and stop strings equal to a special token's text become token triggers and stop
///   tokens; patterns mixing one with other text are an error;
/// * a **stop token** the grammar can read as a terminal (gpt-oss's `<|call|>` after a tool
///   call) is accepted as that terminal, and ends the generation when the grammar can end right
///   after it; a stop token is allowed iff the grammar can end now, or it can be read as a
///   terminal and the grammar can end after it (see [`GrammarMatcher`](crate::GrammarMatcher)).
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
    pool: Option<Arc<MaskPool>>,
    grammars: Arc<GrammarCache>,
    rule_fsms: Option<Arc<RuleFsmCache>>,
    fragments: Option<Arc<SchemaFragmentCache>>,
    disk: Option<Arc<disk_cache::DiskCache>>,
    /// The vocabulary's special-token texts, computed once.
    special_texts: Arc<special_tokens::SpecialTexts>,
    /// The token that stops this handle's compiles, if any.
    cancel: Option<CancelToken>,
}

impl GrammarCompiler {
    /// A compiler for `vocab` with its own pool of [`CompilerConfig::pool_bytes`].
    pub fn new(vocab: Vocabulary, config: CompilerConfig) -> Self {
        let pool = (config.pool_bytes > 0).then(|| Arc::new(MaskPool::new(&vocab, config.pool_bytes)));
        Self::assemble(vocab, config, pool)
    }

    fn assemble(vocab: Vocabulary, config: CompilerConfig, pool: Option<Arc<MaskPool>>) -> Self {
        let grammars = Arc::new(GrammarCache::new(config.grammar_cache_len));
        let rule_fsms =
            (config.rule_fsm_cache_states > 0).then(|| Arc::new(RuleFsmCache::new(config.rule_fsm_cache_states)));
        let fragments = (config.schema_fragment_cache_len > 0)
            .then(|| Arc::new(SchemaFragmentCache::new(config.schema_fragment_cache_len)));
        let special_texts = Arc::new(special_tokens::SpecialTexts::new(&vocab));
        let disk = config.disk_cache.clone().map(|(dir, max)| Arc::new(disk_cache::DiskCache::new(dir, max)));
        GrammarCompiler { vocab, config, pool, grammars, rule_fsms, fragments, disk, special_texts, cancel: None }
    }

    /// A compiler for `vocab` sharing `pool` (whose budget then applies, not the config's).
    ///
    /// # Errors
    /// [`Error::PoolVocabulary`] when the pool serves another vocabulary.
    pub fn with_pool(vocab: Vocabulary, config: CompilerConfig, pool: Arc<MaskPool>) -> Result<Self, Error> {
        let fingerprint = crate::cache::pool::vocabulary_fingerprint(&vocab);
        if fingerprint != pool.vocab_fingerprint() {
            return Err(Error::PoolVocabulary { pool: pool.vocab_fingerprint(), vocab: fingerprint });
        }
        Ok(Self::assemble(vocab, config, Some(pool)))
    }

    /// A handle on this compiler (sharing its caches) whose compiles stop with
    /// [`Error::Interrupted`] once `token` is cancelled, from any thread.
    ///
    /// # Example
    /// ```
    /// use maskforge::{CancelToken, CompilerConfig, Error, GrammarCompiler, VocabularyBuilder};
    /// let vocab = VocabularyBuilder::new().tokens(["a", "b"]).build()?;
    /// let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
    /// let token = CancelToken::new();
    /// let request = compiler.with_cancel_token(token.clone());
    /// token.cancel(); // a client went away
    /// assert!(matches!(request.compile_grammar(r#"root ::= "a"+"#), Err(Error::Interrupted(_))));
    /// assert!(compiler.compile_grammar(r#"root ::= "a"+"#).is_ok()); // other handles go on
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_cancel_token(&self, token: CancelToken) -> Self {
        GrammarCompiler { cancel: Some(token), ..self.clone() }
    }

    /// Runs the compile `f` under this handle's deadline and cancellation token (unless it is
    /// nested in a compile that already is): an interruption any phase noticed is reported as
    /// [`Error::Interrupted`], whatever error that phase wrapped it in.
    ///
    /// A panic inside (a bug, perhaps in a rayon job of the precompute) is caught here and
    /// returned as [`Error::Internal`]: the caches hold only finished products, so the compiler
    /// stays usable.
    fn watched(&self, f: impl FnOnce() -> Result<CompiledGrammar, Error>) -> Result<CompiledGrammar, Error> {
        if cancel::current().is_some() {
            return f();
        }
        let f = || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                .unwrap_or_else(|panic| Err(Error::Internal(panic_message(&*panic))))
        };
        let max_bytes = Some(self.config.max_compile_bytes).filter(|&b| b != u64::MAX);
        let Some(watch) = Watch::new(self.config.compile_timeout, self.cancel.clone(), max_bytes) else {
            return f();
        };
        let result = watch.run(|| cancel::check_now("start").map_err(Error::from).and_then(|()| f()));
        watch.record_bytes();
        match watch.tripped() {
            Some(interrupted) => Err(Error::Interrupted(interrupted)),
            None => result,
        }
    }

    /// The cross-grammar pool, if sharing is on.
    pub fn pool(&self) -> Option<&Arc<MaskPool>> {
        self.pool.as_ref()
    }

    /// Counters of the cross-grammar pool (all zero when sharing is off).
    pub fn pool_stats(&self) -> PoolStats {
        self.pool.as_ref().map_or_else(PoolStats::default, |p| p.stats())
    }

    /// Counters of the whole-grammar cache.
    pub fn grammar_cache_stats(&self) -> GrammarCacheStats {
        let disk = self.disk.as_ref().map(|d| d.stats()).unwrap_or_default();
        GrammarCacheStats {
            disk_hits: disk.hits,
            disk_misses: disk.misses,
            disk_errors: disk.errors,
            ..self.grammars.stats()
        }
    }

    /// Counters of the JSON Schema fragment cache (all zero when it is off).
    pub fn schema_fragment_stats(&self) -> SchemaFragmentStats {
        self.fragments.as_ref().map_or_else(SchemaFragmentStats::default, |c| c.stats())
    }

    /// Counters of the cache of finished rule automata (all zero when it is off).
    pub fn rule_fsm_cache_stats(&self) -> RuleFsmCacheStats {
        self.rule_fsms.as_ref().map_or_else(RuleFsmCacheStats::default, |c| c.stats())
    }

    /// Looks `parts` and `json` (with the options that change the product) up in the
    /// whole-grammar cache.
    pub(crate) fn cached(
        &self,
        parts: &[&[u8]],
        json: Option<&serde_json::Value>,
        compile: impl FnOnce() -> Result<CompiledGrammar, Error>,
    ) -> Result<CompiledGrammar, Error> {
        self.watched(|| self.cached_unwatched(parts, json, compile))
    }

    fn cached_unwatched(
        &self,
        parts: &[&[u8]],
        json: Option<&serde_json::Value>,
        compile: impl FnOnce() -> Result<CompiledGrammar, Error>,
    ) -> Result<CompiledGrammar, Error> {
        if !self.grammars.enabled() && self.disk.is_none() {
            return compile();
        }
        let options = format!(
            "{:?}|{:?}|{}|{:?}",
            self.config.fsm, self.config.cache_mode, self.config.allow_special_token_text, self.config.parser
        );
        let mut all: Vec<&[u8]> = parts.to_vec();
        all.push(options.as_bytes());
        let key = grammar_cache::hash_parts(&all, json);
        // On a miss in memory, the disk cache (if any) is next.
        let from_disk_or_compile = || match &self.disk {
            Some(disk) => disk.get_or_compile(key, &self.vocab, self.pool.as_ref(), compile),
            None => compile(),
        };
        self.grammars.get_or_compile(key, from_disk_or_compile)
    }

    /// [`Error::SourceTooLarge`] when a source of `bytes` bytes is over
    /// [`CompilerConfig::max_source_bytes`].
    pub(crate) fn check_source_len(&self, what: &'static str, bytes: usize) -> Result<(), Error> {
        let limit = self.config.max_source_bytes;
        match bytes > limit {
            true => Err(Error::SourceTooLarge { what, bytes, limit }),
            false => Ok(()),
        }
    }

    /// [`GrammarCompiler::check_source_len`] for a JSON value, measured as compact JSON text
    /// ([`crate::util::json::text_len`], which stops counting past the limit).
    pub(crate) fn check_source_json(&self, what: &'static str, values: &[&serde_json::Value]) -> Result<(), Error> {
        let limit = self.config.max_source_bytes;
        let mut bytes = 0usize;
        for v in values {
            bytes = bytes.saturating_add(crate::util::json::text_len(v, limit.saturating_sub(bytes)));
        }
        self.check_source_len(what, bytes)
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
        self.check_source_len("the EBNF grammar", ebnf.len())?;
        self.cached(&[b"ebnf", ebnf.as_bytes(), root.as_bytes()], None, || self.compile(parse_ebnf(ebnf, root)?))
    }

    /// Compiles a grammar built with [`crate::GrammarBuilder`] or a front-end.
    ///
    /// Text equal to a special token's text is rewritten to that token first (see the
    /// [special-token policy](GrammarCompiler#special-token-policy)).
    ///
    /// # Errors
    /// [`Error::Grammar`] when automaton limits are exceeded or a `TagDispatch` is malformed.
    pub fn compile(&self, grammar: Grammar) -> Result<CompiledGrammar, Error> {
        self.watched(|| self.compile_unwatched(grammar))
    }

    fn compile_unwatched(&self, grammar: Grammar) -> Result<CompiledGrammar, Error> {
        let start = Instant::now();
        let grammar = special_tokens::apply(grammar, &self.special_texts, self.config.allow_special_token_text)?;
        let fsm = build_grammar_fsm_cached(&grammar, &self.config.fsm, self.rule_fsms.as_deref())?;
        cancel::check_now("automaton construction")?;
        let parser = resolve_parser(self.config.parser, &fsm)?;
        let compiled = CompiledGrammar::new(grammar, fsm, self.vocab.clone(), self.pool.clone()).with_parser(parser);
        cancel::check_now("cache setup")?;
        let k = match self.config.cache_mode {
            MaskCacheMode::Jit => 0,
            MaskCacheMode::Aot => usize::MAX,
            MaskCacheMode::Precompute(k) => k,
        };
        if k > 0 {
            // Most expensive first (estimated by first-byte candidates), so that a time budget
            // cuts the cheap tail, which is quick to build on first use anyway.
            let mut states = reachable_scannable_states(compiled.fsm(), &self.vocab);
            states.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let wanted: Vec<_> = states.into_iter().take(k).map(|(s, _)| s).collect();
            let deadline = self.config.precompute_budget.map(|b| start + b);
            compiled.mask_cache().precompute_until(compiled.fsm(), &self.vocab, &wanted, deadline);
            // A precompute the compile's watch cut short is an interrupted compile (not cached).
            if let Some(interrupted) = cancel::current().and_then(|w| w.tripped()) {
                return Err(interrupted.into());
            }
        }
        Ok(compiled)
    }

    /// Compiles the builtin JSON grammar (ECMA-404: any JSON value, any whitespace between
    /// tokens); see [`JSON_GRAMMAR_EBNF`].
    ///
    /// # Errors
    /// Never in practice; the signature matches the other compile methods.
    pub fn compile_builtin_json_grammar(&self) -> Result<CompiledGrammar, Error> {
        // Through `compile_grammar`: cached like any EBNF text.
        self.compile_grammar(JSON_GRAMMAR_EBNF)
    }
}

/// The parser a grammar's matchers run, for the one asked for.
///
/// `Auto` takes the PDA wherever it serves the grammar, Earley elsewhere: the session 9
/// ablation measured the PDA at or below Earley per step on every grammar it serves
/// (`docs/design-notes.md`, "Decisions", the PDA path).
fn resolve_parser(asked: Parser, fsm: &crate::fsm::GrammarFsm) -> Result<Parser, Error> {
    match asked {
        Parser::Auto if check_servable(fsm).is_ok() => Ok(Parser::Pda),
        Parser::Auto | Parser::Earley => Ok(Parser::Earley),
        Parser::Pda => {
            check_servable(fsm)?;
            Ok(Parser::Pda)
        }
    }
}

/// The message of a caught panic (its `&str` or `String` payload).
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(s), _) => s.to_string(),
        (_, Some(s)) => s.clone(),
        _ => "a panic without a message".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::VocabularyBuilder;

    fn compiler(config: CompilerConfig) -> GrammarCompiler {
        GrammarCompiler::new(VocabularyBuilder::new().tokens(["a", "b"]).build().unwrap(), config)
    }

    #[test]
    fn a_panic_inside_a_compile_is_an_internal_error_and_the_compiler_goes_on() {
        for config in [CompilerConfig::default(), CompilerConfig::default().compile_timeout(Duration::from_secs(60))] {
            let c = compiler(config);
            let r = c.watched(|| panic!("injected {}", 42));
            assert!(matches!(&r, Err(Error::Internal(m)) if m == "injected 42"), "{r:?}");
            // The watch was uninstalled: the next compile is guarded and watched again.
            assert!(cancel::current().is_none());
            assert!(c.compile_grammar(r#"root ::= "a" "b""#).is_ok());
        }
    }

    #[test]
    fn a_compile_nested_in_a_watched_one_sees_its_token() {
        let token = CancelToken::new();
        let c = compiler(CompilerConfig::default()).with_cancel_token(token.clone());
        let r = c.watched(|| {
            token.cancel();
            c.compile_grammar(r#"root ::= "a""#)
        });
        assert!(matches!(r, Err(Error::Interrupted(i)) if i.reason == cancel::InterruptReason::Cancelled), "{r:?}");
    }
}
