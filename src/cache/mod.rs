//! Layer 5: the adaptive token-mask cache (XGrammar §3.1–3.2, XGrammar-2 §3.4 and appendix D).
//!
//! For every *scannable* automaton state `s` (a state with a byte edge; the Earley item's
//! origin and repetition count are ignored), the vocabulary splits into three parts:
//!
//! * **accepted**: tokens whose bytes can be read entirely inside the rule from `s`. The item
//!   `s` exists in every context where the entry is used, so they are valid whatever the
//!   context is;
//! * **uncertain**: tokens that can only be read by leaving the rule part-way (the rule ends
//!   and the rest of the token must be read by whatever follows it), where the first byte after
//!   the rule can follow the rule somewhere in the grammar ([`crate::fsm::lookahead`]). Whether
//!   they are valid depends on the parents: they are checked against the full parser at run time;
//! * **rejected**: everything else, invalid in every context.
//!
//! Leaving the rule before reading any byte is not counted: the Earley set that holds `s` also
//! holds every item that follows the rule's completion, and their own entries cover those tokens.
//!
//! An entry is computed by an [`Parser::isolated`](crate::earley::Parser::isolated) parser
//! walking the byte-sorted vocabulary with prefix sharing (roll back to the common prefix of
//! consecutive tokens; skip every token that extends a prefix already rejected). Entries are
//! stored in their smallest form ([`AdaptiveTokenMask`]): the accepted list, the rejected list,
//! or a bitset, plus the uncertain list.
//!
//! Counted repetitions are analysed as unbounded (the item's count is unknown out of context):
//! at run time an item with `budget = max - count - 1` trusts the accepted set only for tokens
//! of at most `budget` bytes (a token can start at most one new iteration per byte, and a new
//! iteration needs `count + 1 < max`) and checks longer ones with the parser, so masks stay
//! exact near the bounds. An item whose count is below `min` uses an entry built without
//! context (see [`MaskCache::entry`]).
//!
//! Entries are built just in time by default, the first time a state is seen, and memoized in
//! the [`MaskCache`] of the compiled grammar, shared by every matcher on every thread
//! ([`MaskCacheMode`] selects ahead-of-time building instead). Before walking, an entry is
//! looked up in the cross-grammar [`MaskPool`] ([`pool`]) under a key covering everything it
//! depends on; a walk stores its lookahead-independent result ([`BaseEntry`]) there, so
//! other grammars with the same sub-structure reuse it, even under another follow set.

pub mod base;
mod build;
mod byte_paths;
pub(crate) mod counted;
mod dense;
mod dispatch;
mod every_caller;
mod expansion;
mod lexical_loop;
pub mod pool;
mod region;
mod rule_steps;
pub(crate) mod verdicts;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use rayon::prelude::*;

pub use base::{BaseAccepted, BaseEntry};
use build::walk_listed;
pub use build::{build_base, build_entry};
pub use pool::{Lookup, MaskPool, PoolStats};

use crate::fsm::hash::{hash_rules, FsmHashes};
use crate::fsm::{lookahead::follow_sets, FsmRuleId, GrammarFsm, RuleKind, StateId};
use crate::tokenizer::Vocabulary;
use crate::util::byteset::ByteSet;
use crate::util::cancel;
use crate::util::id::TokenId;

/// The accepted part of a cache entry, in the smallest of three forms.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AdaptiveTokenMask {
    /// The accepted token ids, ascending.
    Accepted(Box<[TokenId]>),
    /// The rejected token ids, ascending: every other normal token that is not uncertain is
    /// accepted.
    Rejected(Box<[TokenId]>),
    /// Accepted tokens as a bitmask in the engine layout.
    Bitset(Box<[u32]>),
}

/// The cached classification of the vocabulary for one scannable state.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MaskEntry {
    /// Tokens valid in every context.
    pub accepted: AdaptiveTokenMask,
    /// Tokens to check against the full parser, as positions in
    /// [`Vocabulary::sorted_token_ids`], ascending (so checks can share prefixes).
    pub uncertain: Box<[u32]>,
}

impl MaskEntry {
    /// Heap bytes used.
    pub fn memory_usage(&self) -> usize {
        let list = match &self.accepted {
            AdaptiveTokenMask::Accepted(v) | AdaptiveTokenMask::Rejected(v) => v.len(),
            AdaptiveTokenMask::Bitset(v) => v.len(),
        };
        (list + self.uncertain.len()) * 4
    }

    /// Checks that an entry read back from a saved grammar fits `vocab`: ids and sorted
    /// positions in range and ascending, a bitset of the mask's length.
    pub(crate) fn check_for(&self, vocab: &Vocabulary) -> Result<(), String> {
        let accepted_ok = match &self.accepted {
            AdaptiveTokenMask::Accepted(ids) | AdaptiveTokenMask::Rejected(ids) => {
                ascending_below(ids.iter().map(|t| t.as_u32()), vocab.vocab_size())
            }
            AdaptiveTokenMask::Bitset(words) => words.len() == vocab.vocab_size().div_ceil(32),
        };
        if !accepted_ok {
            return Err(format!(
                "a cache entry's accepted tokens do not fit a vocabulary of {} ids",
                vocab.vocab_size()
            ));
        }
        if !ascending_below(self.uncertain.iter().copied(), vocab.sorted_token_ids().len()) {
            return Err("a cache entry's uncertain tokens are out of range or out of order".into());
        }
        Ok(())
    }
}

/// Whether `ids` ascend strictly and stay below `bound`.
fn ascending_below(ids: impl Iterator<Item = u32>, bound: usize) -> bool {
    let mut next_min = 0usize;
    ids.into_iter().all(|id| {
        let ok = id as usize >= next_min && (id as usize) < bound;
        next_min = id as usize + 1;
        ok
    })
}

