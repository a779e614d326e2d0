//! Tokens read along byte paths: a fast path for the cache entries of states that no lexical
//! loop covers, such as a key position whose generic key body is the shared `strtail` rule
//! (design notes, open problem 1, cause (a)).
//!
//! The isolated parser of an entry holds the item of its state. Reading a byte moves every item
//! along its byte edges; an item on a state with a rule edge predicts the referenced rule's
//! start item, steps over the rule at once when it is nullable, and a rule that completes
//! advances the items that predicted it (and so on, transitively). An automaton walk runs the
//! same items over the byte-sorted vocabulary, sharing prefixes like the parser walk: a set is
//! a set of *items*, each a state and a *frame*, the return point of its rule (the state after
//! the rule edge that predicted it and that state's own frame, as an Earley item's origin
//! points at the set that predicted it). A prediction whose return state only ends its rule
//! keeps the caller's frame, so a right-recursive chain of rules (a string length counted
//! rule by rule) does not nest. The entry's own item has the root frame: a completion there
//! leaves the entry's rule, which the walk does not follow. So a token read entirely along
//! the walk is read entirely by the parser without leaving the rule: it is *accepted*, exactly
//! as in the full walk. The other tokens are walked by the parser (see `build::walk_listed`)
//! where it could read further than the walk, and its verdicts are the entry's.
//!
//! A set holds every item the parser holds, except where it *escapes*: an item at the root
//! frame on a final state (the rule may end and the parser exit into what follows), a
//! prediction of a rule the walk does not follow, or items left out (frames nested deeper than
//! [`MAX_FRAME_DEPTH`], a closure past [`MAX_SET`] items). (An end before the first byte is
//! not counted: for an entry without a certain context, whose rule's end is the isolated
//! parser's, the first set does not escape for its final items; an optional rest of an object
//! whose tokens start with a space, say.) A token that dies in the walk with
//! no escaping set on its path dies in the parser at the same byte, with no exit before: it is
//! rejected without the parser (a key position's tokens holding a control byte, say). Where
//! the walk gives up (a set past [`MAX_SET`] items, more than [`MAX_SETS`] sets), the parser
//! decides every token from there.
//!
//! Plain rules are followed. A counted repetition changes its item's count as it loops. The
//! entry's own counted rule is unbounded for the isolated parser, so its loop needs no count. A
//! predicted one is followed in one of two ways (see [`Follow`]):
//! * without counts where its count cannot matter within a token: no minimum (it may end after
//!   any iteration) and a maximum no token reaches (the count starts at 0 where the rule is
//!   predicted, and a token of `n` bytes finishes at most `n / k` iterations of a body whose
//!   iterations read at least `k` bytes, `k ≥ 1`: empty ones change nothing; a word count's word
//!   and its space read two). A JSON string with `maxLength` (or the rest of one after its
//!   pattern's match) is such a repetition, entered from the position before it;
//! * else with its count in the frame of its items (the parser item's count): a new iteration
//!   only below the maximum, a completion only from the minimum on, as the parser has them.
//!   Such a frame is never shared (a right-recursive chain does not reuse it), and a byte
//!   region, whose table loops without counting, does not apply to its items. The domain
//!   labels of `format: email` (`{0,61}`) and word counts of up to 64 words are such rules: a
//!   walk that escaped at their prediction left every token after it to the parser (10 ms
//!   entries in MaskBench).
//!
//! Both loop back from a state final for the body (read, or returned to by a completion) to
//! the start.
//! A `TagDispatch` rule is not followed: it has its own fast path.

use std::sync::Arc;

use super::base::BaseEntry;
use super::build::{smallest_form_of_runs, ListedWalker, Walk};
use super::pool::MaskPool;
use super::region::{Region, RegionId, RegionTable, Regions, StateMask};
use crate::earley::Parser;
use crate::fsm::{FsmRuleId, GrammarFsm, RuleKind, StateId};
use crate::tokenizer::Vocabulary;
use crate::util::byteset::ByteSet;
use crate::util::hash::FastMap;
use crate::util::sentinel::Sentinel;

/// State sets larger than this end the automaton walk (the parser takes over).
const MAX_SET: usize = 64;
/// Walks with fewer candidate tokens than this stay with the parser: the automaton walk visits
/// the whole sorted vocabulary and tests every first byte with the parser first (a fixed cost
/// of a few hundred µs on a 128k vocabulary), which a short parser walk does not repay
/// (toolbench's tail doubled with the lexical loops' threshold of 2,048).
pub(super) const MIN_FIRST_BYTE_TOKENS: usize = 16_384;

/// The split of the vocabulary for one state: tokens the automaton walk reads entirely, and
/// the sorted positions of all others.
struct PathSplit {
    /// Accepted tokens as ascending, disjoint runs of sorted positions.
    accepted: Vec<(u32, u32)>,
    /// How many tokens `accepted` holds.
    accepted_len: usize,
    /// Sorted positions of the tokens left to the parser.
    rest: Vec<u32>,
}

/// Whether the walk of this module applies to `state`: its rule is not a dispatch.
pub(super) fn applies(fsm: &GrammarFsm, state: StateId) -> bool {
    let r = fsm.rule_of(state);
    !fsm.dispatch_rules().any(|d| d == r)
}

/// How the walk treats the predictions of a rule (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Follow {
    /// Left to the parser: the set escapes.
    No,
    /// Followed without counts: a plain rule, or a counted one whose count cannot matter
    /// within a token.
    Plain,
    /// A counted repetition followed with its count in the frame of its items.
    Counted { min: u32, max: u32 },
}

/// Per rule, how the walk follows its predictions: plain rules that are not dispatches without
/// counts, counted ones without counts where no token can reach their bound, else with counts.
fn followed_rules(fsm: &GrammarFsm, max_token_len: usize) -> Vec<Follow> {
    // A token of `n` bytes finishes at most `n / shortest` iterations of a body whose
    // iterations read at least `shortest` bytes: a word count `{0,99}` of words of two bytes or
    // more is never reached by a token of 129 bytes, although 99 bytes are.
    let unreached = |r: &crate::fsm::FsmRule, max: u32| {
        (max as usize).saturating_mul(shortest_iteration(fsm, r.start)) > max_token_len
    };
    let mut followed: Vec<Follow> = fsm
        .rules()
        .iter()
        .map(|r| match r.kind {
            RuleKind::Plain => Follow::Plain,
            // (A start that ends the rule by itself is left to the parser.)
            RuleKind::Counted { .. } if fsm.is_final(r.start) => Follow::No,
            RuleKind::Counted { min: 0, max } if unreached(r, max) => Follow::Plain,
            RuleKind::Counted { min, max } => Follow::Counted { min, max },
        })
        .collect();
    for d in fsm.dispatch_rules() {
        followed[d.index()] = Follow::No;
    }
    followed
}

