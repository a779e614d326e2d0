//! Layer 7: [`GrammarMatcher`], the per-request state a serving engine drives every step.
//!
//! The matcher owns an Earley [`Parser`] or a PDA (`crate::pda`, when the grammar was compiled
//! for it) and a stack of the byte lengths of the tokens it accepted, so `rollback(n)` is a
//! truncation of the parser's item sets or threads. Masks come from the
//! token-mask cache (`mask.rs`, see [`crate::cache`]); [`oracle`] keeps the exact reference every
//! fast path is checked against.
//!
//! # How a token is read
//!
//! A token can be read two ways (see [`crate::util::sentinel`]):
//!
//! * by its **text**: its bytes, for normal tokens whose bytes contain no `0xFF` (a byte no
//!   UTF-8 text has; byte-level BPE has single-byte tokens for it, and they are never text);
//! * by its **id**: its sentinel, for every token (normal or special), where the grammar names
//!   it (`Token(...)`, `ExcludeToken(...)`, token triggers, special-token literals).
//!
//! [`GrammarMatcher::accept_token`] tries the id first, when an item of the current Earley set
//! can read the sentinel lead byte, and the text otherwise or if the id is not accepted. The two
//! readings lead to different parser states; the id wins because a grammar that names a token
//! explicitly means that token. A token is allowed in a mask iff one of its readings is
//! accepted, so masks and `accept_token` agree.
//!
//! # Stop tokens
//!
//! A stop token is never read as text. It is allowed iff the grammar can end now, or it can be
//! read by id (a stop token that is a terminal of the grammar: gpt-oss's `<|call|>` after a tool
//! call) and the grammar can end right after it. Accepting it ends the generation either way:
//! read as a terminal when that reading ends the grammar (rollback undoes the reading too),
//! else as a plain end of generation.
//!
//! # Bounds on hostile grammars and inputs
//!
//! Two settings of [`MatcherConfig`] bound what one request can cost, whatever grammar and
//! input it brings:
//!
//! * **Work per call** ([`MatcherConfig::max_step_items`]): every call that runs the parser
//!   (`accept_token`, `accept_string`, a mask fill, jump-forward, prefetch) gets a fresh
//!   [`StepBudget`] of parser item visits (see `crate::util::budget`). An ambiguous grammar
//!   such as `root ::= root root | "a"` makes each byte cost more than the last (about n² for
//!   the n-th byte), so without it one call could run for minutes. Over the budget, the parser
//!   refuses the byte and the call fails with [`MatcherError::StepTooExpensive`]; what it read
//!   is popped, so the matcher is exactly as before the call.
//! * **State per matcher** ([`MatcherConfig::max_state_bytes`]): the bytes the parser's state
//!   and the step history hold ([`GrammarMatcher::state_bytes`]), checked after each accepted
//!   token or string, and, for the parser alone, at twice the bound while any call reads
//!   (every 1,024 visits, so a fill's or an accept's transient sets are bounded too). Deep nesting keeps one
//!   chart position or stack frame per open level even when compacted (50 MB of `[` grew to
//!   gigabytes), an ambiguous grammar's chart grows as n², and without a rollback limit the
//!   chart grows with the whole input; over the bound the input is refused with
//!   [`MatcherError::StateTooLarge`], the state unchanged. A byte count rather than a nesting
//!   depth: it bounds every cause, it is what an operator budgets, and the Earley chart has no
//!   single notion of depth (an ambiguous grammar keeps many origins per open level).

mod batch;
mod engine;
mod jump_forward;
mod mask;
pub mod oracle;
mod prefetch;
mod speculate;
mod verdicts;

pub use batch::BatchGrammarMatcher;
pub use jump_forward::JumpForwardTokens;
pub use prefetch::Prefetch;

use crate::compiled::CompiledGrammar;
use crate::earley::Parser;
use crate::tokenizer::Vocabulary;
use crate::util::bitset::mask_words;
use crate::util::budget::{StepBudget, Stop};
use crate::util::id::TokenId;
use crate::util::sentinel::Sentinel;
use engine::Engine;