/// The most bytes of dense forms a precompute builds with its entries (see
/// [`MaskCache::precompute_until`]): all of them for the builtin JSON grammar (115 entries, at
/// most 2.9 MB at 200k tokens), a bounded part for a large schema's thousands of entries, whose
/// others are built on first use.
const PRECOMPUTED_DENSE_BYTES: usize = 8 << 20;

/// When cache entries are built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MaskCacheMode {
    /// On first use (XGrammar-2's JIT): compiling is cheap, the first visit of a state pays.
    #[default]
    Jit,
    /// Every reachable scannable state at compile time, in parallel (XGrammar-1's way).
    Aot,
    /// The `K` states estimated most expensive at compile time, the rest on first use.
    Precompute(usize),
}

/// How the accepted tokens of an item near its repetition's upper bound are trusted (see
/// `counted.rs`): by a table of every token's loop-backs, by walking the repetition's automaton,
/// by upper bounds of the loop-backs, or by asking the parser about every token longer than the
/// budget.
pub(crate) enum NearBound<'a> {
    /// The item is at the start of a forced repetition whose table is built, or near enough to
    /// the bound that building it pays ([`counted::WALKED_LONG_TOKENS`]).
    Table(Arc<counted::LoopCounts>),
    /// The item is inside a forced repetition, or at its start with few tokens longer than its
    /// budget and no table built.
    Walk(&'a counted::Forced),
    /// The repetition is bounded, its loop-backs not forced.
    Bounds(Arc<counted::LoopBounds>),
    /// The repetition is not bounded (its body may read nothing).
    Parser,
}

/// How a cache entry is built (see [`MaskCache::build_path`]), fastest path first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BuildPath {
    /// Free text of a `TagDispatch` rule, from its pooled base (`dispatch.rs`).
    FreeText,
    /// From the pooled slice of the state's lexical loop (`lexical_loop.rs`).
    LoopSlice,
    /// Along byte paths, the parser walking only the tokens those do not read (`byte_paths.rs`).
    BytePaths,
    /// By the parser over every token whose first byte the state reads.
    Parser,
}

/// Counters of a [`MaskCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskCacheStats {
    /// Entries built so far.
    pub entries: usize,
    /// Heap bytes of the built entries.
    pub bytes: usize,
    /// Uncertain tokens over all built entries (what runtime checks may cost).
    pub uncertain_tokens: usize,
    /// Entries served by the cross-grammar pool as stored.
    pub pool_hits: usize,
    /// Entries derived from a pooled base with another follow set.
    pub pool_partial_hits: usize,
    /// Entries that walked the vocabulary although they have a pool key (then stored).
    pub pool_misses: usize,
    /// Entries that walked the vocabulary because they cannot be keyed soundly (or there is no
    /// pool).
    pub unshared: usize,
    /// Fills that took their uncertain tokens' verdicts from the grammar's shared memo (kept by
    /// an earlier fill in the same parser configuration, by any matcher).
    pub shared_verdict_hits: u64,
    /// Configurations whose verdicts the shared memo kept so far (the oldest may have been
    /// let go since).
    pub shared_verdict_configurations: u64,
}

impl MaskCacheStats {
    /// The share of entries served by the pool (perfect or partial hits), 0 when none was built.
    pub fn reuse_rate(&self) -> f64 {
        if self.entries == 0 {
            0.0
        } else {
            (self.pool_hits + self.pool_partial_hits) as f64 / self.entries as f64
        }
    }
}

/// The cross-grammar side of a [`MaskCache`]: the pool and the structural hashes keying it.
#[derive(Debug)]
struct Shared {
    pool: Arc<MaskPool>,
    hashes: FsmHashes,
    /// Rooted hashes of the states first-byte walks were keyed by (see `byte_paths.rs`): the
    /// entries of one object's key positions read their first bytes into the same few states.
    rooted: RootedHashes,
}

/// A memo of [`FsmHashes::rooted_hash`] by state (linear in the reachable part each time).
#[derive(Debug, Default)]
struct RootedHashes(std::sync::Mutex<crate::util::hash::FastMap<StateId, Option<u64>>>);

impl RootedHashes {
    fn of(&self, hashes: &FsmHashes, fsm: &GrammarFsm, state: StateId) -> Option<u64> {
        let lock = || self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(&h) = lock().get(&state) {
            return h;
        }
        let h = pool::rooted_key(hashes, fsm, state);
        lock().insert(state, h);
        h
    }
}

impl Shared {
    fn new(fsm: &GrammarFsm, pool: Arc<MaskPool>) -> Self {
        Shared { pool, hashes: hash_rules(fsm), rooted: RootedHashes::default() }
    }

    /// The pool key of a first-byte walk of an entry of a rule in `context`, from the item and
    /// the byte (see `byte_paths.rs`).
    fn walk_key<'a>(&'a self, fsm: &'a GrammarFsm, context: &'a [StateId]) -> impl Fn(StateId, u8) -> Option<u64> + 'a {
        // Every item of one entry is a state of the entry's own rule; most of its first bytes
        // read into a few items (the generic key body): their seeds are kept.
        let context_hash = std::cell::OnceCell::new();
        let seeds: std::cell::RefCell<crate::util::hash::FastMap<StateId, Option<u64>>> = Default::default();
        move |item, b| {
            let known = seeds.borrow().get(&item).copied();
            let seed = known.unwrap_or_else(|| {
                let seed = self.rooted.of(&self.hashes, fsm, item).and_then(|item_hash| {
                    let context_hash = (*context_hash
                        .get_or_init(|| pool::context_key(&self.hashes, fsm, fsm.rule_of(item), context)))?;
                    Some(pool::path_walk_seed(self.pool.vocab_fingerprint(), item_hash, context_hash))
                });
                seeds.borrow_mut().insert(item, seed);
                seed
            })?;
            Some(pool::path_walk_key(seed, b))
        }
    }
}