/// The fewest bytes an iteration of the counted rule starting at `start` reads (at least 1:
/// iterations that read nothing never count), counting a rule it calls as reading none (a
/// lower bound is what [`followed_rules`] needs). `usize::MAX` when no iteration can end.
fn shortest_iteration(fsm: &GrammarFsm, start: StateId) -> usize {
    // A 0-1 breadth-first search (rule edges cost nothing and go to the front, byte edges one
    // byte), so states leave the queue by distance and the first final one is the nearest.
    let mut dist: FastMap<StateId, usize> = FastMap::default();
    let mut queue = std::collections::VecDeque::from([(start, 0usize)]);
    while let Some((s, d)) = queue.pop_front() {
        if dist.get(&s).is_some_and(|&known| known <= d) {
            continue;
        }
        dist.insert(s, d);
        if s != start && fsm.is_final(s) {
            return d.max(1);
        }
        for e in fsm.rule_edges(s) {
            queue.push_front((e.target, d));
        }
        queue.extend(fsm.byte_edges(s).iter().map(|e| (e.target, d + 1)));
    }
    usize::MAX
}

/// How far [`read_on`] read a token.
enum Reading {
    /// Every byte.
    Whole,
    /// The first `k` bytes, after which the token's whole subtree is read (in a region).
    Subtree(usize),
    /// The first `k` bytes: the next one the DFA cannot read (`DEAD`), or it gave up there.
    Stopped { k: usize, gave_up: bool },
}

/// Reads `bytes` on through `dfa` from the sets `path` holds (the set after each of the token's
/// first `path.len() - 1` bytes), pushing the set after each byte onto `path` and whether a set
/// on the way escapes onto `escaped`; `in_subtree(k, set, dfa)` may stop it after `k` bytes,
/// when the set after them reads the token's whole subtree.
fn read_on(
    dfa: &mut LazyDfa<'_>,
    path: &mut Vec<u32>,
    escaped: &mut Vec<bool>,
    bytes: &[u8],
    in_subtree: impl Fn(usize, u32, &LazyDfa<'_>) -> bool,
) -> Reading {
    let mut k = path.len() - 1;
    while k < bytes.len() {
        let next = dfa.step(path[k], bytes[k]);
        if next == DEAD || next == GIVE_UP {
            return Reading::Stopped { k, gave_up: next == GIVE_UP };
        }
        let escapes = if k == 0 { dfa.escapes_at_start() } else { dfa.escapes(path[k]) };
        escaped.push(escaped[k] || escapes);
        path.push(next);
        k += 1;
        if in_subtree(k, next, dfa) {
            return Reading::Subtree(k);
        }
    }
    Reading::Whole
}

/// Whether the parser reads on a token whose walk stopped at its byte `k` (see [`read_on`]):
/// only where an item the walk does not follow may read (see the module docs). At the first
/// byte, unless the first set escapes or the walk gave up there, no item reads it (the set
/// holds them all), else the parser says.
fn parser_reads_on(
    dfa: &LazyDfa<'_>,
    first: &mut FirstBytes,
    path: &[u32],
    escaped: &[bool],
    bytes: &[u8],
    k: usize,
    gave_up: bool,
) -> bool {
    match k {
        0 => (gave_up || dfa.escapes_at_start()) && first.reads(bytes[0]),
        _ => gave_up || escaped[k] || dfa.escapes(path[k]),
    }
}

impl PathSplit {
    /// Walks the tokens at sorted positions `range` (one first byte's tokens) along byte paths
    /// with `dfa` (see the module docs); a token whose first byte the parser cannot read
    /// (`first`) is neither accepted nor left to the parser: the full walk rejects it. A trie
    /// node reached by a set whose region state reads its whole subtree (see `region.rs`) is
    /// accepted at once.
    fn walk(vocab: &Vocabulary, dfa: &mut LazyDfa<'_>, first: &mut FirstBytes, range: std::ops::Range<usize>) -> Self {
        let lcp = vocab.sorted_lcp();
        let trie = vocab.trie();
        let mut split = PathSplit { accepted: Vec::new(), accepted_len: 0, rest: Vec::new() };
        // `path[k]`: the set after the first `k` bytes of the last walked token;
        // `escaped[k]`: whether a set that read one of those bytes escapes.
        let mut path = vec![dfa.start];
        let mut escaped = vec![false];
        let mut i = range.start;
        while i < range.end {
            let bytes = vocab.sorted_token_bytes(i);
            // The range's first token shares nothing with what came before it.
            let shared = if i == range.start { 0 } else { lcp[i] as usize };
            path.truncate(shared.min(path.len() - 1) + 1);
            escaped.truncate(path.len());
            // A node of this token's prefixes that starts at `i` (shorter shared ones were
            // tried before) may have its whole subtree read inside a region.
            let in_region = |k: usize, set: u32, dfa: &LazyDfa<'_>| {
                k > lcp[i] as usize && dfa.reads_subtree(set, trie.node(lcp, i, k))
            };
            let (k, gave_up) = match read_on(dfa, &mut path, &mut escaped, bytes, in_region) {
                Reading::Whole => {
                    split.accept(i, i + 1);
                    i += 1;
                    continue;
                }
                Reading::Subtree(k) => {
                    let end = trie.subtree_end(trie.node(lcp, i, k));
                    split.accept(i, end);
                    i = end;
                    continue;
                }
                Reading::Stopped { k, gave_up } => (k, gave_up),
            };
            // Every token sharing the first `k + 1` bytes ends the walk at the same byte.
            let end = trie.subtree_end(trie.node(lcp, i, k + 1));
            if parser_reads_on(dfa, first, &path, &escaped, bytes, k, gave_up) {
                split.rest.extend(i as u32..end as u32);
            }
            i = end;
        }
        split
    }

    /// As [`PathSplit::walk`], for the tokens at sorted positions `positions` (ascending, of
    /// any first bytes): each shares with the one before it the sets of their common prefix,
    /// and a token extending where the one before it stopped stops there too. (No region
    /// accepts a subtree at once: the listed tokens are not whole subtrees.)
    fn walk_listed(vocab: &Vocabulary, dfa: &mut LazyDfa<'_>, first: &mut FirstBytes, positions: &[u32]) -> Self {
        let mut split = PathSplit { accepted: Vec::new(), accepted_len: 0, rest: Vec::new() };
        let mut path = vec![dfa.start];
        let mut escaped = vec![false];
        let mut prev: &[u8] = &[];
        // Where the walk of `prev` stopped (at its byte `k`), and whether the parser reads on.
        let mut stopped: Option<(usize, bool)> = None;
        for &pos in positions {
            let bytes = vocab.sorted_token_bytes(pos as usize);
            let shared = crate::tokenizer::common_prefix_len(prev, bytes);
            prev = bytes;
            match stopped {
                Some((k, parser_reads_on)) if shared > k => {
                    if parser_reads_on {
                        split.rest.push(pos);
                    }
                    continue;
                }
                _ => stopped = None,
            }
            path.truncate(shared.min(path.len() - 1) + 1);
            escaped.truncate(path.len());
            let Reading::Stopped { k, gave_up } = read_on(dfa, &mut path, &mut escaped, bytes, |_, _, _| false) else {
                split.accept(pos as usize, pos as usize + 1);
                continue;
            };
            let reads_on = parser_reads_on(dfa, first, &path, &escaped, bytes, k, gave_up);
            if reads_on {
                split.rest.push(pos);
            }
            stopped = Some((k, reads_on));
        }
        split
    }

    /// Accepts the tokens at sorted positions `from..to`.
    fn accept(&mut self, from: usize, to: usize) {
        self.accepted_len += to - from;
        match self.accepted.last_mut() {
            Some(last) if last.1 == from as u32 => last.1 = to as u32,
            _ => self.accepted.push((from as u32, to as u32)),
        }
    }
}