/// Accepts stop token `id` if it is allowed (see the module docs); returns the bytes read (its
/// sentinel, or nothing), or `None`, leaving the parser unchanged, when it is not allowed or
/// reading its sentinel went over the work budget (the caller reads the budget).
fn accept_stop(parser: &mut Engine, vocab: &Vocabulary, id: u32) -> Option<u32> {
    if vocab.is_token(id) && parser.reads_token() {
        let n = parser.advance_bytes(Sentinel::encode(TokenId::from_u32(id)).as_bytes());
        if n == Sentinel::LEN && parser.is_accepting() {
            return Some(n as u32);
        }
        parser.pop_bytes(n);
        if parser.budget().exceeded() {
            return None;
        }
    }
    parser.is_accepting().then_some(0)
}

/// Whether stop token `id` is allowed now; the parser is unchanged.
fn stop_allowed(parser: &mut Engine, vocab: &Vocabulary, id: u32) -> bool {
    let read = accept_stop(parser, vocab, id);
    parser.pop_bytes(read.unwrap_or(0) as usize);
    read.is_some()
}

/// The default of [`MatcherConfig::max_step_items`]: parser item visits one matcher call may
/// make, a second or a few of one core (9–32 ns per visit measured). The costliest call of real
/// grammars measured is a fill of a MaskBench schema near a `maxLength` bound, which checks
/// most of the vocabulary with the parser: 8.7 M visits with Llama 3's tokenizer, 10.8 M with
/// gpt-oss's (`maskforge-bench`'s `step_cost`; `docs/reliability.md`, "Limits"); the builtin
/// JSON grammar and the tool-calling protocols stay under 100,000. Hence 100 M: a margin of
/// about ten over the worst real fill, and a bound on what one hostile step can cost.
pub const DEFAULT_MAX_STEP_ITEMS: u64 = 100_000_000;

/// The default of [`MatcherConfig::max_state_bytes`]: bytes of parser state and step history
/// one matcher may hold, 128 MiB (twice that within one call; resident memory up to about
/// twice the count, so a matcher stays well under 1 GB). The largest state of a real document
/// measured is 0.8 MB (a 4.6 KB MaskBench instance); at the highest rate measured, 313 bytes
/// per input byte, the bound is reached after 430 KB of input without a rollback limit (3.7 MB
/// at the builtin JSON grammar's 36). With a rollback limit, flat input keeps the Earley chart
/// flat, while the PDA keeps every input byte (for a hand-over): about 128 MB of input.
pub const DEFAULT_MAX_STATE_BYTES: usize = 128 << 20;

/// Per-matcher options. Setters take and return the config by value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatcherConfig {
    stop_tokens: Option<Vec<u32>>,
    max_rollback_tokens: Option<usize>,
    terminate_without_stop_token: bool,
    max_step_items: u64,
    max_state_bytes: usize,
}

impl Default for MatcherConfig {
    fn default() -> Self {
        MatcherConfig {
            stop_tokens: None,
            max_rollback_tokens: None,
            terminate_without_stop_token: false,
            max_step_items: DEFAULT_MAX_STEP_ITEMS,
            max_state_bytes: DEFAULT_MAX_STATE_BYTES,
        }
    }
}