/// The memo slot of one cache entry: a scannable state, and whether the entry is the one for
/// items of a counted repetition below its minimum, built without context (see
/// [`MaskCache::entry`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct EntrySlot {
    /// The state.
    pub state: StateId,
    /// Whether the entry is built without the certain context.
    pub below_min: bool,
}

impl EntrySlot {
    /// The position of the slot in a memo table: two slots per state, side by side.
    #[inline]
    pub fn index(self) -> usize {
        2 * self.state.index() + self.below_min as usize
    }

    /// The number of slots of a memo table for `states` states.
    pub fn count(states: usize) -> usize {
        2 * states
    }
}

/// The per-grammar memo of cache entries, indexed by automaton state.
#[derive(Debug)]
pub struct MaskCache {
    /// Two slots per state, indexed by [`EntrySlot::index`].
    entries: Vec<OnceLock<Arc<MaskEntry>>>,
    /// Beside each entry, its accepted tokens as a bitset when that merges faster than the
    /// entry's own form (see `dense.rs`), built on first use by the warm mask.
    dense: Vec<OnceLock<Option<Box<[u32]>>>>,
    follow: Vec<ByteSet>,
    /// Per rule, the parents every occurrence of the rule has (see [`MaskCache::certain_context`]).
    contexts: Vec<Box<[StateId]>>,
    /// Context expansion (`expansion.rs`), built on first use.
    expander: OnceLock<expansion::Expander>,
    shared: Option<Shared>,
    /// Per `TagDispatch` rule, the tokens its start state reads as free text (see
    /// `dispatch.rs`), computed on first use.
    free_text: crate::util::hash::FastMap<FsmRuleId, OnceLock<Arc<dispatch::FreeTextBase>>>,
    /// Without a pool, the slices of lexical loops this grammar walked (see `lexical_loop.rs`).
    /// The grammar's lexical loops, found on the first long walk.
    loops: OnceLock<lexical_loop::Loops>,
    /// (A std mutex: it is unwind-safe, and the map stays consistent if a holder panics.)
    loop_slices: std::sync::Mutex<crate::util::hash::FastMap<u128, Arc<lexical_loop::LoopSlice>>>,
    /// What walks along byte paths share (see `byte_paths.rs`), found on the first one.
    path_facts: OnceLock<byte_paths::PathFacts>,
    /// The first-byte walks entries of one rule share (see `byte_paths::PathMemoKey`).
    path_memo: byte_paths::PathMemo,
    /// Without a pool, the tables of the regions this grammar walked.
    region_tables: RegionTables,
    /// The counted repetitions whose loop-backs are forced (see `counted.rs`), found on first use.
    forced: OnceLock<counted::ForcedRules>,
    /// Without a pool, the loop-back tables of this grammar's forced repetitions.
    loop_counts: std::sync::Mutex<crate::util::hash::FastMap<u128, Arc<counted::LoopCounts>>>,
    /// Per entry slot of a bounded repetition met near its bound (by index), the loop-back
    /// bounds of the tokens its entry accepts.
    loop_bounds: std::sync::Mutex<crate::util::hash::FastMap<usize, Arc<counted::LoopBounds>>>,
    built: AtomicUsize,
    bytes: AtomicUsize,
    uncertain: AtomicUsize,
    /// Counted per [`Lookup`] kind, then unshared builds.
    origins: [AtomicUsize; 4],
    /// The uncertain tokens' verdicts by parser configuration, for every matcher.
    verdicts: verdicts::SharedVerdicts,
}

impl MaskCache {
    /// An empty cache for `fsm`; computes the rules' follow sets. With a `pool`, also the
    /// structural hashes of the rules, and entries are looked up in the pool before being built.
    pub fn new(fsm: &GrammarFsm, pool: Option<Arc<MaskPool>>) -> Self {
        MaskCache {
            entries: (0..EntrySlot::count(fsm.state_len())).map(|_| OnceLock::new()).collect(),
            dense: (0..EntrySlot::count(fsm.state_len())).map(|_| OnceLock::new()).collect(),
            follow: follow_sets(fsm),
            contexts: certain_contexts(fsm),
            expander: OnceLock::new(),
            shared: pool.map(|pool| Shared::new(fsm, pool)),
            free_text: fsm.dispatch_rules().map(|r| (r, OnceLock::new())).collect(),
            loops: OnceLock::new(),
            loop_slices: Default::default(),
            path_facts: OnceLock::new(),
            path_memo: Default::default(),
            region_tables: Default::default(),
            forced: OnceLock::new(),
            loop_counts: Default::default(),
            loop_bounds: Default::default(),
            built: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            uncertain: AtomicUsize::new(0),
            origins: Default::default(),
            verdicts: Default::default(),
        }
    }

    /// The pool entries are shared through, if any.
    pub fn pool(&self) -> Option<&Arc<MaskPool>> {
        self.shared.as_ref().map(|s| &s.pool)
    }

    /// The bytes that may follow each rule.
    pub fn follow_sets(&self) -> &[ByteSet] {
        &self.follow
    }

    /// The entry of `state`, built now if it is not yet.
    ///
    /// `below_min` is for items of a counted repetition whose count is still below the minimum:
    /// reading on into the parent would let a token end the repetition too early, so their entry
    /// is built without context (ending the repetition makes a token uncertain). Once the count
    /// reaches the minimum, ending is always allowed and the entry with context applies.
    pub fn entry(&self, fsm: &Arc<GrammarFsm>, vocab: &Vocabulary, state: StateId, below_min: bool) -> &Arc<MaskEntry> {
        self.entry_in_slot(fsm, vocab, self.slot_of(fsm, state, below_min))
    }

