//! [`MaskPool`]: the cross-grammar pool of token-mask cache entries (XGrammar-2 §3.3 and §3.5).
//!
//! Every grammar compiled for the same vocabulary looks its cache entries up here before
//! walking the vocabulary, so the second request whose grammar shares a sub-structure with the
//! first (the same tool-parameter object, the same string format) pays nothing for it. A
//! [`crate::compiler::GrammarCompiler`] owns an `Arc` to a pool; several compilers may share one.
//!
//! # Keys
//!
//! An entry is a function of exactly these inputs (see [`crate::cache`] and
//! [`crate::earley::Parser::isolated`]); [`entry_key`] hashes all of them:
//!
//! 1. what the parser can reach from the state: the structural hash of the sub-automaton
//!    rooted at the state, referenced rules by their hierarchical hashes ([`crate::fsm::hash`]);
//!    for counted repetitions, which loop back to their start, the whole rule's hash and the
//!    state's canonical number;
//! 2. the certain context: for each parent of the chain, the rooted hashes of the targets of
//!    its edges that reference the child rule (the parser advances over exactly those when the
//!    child completes, and reaches nothing else of the parent);
//! 3. the follow set of the outermost rule of that chain (the lookahead);
//! 4. the vocabulary ([`vocabulary_fingerprint`]).
//!
//! The below-minimum flag of counted items is covered by (2): such an entry is built without
//! context, so its key has an empty chain. Whenever a rule of (1) or (2) has no structural hash
//! (non-simple reference cycles) or a state is unreachable, the entry has no key and is not
//! shared: it is built per grammar, as without a pool.
//!
//! Items (1), (2) and (4) form the *base key*; adding (3) gives the *full key*. The pool keeps
//! [`BaseEntry`]s under base keys and derived [`MaskEntry`]s under full keys:
//!
//! * **perfect hit** (full key present): the entry is reused as is (the same `Arc`);
//! * **partial hit** (only the base key present: same automaton, state and context, another
//!   lookahead): the entry is derived from the base, which re-decides only the tokens the
//!   lookahead can change ([`BaseEntry::derive`]), and stored under its full key;
//! * **miss**: the caller's walk builds the base; both are stored.
//!
//! # Bounds and concurrency
//!
//! One `parking_lot` mutex guards a byte-bounded LRU map (`util::bounded_cache`); the lock is held
//! only for map operations, never while walking the vocabulary. When the bytes exceed the
//! budget the least recently used entries are evicted; an entry larger than the whole budget is
//! returned to the caller but not stored. Evicted entries stay alive in the grammars that hold
//! them (an `Arc`), so eviction never invalidates a grammar. Two threads missing the same key at
//! once both build it (the second insert replaces the first); the per-grammar memo in
//! [`super::MaskCache`] already prevents that within one grammar.

use std::sync::Arc;

use parking_lot::Mutex;

use super::base::BaseEntry;
use super::byte_paths::FirstByteWalk;
use super::counted::LoopCounts;
use super::dispatch::FreeTextBase;
use super::lexical_loop::LoopSlice;
use super::region::RegionTable;
use super::MaskEntry;
use crate::fsm::hash::FsmHashes;
use crate::fsm::{GrammarFsm, RuleKind, StateId};
use crate::tokenizer::Vocabulary;
use crate::util::bounded_cache::BoundedCache;
use crate::util::byteset::ByteSet;
use crate::util::hash::StableHasher;

/// Bytes charged per stored entry on top of its heap data: the LRU node, key and `Arc` header.
const SLOT_OVERHEAD: usize = 96;
/// Version of the key encoding: bump it whenever the encoding or the entry semantics change.
const KEY_VERSION: u64 = 2;
/// Reachable states beyond which a state is keyed by its whole rule (see
/// [`FsmHashes::rooted_hash`]): tool-argument objects are far smaller, whole any-order schema
/// automata far larger.
const ROOTED_LIMIT: usize = 4096;

/// The two hashes identifying an entry in a [`MaskPool`] (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EntryKey {
    /// Automaton state, certain context and vocabulary.
    pub base: u64,
    /// The base key and the follow set.
    pub full: u64,
}