impl MatcherConfig {
    /// Uses these stop tokens instead of the vocabulary's.
    pub fn stop_tokens(mut self, ids: impl IntoIterator<Item = u32>) -> Self {
        self.stop_tokens = Some(ids.into_iter().collect());
        self
    }
    /// Limits how many tokens [`GrammarMatcher::rollback`] may undo (default: unlimited).
    pub fn max_rollback_tokens(mut self, n: usize) -> Self {
        self.max_rollback_tokens = Some(n);
        self
    }
    /// When set, the matcher is terminated as soon as the root rule can end and nothing else
    /// may follow, without a stop token (for engines that do not sample one).
    pub fn terminate_without_stop_token(mut self, yes: bool) -> Self {
        self.terminate_without_stop_token = yes;
        self
    }
    /// Bounds the parser work of one call (default [`DEFAULT_MAX_STEP_ITEMS`]; `u64::MAX`: no
    /// bound). The unit is one *item visit*: an Earley item a byte adds to a set or scans, or a
    /// waiting item a prediction records or a completion reads (for the PDA, a thread scanned
    /// or visited), each a few nanoseconds. Every call that runs the parser counts from zero:
    /// [`GrammarMatcher::try_accept_token`], [`GrammarMatcher::try_accept_string`] (a string's
    /// work grows with its length, so very long strings may need to be split),
    /// [`GrammarMatcher::try_fill_next_token_bitmask`] (the uncertain tokens it checks),
    /// jump-forward and prefetch (which stop early instead of failing). Over the bound the call
    /// fails with [`MatcherError::StepTooExpensive`] and the matcher is unchanged; see the
    /// module documentation. [`GrammarMatcher::last_step_items`] tells what a call used.
    pub fn max_step_items(mut self, n: u64) -> Self {
        self.max_step_items = n;
        self
    }
    /// Bounds the bytes of per-request state a matcher holds (default
    /// [`DEFAULT_MAX_STATE_BYTES`]; `usize::MAX`: no bound), as
    /// [`GrammarMatcher::state_bytes`] counts them: the parser's chart (or the PDA's threads,
    /// frames and bytes) and the accepted steps. Checked when a token or string is accepted:
    /// over the bound it is refused with [`MatcherError::StateTooLarge`] and the matcher is
    /// unchanged. Within one call the parser may hold up to twice the bound (a fill reads
    /// uncertain tokens from a state at the bound; an accept reads its bytes before the check),
    /// checked every 1,024 visits as it reads, so no call grows it much further (by what 1,024
    /// visits add: tens of KB). Counted by length: the resident memory of the vectors can be up
    /// to twice the count. Deep nesting and, without
    /// [`MatcherConfig::max_rollback_tokens`], long inputs grow the state; see the module
    /// documentation.
    pub fn max_state_bytes(mut self, n: usize) -> Self {
        self.max_state_bytes = n;
        self
    }
}

/// Why a matcher call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MatcherError {
    /// A token id outside the vocabulary.
    #[error("token id {id} is out of range for a vocabulary of {vocab_size} tokens")]
    InvalidTokenId {
        /// The id.
        id: u32,
        /// The vocabulary size.
        vocab_size: usize,
    },
    /// `rollback` was asked to undo more tokens than it can.
    #[error("cannot roll back {requested} tokens: {available} can be rolled back")]
    RollbackTooFar {
        /// Tokens requested.
        requested: usize,
        /// Tokens that can be undone.
        available: usize,
    },
    /// The mask buffer is too small for the vocabulary.
    #[error("the mask buffer has {got} words, {need} are needed")]
    MaskTooSmall {
        /// Words given.
        got: usize,
        /// Words needed.
        need: usize,
    },
    /// A batch bitmask too short for one row per matcher.
    #[error("the batch bitmask has {got} words, {need} are needed")]
    BitmaskTooShort {
        /// Words given.
        got: usize,
        /// Words needed.
        need: usize,
    },
    /// A mask computation panicked (a bug): the matcher's state is unknown, so every call fails
    /// this way until [`GrammarMatcher::reset`].
    #[error("the matcher is poisoned: a mask computation panicked (a bug; reset the matcher)")]
    Poisoned,
    /// A row index past the last row of the batch bitmask.
    #[error("row index {index} is out of range for a bitmask of {rows} rows")]
    RowIndexOutOfRange {
        /// The index.
        index: usize,
        /// Rows in the bitmask.
        rows: usize,
    },
    /// Two matchers of a batch mapped to the same row.
    #[error("row index {index} is given twice")]
    DuplicateRowIndex {
        /// The index.
        index: usize,
    },
    /// A per-matcher argument of a batch call whose length is not the number of matchers.
    #[error("{matchers} matchers but {given} entries")]
    BatchLengthMismatch {
        /// Matchers in the batch.
        matchers: usize,
        /// Entries given.
        given: usize,
    },
    /// Matchers of one batch with vocabularies of different sizes (rows would differ).
    #[error("a batch mixes vocabularies of {expected} and {got} tokens")]
    VocabSizeMismatch {
        /// The first matcher's vocabulary size.
        expected: usize,
        /// Another matcher's.
        got: usize,
    },
    /// A draft-tree node whose parent does not come before it.
    #[error("draft node {node} has parent {parent}: parents must come before their children")]
    InvalidDraftParent {
        /// The node.
        node: usize,
        /// Its parent.
        parent: usize,
    },
    /// The forced text of a jump forward could not be re-tokenized.
    #[error("cannot re-tokenize the jump-forward text: {message}")]
    Retokenize {
        /// Why.
        message: String,
    },
    /// The batch thread pool could not be started.
    #[error("cannot start the batch thread pool: {0}")]
    ThreadPool(String),
    /// A call went over its parser work budget ([`MatcherConfig::max_step_items`]): the grammar
    /// is too ambiguous (or the string too long) for one step here. The matcher is as it was
    /// before the call (a fill leaves an all-zero mask).
    #[error(
        "the step was stopped after {items} parser item visits, over the limit of {limit} \
         (MatcherConfig::max_step_items); the matcher is unchanged"
    )]
    StepTooExpensive {
        /// Item visits counted when the step was stopped.
        items: u64,
        /// The limit.
        limit: u64,
    },
    /// Accepting a token or string would make the matcher's state hold more bytes than
    /// [`MatcherConfig::max_state_bytes`] (deep nesting, or a long input without a rollback
    /// limit), or a call's parser would hold more than twice that while it reads (the limit
    /// given is the one crossed). Nothing is accepted; the matcher is as it was before the call
    /// (a fill leaves an all-zero mask).
    #[error(
        "the matcher's state would hold {bytes} bytes, over the limit of {limit} \
         (MatcherConfig::max_state_bytes, twice that within one call); the matcher is unchanged"
    )]
    StateTooLarge {
        /// Bytes the state would hold.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
}