    /// Whether the entry of `state` is built (see [`MaskCache::entry`]).
    pub fn has_entry(&self, fsm: &GrammarFsm, state: StateId, below_min: bool) -> bool {
        self.entries[self.slot_of(fsm, state, below_min).index()].get().is_some()
    }

    /// As [`MaskCache::entry`], with the entry's accepted tokens as a bitset when merging that
    /// is cheaper than merging the entry's own form (a large list, a rejected list, a bitset):
    /// what the warm mask merges.
    pub fn entry_with_dense(
        &self,
        fsm: &Arc<GrammarFsm>,
        vocab: &Vocabulary,
        state: StateId,
        below_min: bool,
    ) -> (&Arc<MaskEntry>, Option<&[u32]>) {
        let slot = self.slot_of(fsm, state, below_min);
        let entry = self.entry_in_slot(fsm, vocab, slot);
        let words = match &entry.accepted {
            AdaptiveTokenMask::Bitset(bits) => Some(&bits[..]),
            _ => self.dense[slot.index()].get_or_init(|| dense::dense_accepted(entry, vocab)).as_deref(),
        };
        (entry, words)
    }

    /// The memo slot of `state`: an item below its repetition's minimum uses the entry without
    /// context, unless the state has no certain context anyway (then both are the same entry).
    fn slot_of(&self, fsm: &GrammarFsm, state: StateId, below_min: bool) -> EntrySlot {
        EntrySlot { state, below_min: below_min && !self.certain_context(fsm, state).is_empty() }
    }

    fn entry_in_slot(&self, fsm: &Arc<GrammarFsm>, vocab: &Vocabulary, slot: EntrySlot) -> &Arc<MaskEntry> {
        let EntrySlot { state, below_min } = slot;
        let context = if below_min { &[][..] } else { self.certain_context(fsm, state) };
        self.entries[slot.index()].get_or_init(|| {
            let outer = context.last().map_or(fsm.rule_of(state), |&q| fsm.rule_of(q));
            let follow = &self.follow[outer];
            let free_text = self.free_text.get(&fsm.rule_of(state)).filter(|_| fsm.is_free_text(state));
            let key = self.shared.as_ref().and_then(|sh| {
                pool::entry_key(&sh.hashes, fsm, sh.pool.vocab_fingerprint(), state, context, follow)
                    .map(|k| (&sh.pool, k))
            });
            let (e, origin) = match (free_text, key) {
                // Free text of a dispatch has its own fast path (its base is pooled, the entry
                // per grammar).
                (Some(base), _) => {
                    let start = fsm.rule(fsm.rule_of(state)).start;
                    let base = base.get_or_init(|| {
                        let build = || dispatch::FreeTextBase::new(fsm, vocab, start);
                        match &self.shared {
                            // Shared across grammars: it depends on the free-text part only.
                            Some(sh) => sh.pool.free_text_base(dispatch::free_text_key(fsm, start), build),
                            None => Arc::new(build()),
                        }
                    });
                    (Arc::new(dispatch::free_text_entry(fsm, context, follow, vocab, state, base)), 3)
                }
                (None, Some((pool, key))) => {
                    let (e, lookup) = pool.get_or_build(key, follow, vocab, || self.walk(fsm, context, vocab, state));
                    (e, lookup as usize)
                }
                (None, None) => (Arc::new(self.walk(fsm, context, vocab, state).derive(follow, vocab)), 3),
            };
            let e = match free_text {
                Some(_) => e,
                None => {
                    let expander = self.expander.get_or_init(|| expansion::Expander::new(fsm));
                    expander.expand(&e, fsm, context, vocab, state).map_or(e, Arc::new)
                }
            };
            self.origins[origin].fetch_add(1, Ordering::Relaxed);
            self.built.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(e.memory_usage(), Ordering::Relaxed);
            self.uncertain.fetch_add(e.uncertain.len(), Ordering::Relaxed);
            e
        })
    }

    /// The base entry of `state` in `context`: from the slice of its lexical loop when it has one
    /// worth it (see `lexical_loop.rs`), else by the vocabulary walk ([`build_base`]).
    ///
    /// Another long walk (a key position, a final state, a state that predicts a nullable rule,
    /// a counted repetition) first runs the vocabulary through the automaton along byte
    /// paths, and walks with the parser only the tokens that need it (see `byte_paths.rs`).
    fn walk(&self, fsm: &Arc<GrammarFsm>, context: &[StateId], vocab: &Vocabulary, state: StateId) -> BaseEntry {
        let first_bytes = self.byte_path_candidates(fsm, vocab, state);
        let paths = first_bytes.is_some();
        if let Some(in_loop) = self.sliced_loop(fsm, vocab, state, paths) {
            let key = lexical_loop::loop_key(fsm, state, &in_loop);
            let slice = self.loop_slice(key, || {
                let delimiter = lexical_loop::CORE_DELIMITER;
                lexical_loop::build_slice(fsm, vocab, state, &in_loop, delimiter, |core_key, core| {
                    self.loop_slice(core_key, || lexical_loop::LoopSlice::new(fsm, vocab, state, core))
                })
            });
            // A state on a cycle whose usual bytes lead out of it leaves its slice on nearly
            // every token, each one for the parser: 12 ms entries in MaskBench. Its slice is cheap
            // (every walk stops at the first byte); the entry goes along byte paths instead.
            // So does the loop before the match of an unanchored search (`[A-Za-z]` inside a
            // string: most tokens hold a letter and leave for the loop after it, 10–14 ms
            // entries with the slice, 3–5 ms along byte paths, where both loops are regions).
            // (Slices that a quarter of the vocabulary leaves still pay: tool-call grammars.)
            // Most is counted among the state's first-byte tokens, not the vocabulary: the
            // item of an untyped array (`Github_hard---o27348`) reads 62k first bytes, and
            // 61.7k of those tokens leave, 3.3 ms by the parser, 2.7 ms along byte paths.
            // The leaving tokens go along byte paths too where those apply and the parser
            // reads them slowly (see `lexical_loop::LeavingWalk`).
            if !first_bytes.is_some_and(|n| slice.leaves_most(n)) {
                let facts = paths.then_some(|| self.path_facts(fsm, vocab));
                let how = lexical_loop::LeavingWalk::DEFAULT;
                let walk = lexical_loop::walk_leaving(fsm, context, vocab, state, slice.leaving(), facts, how);
                return lexical_loop::loop_base(vocab, &slice, walk);
            }
        }
        if paths {
            let facts = self.path_facts(fsm, vocab);
            let table = |r: &region::Region| self.region_table(vocab, r);
            let key = self.shared.as_ref().map(|sh| (sh, sh.walk_key(fsm, context)));
            let pooled = key.as_ref().map(|(sh, key)| byte_paths::PooledWalks { pool: &sh.pool, key });
            let source = byte_paths::PathSource { facts, table: Some(&table), pooled };
            return byte_paths::paths_base(fsm, context, vocab, state, &source, Some(&self.path_memo));
        }
        build_base(fsm, context, vocab, state)
    }