/// How a [`MaskPool::get_or_build`] call was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The same entry was in the pool.
    Hit,
    /// The same state and context with another follow set: derived from its base.
    PartialHit,
    /// Built by walking the vocabulary.
    Miss,
}

/// Counters of a [`MaskPool`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Lookups served by a stored entry.
    pub hits: u64,
    /// Lookups served by deriving from a stored base (another follow set).
    pub partial_hits: u64,
    /// Lookups that walked the vocabulary.
    pub misses: u64,
    /// Stored items (bases and derived entries).
    pub entries: usize,
    /// Bytes charged for the stored items.
    pub bytes: usize,
    /// Items evicted to stay within the budget.
    pub evictions: u64,
    /// The byte budget.
    pub budget: usize,
    /// `TagDispatch` free-text bases served from the pool, and built.
    pub free_text_hits: u64,
    /// See [`PoolStats::free_text_hits`].
    pub free_text_misses: u64,
    /// Walks of the tokens of one first byte along byte paths (the generic key body of an
    /// object after a first byte no property name starts with, say) served from the pool, and
    /// walked: they are shared across grammars and stored under the entries' byte budget.
    pub path_walk_hits: u64,
    /// See [`PoolStats::path_walk_hits`].
    pub path_walk_misses: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    Base(u64),
    Full(u64),
    Walk(u64),
}

enum Stored {
    Base(Arc<BaseEntry>),
    Full(Arc<MaskEntry>),
    Walk(Arc<FirstByteWalk>),
}

impl Stored {
    fn bytes(&self) -> usize {
        SLOT_OVERHEAD
            + match self {
                Stored::Base(b) => b.memory_usage(),
                Stored::Full(e) => e.memory_usage(),
                Stored::Walk(w) => w.memory_usage(),
            }
    }
}

struct Inner {
    /// Full-key lookups are the counted ones (hits and misses); base lookups follow a full-key
    /// miss and are counted in `partial_hits` when they find a base.
    map: BoundedCache<Slot, Stored>,
    partial_hits: u64,
    /// First-byte walks (looked up uncounted by `map`).
    walk_hits: u64,
    walk_misses: u64,
}

/// A byte-bounded, thread-safe pool of cache entries shared by every grammar compiled for one
/// vocabulary (see the module docs).
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use maskforge::MaskPool;
/// use maskforge::{CompilerConfig, GrammarCompiler, VocabularyBuilder};
/// let vocab = VocabularyBuilder::new().tokens(["a", "b", "ab", "</s>"]).special(3).stop_tokens([3]).build()?;
/// let pool = Arc::new(MaskPool::new(&vocab, 1 << 20));
/// let a = GrammarCompiler::with_pool(vocab.clone(), CompilerConfig::default(), Arc::clone(&pool))?;
/// let b = GrammarCompiler::with_pool(vocab, CompilerConfig::default(), Arc::clone(&pool))?;
/// let mut m = maskforge::GrammarMatcher::new(&a.compile_grammar(r#"root ::= x "b"  x ::= "a"+"#)?);
/// m.fill_next_token_bitmask(&mut vec![0u32; 1]);
/// let mut m = maskforge::GrammarMatcher::new(&b.compile_grammar(r#"root ::= y "b"  y ::= "a"+"#)?);
/// m.fill_next_token_bitmask(&mut vec![0u32; 1]);
/// assert!(pool.stats().hits >= 1); // renamed rule, same structure: served by the pool
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct MaskPool {
    vocab_id: u64,
    inner: Mutex<Inner>,
    /// `TagDispatch` free-text bases by [`super::dispatch::free_text_key`]: one bit per token,
    /// so at most [`FREE_TEXT_BASES`] of them (2 MiB for a 128k vocabulary), outside the byte
    /// budget of the entries.
    free_text: Mutex<BoundedCache<u128, Arc<FreeTextBase>>>,
    /// Slices of lexical loops by [`super::lexical_loop::loop_key`]: one bit per token plus the
    /// tokens leaving the loop, so at most [`LOOP_SLICES`] of them, outside the byte budget too.
    loop_slices: Mutex<BoundedCache<u128, Arc<LoopSlice>>>,
    /// Tables of byte regions by their key (see `region.rs`): one `u32` per node of the
    /// vocabulary's token trie (about 1 MiB for a 128k vocabulary; a `u64`, twice that, for a
    /// region of more than 32 states), so at most [`REGION_TABLES`].
    region_tables: Mutex<BoundedCache<u128, Arc<RegionTable>>>,
    /// Whether a region is worth a table, by its key (see `region.rs`): sampled once per
    /// region structure instead of once per grammar.
    region_worth: Mutex<BoundedCache<u128, bool>>,
    /// Loop-back tables of forced repetitions by their key (see `counted.rs`): one `u32` per
    /// token plus the masks of the budgets used, so at most [`REGION_TABLES`] too.
    loop_counts: Mutex<BoundedCache<u128, Arc<LoopCounts>>>,
}