/// Parser bytes below which a matcher with a rollback limit never compacts its chart: short
/// generations pay nothing.
const COMPACTION_SLACK: usize = 1 << 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// A normal token read by its text, these many bytes (the id is kept for jump-forward
    /// re-tokenization).
    Text { len: u32, id: TokenId },
    /// Bytes read otherwise: a token read by id (its sentinel), or a string from
    /// `accept_string`.
    Bytes(u32),
    /// A stop token, which ended the generation after reading these many bytes (its sentinel,
    /// when it was a terminal of the grammar, else 0).
    Stop(u32),
}

impl Step {
    /// The parser bytes this step read.
    fn len(&self) -> usize {
        match *self {
            Step::Text { len, .. } | Step::Bytes(len) | Step::Stop(len) => len as usize,
        }
    }
}

/// Matches tokens against a compiled grammar and computes next-token masks.
///
/// # Example
/// ```
/// use maskforge::{GrammarCompiler, CompilerConfig, GrammarMatcher, TokenBitmask, VocabularyBuilder};
/// let vocab = VocabularyBuilder::new().tokens(["{", "}", "{}", " ", "</s>"]).special(4).stop_tokens([4]).build()?;
/// let grammar = GrammarCompiler::new(vocab, CompilerConfig::default()).compile_builtin_json_grammar()?;
/// let mut m = GrammarMatcher::new(&grammar);
/// let mut mask = TokenBitmask::new(5);
/// m.fill_next_token_bitmask(mask.as_words_mut());
/// assert_eq!(mask.allowed_ids().collect::<Vec<_>>(), vec![0, 2, 3]);
/// assert!(m.accept_token(2));
/// m.fill_next_token_bitmask(mask.as_words_mut());
/// assert_eq!(mask.allowed_ids().collect::<Vec<_>>(), vec![3, 4]);
/// m.rollback(1)?;
/// assert!(!m.accept_token(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct GrammarMatcher {
    grammar: CompiledGrammar,
    /// The Earley parser or the PDA, as the grammar says ([`CompiledGrammar::parser`]).
    parser: Engine,
    steps: Vec<Step>,
    /// Steps dropped from `steps` because no rollback can reach them (a rollback limit is set).
    forgotten_steps: usize,
    /// The parser length at which its chart is compacted next (with a rollback limit).
    next_compaction: usize,
    terminated: bool,
    stop_tokens: Vec<u32>,
    config: MatcherConfig,
    scratch: mask::MaskScratch,
    /// A mask computation panicked; see [`MatcherError::Poisoned`].
    poisoned: bool,
}