    /// The grammar's facts for walks along byte paths, found on first use.
    fn path_facts(&self, fsm: &GrammarFsm, vocab: &Vocabulary) -> &byte_paths::PathFacts {
        self.path_facts.get_or_init(|| byte_paths::PathFacts::new(fsm, vocab, self.pool().cloned()))
    }

    /// The slice of the loop under `key`: from the pool, or this grammar's own map without one;
    /// built by `build` on first use.
    fn loop_slice(&self, key: u128, build: impl FnOnce() -> lexical_loop::LoopSlice) -> Arc<lexical_loop::LoopSlice> {
        if let Some(sh) = &self.shared {
            return sh.pool.loop_slice(key, build);
        }
        let found = self.loop_slices().get(&key).cloned();
        found.unwrap_or_else(|| {
            let slice = Arc::new(build());
            Arc::clone(self.loop_slices().entry(key).or_insert(slice))
        })
    }

    /// The table of byte region `r` over the vocabulary (see `region.rs`).
    fn region_table(&self, vocab: &Vocabulary, r: &region::Region) -> Arc<region::RegionTable> {
        region_table_in(self.shared.as_ref(), &self.region_tables, vocab, r)
    }

    /// How the accepted tokens of an item of `slot`'s state near its repetition's upper bound,
    /// with at least `least` loop-backs left, are trusted (see `counted.rs`).
    pub(crate) fn near_bound(
        &self,
        fsm: &GrammarFsm,
        vocab: &Vocabulary,
        slot: EntrySlot,
        least: u32,
    ) -> NearBound<'_> {
        let state = slot.state;
        let forced = self.forced.get_or_init(|| counted::ForcedRules::new(fsm));
        let Some(f) = forced.of(fsm, &self.follow, state) else {
            let Some(bound) = forced.bound(fsm, &self.follow, state) else { return NearBound::Parser };
            let mut bounds = self.loop_bounds.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let new = || Arc::new(counted::LoopBounds::new(state, bound, vocab));
            return NearBound::Bounds(Arc::clone(bounds.entry(slot.index()).or_insert_with(new)));
        };
        if state != f.start() {
            return NearBound::Walk(f);
        }
        // A table costs a walk of the whole vocabulary (2–3 ms for 128k tokens, in the fill
        // that first needs it); far from the bound, walking the few tokens longer than the
        // budget costs tens of microseconds, and most strings end there.
        let walk_instead = vocab.tokens_longer_than(least as usize).len() <= counted::WALKED_LONG_TOKENS;
        let build = || counted::LoopCounts::new(fsm, vocab, f);
        if let Some(sh) = &self.shared {
            return match sh.pool.built_loop_counts(f.key) {
                Some(table) => NearBound::Table(table),
                None if walk_instead => NearBound::Walk(f),
                None => NearBound::Table(sh.pool.loop_counts(f.key, build)),
            };
        }
        let mut tables = self.loop_counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match tables.get(&f.key) {
            Some(table) => NearBound::Table(Arc::clone(table)),
            None if walk_instead => NearBound::Walk(f),
            None => NearBound::Table(Arc::clone(tables.entry(f.key).or_insert_with(|| Arc::new(build())))),
        }
    }

    /// The lexical loop whose slice the entry of `state` is built from, if any (see
    /// `lexical_loop.rs`).
    fn sliced_loop(
        &self,
        fsm: &GrammarFsm,
        vocab: &Vocabulary,
        state: StateId,
        paths: bool,
    ) -> Option<lexical_loop::Loop<'_>> {
        let loops = self.loops.get_or_init(|| lexical_loop::Loops::new(fsm));
        // A state on no cycle takes the slice of the cycles its edges lead to only when most of
        // its tokens enter them (a string's first byte); else nearly every token would leave
        // the slice (a key position whose generic body is another rule).
        let sliced = loops
            .to_slice(fsm, vocab, state)
            .filter(|l| loops.on_cycle(state) || l.mostly_entered_from(fsm, vocab, state));
        // A large loop (the automaton of a search pattern) is grammar-specific, and a grammar
        // enters it at many states: a slice per state walks the whole vocabulary each time,
        // while walks along byte paths share each first byte's walk between the states that
        // byte leads to the same place (16 entries of 1.5 ms became 2 in one MaskBench file).
        sliced.filter(|l| l.len() <= lexical_loop::MAX_SLICED_STATES || !paths)
    }

    /// How the entry of `state` is built (or would be): for profiling programs that sort
    /// entries by how they are built. (A slice that most of the state's first-byte tokens leave,
    /// known only once built, hands its entry to the byte-path walk: it still counts as a slice
    /// here.)
    pub fn build_path(&self, fsm: &GrammarFsm, vocab: &Vocabulary, state: StateId) -> BuildPath {
        let paths = self.byte_path_candidates(fsm, vocab, state).is_some();
        if self.free_text.contains_key(&fsm.rule_of(state)) && fsm.is_free_text(state) {
            BuildPath::FreeText
        } else if self.sliced_loop(fsm, vocab, state, paths).is_some() {
            BuildPath::LoopSlice
        } else if paths {
            BuildPath::BytePaths
        } else {
            BuildPath::Parser
        }
    }

    /// The number of tokens whose first byte `state` reads, when a walk not served by a loop
    /// slice goes along byte paths (see `byte_paths.rs`).
    fn byte_path_candidates(&self, fsm: &GrammarFsm, vocab: &Vocabulary, state: StateId) -> Option<usize> {
        byte_paths::applies(fsm, state)
            .then(|| build::first_byte_candidates(fsm, state, vocab))
            .filter(|&n| n >= byte_paths::MIN_FIRST_BYTE_TOKENS)
    }

    /// The per-grammar slices, locked (a panic while the lock was held left the map whole).
    fn loop_slices(&self) -> std::sync::MutexGuard<'_, crate::util::hash::FastMap<u128, Arc<lexical_loop::LoopSlice>>> {
        self.loop_slices.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The parents every occurrence of `state` has, innermost first: while the current rule has
    /// a single use site in a rule that is not a counted repetition, that site. Reading on into
    /// certain parents is what makes `abc",` *accepted* inside a string with `maxLength`
    /// (a counted rule used once) instead of uncertain.
    #[inline]
    pub fn certain_context(&self, fsm: &GrammarFsm, state: StateId) -> &[StateId] {
        &self.contexts[fsm.rule_of(state)]
    }

    /// Builds the entries of `states` now, in parallel.
    pub fn precompute(&self, fsm: &Arc<GrammarFsm>, vocab: &Vocabulary, states: &[StateId]) {
        self.precompute_until(fsm, vocab, states, None);
    }

    /// Builds the entries of `states` now, in parallel and roughly in the given order (most
    /// expensive first, as the compiler sorts them), starting no new entry after `deadline`:
    /// the rest are built on first use. Returns how many were built (or found in the pool).
    /// The entries' dense forms (see `dense.rs`) are built too, up to
    /// [`PRECOMPUTED_DENSE_BYTES`]: else the first warm fill meeting an entry would build it.
    pub fn precompute_until(
        &self,
        fsm: &Arc<GrammarFsm>,
        vocab: &Vocabulary,
        states: &[StateId],
        deadline: Option<Instant>,
    ) -> usize {
        let done = AtomicUsize::new(0);
        let dense_bytes = AtomicUsize::new(0);
        // The compile's deadline and cancellation token, if any, stop the precompute too; the
        // jobs take the watch along (it is per thread). The section runs detached: a thread
        // waiting here may run another compile's job, which must not see this watch.
        let watch = cancel::current();
        cancel::detached(|| {
            // One task per state in order: rayon's work stealing takes from the front of the
            // list first, so the most expensive states start first and cheap ones fill the gaps.
            states.par_iter().with_max_len(1).for_each(|&s| {
                if deadline.is_some_and(|d| Instant::now() >= d)
                    || watch.as_ref().is_some_and(|w| w.poll("precompute").is_err())
                {
                    return;
                }
                if dense_bytes.load(Ordering::Relaxed) < PRECOMPUTED_DENSE_BYTES {
                    let (entry, words) = self.entry_with_dense(fsm, vocab, s, false);
                    // (A bitset entry is its own dense form: nothing was built.)
                    let built = match entry.accepted {
                        AdaptiveTokenMask::Bitset(_) => 0,
                        _ => words.map_or(0, |w| w.len() * 4),
                    };
                    dense_bytes.fetch_add(built, Ordering::Relaxed);
                } else {
                    self.entry(fsm, vocab, s, false);
                }
                done.fetch_add(1, Ordering::Relaxed);
            });
        });
        done.into_inner()
    }

    /// The entries built so far with their memo slots ([`EntrySlot::index`]), in slot order:
    /// what a saved grammar keeps.
    pub fn built_entries(&self) -> impl Iterator<Item = (usize, &Arc<MaskEntry>)> {
        self.entries.iter().enumerate().filter_map(|(slot, e)| e.get().map(|e| (slot, e)))
    }

    /// Stores `entry` (read back from a saved grammar) in memo slot `slot`, counted as built.
    /// The caller has checked the entry against the vocabulary.
    ///
    /// # Errors
    /// When the slot is out of range or already filled.
    pub(crate) fn restore(&self, slot: usize, entry: MaskEntry) -> Result<(), String> {
        let cell = self.entries.get(slot).ok_or_else(|| format!("cache entry slot {slot} out of range"))?;
        let (bytes, uncertain) = (entry.memory_usage(), entry.uncertain.len());
        cell.set(Arc::new(entry)).map_err(|_| format!("cache entry slot {slot} given twice"))?;
        self.built.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.uncertain.fetch_add(uncertain, Ordering::Relaxed);
        Ok(())
    }

    /// The counters.
    pub fn stats(&self) -> MaskCacheStats {
        let (shared_verdict_hits, shared_verdict_configurations) = self.verdicts.counts();
        MaskCacheStats {
            entries: self.built.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            uncertain_tokens: self.uncertain.load(Ordering::Relaxed),
            pool_hits: self.origins[Lookup::Hit as usize].load(Ordering::Relaxed),
            pool_partial_hits: self.origins[Lookup::PartialHit as usize].load(Ordering::Relaxed),
            pool_misses: self.origins[Lookup::Miss as usize].load(Ordering::Relaxed),
            unshared: self.origins[3].load(Ordering::Relaxed),
            shared_verdict_hits,
            shared_verdict_configurations,
        }
    }

    /// Heap bytes: the memo table plus built entries.
    pub fn memory_usage(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<OnceLock<Arc<MaskEntry>>>()
            + self.follow.capacity() * std::mem::size_of::<ByteSet>()
            + self.shared.as_ref().map_or(0, |sh| sh.hashes.memory_usage())
            + self.bytes.load(Ordering::Relaxed)
            + memory_of(&self.loop_slices, |s| s.memory_usage())
            + self.path_memo.memory_usage()
            + memory_of(&self.loop_counts, |t| t.memory_usage())
            + memory_of(&self.loop_bounds, |b| b.memory_usage())
            + memory_of(&self.region_tables, |t| t.memory_usage())
            + self.dense_bytes()
            + self.expander.get().map_or(0, |x| x.memory_usage())
            + self.verdicts.memory_usage()
    }

    /// Heap bytes of the dense forms built so far (see `dense.rs`).
    pub(crate) fn dense_bytes(&self) -> usize {
        self.dense.iter().filter_map(|d| d.get()?.as_ref()).map(|w| w.len() * 4).sum()
    }

    /// The uncertain tokens' verdicts kept by configuration, shared by the grammar's matchers.
    pub(crate) fn verdicts(&self) -> &verdicts::SharedVerdicts {
        &self.verdicts
    }
}