/// What the walks of one grammar share: its byte regions, found once per grammar.
#[derive(Debug)]
pub(super) struct PathFacts {
    regions: Regions,
    /// Per rule, how walks follow its predictions (see the module docs).
    followed: Vec<Follow>,
}

impl PathFacts {
    pub(super) fn new(fsm: &GrammarFsm, vocab: &Vocabulary, pool: Option<Arc<MaskPool>>) -> Self {
        PathFacts { regions: Regions::new(fsm, vocab, pool), followed: followed_rules(fsm, vocab.max_token_len()) }
    }
}

/// How a walk gets the table of a byte region (from the pool, or built).
pub(super) type TableOf<'a> = dyn Fn(&Region) -> Arc<RegionTable> + 'a;

/// Everything a walk along byte paths reads besides the automata: the grammar's [`PathFacts`]
/// and the tables of byte regions (from the pool, or built), and the pool's first-byte walks.
pub(super) struct PathSource<'a> {
    /// The grammar's facts.
    pub(super) facts: &'a PathFacts,
    /// The table of a region; `None` for walks that accept no subtree at once (a list of
    /// tokens, not whole subtrees: a table would cost a walk of the vocabulary for nothing).
    pub(super) table: Option<&'a TableOf<'a>>,
    /// With a pool, the first-byte walks it shares across grammars.
    pub(super) pooled: Option<PooledWalks<'a>>,
}

/// The first-byte walks of a [`MaskPool`]: where only the entry's own item reads a first byte
/// (as for [`PathMemoKey`]), the walk of the tokens starting with it is what an entry of the
/// item it reads into would walk for them, whatever the rest of the entry's grammar is.
pub(super) struct PooledWalks<'a> {
    pub(super) pool: &'a MaskPool,
    /// The pool key of the walk of the tokens starting with a byte, from the item the entry's
    /// own item reads that byte into ([`super::pool::path_walk_key`] in the entry's context).
    pub(super) key: &'a dyn Fn(StateId, u8) -> Option<u64>,
}

/// The transition of a set not computed yet.
const UNKNOWN: u32 = u32::MAX;
/// No state reads the byte.
const DEAD: u32 = u32::MAX - 1;
/// The next set would be too large, or there are too many sets: the walk stops and the parser
/// decides every token from there.
const GIVE_UP: u32 = u32::MAX - 2;
/// Sets beyond this many end the walk (a [`Row`] each).
const MAX_SETS: usize = 4096;

/// A set's transitions, by byte: the next set's id, or [`UNKNOWN`], [`DEAD`] or [`GIVE_UP`],
/// in 16 bits ([`widen`]). A walk reads one row per byte, from a few hundred sets: rows of 512
/// bytes keep twice as many of them in the caches as rows of `u32`.
type Row = [u16; 256];

/// The set id or marker held as `narrow` in a [`Row`]: sign extension. It gives back every
/// `u32` below `0x8000` (set ids stay below [`KEPT_SETS`] + [`MAX_SETS`]: a walk resumes at
/// most the one and adds at most the other) and from `0xFFFF_8000` on (the three markers, the
/// three largest `u32`s).
#[inline]
fn widen(narrow: u16) -> u32 {
    narrow as i16 as i32 as u32
}

/// The `u32`s a [`Row`] cannot hold.
const NOT_IN_ROWS: std::ops::Range<u32> = 0x8000..0xFFFF_8000;
// (`UNKNOWN` is `u32::MAX`: above the range whatever it is.)
const _: () = assert!(
    KEPT_SETS + MAX_SETS <= NOT_IN_ROWS.start as usize && DEAD >= NOT_IN_ROWS.end && GIVE_UP >= NOT_IN_ROWS.end
);

/// The [`Row`] entry for `wide`, a set id or marker (see [`widen`]).
fn narrow(wide: u32) -> u16 {
    debug_assert!(!NOT_IN_ROWS.contains(&wide), "{wide:#x} does not fit a row");
    wide as u16
}

/// The sets of states that byte paths reach, numbered as they are met, with their transitions
/// filled in on first use: each byte of the walk is then one table lookup.
struct LazyDfa<'a> {
    closures: Closures<'a>,
    source: &'a PathSource<'a>,
    /// The entry's state and its rule.
    entry: StateId,
    own: FsmRuleId,
    /// The set of the entry's item (its closure).
    start: u32,
    /// The most sets before the walk gives up: [`MAX_SETS`] more than a kept DFA held.
    set_limit: usize,
    /// The tables of the regions met so far, by region.
    tables: FastMap<RegionId, Arc<RegionTable>>,
    sets: Vec<Box<[Item]>>,
    /// Per set, its states in a tabled region: (the region's table, their bits), if any.
    in_region: Vec<Option<(Arc<RegionTable>, StateMask)>>,
    /// Per set, whether it escapes (see the module docs).
    escapes: Vec<bool>,
    /// [`LazyDfa::predicted_first`], computed on first use.
    predicted_first: Option<ByteSet>,
    /// [`LazyDfa::escapes_at_start`].
    start_escapes: bool,
    /// Per (item, set) met by [`LazyDfa::own_item`]: whether the set is the item's closure.
    own_sets: FastMap<(StateId, u32), bool>,
    /// Per set, its ids without and with a cut ([`UNKNOWN`] where not met).
    ids: FastMap<Box<[Item]>, [u32; 2]>,
    next: Vec<Row>,
    /// Scratch for the next set.
    targets: Vec<Item>,
}