impl GrammarMatcher {
    /// A matcher at the start of `grammar` with the default configuration.
    pub fn new(grammar: &CompiledGrammar) -> Self {
        Self::with_config(grammar, MatcherConfig::default())
    }

    /// A matcher with the given configuration.
    pub fn with_config(grammar: &CompiledGrammar, config: MatcherConfig) -> Self {
        let stop_tokens = match &config.stop_tokens {
            Some(ids) => ids.clone(),
            None => grammar.vocabulary().stop_token_ids().to_vec(),
        };
        GrammarMatcher {
            grammar: grammar.clone(),
            parser: Engine::new(grammar),
            steps: Vec::new(),
            forgotten_steps: 0,
            next_compaction: COMPACTION_SLACK,
            terminated: false,
            stop_tokens,
            config,
            scratch: mask::MaskScratch::default(),
            poisoned: false,
        }
    }

    /// The compiled grammar.
    pub fn grammar(&self) -> &CompiledGrammar {
        &self.grammar
    }

    /// The stop tokens in effect.
    pub fn stop_token_ids(&self) -> &[u32] {
        &self.stop_tokens
    }

    /// Accepts one token. Returns `false`, leaving the state unchanged, when the grammar does not
    /// allow it (including ids outside the vocabulary, special tokens the grammar does not use,
    /// and every token after termination) or on any error of
    /// [`GrammarMatcher::try_accept_token`], which tells them apart.
    pub fn accept_token(&mut self, id: u32) -> bool {
        self.try_accept_token(id).unwrap_or(false)
    }

    /// As [`GrammarMatcher::accept_token`], with the reasons it may fail.
    ///
    /// # Errors
    /// [`MatcherError::InvalidTokenId`]; [`MatcherError::Poisoned`];
    /// [`MatcherError::StepTooExpensive`] when reading the token goes over
    /// [`MatcherConfig::max_step_items`]; [`MatcherError::StateTooLarge`] when keeping it would
    /// go over [`MatcherConfig::max_state_bytes`]. The state is unchanged on every error.
    pub fn try_accept_token(&mut self, id: u32) -> Result<bool, MatcherError> {
        let vocab_size = self.grammar.vocabulary().vocab_size();
        if id as usize >= vocab_size {
            return Err(MatcherError::InvalidTokenId { id, vocab_size });
        }
        if self.poisoned {
            return Err(MatcherError::Poisoned);
        }
        if self.terminated {
            return Ok(false);
        }
        self.begin_step();
        let vocab = self.grammar.vocabulary();
        if self.stop_tokens.contains(&id) {
            let Some(read) = accept_stop(&mut self.parser, vocab, id) else {
                return self.refused();
            };
            self.commit(Step::Stop(read))?;
            self.terminated = true;
            return Ok(true);
        }
        if vocab.is_token(id) && self.parser.reads_token() {
            let n = self.parser.advance_bytes(Sentinel::encode(TokenId::from_u32(id)).as_bytes());
            if n == Sentinel::LEN {
                self.commit(Step::Bytes(n as u32))?;
                return Ok(true);
            }
            self.parser.pop_bytes(n);
            self.step_error()?;
        }
        let bytes = vocab.token_bytes(id);
        if bytes.is_empty() || vocab.is_special(id) || !Sentinel::is_text(bytes) {
            return Ok(false);
        }
        let n = self.parser.advance_bytes(bytes);
        if n < bytes.len() {
            self.parser.pop_bytes(n);
            return self.refused();
        }
        self.commit(Step::Text { len: n as u32, id: TokenId::from_u32(id) })?;
        Ok(true)
    }

    /// Accepts a string as if it were one token (it counts as one step for
    /// [`GrammarMatcher::rollback`]). All or nothing: on `false` the state is unchanged. The
    /// string is text: it never matches a token named by id, and a byte `0xFF` (never part
    /// of UTF-8 text) is rejected. Errors read as `false`; see
    /// [`GrammarMatcher::try_accept_string`].
    pub fn accept_string(&mut self, s: impl AsRef<[u8]>) -> bool {
        self.try_accept_string(s).unwrap_or(false)
    }