/// How many free-text bases a pool keeps (a serving process sees a few protocols).
pub const FREE_TEXT_BASES: usize = 128;
/// How many lexical-loop slices a pool keeps (string bodies of a few character classes, digit
/// and whitespace runs: a handful per vocabulary; 16 KiB and up each for a 128k vocabulary).
pub const LOOP_SLICES: usize = 256;
/// How many regions' worth-a-table verdicts a pool keeps (a key and a flag each).
pub const REGION_VERDICTS: usize = 4096;
/// How many byte-region tables a pool keeps (JSON string bodies under a few policies, key
/// bodies: a handful per vocabulary).
pub const REGION_TABLES: usize = 32;

/// The least share of the byte budget a shard of the pool's map gets: many times the largest
/// entry (a bitset of a 200k vocabulary is 25 KiB), so that sharding stores what one map would.
const SHARD_BYTES: usize = 4 << 20;
/// The most shards of the pool's map. At the default budget (256 MiB) a shard holds a few
/// thousand entries: its table grows in well under a millisecond (see `util/bounded_cache.rs`).
const MAX_SHARDS: usize = 64;

/// How many shards the pool's map of `budget_bytes` has.
fn pool_shards(budget_bytes: usize) -> usize {
    (budget_bytes / SHARD_BYTES).clamp(1, MAX_SHARDS)
}

impl std::fmt::Debug for MaskPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaskPool").field("vocab_id", &self.vocab_id).field("stats", &self.stats()).finish()
    }
}

// The critical sections run no caller code (the walk runs outside the lock) and only do map
// operations and counter arithmetic, so a panic elsewhere cannot leave the pool half-updated
// in a way that matters: observing it after a caught panic is fine.
impl std::panic::RefUnwindSafe for MaskPool {}
impl std::panic::UnwindSafe for MaskPool {}

impl MaskPool {
    /// An empty pool for `vocab` holding at most `budget_bytes` (0 stores nothing).
    pub fn new(vocab: &Vocabulary, budget_bytes: usize) -> Self {
        MaskPool {
            vocab_id: vocabulary_fingerprint(vocab),
            inner: Mutex::new(Inner {
                map: BoundedCache::by_weight_in_shards(budget_bytes, Stored::bytes, pool_shards(budget_bytes)),
                partial_hits: 0,
                walk_hits: 0,
                walk_misses: 0,
            }),
            free_text: Mutex::new(BoundedCache::by_count(FREE_TEXT_BASES)),
            loop_slices: Mutex::new(BoundedCache::by_count(LOOP_SLICES)),
            region_tables: Mutex::new(BoundedCache::by_count(REGION_TABLES)),
            region_worth: Mutex::new(BoundedCache::by_count(REGION_VERDICTS)),
            loop_counts: Mutex::new(BoundedCache::by_count(REGION_TABLES)),
        }
    }

    /// The free-text base under `key` (see [`super::dispatch::free_text_key`]), built by `build`
    /// (outside the lock) when absent.
    pub(super) fn free_text_base(&self, key: u128, build: impl FnOnce() -> FreeTextBase) -> Arc<FreeTextBase> {
        get_or_insert(&self.free_text, key, || Arc::new(build()))
    }