/// Heap bytes of the values of a locked table, by `usage`.
fn memory_of<K, V>(table: &std::sync::Mutex<crate::util::hash::FastMap<K, V>>, usage: impl Fn(&V) -> usize) -> usize {
    table.lock().unwrap_or_else(std::sync::PoisonError::into_inner).values().map(usage).sum()
}

/// The base entry of `state` in `context` built from the slice of its lexical loop, however
/// short its walk would be (`None` when the state is on no loop; see `lexical_loop.rs`): the
/// fast path of [`MaskCache`] alone, for tests and benchmarks to compare with [`build_base`].
pub fn build_base_from_loop(
    fsm: &Arc<GrammarFsm>,
    context: &[StateId],
    vocab: &Vocabulary,
    state: StateId,
) -> Option<BaseEntry> {
    build_base_from_loop_core(fsm, context, vocab, state, lexical_loop::CORE_DELIMITER)
}

/// [`build_base_from_loop`], with the loop's slice built from its core without edges on
/// `delimiter` (the quote in [`MaskCache`]) where it has one: for tests to try other bytes on
/// grammars without quotes.
pub fn build_base_from_loop_core(
    fsm: &Arc<GrammarFsm>,
    context: &[StateId],
    vocab: &Vocabulary,
    state: StateId,
    delimiter: u8,
) -> Option<BaseEntry> {
    let slice = own_loop_slice(fsm, vocab, state, delimiter)?;
    Some(lexical_loop::loop_base(vocab, &slice, walk_listed(fsm, context, vocab, state, slice.leaving())))
}