    /// As [`GrammarMatcher::accept_string`], with the reasons it may fail.
    ///
    /// # Errors
    /// [`MatcherError::Poisoned`], [`MatcherError::StepTooExpensive`] (reading the string went
    /// over [`MatcherConfig::max_step_items`]), [`MatcherError::StateTooLarge`]; the state is
    /// unchanged.
    pub fn try_accept_string(&mut self, s: impl AsRef<[u8]>) -> Result<bool, MatcherError> {
        let bytes = s.as_ref();
        if self.poisoned {
            return Err(MatcherError::Poisoned);
        }
        if self.terminated || !Sentinel::is_text(bytes) {
            return Ok(false);
        }
        self.begin_step();
        let n = self.parser.advance_bytes(bytes);
        if n < bytes.len() {
            self.parser.pop_bytes(n);
            return self.refused();
        }
        self.commit(Step::Bytes(n as u32))?;
        Ok(true)
    }

    /// Gives the parser a fresh budget for one call: [`MatcherConfig::max_step_items`] of
    /// work, and within the call at most twice [`MatcherConfig::max_state_bytes`] of state (the
    /// sets a fill or an accept reads before they are popped or checked at commit).
    fn begin_step(&mut self) {
        let max_bytes = self.config.max_state_bytes.saturating_mul(2);
        self.parser.set_budget(StepBudget::new(self.config.max_step_items, max_bytes));
    }

    /// The error of a call whose parser ran out of budget, if it did.
    fn step_error(&self) -> Result<(), MatcherError> {
        let budget = self.parser.budget();
        match budget.stop() {
            None => Ok(()),
            Some(Stop::Work) => Err(MatcherError::StepTooExpensive { items: budget.used(), limit: budget.limit() }),
            Some(Stop::Bytes(bytes)) => Err(MatcherError::StateTooLarge { bytes, limit: budget.max_bytes() }),
        }
    }

    /// The answer of an accept call whose input was not read (the bytes read already popped):
    /// the budget's error if it ran out, else a rejection.
    fn refused(&self) -> Result<bool, MatcherError> {
        self.step_error().map(|()| false)
    }

    /// Keeps the bytes an accept call read as a step, unless the state would then be over
    /// [`MatcherConfig::max_state_bytes`]: then they are popped and the call fails.
    fn commit(&mut self, step: Step) -> Result<(), MatcherError> {
        let bytes = self.state_bytes() + std::mem::size_of::<Step>();
        if bytes > self.config.max_state_bytes {
            self.parser.pop_bytes(step.len());
            return Err(MatcherError::StateTooLarge { bytes, limit: self.config.max_state_bytes });
        }
        self.push_step(step);
        self.after_accept();
        Ok(())
    }

    /// The bytes of per-request state that [`MatcherConfig::max_state_bytes`] bounds: the
    /// parser's (its chart, or the PDA's threads, frames and consumed bytes, counted by length)
    /// and the accepted steps kept for rollback.
    pub fn state_bytes(&self) -> usize {
        self.parser.state_bytes() + self.steps.len() * std::mem::size_of::<Step>()
    }

    /// The parser item visits the last call that ran the parser used (see
    /// [`MatcherConfig::max_step_items`]): how close a step comes to the bound.
    pub fn last_step_items(&self) -> u64 {
        self.parser.budget().used()
    }

    /// Records an accepted step. With a rollback limit, forgets what no rollback can reach, so
    /// that a long generation (or `maskforge check` of a big file) runs in flat memory: the steps
    /// beyond the limit, and the parser chart before them once it has doubled since its last
    /// compaction (amortized constant work per byte; see `earley::compact`).
    fn push_step(&mut self, step: Step) {
        self.steps.push(step);
        let Some(limit) = self.config.max_rollback_tokens else { return };
        if self.steps.len() > 2 * limit + 64 {
            let extra = self.steps.len() - limit;
            self.steps.drain(..extra);
            self.forgotten_steps += extra;
        }
        if self.parser.byte_len() >= self.next_compaction {
            let reachable = self.steps.iter().rev().take(limit).map(Step::len);
            // Compaction renumbers the Earley chart's positions, which kept verdicts name.
            self.scratch.forget_verdicts();
            self.parser.compact(reachable.sum());
            self.next_compaction = 2 * self.parser.byte_len() + COMPACTION_SLACK;
        }
    }