    /// The slice of the lexical loop under `key` (see [`super::lexical_loop::loop_key`]), built
    /// by `build` (outside the lock) when absent.
    pub(super) fn loop_slice(&self, key: u128, build: impl FnOnce() -> LoopSlice) -> Arc<LoopSlice> {
        get_or_insert(&self.loop_slices, key, || Arc::new(build()))
    }

    /// The table of the byte region under `key` (see `region.rs`), built by `build` (outside the
    /// lock) when absent.
    pub(super) fn region_table(&self, key: u128, build: impl FnOnce() -> RegionTable) -> Arc<RegionTable> {
        get_or_insert(&self.region_tables, key, || Arc::new(build()))
    }

    /// Whether the region under `key` is worth a table (see `region.rs`), decided by `decide`
    /// (outside the lock) when not known.
    pub(super) fn region_worth(&self, key: u128, decide: impl FnOnce() -> bool) -> bool {
        get_or_insert(&self.region_worth, key, decide)
    }

    /// The loop-back table of the forced repetition under `key` (see `counted.rs`), built by
    /// `build` (outside the lock) when absent.
    pub(super) fn loop_counts(&self, key: u128, build: impl FnOnce() -> LoopCounts) -> Arc<LoopCounts> {
        get_or_insert(&self.loop_counts, key, || Arc::new(build()))
    }

    /// The loop-back table under `key` if one is built, without building it.
    pub(super) fn built_loop_counts(&self, key: u128) -> Option<Arc<LoopCounts>> {
        self.loop_counts.lock().get(&key).cloned()
    }

    /// The fingerprint of the vocabulary the pool serves ([`vocabulary_fingerprint`]).
    pub fn vocab_fingerprint(&self) -> u64 {
        self.vocab_id
    }

    /// The counters.
    pub fn stats(&self) -> PoolStats {
        let (entries, partial_hits, walk_hits, walk_misses) = {
            let inner = self.inner.lock();
            (inner.map.stats(), inner.partial_hits, inner.walk_hits, inner.walk_misses)
        };
        let free_text = self.free_text.lock().stats();
        PoolStats {
            hits: entries.hits,
            partial_hits,
            // Every full-key miss looked for a base: those that found none walked.
            misses: entries.misses - partial_hits,
            entries: entries.len,
            bytes: entries.weight,
            evictions: entries.evictions,
            budget: entries.budget,
            free_text_hits: free_text.hits,
            free_text_misses: free_text.misses,
            path_walk_hits: walk_hits,
            path_walk_misses: walk_misses,
        }
    }

    /// The walk of one first byte's tokens along byte paths under `key` (see
    /// [`path_walk_key`]), built by `build` (outside the lock) and stored when absent. Walks
    /// share the entries' byte budget.
    pub(super) fn first_byte_walk(&self, key: u64, build: impl FnOnce() -> FirstByteWalk) -> Arc<FirstByteWalk> {
        {
            let mut inner = self.inner.lock();
            if let Some(Stored::Walk(w)) = inner.map.get_uncounted(&Slot::Walk(key)) {
                let w = Arc::clone(w);
                inner.walk_hits += 1;
                return w;
            }
            inner.walk_misses += 1;
        }
        let walk = Arc::new(build());
        let released = self.inner.lock().map.insert(Slot::Walk(key), Stored::Walk(Arc::clone(&walk)));
        drop(released);
        walk
    }

    /// Drops every stored item (counters are kept).
    pub fn clear(&self) {
        self.inner.lock().map.clear();
    }