/// What walks of a rule's entries learn about its sets and keep for the next entry of the
/// rule: the sets met, their transitions, closures and frames. None of it depends on the entry
/// (an item at the root frame is one of the rule's own, whichever entry it came from), and the
/// entries of a key position's trie, a state each, meet the same sets: built once, not per
/// entry (a third of a key position's entry was spent interning and filling the same sets).
#[derive(Debug)]
pub(super) struct KeptDfa {
    own: FsmRuleId,
    frames: Vec<Frame>,
    frame_ids: FrameIds,
    memo: FastMap<Item, Closure>,
    tables: FastMap<RegionId, Arc<RegionTable>>,
    sets: Vec<Box<[Item]>>,
    in_region: Vec<Option<(Arc<RegionTable>, StateMask)>>,
    escapes: Vec<bool>,
    own_sets: FastMap<(StateId, u32), bool>,
    /// Per set, its ids without and with a cut ([`UNKNOWN`] where not met).
    ids: FastMap<Box<[Item]>, [u32; 2]>,
    next: Vec<Row>,
}

/// A DFA with more sets than this is not kept: a kept DFA holds at most 512 KiB of
/// transitions (a walk that resumes it may add [`MAX_SETS`] more, as a fresh one would).
const KEPT_SETS: usize = 1024;

impl KeptDfa {
    /// Nothing learned yet about the walks of rule `own`.
    fn fresh(fsm: &GrammarFsm, own: FsmRuleId) -> Self {
        // The root frame's return is never read (a completion there leaves the rule): the
        // rule's start stands for it, the same for every entry of the rule.
        let root = Frame { ret: fsm.rule(own).start, parent: ROOT, depth: 0, count: None };
        KeptDfa {
            own,
            frames: vec![root],
            frame_ids: FastMap::default(),
            memo: FastMap::default(),
            tables: FastMap::default(),
            sets: Vec::new(),
            in_region: Vec::new(),
            escapes: Vec::new(),
            own_sets: FastMap::default(),
            ids: FastMap::default(),
            next: Vec::new(),
        }
    }

    /// Heap bytes used (about: the maps' own tables are not counted).
    fn memory_usage(&self) -> usize {
        let items: usize = self.sets.iter().map(|s| s.len()).sum();
        let closures: usize = self.memo.values().map(|c| c.items.len()).sum();
        self.next.len() * std::mem::size_of::<Row>()
            + (2 * items + closures) * std::mem::size_of::<Item>()
            + self.frames.len() * std::mem::size_of::<Frame>()
    }
}

impl<'a> LazyDfa<'a> {
    /// A DFA whose start set is the closure of `state`, resuming the walks of `kept` when they
    /// were of the same rule.
    fn new(
        fsm: &'a GrammarFsm,
        state: StateId,
        context: &[StateId],
        source: &'a PathSource<'a>,
        kept: Option<KeptDfa>,
    ) -> Self {
        let own = fsm.rule_of(state);
        let k = kept.filter(|k| k.own == own).unwrap_or_else(|| KeptDfa::fresh(fsm, own));
        let mut dfa = LazyDfa {
            closures: Closures::resume(fsm, own, &source.facts.followed, k.frames, k.frame_ids, k.memo),
            source,
            entry: state,
            own,
            start: 0,
            set_limit: k.sets.len() + MAX_SETS,
            tables: k.tables,
            sets: k.sets,
            in_region: k.in_region,
            escapes: k.escapes,
            predicted_first: None,
            own_sets: k.own_sets,
            ids: k.ids,
            next: k.next,
            targets: Vec::new(),
            start_escapes: false,
        };
        let first = dfa.closures.of((state, ROOT));
        let cut = first.cut;
        let mut start = first.items.to_vec();
        start.sort_unstable();
        // Without a context the rule's end is the isolated parser's, and an end before the
        // first byte is not counted (see `crate::cache`): before the first byte, only the
        // other reasons make the set escape.
        dfa.start_escapes = match context.is_empty() {
            true => cut || start.iter().any(|it| dfa.predicts_unfollowed(it)),
            false => dfa.escapes_of(&start, cut),
        };
        dfa.start = dfa.intern(start, cut);
        dfa
    }

    /// What this DFA learned, for the next entry of its rule (see [`KeptDfa`]).
    fn into_kept(self) -> KeptDfa {
        let (frames, frame_ids, memo) = self.closures.into_parts();
        KeptDfa {
            own: self.own,
            frames,
            frame_ids,
            memo,
            tables: self.tables,
            sets: self.sets,
            in_region: self.in_region,
            escapes: self.escapes,
            own_sets: self.own_sets,
            ids: self.ids,
            next: self.next,
        }
    }

    /// Whether the first set escapes before its first byte is read (see [`LazyDfa::new`]).
    #[inline]
    fn escapes_at_start(&self) -> bool {
        self.start_escapes
    }

    /// Whether a state of set `set` reads every token of trie node `node`'s subtree inside its
    /// region (see `region.rs`).
    #[inline]
    fn reads_subtree(&self, set: u32, node: usize) -> bool {
        match &self.in_region[set as usize] {
            Some((table, bits)) => table.mask(node) & bits != 0,
            None => false,
        }
    }

    /// The item the entry's own item reads `b` into, when the parser's state after `b` is that
    /// of an entry of the item: `None` when the verdicts on the tokens starting with `b` may
    /// depend on more than the set after `b` (the entry's rule is counted and its walk loops
    /// differently, a completion before `b` may read it, an item of a rule predicted before `b`
    /// reads it).
    fn own_item(&mut self, b: u8) -> Option<StateId> {
        if self.closures.own_counted.is_some() || self.escapes_at_start() || self.predicted_first().contains(b) {
            return None;
        }
        let next = self.step(self.start, b);
        if next == DEAD || next == GIVE_UP {
            return None;
        }
        // Only the entry's own item (origin 0, the same in every entry of the rule) may read
        // `b`: every other item of the first set was predicted there, by this entry's state.
        let fsm = self.closures.fsm;
        let item = fsm.byte_edges(self.entry).iter().find(|e| e.lo <= b && b <= e.hi)?.target;
        // Most first bytes of a key position read into one generic state: compared once.
        if let Some(&same) = self.own_sets.get(&(item, next)) {
            return same.then_some(item);
        }
        let mut own_targets = self.closures.of((item, ROOT)).items.to_vec();
        own_targets.sort_unstable();
        let same = own_targets[..] == self.sets[next as usize][..];
        self.own_sets.insert((item, next), same);
        same.then_some(item)
    }