    fn after_accept(&mut self) {
        if self.config.terminate_without_stop_token && self.parser.is_accepting() && self.parser.next_bytes() == [0; 4]
        {
            self.terminated = true;
        }
    }

    /// Writes the mask of tokens allowed next into `out` (`ceil(vocab_size / 32)` words; bit
    /// `i % 32` of word `i / 32` is token `i`). Stop tokens are allowed exactly when the grammar
    /// can end here. Returns whether every token of the vocabulary is allowed.
    ///
    /// # Panics
    /// When `out` is shorter than `ceil(vocab_size / 32)` words, the matcher is poisoned, or
    /// the fill goes over [`MatcherConfig::max_step_items`] (or its parser over twice
    /// [`MatcherConfig::max_state_bytes`]); use
    /// [`GrammarMatcher::try_fill_next_token_bitmask`] (what a server fed untrusted grammars
    /// should call) to get an error instead.
    pub fn fill_next_token_bitmask(&mut self, out: &mut [u32]) -> bool {
        self.try_fill_next_token_bitmask(out).unwrap_or_else(|e| panic!("{e}"))
    }

    /// As [`GrammarMatcher::fill_next_token_bitmask`], with an error instead of a panic.
    ///
    /// # Errors
    /// [`MatcherError::MaskTooSmall`]; [`MatcherError::StepTooExpensive`] when checking the
    /// uncertain tokens goes over [`MatcherConfig::max_step_items`], or
    /// [`MatcherError::StateTooLarge`] when the parser's transient sets would go over twice
    /// [`MatcherConfig::max_state_bytes`] (the mask is all zero, the matcher unchanged: the
    /// same call fails the same way, a rollback or another token may not); [`MatcherError::Poisoned`] when this computation (or an earlier one) panicked: the
    /// panic is caught, the mask is all zero, the process goes on.
    pub fn try_fill_next_token_bitmask(&mut self, out: &mut [u32]) -> Result<bool, MatcherError> {
        self.fill_mask_with(out, false)
    }

    /// Fills the mask with the exact oracle: every token's bytes run through the parser, no
    /// cache. The reference that every fast path is tested against; slow (milliseconds). Not
    /// bounded by [`MatcherConfig::max_step_items`] (a reference, not a serving call).
    ///
    /// # Errors
    /// [`MatcherError::MaskTooSmall`].
    pub fn fill_next_token_bitmask_exact(&mut self, out: &mut [u32]) -> Result<bool, MatcherError> {
        self.fill_mask_with(out, true)
    }