    /// The entry under `key` for the follow set `follow`: stored, derived from a stored base, or
    /// built with `build` (outside the lock) and stored.
    pub fn get_or_build(
        &self,
        key: EntryKey,
        follow: &ByteSet,
        vocab: &Vocabulary,
        build: impl FnOnce() -> BaseEntry,
    ) -> (Arc<MaskEntry>, Lookup) {
        let base = {
            let mut inner = self.inner.lock();
            if let Some(Stored::Full(e)) = inner.map.get(&Slot::Full(key.full)) {
                return (Arc::clone(e), Lookup::Hit);
            }
            match inner.map.get_uncounted(&Slot::Base(key.base)) {
                Some(Stored::Base(b)) => {
                    let b = Arc::clone(b);
                    inner.partial_hits += 1;
                    Some(b)
                }
                _ => None,
            }
        };
        let (lookup, base, new_base) = match base {
            Some(b) => (Lookup::PartialHit, b, false),
            None => (Lookup::Miss, Arc::new(build()), true),
        };
        let entry = Arc::new(base.derive(follow, vocab));
        let mut released = Vec::new();
        {
            let mut inner = self.inner.lock();
            if new_base {
                released.extend(inner.map.insert(Slot::Base(key.base), Stored::Base(base)));
            }
            released.extend(inner.map.insert(Slot::Full(key.full), Stored::Full(Arc::clone(&entry))));
        }
        drop(released);
        (entry, lookup)
    }
}

/// The value under `key` in `cache` (an `Arc` or a flag: cheap to clone), built by `build`
/// (outside the lock) and inserted when absent.
fn get_or_insert<V: Clone>(cache: &Mutex<BoundedCache<u128, V>>, key: u128, build: impl FnOnce() -> V) -> V {
    if let Some(value) = cache.lock().get(&key) {
        return value.clone();
    }
    let value = build();
    let released = cache.lock().insert(key, value.clone());
    drop(released);
    value
}

/// A stable hash of everything about a vocabulary a cache entry depends on: the size, the
/// bytes of every normal token by id, and which ids are special
/// ([`Vocabulary::content_fingerprint`], memoized by the vocabulary).
pub fn vocabulary_fingerprint(vocab: &Vocabulary) -> u64 {
    vocab.content_fingerprint()
}

/// The pool key of the entry of `state` read in `context` (innermost parent first) whose
/// outermost rule is followed by `follow`, or `None` when some part has no structural hash.
///
/// The isolated parser of an entry only ever reaches the states reachable from `state` (and
/// the rules they reference), then, each time the current rule completes, the targets of the
/// waiting parent's edges to it and what is reachable from those. So a plain rule's state is
/// keyed by its [`FsmHashes::rooted_hash`], and each context level by the rooted hashes of
/// those targets: the key covers exactly what the entry depends on, which lets the same
/// sub-structure inlined into different automata share. A counted repetition loops back to
/// its rule's start, so its states are keyed by the whole rule ([`FsmHashes::state_key`]).
pub fn entry_key(
    hashes: &FsmHashes,
    fsm: &GrammarFsm,
    vocab_id: u64,
    state: StateId,
    context: &[StateId],
    follow: &ByteSet,
) -> Option<EntryKey> {
    let mut h = StableHasher::new();
    h.write_u64(KEY_VERSION).write_u64(vocab_id);
    let rule = fsm.rule_of(state);
    match fsm.rule(rule).kind {
        RuleKind::Plain => {
            h.write_u64(0).write_u64(hashes.rooted_hash(fsm, state, ROOTED_LIMIT)?);
        }
        RuleKind::Counted { .. } => {
            let (rule_hash, canonical) = hashes.state_key(state)?;
            h.write_u64(1).write_u64(rule_hash).write_u64(canonical as u64);
        }
    }
    write_context(&mut h, hashes, fsm, rule, context)?;
    let base = h.finish();
    let mut f = StableHasher::new();
    f.write_u64(base);
    for w in follow.words() {
        f.write_u64(w);
    }
    Some(EntryKey { base, full: f.finish() })
}