    /// The memo key of the tokens starting with `b` (see [`PathMemoKey`]), when
    /// [`LazyDfa::own_item`] finds one.
    fn memo_key(&mut self, context: &[StateId], b: u8) -> Option<PathMemoKey> {
        let item = self.own_item(b)?;
        let next = self.step(self.start, b);
        // Frames are numbered per walk: the key writes each item's return states out.
        let mut set = Vec::new();
        for &(s, f) in self.sets[next as usize].iter() {
            set.push(s);
            for (ret, count) in self.closures.chain(f) {
                set.push(ret);
                set.push(StateId::new(count.map_or(0, |c| c as usize + 1)));
            }
            set.push(StateId::new(u32::MAX as usize));
        }
        Some(PathMemoKey { own: self.own, context: context.into(), item, set: set.into_boxed_slice(), byte: b })
    }

    /// The bytes the items the entry's state predicts (transitively, and through nullable
    /// calls) may read first: one of them may be the entry's own state again (a left-recursive
    /// rule), which a set cannot tell apart from the entry's item.
    fn predicted_first(&mut self) -> ByteSet {
        let fsm = self.closures.fsm;
        let entry = self.entry;
        *self.predicted_first.get_or_insert_with(|| crate::fsm::lookahead::predicted_first_bytes(fsm, entry))
    }

    /// Whether set `set` escapes (see the module docs).
    #[inline]
    fn escapes(&self, set: u32) -> bool {
        self.escapes[set as usize]
    }

    /// Whether the set `items` escapes: an item may leave the entry's rule (a final state, or a
    /// counted repetition's start, at the entry's own frame) or predicts a rule the walk does
    /// not follow, or items were left out (`cut`). Otherwise the set holds every item the
    /// parser holds, and a byte no item reads is refused by the parser too.
    fn escapes_of(&self, items: &[Item], cut: bool) -> bool {
        let fsm = self.closures.fsm;
        let leaves = |&(s, f): &Item| {
            let rule = fsm.rule_of(s);
            // A counted repetition may also end at its start (once its count allows).
            let counted_start = !matches!(fsm.rule(rule).kind, RuleKind::Plain) && s == fsm.rule(rule).start;
            f == ROOT && (fsm.is_final(s) || counted_start)
        };
        cut || items.iter().any(|it| leaves(it) || self.predicts_unfollowed(it))
    }

    /// Whether item `it` predicts a rule the walk does not follow.
    fn predicts_unfollowed(&self, &(s, _): &Item) -> bool {
        self.closures.fsm.rule_edges(s).iter().any(|e| self.closures.followed[e.rule.index()] == Follow::No)
    }

    /// The id of `set`, a set with items left out when `cut` (the same items without a cut
    /// are another set: it escapes on every byte, and a kept DFA may meet both).
    fn intern(&mut self, set: Vec<Item>, cut: bool) -> u32 {
        if let Some(&id) = self.ids.get(&set[..]).map(|ids| &ids[cut as usize]).filter(|&&id| id != UNKNOWN) {
            return id;
        }
        if self.sets.len() == self.set_limit {
            return GIVE_UP;
        }
        let id = self.sets.len() as u32;
        // The states of one region (the first one met: a set rarely holds two).
        let regions = &self.source.facts.regions;
        let mut in_region: Option<(RegionId, StateMask)> = None;
        let with_regions = self.source.table.is_some();
        for &(s, _) in set.iter().filter(|&&(_, f)| with_regions && !self.closures.counts(f)) {
            match (regions.of(self.closures.fsm, s), &mut in_region) {
                (Some((r, bit)), Some((r0, bits))) if r == *r0 => *bits |= bit,
                (Some((r, bit)), None) => in_region = Some((r, bit)),
                _ => {}
            }
        }
        let source = self.source;
        let in_region = in_region.zip(source.table).map(|((r, bits), table_of)| {
            let table = self.tables.entry(r).or_insert_with(|| table_of(regions.region(r)));
            (Arc::clone(table), bits)
        });
        self.in_region.push(in_region);
        let escapes = self.escapes_of(&set, cut);
        self.escapes.push(escapes);
        let set = set.into_boxed_slice();
        self.ids.entry(set.clone()).or_insert([UNKNOWN; 2])[cut as usize] = id;
        self.sets.push(set);
        let mut row: Row = [narrow(UNKNOWN); 256];
        // The sentinel lead byte is never text (see [`Sentinel`]): the parser walk never reads it.
        for (b, next) in row.iter_mut().enumerate() {
            if Sentinel::is_lead(b as u8) {
                *next = narrow(DEAD);
            }
        }
        self.next.push(row);
        id
    }

    /// The set after reading `b` from set `set`, or [`DEAD`] or [`GIVE_UP`].
    #[inline]
    fn step(&mut self, set: u32, b: u8) -> u32 {
        match widen(self.next[set as usize][b as usize]) {
            UNKNOWN => self.step_first(set, b),
            next => next,
        }
    }

    /// [`LazyDfa::step`] the first time: out of line, so that `step` itself is inlined into the
    /// walks. (With this computation inside, `step` was too large to inline: a walk called it
    /// for every byte and kept its own state on the stack across the calls.)
    #[inline(never)]
    fn step_first(&mut self, set: u32, b: u8) -> u32 {
        let (next, lo, hi) = self.compute(set, b);
        // Every byte of `lo..=hi` is read by the same edges: the same set (the sentinel lead
        // bytes keep their `DEAD`).
        for slot in &mut self.next[set as usize][lo as usize..=hi as usize] {
            if widen(*slot) == UNKNOWN {
                *slot = narrow(next);
            }
        }
        next
    }

    /// The set after reading `b` from set `set`, and the bytes `lo..=hi` around `b` that the
    /// same edges read (so into the same set).
    fn compute(&mut self, set: u32, b: u8) -> (u32, u8, u8) {
        let fsm = self.closures.fsm;
        let mut targets = std::mem::take(&mut self.targets);
        targets.clear();
        let mut cut = false;
        let (mut lo, mut hi) = (0u8, u8::MAX);
        for &(s, f) in self.sets[set as usize].iter() {
            for e in fsm.byte_edges(s) {
                if e.lo > b {
                    hi = hi.min(e.lo - 1);
                    break;
                }
                if b <= e.hi {
                    (lo, hi) = (lo.max(e.lo), hi.min(e.hi));
                    let closure = self.closures.of((e.target, f));
                    cut |= closure.cut;
                    targets.extend_from_slice(&closure.items);
                } else {
                    lo = lo.max(e.hi + 1);
                }
            }
        }
        targets.sort_unstable();
        targets.dedup();
        let next = if targets.is_empty() {
            DEAD
        } else if targets.len() > MAX_SET {
            GIVE_UP
        } else {
            self.intern(targets.clone(), cut)
        };
        self.targets = targets;
        (next, lo, hi)
    }
}