    fn fill_mask_with(&mut self, out: &mut [u32], exact: bool) -> Result<bool, MatcherError> {
        let vocab = self.grammar.vocabulary().clone();
        let need = mask_words(vocab.vocab_size());
        if out.len() < need {
            return Err(MatcherError::MaskTooSmall { got: out.len(), need });
        }
        let out = &mut out[..need];
        out.fill(0);
        if self.poisoned {
            return Err(MatcherError::Poisoned);
        }
        if self.terminated {
            return Ok(false);
        }
        if exact {
            self.parser.set_budget(StepBudget::UNLIMITED);
        } else {
            self.begin_step();
        }
        // A panic here is a bug (perhaps in a rayon job building a cache entry); caught at this
        // boundary, it poisons this matcher instead of unwinding into the serving loop.
        let filled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if PANIC_NEXT_FILL.take() {
                panic!("a fault injected by inject_panic_into_next_fill");
            }
            if exact {
                match &mut self.parser {
                    Engine::Earley(parser) => oracle::fill_exact_mask(parser, &vocab, out),
                    // The oracle is the Earley parser's, the reference the PDA is checked against.
                    Engine::Pda(pda) => {
                        let mut parser = Parser::new(pda.fsm().clone());
                        parser.advance_bytes(pda.bytes());
                        oracle::fill_exact_mask(&mut parser, &vocab, out);
                    }
                }
            } else {
                mask::fill_cached_mask(&mut self.parser, &self.grammar, &mut self.scratch, out);
            }
        }));
        if filled.is_err() {
            self.poisoned = true;
            out.fill(0);
            return Err(MatcherError::Poisoned);
        }
        for &s in &self.stop_tokens {
            if (s as usize) < vocab.vocab_size() {
                out[s as usize / 32] &= !(1 << (s % 32));
                if stop_allowed(&mut self.parser, &vocab, s) {
                    out[s as usize / 32] |= 1 << (s % 32);
                }
            }
        }
        // Out of budget, the walk stopped part-way: no bit of this mask can be trusted.
        if let Err(e) = self.step_error() {
            out.fill(0);
            return Err(e);
        }
        Ok(crate::util::bitset::all_allowed(out, vocab.vocab_size()))
    }

    /// Whether a stop token has been accepted (or the grammar ended, with
    /// [`MatcherConfig::terminate_without_stop_token`]).
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Whether the input so far is a complete match, so a stop token would be accepted (a
    /// stop token that is also a terminal may be accepted in more places; the mask says).
    pub fn can_terminate(&self) -> bool {
        !self.terminated && self.parser.is_accepting()
    }

    /// Whether the input so far is a complete match (XGrammar's name for
    /// [`GrammarMatcher::can_terminate`], true also after termination).
    pub fn is_completed(&self) -> bool {
        self.parser.is_accepting()
    }

    /// How many tokens (steps) have been accepted.
    pub fn num_accepted_tokens(&self) -> usize {
        self.forgotten_steps + self.steps.len()
    }

    /// Undoes the last `n` accepted tokens.
    ///
    /// # Errors
    /// [`MatcherError::RollbackTooFar`] when `n` exceeds the accepted tokens or
    /// [`MatcherConfig::max_rollback_tokens`]; nothing is undone then.
    pub fn rollback(&mut self, n: usize) -> Result<(), MatcherError> {
        if self.poisoned {
            return Err(MatcherError::Poisoned);
        }
        let available = self.steps.len().min(self.config.max_rollback_tokens.unwrap_or(usize::MAX));
        if n > available {
            return Err(MatcherError::RollbackTooFar { requested: n, available });
        }
        if n > 0 {
            // The popped bytes' stack frames may be made again under the same ids.
            self.scratch.forget_verdicts();
        }
        for _ in 0..n {
            let step = self.steps.pop().expect("n is at most the steps held");
            self.parser.pop_bytes(step.len());
            self.terminated = false;
        }
        if n > 0 && self.config.terminate_without_stop_token {
            self.after_accept();
        }
        Ok(())
    }

    /// Returns to the initial state (also leaving the poisoned state).
    pub fn reset(&mut self) {
        // A compacted chart cannot be popped to the start: begin again.
        self.parser = Engine::new(&self.grammar);
        self.scratch.forget_verdicts();
        self.steps.clear();
        self.forgotten_steps = 0;
        self.next_compaction = COMPACTION_SLACK;
        self.terminated = false;
        self.poisoned = false;
    }

    /// The Earley parser, when the matcher runs one (for tests); `None` for the PDA.
    pub fn parser(&self) -> Option<&Parser> {
        self.parser.earley()
    }

    /// The items of the parser's current position: Earley items, or PDA threads. Every byte
    /// the next call reads starts by scanning them, so a large count foretells an expensive
    /// step (see [`MatcherConfig::max_step_items`]).
    pub fn current_items(&self) -> usize {
        self.parser.current_len()
    }

    /// Bytes the matcher's parser holds: those a rollback can still undo, once compacted.
    pub fn parser_byte_len(&self) -> usize {
        self.parser.byte_len()
    }

    /// Whether the matcher runs the PDA now: its grammar asks for it ([`CompiledGrammar::parser`])
    /// and no ambiguity made it hand over to the Earley parser.
    pub fn runs_pda(&self) -> bool {
        matches!(self.parser, Engine::Pda(_))
    }
}

thread_local! {
    /// Set by [`inject_panic_into_next_fill`]; read (and cleared) by every mask computation.
    static PANIC_NEXT_FILL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Test-only fault injection: the next mask computation on this thread panics inside its
/// `catch_unwind` boundary, as a bug would, so tests can check that the matcher reports
/// [`MatcherError::Poisoned`] and that other matchers go on. No input is known to panic there,
/// so the poisoning path has no other way to run. Costs a thread-local read per fill.
#[doc(hidden)]
pub fn inject_panic_into_next_fill() {
    PANIC_NEXT_FILL.set(true);
}