/// The slice of the lexical loop of `state`, if it is on one, built without a cache (from its
/// core without edges on `delimiter` where it has one): for tests and benchmarks.
fn own_loop_slice(
    fsm: &GrammarFsm,
    vocab: &Vocabulary,
    state: StateId,
    delimiter: u8,
) -> Option<lexical_loop::LoopSlice> {
    let loops = lexical_loop::Loops::new(fsm);
    let in_loop = loops.loop_of(state, fsm)?;
    Some(lexical_loop::build_slice(fsm, vocab, state, &in_loop, delimiter, |_, core| {
        Arc::new(lexical_loop::LoopSlice::new(fsm, vocab, state, core))
    }))
}

/// The base entry of `state` in `context` built along byte paths, the parser walking only the
/// tokens those do not read entirely (`None` when the state's rule is a dispatch; see
/// `byte_paths.rs`), however short its walk would be: the fast path of
/// [`MaskCache`] alone, for tests and benchmarks to compare with [`build_base`].
pub fn build_base_by_paths(
    fsm: &Arc<GrammarFsm>,
    context: &[StateId],
    vocab: &Vocabulary,
    state: StateId,
) -> Option<BaseEntry> {
    PathWalks::new(fsm, vocab).base(fsm, context, vocab, state)
}

/// The walks along byte paths of one grammar's entries, with what they share (the grammar's
/// byte regions and their tables, and the first-byte walks entries of one rule have in common,
/// `byte_paths::PathMemoKey`): the fast path of [`MaskCache`] alone, for tests and
/// benchmarks to compare with [`build_base`] entry after entry.
#[derive(Debug)]
pub struct PathWalks {
    facts: byte_paths::PathFacts,
    memo: byte_paths::PathMemo,
    region_tables: RegionTables,
    shared: Option<Shared>,
}

impl PathWalks {
    /// The walks of `fsm`'s entries over `vocab`.
    pub fn new(fsm: &GrammarFsm, vocab: &Vocabulary) -> Self {
        let facts = byte_paths::PathFacts::new(fsm, vocab, None);
        PathWalks { facts, memo: Default::default(), region_tables: Default::default(), shared: None }
    }

    /// The walks of `fsm`'s entries over `vocab`, sharing first-byte walks and region tables
    /// through `pool` (with other grammars' walks) as [`MaskCache`] does with a pool.
    pub fn with_pool(fsm: &GrammarFsm, vocab: &Vocabulary, pool: Arc<MaskPool>) -> Self {
        let facts = byte_paths::PathFacts::new(fsm, vocab, Some(Arc::clone(&pool)));
        let shared = Some(Shared::new(fsm, pool));
        PathWalks { facts, memo: Default::default(), region_tables: Default::default(), shared }
    }