/// A return frame of the walk: where the completion of a predicted rule continues, as in an
/// Earley item's origin. Frame [`ROOT`] is the entry's own item: a completion there leaves the
/// entry's rule, which the walk does not follow (the parser decides).
type FrameId = u32;
const ROOT: FrameId = 0;
/// Frames nested deeper than this are not made: the prediction is left to the parser.
const MAX_FRAME_DEPTH: u8 = 6;

/// An item of a set: a state and the frame its rule returns to.
type Item = (StateId, FrameId);

/// The closure of one item: the items the parser holds with it after the same bytes.
#[derive(Debug)]
struct Closure {
    items: Box<[Item]>,
    /// Whether items were left out (a frame too deep, a closure past [`MAX_SET`] items): the
    /// set escapes on every byte.
    cut: bool,
}

/// Per item, the item, the start items of the rules it predicts (those the walk follows), the
/// next iteration's start where it ends one of a counted rule, the items after a nullable rule
/// it steps over, and the items a completion returns to, transitively: the Earley closure with
/// origins written as frames, computed on first use. A prediction whose
/// return state only ends its rule (final, nothing to read) keeps the caller's frame, so a
/// right-recursive chain of rules (a string's length counted rule by rule) does not nest.
///
/// When the entry's own rule is a counted repetition, the isolated parser treats it as
/// unbounded (see [`crate::earley::Parser::isolated`]): a state final for the body (other than
/// the rule's start) also holds the start, a new iteration.
struct Closures<'a> {
    fsm: &'a GrammarFsm,
    followed: &'a [Follow],
    /// The entry's own rule, if it is counted.
    own_counted: Option<crate::fsm::FsmRuleId>,
    /// Per frame (frame 0 is [`ROOT`]).
    frames: Vec<Frame>,
    frame_ids: FrameIds,
    memo: FastMap<Item, Closure>,
}

/// A return frame: where its rule's completion continues.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// The state after the rule edge that predicted the rule.
    ret: StateId,
    /// The frame of that state's own rule.
    parent: FrameId,
    depth: u8,
    /// For a counted rule followed with counts ([`Follow::Counted`]): the iterations its items
    /// have finished (the parser item's count). A frame with a count is never shared with
    /// another rule, so the count is that of the rule of every item at the frame.
    count: Option<u32>,
}

/// The frames of a walk, by (return state, parent, count).
type FrameIds = FastMap<(StateId, FrameId, Option<u32>), FrameId>;

impl<'a> Closures<'a> {
    /// The closures of the items of entries of rule `own`, with the frames and closures an
    /// earlier walk of the rule found.
    fn resume(
        fsm: &'a GrammarFsm,
        own: FsmRuleId,
        followed: &'a [Follow],
        frames: Vec<Frame>,
        frame_ids: FrameIds,
        memo: FastMap<Item, Closure>,
    ) -> Self {
        let own_counted = matches!(fsm.rule(own).kind, RuleKind::Counted { .. }).then_some(own);
        Closures { fsm, followed, own_counted, frames, frame_ids, memo }
    }

    /// The frames and closures found, for [`Closures::resume`].
    fn into_parts(self) -> (Vec<Frame>, FrameIds, FastMap<Item, Closure>) {
        (self.frames, self.frame_ids, self.memo)
    }

    /// Where item `(s, frame)` begins a new iteration of a counted rule (a state final for the
    /// body, other than the start), the new iteration's frame: the same frame in the entry's
    /// own rule at the root frame (unbounded for the isolated parser) and in a counted rule
    /// followed without counts; the frame of the next count in one followed with counts, below
    /// its maximum.
    fn next_iteration(&mut self, s: StateId, frame: FrameId) -> Option<FrameId> {
        let r = self.fsm.rule_of(s);
        let rule = self.fsm.rule(r);
        if matches!(rule.kind, RuleKind::Plain) || s == rule.start || !self.fsm.is_final(s) {
            return None;
        }
        if frame == ROOT && self.own_counted == Some(r) {
            return Some(ROOT);
        }
        match self.followed[r.index()] {
            Follow::No => None,
            Follow::Plain => Some(frame),
            Follow::Counted { max, .. } => {
                let f = self.frames[frame as usize];
                let count = f.count.expect("the items of a rule followed with counts sit at frames with a count") + 1;
                if count < max {
                    self.frame(f.ret, f.parent, Some(count))
                } else {
                    None
                }
            }
        }
    }

    /// Whether an item on final state `s` at frame `g` (not [`ROOT`]) may complete its rule: a
    /// counted rule followed with counts only once its iterations reach its minimum.
    fn may_complete(&self, s: StateId, g: FrameId) -> bool {
        match (self.followed[self.fsm.rule_of(s).index()], self.frames[g as usize].count) {
            (Follow::Counted { min, .. }, Some(count)) => count + 1 >= min,
            _ => true,
        }
    }

    /// The frame returning to `t` under `parent` (with `count` for a rule followed with
    /// counts), or `None` past [`MAX_FRAME_DEPTH`].
    fn frame(&mut self, t: StateId, parent: FrameId, count: Option<u32>) -> Option<FrameId> {
        let fsm = self.fsm;
        // Returning to `t` only ends its rule: the completion goes on to the parent. Not in a
        // counted rule, where a state final for the body also begins a new iteration, nor for
        // a callee whose items need a count of their own.
        let ends_only = fsm.is_final(t) && fsm.byte_edges(t).is_empty() && fsm.rule_edges(t).is_empty();
        if ends_only && count.is_none() && matches!(fsm.rule(fsm.rule_of(t)).kind, RuleKind::Plain) {
            return Some(parent);
        }
        if let Some(&f) = self.frame_ids.get(&(t, parent, count)) {
            return Some(f);
        }
        let depth = self.frames[parent as usize].depth + 1;
        if depth > MAX_FRAME_DEPTH {
            return None;
        }
        let f = self.frames.len() as FrameId;
        self.frames.push(Frame { ret: t, parent, depth, count });
        self.frame_ids.insert((t, parent, count), f);
        Some(f)
    }