/// Writes the certain `context` of an item of rule `rule` (see [`entry_key`], item 2), or
/// `None` when some part has no structural hash.
fn write_context(
    h: &mut StableHasher,
    hashes: &FsmHashes,
    fsm: &GrammarFsm,
    rule: crate::fsm::FsmRuleId,
    context: &[StateId],
) -> Option<()> {
    h.write_u64(context.len() as u64);
    let mut child = rule;
    let mut targets: Vec<u64> = Vec::new();
    for &q in context {
        if !matches!(fsm.rule(fsm.rule_of(q)).kind, RuleKind::Plain) {
            return None; // contexts never contain counted parents; do not share if they did
        }
        targets.clear();
        for e in fsm.rule_edges(q).iter().filter(|e| e.rule == child) {
            targets.push(hashes.rooted_hash(fsm, e.target, ROOTED_LIMIT)?);
        }
        targets.sort_unstable();
        h.write_u64(targets.len() as u64);
        for &t in &targets {
            h.write_u64(t);
        }
        child = fsm.rule_of(q);
    }
    Some(())
}

/// The pool key of the walk along byte paths of the tokens starting with `byte`, for an entry
/// whose own item reads `byte` into `item` (a state of a plain rule) and nothing else happens
/// on that byte (see `byte_paths::PathMemoKey`): the isolated parser is then in the state of an
/// entry of `item` itself, so the walk depends on what an entry of `item` depends on (items 1,
/// 2 and 4 of the module docs: `item_hash`, its rooted hash, and `context_hash`, the entry's
/// [`context_key`]; `seed` is [`path_walk_seed`] of them) and on `byte`. The same generic key
/// body after a first byte no property name starts with is walked once for every object of
/// every grammar.
pub(super) fn path_walk_key(seed: u64, byte: u8) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(&[byte], seed)
}

/// The part of [`path_walk_key`] that does not depend on the byte (an entry computes it once
/// per item).
pub(super) fn path_walk_seed(vocab_id: u64, item_hash: u64, context_hash: u64) -> u64 {
    // A domain of its own: never equal to an entry's key.
    const DOMAIN_WALK: u64 = 0x7761_6c6b;
    let mut h = StableHasher::new();
    h.write_u64(KEY_VERSION).write_u64(DOMAIN_WALK).write_u64(vocab_id).write_u64(item_hash).write_u64(context_hash);
    h.finish()
}

/// The hash of the certain `context` of an item of rule `rule` (see [`entry_key`], item 2), or
/// `None` when some part has no structural hash.
pub(super) fn context_key(
    hashes: &FsmHashes,
    fsm: &GrammarFsm,
    rule: crate::fsm::FsmRuleId,
    context: &[StateId],
) -> Option<u64> {
    let mut h = StableHasher::new();
    write_context(&mut h, hashes, fsm, rule, context)?;
    Some(h.finish())
}

/// The rooted hash an entry key uses for a state of a plain rule ([`FsmHashes::rooted_hash`]).
pub(super) fn rooted_key(hashes: &FsmHashes, fsm: &GrammarFsm, state: StateId) -> Option<u64> {
    hashes.rooted_hash(fsm, state, ROOTED_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CompilerConfig, GrammarCompiler, GrammarMatcher, VocabularyBuilder};

    #[test]
    fn a_renamed_rule_is_served_by_the_pool() {
        let vocab =
            VocabularyBuilder::new().tokens(["a", "b", "ab", "</s>"]).special(3).stop_tokens([3]).build().unwrap();
        let pool = Arc::new(MaskPool::new(&vocab, 1 << 20));
        let config = CompilerConfig::default();
        let a = GrammarCompiler::with_pool(vocab.clone(), config.clone(), Arc::clone(&pool)).unwrap();
        let b = GrammarCompiler::with_pool(vocab, config, Arc::clone(&pool)).unwrap();
        let mut m = GrammarMatcher::new(&a.compile_grammar(r#"root ::= x "b"  x ::= "a"+"#).unwrap());
        m.fill_next_token_bitmask(&mut [0u32; 1]);
        let before = pool.stats().hits;
        let mut m = GrammarMatcher::new(&b.compile_grammar(r#"root ::= y "b"  y ::= "a"+"#).unwrap());
        m.fill_next_token_bitmask(&mut [0u32; 1]);
        // Renamed rule, same structure: served by the pool.
        assert!(pool.stats().hits > before);
    }
}