    /// The base entry of `state` in `context` (as [`build_base_by_paths`]), sharing first-byte
    /// walks with the entries built before.
    pub fn base(
        &self,
        fsm: &Arc<GrammarFsm>,
        context: &[StateId],
        vocab: &Vocabulary,
        state: StateId,
    ) -> Option<BaseEntry> {
        if !byte_paths::applies(fsm, state) {
            return None;
        }
        let table = |r: &region::Region| region_table_in(self.shared.as_ref(), &self.region_tables, vocab, r);
        let key = self.shared.as_ref().map(|sh| (sh, sh.walk_key(fsm, context)));
        let pooled = key.as_ref().map(|(sh, key)| byte_paths::PooledWalks { pool: &sh.pool, key });
        let source = byte_paths::PathSource { facts: &self.facts, table: Some(&table), pooled };
        Some(byte_paths::paths_base(fsm, context, vocab, state, &source, Some(&self.memo)))
    }

    /// The base entry of `state` in `context` from the slice of its lexical loop (as
    /// [`build_base_from_loop`]), the slice's leaving tokens walked along byte paths as
    /// [`MaskCache`] walks them where those apply: `None` when the state is on no loop or its
    /// rule is a dispatch.
    pub fn loop_base(
        &self,
        fsm: &Arc<GrammarFsm>,
        context: &[StateId],
        vocab: &Vocabulary,
        state: StateId,
    ) -> Option<BaseEntry> {
        if !byte_paths::applies(fsm, state) {
            return None;
        }
        let slice = own_loop_slice(fsm, vocab, state, lexical_loop::CORE_DELIMITER)?;
        let source = byte_paths::PathSource { facts: &self.facts, table: None, pooled: None };
        let walk = byte_paths::paths_listed(fsm, context, vocab, state, &source, slice.leaving());
        Some(lexical_loop::loop_base(vocab, &slice, walk))
    }
}

/// A grammar's own tables of byte regions, by key, where it has no pool.
type RegionTables = std::sync::Mutex<crate::util::hash::FastMap<u128, Arc<region::RegionTable>>>;

/// The table of byte region `r` over the vocabulary (see `region.rs`): from the pool with
/// `shared`, or the grammar's `own` map without; built on first use.
fn region_table_in(
    shared: Option<&Shared>,
    own: &RegionTables,
    vocab: &Vocabulary,
    r: &region::Region,
) -> Arc<region::RegionTable> {
    let build = || region::RegionTable::new(vocab, r);
    if let Some(sh) = shared {
        return sh.pool.region_table(r.key, build);
    }
    let found = own.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&r.key).cloned();
    found.unwrap_or_else(|| {
        let table = Arc::new(build());
        let mut tables = own.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(tables.entry(r.key).or_insert(table))
    })
}

/// Per rule, the chain of single use sites (see [`MaskCache::certain_context`]).
fn certain_contexts(fsm: &GrammarFsm) -> Vec<Box<[StateId]>> {
    const MAX_DEPTH: usize = 8;
    let use_site = unique_use_sites(fsm);
    FsmRuleId::range(fsm.rules().len())
        .map(|r| {
            let mut context = Vec::new();
            let mut rule = r;
            while let Some(q) = use_site[rule] {
                let parent = fsm.rule_of(q);
                if context.len() == MAX_DEPTH || !matches!(fsm.rule(parent).kind, RuleKind::Plain) {
                    break;
                }
                context.push(q);
                rule = parent;
            }
            context.into_boxed_slice()
        })
        .collect()
}

/// Per rule, its single use site, if it has exactly one and is not the root.
fn unique_use_sites(fsm: &GrammarFsm) -> Vec<Option<StateId>> {
    #[derive(Clone, Copy)]
    enum Uses {
        None,
        One(StateId),
        Many,
    }
    let mut uses = vec![Uses::None; fsm.rules().len()];
    for s in fsm.states() {
        for e in fsm.rule_edges(s) {
            let u = &mut uses[e.rule];
            *u = match *u {
                Uses::None => Uses::One(s),
                _ => Uses::Many,
            };
        }
    }
    uses.into_iter()
        .enumerate()
        .map(|(r, u)| match u {
            Uses::One(s) if FsmRuleId::new(r) != fsm.root() => Some(s),
            _ => None,
        })
        .collect()
}

/// The scannable states of the rules reachable from the root, with an estimate of the cost of
/// building each entry (the number of tokens whose first byte the state can read: those are the
/// tokens the walk does not reject at their first byte).
pub fn reachable_scannable_states(fsm: &GrammarFsm, vocab: &Vocabulary) -> Vec<(StateId, usize)> {
    let mut first_byte_tokens = [0usize; 256];
    for &id in vocab.sorted_token_ids() {
        first_byte_tokens[vocab.token_bytes(id)[0] as usize] += 1;
    }
    let mut reachable = vec![false; fsm.rules().len()];
    let mut stack = vec![fsm.root()];
    reachable[fsm.root()] = true;
    let mut out = Vec::new();
    while let Some(r) = stack.pop() {
        for s in fsm.rule_states(r) {
            let edges = fsm.byte_edges(s);
            if !edges.is_empty() {
                let cost =
                    edges.iter().map(|e| first_byte_tokens[e.lo as usize..=e.hi as usize].iter().sum::<usize>()).sum();
                out.push((s, cost));
            }
            for e in fsm.rule_edges(s) {
                if !reachable[e.rule] {
                    reachable[e.rule] = true;
                    stack.push(e.rule);
                }
            }
        }
    }
    out.sort_unstable();
    out
}