    /// The frames of `f` from the innermost, as return states and counts (for keys that
    /// outlive this walk).
    fn chain(&self, mut f: FrameId) -> impl Iterator<Item = (StateId, Option<u32>)> + '_ {
        std::iter::from_fn(move || {
            (f != ROOT).then(|| {
                let frame = self.frames[f as usize];
                f = frame.parent;
                (frame.ret, frame.count)
            })
        })
    }

    /// Whether the items at frame `f` count their rule's iterations (a byte region's table,
    /// which loops without counting, does not apply to them).
    fn counts(&self, f: FrameId) -> bool {
        self.frames[f as usize].count.is_some()
    }

    fn of(&mut self, item: Item) -> &Closure {
        if !self.memo.contains_key(&item) {
            let closure = self.compute(item);
            self.memo.insert(item, closure);
        }
        &self.memo[&item]
    }

    fn compute(&mut self, item: Item) -> Closure {
        let fsm = self.fsm;
        let mut out = vec![item];
        let mut cut = false;
        let add = |out: &mut Vec<Item>, it: Item| {
            if !out.contains(&it) {
                out.push(it);
            }
        };
        let mut i = 0;
        while i < out.len() {
            if out.len() > MAX_SET {
                // Recursion through several rules: left to the parser from here.
                cut = true;
                break;
            }
            let (q, g) = out[i];
            i += 1;
            // An iteration's end (read, or a completion returning to it) begins the next one.
            if let Some(h) = self.next_iteration(q, g) {
                add(&mut out, (fsm.rule(fsm.rule_of(q)).start, h));
            }
            for e in fsm.rule_edges(q) {
                let count = match self.followed[e.rule.index()] {
                    Follow::No => continue,
                    Follow::Plain => None,
                    Follow::Counted { .. } => Some(0),
                };
                match self.frame(e.target, g, count) {
                    Some(h) => add(&mut out, (fsm.rule(e.rule).start, h)),
                    None => cut = true,
                }
                if fsm.rule(e.rule).nullable {
                    // The parser steps over the nullable rule at once.
                    add(&mut out, (e.target, g));
                }
            }
            if g != ROOT && fsm.is_final(q) && self.may_complete(q, g) {
                // The rule completes: back to where it was predicted.
                let Frame { ret, parent, .. } = self.frames[g as usize];
                add(&mut out, (ret, parent));
            }
        }
        Closure { items: out.into_boxed_slice(), cut }
    }
}

/// The classification of one first byte's tokens for one entry: what [`paths_base`] memoizes
/// (see [`PathMemoKey`]).
#[derive(Debug, Default)]
pub(super) struct FirstByteWalk {
    /// Accepted along byte paths: ascending runs of sorted positions.
    runs: Vec<(u32, u32)>,
    runs_len: usize,
    /// The parser's verdicts on the others.
    parsed: Walk,
}

impl FirstByteWalk {
    /// Heap bytes used.
    pub(super) fn memory_usage(&self) -> usize {
        self.runs.len() * 8 + self.parsed.memory_usage()
    }
}

/// When two entries of one rule (with the same context) read a first byte into the same set of
/// states, and only the entry's own item reads that byte (no completion before it, no item
/// predicted before it reads it), the parser is in the same state after that byte in both: the
/// verdicts on every token starting with it are the same. A key position of an object has that in
/// common with every other key position of the object (the generic key body), so the second
/// one reuses the first one's walk of most first bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct PathMemoKey {
    own: FsmRuleId,
    context: Box<[StateId]>,
    /// The state the entry's item reads `byte` into, and the set of states after it.
    item: StateId,
    set: Box<[StateId]>,
    byte: u8,
}

/// The walks of first bytes a grammar's entries share (see [`PathMemoKey`]). Only the entries
/// of a rule and context after the first keep their walks: most rules and contexts have one
/// entry, which would pay for keeping walks no other entry reads.
#[derive(Debug, Default)]
pub(super) struct PathMemo {
    table: std::sync::Mutex<MemoTable>,
}

#[derive(Debug, Default)]
struct MemoTable {
    walks: FastMap<PathMemoKey, Arc<FirstByteWalk>>,
    /// The (own rule, context) pairs of the entries walked so far.
    seen: crate::util::hash::FastSet<(FsmRuleId, Box<[StateId]>)>,
    /// The DFAs of the rules walked last, the latest first (see [`KeptDfa`]).
    dfas: Vec<KeptDfa>,
}

/// The rules whose DFAs a grammar keeps: the entries of one rule come together (a key
/// position, then its trie, as a key is written), so a few suffice.
const KEPT_DFAS: usize = 2;

impl PathMemo {
    fn table(&self) -> std::sync::MutexGuard<'_, MemoTable> {
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records an entry of `own` in `context`; whether one was recorded before.
    fn seen_before(&self, own: FsmRuleId, context: &[StateId]) -> bool {
        !self.table().seen.insert((own, context.into()))
    }

    /// Heap bytes used by the kept walks and DFAs.
    pub(super) fn memory_usage(&self) -> usize {
        let table = self.table();
        let walks: usize = table.walks.values().map(|w| w.memory_usage()).sum();
        walks + table.dfas.iter().map(KeptDfa::memory_usage).sum::<usize>()
    }

    /// The kept DFA of rule `own`, taken out (an entry of the rule built at the same time on
    /// another thread starts afresh).
    fn take_dfa(&self, own: FsmRuleId) -> Option<KeptDfa> {
        let mut table = self.table();
        let i = table.dfas.iter().position(|d| d.own == own)?;
        Some(table.dfas.remove(i))
    }

    /// Keeps `dfa` as the latest, unless it grew past [`KEPT_SETS`].
    fn keep_dfa(&self, dfa: KeptDfa) {
        let mut table = self.table();
        table.dfas.retain(|d| d.own != dfa.own);
        if dfa.sets.len() > KEPT_SETS {
            return;
        }
        table.dfas.insert(0, dfa);
        table.dfas.truncate(KEPT_DFAS);
    }
}

/// The base entry of `state` in its certain `context` (as [`super::build_base`] walks it): the
/// tokens read along byte paths are accepted, the rest walked by the parser, first byte by first
/// byte, each taken from `memo` when an entry of the same rule walked it from the same set.
pub(super) fn paths_base(
    fsm: &Arc<GrammarFsm>,
    context: &[StateId],
    vocab: &Vocabulary,
    state: StateId,
    source: &PathSource<'_>,
    memo: Option<&PathMemo>,
) -> BaseEntry {
    let mut first = FirstBytes::new(fsm, context, state);
    let kept = memo.and_then(|memo| memo.take_dfa(fsm.rule_of(state)));
    let mut dfa = LazyDfa::new(fsm, state, context, source, kept);
    let keeper = memo;
    // With a pool, walks are shared through it (across grammars, and within this one).
    let memo = memo.filter(|memo| source.pooled.is_none() && memo.seen_before(dfa.own, context));
    let mut walker = ListedWalker::new(fsm, context, state);
    let mut total = FirstByteWalk::default();
    // First bytes whose walk is not shared are walked together, in one pass (a walk per
    // first byte costs an allocation and a copy each, ~200 per entry).
    let mut unshared: Option<std::ops::Range<usize>> = None;
    let n = vocab.sorted_token_ids().len();
    let mut i = 0;
    while i < n {
        let b = vocab.sorted_token_bytes(i)[0];
        let range = i..vocab.sorted_first_byte_range(b, b).end;
        i = range.end;
        let shared = match (&source.pooled, memo) {
            (Some(pooled), _) => {
                dfa.own_item(b).and_then(|item| (pooled.key)(item, b)).map(|key| Shared::Pool(pooled.pool, key))
            }
            (None, Some(memo)) => dfa.memo_key(context, b).map(|key| Shared::Memo(memo, key)),
            (None, None) => None,
        };
        let Some(shared) = shared else {
            unshared = Some(unshared.map_or(range.start, |u| u.start)..range.end);
            continue;
        };
        if let Some(range) = unshared.take() {
            total.walk(vocab, &mut dfa, &mut first, &mut walker, range);
        }
        let build = || {
            let mut part = FirstByteWalk::default();
            part.walk(vocab, &mut dfa, &mut first, &mut walker, range);
            part
        };
        let part = match shared {
            Shared::Pool(pool, key) => pool.first_byte_walk(key, build),
            Shared::Memo(memo, key) => {
                let known = memo.table().walks.get(&key).cloned();
                known.unwrap_or_else(|| {
                    let part = Arc::new(build());
                    memo.table().walks.insert(key, Arc::clone(&part));
                    part
                })
            }
        };
        total.append(&part);
    }
    if let Some(range) = unshared {
        total.walk(vocab, &mut dfa, &mut first, &mut walker, range);
    }
    if let Some(keeper) = keeper {
        keeper.keep_dfa(dfa.into_kept());
    }
    let accepted = smallest_form_of_runs(vocab, &total.runs, total.runs_len, &total.parsed.accepted);
    total.parsed.into_base(accepted)
}

/// The walk of the tokens at sorted positions `positions` (ascending) from `state` in its
/// certain `context`, as [`super::build::walk_listed`] walks them with the parser: along byte
/// paths, the parser walking only the tokens those do not decide. The leaving tokens of a loop
/// slice (see `lexical_loop.rs`) go on into the rest of the rule, which may be a large
/// automaton the parser reads slowly (a URI pattern after its scheme: 6 ms entries).
pub(super) fn paths_listed(
    fsm: &Arc<GrammarFsm>,
    context: &[StateId],
    vocab: &Vocabulary,
    state: StateId,
    source: &PathSource<'_>,
    positions: &[u32],
) -> Walk {
    let mut first = FirstBytes::new(fsm, context, state);
    let mut dfa = LazyDfa::new(fsm, state, context, source, None);
    let split = PathSplit::walk_listed(vocab, &mut dfa, &mut first, positions);
    let ids = vocab.sorted_token_ids();
    let mut walk = Walk::default();
    for &(from, to) in &split.accepted {
        walk.accepted.extend((from..to).map(|pos| crate::util::id::TokenId::from_u32(ids[pos as usize])));
    }
    ListedWalker::new(fsm, context, state).walk(vocab, &split.rest, &mut walk);
    walk
}

/// Which first bytes the entry's isolated parser reads, probed on demand: a token whose first
/// byte it cannot read is rejected, as in the full walk (which skips its whole first-byte
/// block). Most entries never ask (their first set escapes nowhere).
struct FirstBytes {
    /// The parser, made on the first question.
    parser: Option<Parser>,
    fsm: Arc<GrammarFsm>,
    context: Box<[StateId]>,
    state: StateId,
    /// Per byte: not asked yet, or the answer.
    known: [Option<bool>; 256],
}

impl FirstBytes {
    fn new(fsm: &Arc<GrammarFsm>, context: &[StateId], state: StateId) -> Self {
        FirstBytes { parser: None, fsm: Arc::clone(fsm), context: context.into(), state, known: [None; 256] }
    }

    fn reads(&mut self, b: u8) -> bool {
        if let Some(known) = self.known[b as usize] {
            return known;
        }
        let parser =
            self.parser.get_or_insert_with(|| Parser::isolated(Arc::clone(&self.fsm), self.state, &self.context));
        let reads = !Sentinel::is_lead(b) && parser.advance_byte(b);
        if reads {
            parser.pop_bytes(1);
        }
        self.known[b as usize] = Some(reads);
        reads
    }
}

/// Where a first byte's walk is shared.
enum Shared<'m> {
    Pool(&'m MaskPool, u64),
    Memo(&'m PathMemo, PathMemoKey),
}

impl FirstByteWalk {
    /// Walks the tokens at sorted positions `range` (after those walked before): along byte
    /// paths, then the rest with the parser.
    fn walk<'v>(
        &mut self,
        vocab: &'v Vocabulary,
        dfa: &mut LazyDfa<'_>,
        first: &mut FirstBytes,
        walker: &mut ListedWalker<'v>,
        range: std::ops::Range<usize>,
    ) {
        let split = PathSplit::walk(vocab, dfa, first, range);
        self.append_runs(&split.accepted, split.accepted_len);
        walker.walk(vocab, &split.rest, &mut self.parsed);
    }

    /// Appends `part` (of later sorted positions).
    fn append(&mut self, part: &FirstByteWalk) {
        self.append_runs(&part.runs, part.runs_len);
        self.parsed.append(&part.parsed);
    }

    fn append_runs(&mut self, runs: &[(u32, u32)], len: usize) {
        for &(from, to) in runs {
            match self.runs.last_mut() {
                Some(last) if last.1 == from => last.1 = to,
                _ => self.runs.push((from, to)),
            }
        }
        self.runs_len += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row holds every set id a walk can number and the three markers, and gives them back.
    #[test]
    fn rows_hold_set_ids_and_markers() {
        let largest_id = (KEPT_SETS + MAX_SETS - 1) as u32;
        for wide in [0, 1, 255, 256, 4095, largest_id, UNKNOWN, DEAD, GIVE_UP] {
            assert_eq!(widen(narrow(wide)), wide, "{wide:#x}");
        }
        let markers = [narrow(UNKNOWN), narrow(DEAD), narrow(GIVE_UP)];
        assert!(markers.iter().all(|&m| u32::from(m) > largest_id), "markers above every id");
    }
}
