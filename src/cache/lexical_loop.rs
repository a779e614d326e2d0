//! Vocabulary slices of lexical loops: the fast path for the cache entries of states inside a
//! byte-level loop of their rule (a JSON string body, a run of digits or whitespace).
//!
//! A state is *simple* when its rule is plain, it is not final, and the rules it references (an
//! escape sequence, say) are not nullable, nor are those their start states reference, and so
//! on: an item on it predicts their start items, which complete nothing before reading a byte.
//! Their first bytes are the state's *leave bytes*. An isolated parser whose items (origin 0)
//! all sit on simple states holds, after a byte that none of them leaves on and that leads only
//! to simple states, exactly the items of those states and their predictions: nothing
//! completes. (Byte edges may overlap: the automaton of a pattern whose subset construction gave
//! up is not deterministic, and the items are then a set of states.) The *loop* of a simple
//! state `s` is the set of simple states reachable from `s` through simple states by byte edges
//! that also reach `s` back. So for the entry of `s`:
//!
//! * a token whose bytes keep every item inside the loop is read entirely: accepted;
//! * a token that meets, inside the loop, a byte with no edge (or the sentinel lead, which the
//!   walk never reads) fails where the rule cannot end (no loop state is final): rejected;
//! * only a token that takes an edge out of the loop or a leave byte (from any of its items)
//!   needs the parser.
//!
//! Which tokens stay, die or leave depends only on the vocabulary and on the loop itself (its
//! states' edges and leave bytes, an edge out of the loop written as such), not on the grammar
//! around it. A
//! [`LoopSlice`] records it once per (vocabulary, loop); the pool keeps it for every grammar of
//! that vocabulary (a grammar without a pool keeps its own), and an entry then costs the
//! parser walk of the leaving tokens: for a JSON string body of a 128k vocabulary, the few
//! thousand tokens holding a quote or a backslash instead of the 126k that start with a
//! string byte. The entry is the one the full walk builds, token for token.

use std::sync::Arc;

use super::base::BaseEntry;
use super::build::{first_byte_candidates, smallest_form_of_bits, ListedWalker, Walk};
use super::byte_paths::{paths_listed, PathFacts, PathSource};
use crate::fsm::{FsmRuleId, GrammarFsm, RuleKind, StateId};
use crate::tokenizer::Vocabulary;
use crate::util::bitset::mask_words;
use crate::util::byteset::ByteSet;
use crate::util::hash::FastMap;
use crate::util::sentinel::Sentinel;

/// Walks with fewer candidate tokens than this are cheap enough as they are.
const MIN_FIRST_BYTE_TOKENS: usize = 2048;
/// Loops with more states than this are sliced only where walks along byte paths do not apply
/// (see `MaskCache::sliced_loop`); string bodies have about 20.
pub(super) const MAX_SLICED_STATES: usize = 32;
/// Rules predicted from one state beyond which it is not treated as simple (escape sequences
/// predict one or two).
const MAX_PREDICTED_RULES: usize = 16;

/// Which tokens stay inside a lexical loop, and which leave it (see the module docs).
#[derive(Debug)]
pub(crate) struct LoopSlice {
    /// Normal tokens read entirely inside the loop, as a mask by token id (engine layout, the
    /// length of a vocabulary mask).
    inside: Box<[u32]>,
    /// How many bits `inside` has set.
    inside_len: usize,
    /// Sorted positions of the tokens that take an edge out of the loop.
    leaving: Box<[u32]>,
}

impl LoopSlice {
    /// Runs every token of `vocab` from `start` while it stays in `in_loop`: through the loop's
    /// set automaton ([`SetDfa`]), or set by set when that grows past [`SetDfa::MAX_SETS`].
    pub(super) fn new(fsm: &GrammarFsm, vocab: &Vocabulary, start: StateId, in_loop: &Loop<'_>) -> Self {
        let dfa = SetDfa::new(fsm, start, in_loop, SetDfa::MAX_SETS);
        Self::walk(vocab, SetPath::new(dfa)).unwrap_or_else(|| {
            Self::walk(vocab, SetsWalk { fsm, in_loop, sets: StateSets::new(start) })
                .expect("a set-by-set walk always completes")
        })
    }

    /// The slice of `in_loop` from `start`, given the slice of a part of it holding `start`
    /// (see [`core_of`]): a token the part reads entirely is read entirely by the loop (the
    /// same edges), one that dies there dies here (no edge from the same items), and only the
    /// tokens leaving the part are walked again, through the whole loop.
    pub(super) fn from_core(
        core: &LoopSlice,
        fsm: &GrammarFsm,
        vocab: &Vocabulary,
        start: StateId,
        in_loop: &Loop<'_>,
    ) -> Self {
        let dfa = SetDfa::new(fsm, start, in_loop, SetDfa::MAX_SETS);
        core.walk_leaving(vocab, SetPath::new(dfa)).unwrap_or_else(|| {
            core.walk_leaving(vocab, SetsWalk { fsm, in_loop, sets: StateSets::new(start) })
                .expect("a set-by-set walk always completes")
        })
    }

    /// This slice with its leaving tokens walked again by `walk`, or `None` when it gives up.
    fn walk_leaving(&self, vocab: &Vocabulary, mut walk: impl LoopWalk) -> Option<Self> {
        let ids = vocab.sorted_token_ids();
        let mut inside = self.inside.to_vec();
        let mut inside_len = self.inside_len;
        let mut leaving = Vec::new();
        for &pos in &self.leaving {
            walk.truncate(1);
            let mut stop = None;
            for &b in vocab.sorted_token_bytes(pos as usize) {
                match if Sentinel::is_lead(b) { Next::Dies } else { walk.step(b) } {
                    Next::Stays => continue,
                    Next::GiveUp => return None,
                    next => {
                        stop = Some(next);
                        break;
                    }
                }
            }
            match stop {
                None => {
                    let id = ids[pos as usize];
                    inside[id as usize / 32] |= 1 << (id % 32);
                    inside_len += 1;
                }
                Some(Next::Leaves) => leaving.push(pos),
                Some(_) => {}
            }
        }
        Some(LoopSlice { inside: inside.into_boxed_slice(), inside_len, leaving: leaving.into_boxed_slice() })
    }

    /// The slice `walk` finds, or `None` when it gives up ([`Next::GiveUp`]).
    fn walk(vocab: &Vocabulary, mut walk: impl LoopWalk) -> Option<Self> {
        let ids = vocab.sorted_token_ids();
        let (lcp, trie) = (vocab.sorted_lcp(), vocab.trie());
        let n = ids.len();
        let mut inside = vec![0u32; mask_words(vocab.vocab_size())];
        let mut inside_len = 0;
        let mut leaving = Vec::new();
        let mut i = 0;
        while i < n {
            let bytes = vocab.sorted_token_bytes(i);
            walk.truncate((lcp[i] as usize).min(walk.len() - 1) + 1);
            let mut k = walk.len() - 1;
            // The byte where the token dies or leaves, and whether it leaves.
            let mut stop = None;
            while k < bytes.len() {
                let next = if Sentinel::is_lead(bytes[k]) { Next::Dies } else { walk.step(bytes[k]) };
                match next {
                    Next::Stays => k += 1,
                    Next::Leaves => {
                        stop = Some((k, true));
                        break;
                    }
                    Next::Dies => {
                        stop = Some((k, false));
                        break;
                    }
                    Next::GiveUp => return None,
                }
            }
            let Some((k, leaves)) = stop else {
                let id = ids[i];
                inside[id as usize / 32] |= 1 << (id % 32);
                inside_len += 1;
                i += 1;
                continue;
            };
            // Every token sharing the first `k + 1` bytes dies or leaves at the same byte: the
            // subtree of the node token `i` starts at depth `k + 1` (`k >= lcp[i]`).
            let end = trie.subtree_end(trie.node(lcp, i, k + 1));
            if leaves {
                leaving.extend(i as u32..end as u32);
            }
            i = end;
        }
        Some(LoopSlice { inside: inside.into_boxed_slice(), inside_len, leaving: leaving.into_boxed_slice() })
    }
}

/// The walk of one token after another inside a loop: the item sets after each byte of the
/// last walked token, from the start.
trait LoopWalk {
    /// How many sets the walk holds (one more than the bytes read).
    fn len(&self) -> usize;
    /// Keeps the first `len` sets (at least one).
    fn truncate(&mut self, len: usize);
    /// Reads `b` from the last set, pushing the next one when it [`Next::Stays`].
    fn step(&mut self, b: u8) -> Next;
}

/// A [`LoopWalk`] that computes every set from the last one (any loop size).
struct SetsWalk<'a> {
    fsm: &'a GrammarFsm,
    in_loop: &'a Loop<'a>,
    sets: StateSets,
}

impl LoopWalk for SetsWalk<'_> {
    fn len(&self) -> usize {
        self.sets.len()
    }
    fn truncate(&mut self, len: usize) {
        self.sets.truncate(len)
    }
    fn step(&mut self, b: u8) -> Next {
        self.sets.step(self.fsm, b, self.in_loop)
    }
}

/// A [`LoopWalk`] through a [`SetDfa`]: one table lookup per byte once a transition is known.
struct SetPath<'a> {
    dfa: SetDfa<'a>,
    /// The sets after each byte of the last walked token, from set 0.
    path: Vec<u32>,
}

impl<'a> SetPath<'a> {
    fn new(dfa: SetDfa<'a>) -> Self {
        SetPath { dfa, path: vec![0] }
    }
}

impl LoopWalk for SetPath<'_> {
    fn len(&self) -> usize {
        self.path.len()
    }
    fn truncate(&mut self, len: usize) {
        self.path.truncate(len)
    }
    #[inline(always)]
    fn step(&mut self, b: u8) -> Next {
        let last = *self.path.last().expect("a walk always has a set");
        match self.dfa.step(last, b) {
            SetDfa::LEAVES => Next::Leaves,
            SetDfa::DIES => Next::Dies,
            SetDfa::TOO_MANY => Next::GiveUp,
            next => {
                self.path.push(next);
                Next::Stays
            }
        }
    }
}

/// The item sets of a loop as a deterministic automaton, built lazily: a set is a bitmask over
/// the loop's states (bit `k` of word `k / 64` is `states[k]`), and its transition on a byte is
/// another set, [`SetDfa::LEAVES`] or [`SetDfa::DIES`] (as [`StateSets::step`] decides them).
struct SetDfa<'a> {
    fsm: &'a GrammarFsm,
    in_loop: &'a Loop<'a>,
    /// Words per set.
    words: usize,
    /// The most sets numbered before the walk gives up.
    max_sets: usize,
    /// The sets, `words` words each, in the order they were met.
    sets: Vec<u64>,
    ids: FastMap<Box<[u64]>, u32>,
    next: Vec<[u32; 256]>,
    /// Scratch for the next set.
    scratch: Vec<u64>,
}

impl<'a> SetDfa<'a> {
    const UNKNOWN: u32 = u32::MAX;
    const LEAVES: u32 = u32::MAX - 1;
    const DIES: u32 = u32::MAX - 2;
    const TOO_MANY: u32 = u32::MAX - 3;
    /// Sets beyond this many end the walk (a row of 1 KiB each; subset construction of the
    /// loop's rule gave up, and so does this).
    const MAX_SETS: usize = 4096;

    /// The automaton whose set 0 is `{start}` (`start` is a state of the loop), numbering at
    /// most `max_sets` sets.
    fn new(fsm: &'a GrammarFsm, start: StateId, in_loop: &'a Loop<'a>, max_sets: usize) -> Self {
        let words = in_loop.states.len().div_ceil(64);
        let mut dfa = SetDfa {
            fsm,
            in_loop,
            words,
            max_sets,
            sets: Vec::new(),
            ids: FastMap::default(),
            next: Vec::new(),
            scratch: vec![0; words],
        };
        let bit = in_loop.states.binary_search(&start).expect("a loop holds its start");
        dfa.scratch[bit / 64] |= 1 << (bit % 64);
        dfa.intern_scratch();
        dfa
    }

    /// The id of the set in `scratch`, numbered now if it is new.
    fn intern_scratch(&mut self) -> u32 {
        if let Some(&id) = self.ids.get(&self.scratch[..]) {
            return id;
        }
        if self.next.len() == self.max_sets {
            return Self::TOO_MANY;
        }
        let id = self.next.len() as u32;
        self.sets.extend_from_slice(&self.scratch);
        self.ids.insert(self.scratch.clone().into_boxed_slice(), id);
        self.next.push([Self::UNKNOWN; 256]);
        id
    }

    #[inline(always)]
    fn step(&mut self, set: u32, b: u8) -> u32 {
        let next = self.next[set as usize][b as usize];
        if next != Self::UNKNOWN {
            return next;
        }
        self.learn(set, b)
    }

    /// The transition of `set` on `b`, computed and kept (the slow path of [`SetDfa::step`],
    /// kept out of line so that the walk's loop stays small).
    #[cold]
    #[inline(never)]
    fn learn(&mut self, set: u32, b: u8) -> u32 {
        let next = self.compute(set as usize, b);
        self.next[set as usize][b as usize] = next;
        next
    }

    fn compute(&mut self, set: usize, b: u8) -> u32 {
        let states = &self.in_loop.states;
        self.scratch.iter_mut().for_each(|w| *w = 0);
        let mut any = false;
        for w in 0..self.words {
            let mut bits = self.sets[set * self.words + w];
            while bits != 0 {
                let s = states[w * 64 + bits.trailing_zeros() as usize];
                bits &= bits - 1;
                if self.in_loop.leaves_on(s, b) {
                    return Self::LEAVES;
                }
                for e in self.fsm.byte_edges(s) {
                    if e.lo > b {
                        break;
                    }
                    if b > e.hi {
                        continue;
                    }
                    match states.binary_search(&e.target) {
                        Ok(k) => {
                            self.scratch[k / 64] |= 1 << (k % 64);
                            any = true;
                        }
                        Err(_) => return Self::LEAVES,
                    }
                }
            }
        }
        if any {
            self.intern_scratch()
        } else {
            Self::DIES
        }
    }
}

/// What a byte does to the item set of a [`LoopSlice`] walk.
enum Next {
    /// Every item moves to loop states (at least one item).
    Stays,
    /// Some item moves out of the loop.
    Leaves,
    /// No item reads the byte.
    Dies,
    /// The walk gives up (its set automaton grew too large): walk again set by set.
    GiveUp,
}

/// The item sets of a walk inside a loop, one per byte of the last walked token: states of a
/// rule automaton that may be non-deterministic (a pattern's automaton when subset construction
/// gave up), all with origin 0, so a set of states is the parser's whole item set.
struct StateSets {
    states: Vec<StateId>,
    /// Set `k` is `states[starts[k]..starts[k + 1]]` (the last one runs to the end).
    starts: Vec<usize>,
}

impl StateSets {
    fn new(start: StateId) -> Self {
        StateSets { states: vec![start], starts: vec![0] }
    }

    fn len(&self) -> usize {
        self.starts.len()
    }

    fn truncate(&mut self, len: usize) {
        if len < self.starts.len() {
            self.states.truncate(self.starts[len]);
            self.starts.truncate(len);
        }
    }

    /// Reads `b` from the last set, pushing the next one when it [`Next::Stays`].
    fn step(&mut self, fsm: &GrammarFsm, b: u8, in_loop: &Loop<'_>) -> Next {
        let last = *self.starts.last().expect("a walk always has a set");
        let end = self.states.len();
        for i in last..end {
            if in_loop.leaves_on(self.states[i], b) {
                self.states.truncate(end);
                return Next::Leaves;
            }
            for e in fsm.byte_edges(self.states[i]) {
                if e.lo > b {
                    break;
                }
                if b > e.hi || self.states[end..].contains(&e.target) {
                    continue;
                }
                if !in_loop.contains(e.target) {
                    self.states.truncate(end);
                    return Next::Leaves;
                }
                self.states.push(e.target);
            }
        }
        if self.states.len() == end {
            return Next::Dies;
        }
        self.starts.push(end);
        Next::Stays
    }
}

/// The target of the byte edge of `s` reading `b`, for a state whose byte edges are disjoint.
#[inline]
pub(super) fn step(fsm: &GrammarFsm, s: StateId, b: u8) -> Option<StateId> {
    for e in fsm.byte_edges(s) {
        if b <= e.hi {
            return (e.lo <= b).then_some(e.target);
        }
    }
    None
}

/// The leave bytes of `s` if it is simple (see the module docs).
fn leave_bytes(fsm: &GrammarFsm, s: StateId) -> Option<ByteSet> {
    if !matches!(fsm.rule(fsm.rule_of(s)).kind, RuleKind::Plain) || fsm.is_final(s) {
        return None;
    }
    let mut leave = ByteSet::EMPTY;
    let mut seen = Vec::new();
    let mut stack: Vec<FsmRuleId> = fsm.rule_edges(s).iter().map(|e| e.rule).collect();
    while let Some(r) = stack.pop() {
        if seen.contains(&r) {
            continue;
        }
        seen.push(r);
        let rule = fsm.rule(r);
        if rule.nullable || seen.len() > MAX_PREDICTED_RULES {
            return None;
        }
        for e in fsm.byte_edges(rule.start) {
            leave.insert_range(e.lo, e.hi);
        }
        stack.extend(fsm.rule_edges(rule.start).iter().map(|e| e.rule));
    }
    Some(leave)
}

/// A loop: its states (sorted) and the leave bytes of those that have some.
pub(crate) struct Loop<'a> {
    states: std::borrow::Cow<'a, [StateId]>,
    leave: &'a FastMap<StateId, ByteSet>,
}

impl Loop<'_> {
    /// How many states the loop has.
    pub(super) fn len(&self) -> usize {
        self.states.len()
    }

    fn contains(&self, s: StateId) -> bool {
        self.states.binary_search(&s).is_ok()
    }

    fn leave(&self, s: StateId) -> ByteSet {
        self.leave.get(&s).copied().unwrap_or(ByteSet::EMPTY)
    }

    /// Whether at least half of the tokens whose first byte `state` reads enter the loop with it
    /// (a byte edge into a loop state).
    pub(super) fn mostly_entered_from(&self, fsm: &GrammarFsm, vocab: &Vocabulary, state: StateId) -> bool {
        let (mut inside, mut all) = (0, 0);
        for e in fsm.byte_edges(state) {
            let n = vocab.sorted_first_byte_range(e.lo, e.hi).len();
            all += n;
            if self.contains(e.target) {
                inside += n;
            }
        }
        2 * inside >= all
    }

    #[inline]
    fn leaves_on(&self, s: StateId, b: u8) -> bool {
        !self.leave.is_empty() && self.leave(s).contains(b)
    }
}

/// The lexical loops of a grammar: the strongly connected components of its simple states
/// under byte edges between simple states, computed once per grammar on first use.
#[derive(Debug)]
pub(crate) struct Loops {
    /// Per state, its component; `u32::MAX` for states that are not simple.
    component: Vec<u32>,
    /// Per component, its states (sorted) when it holds a cycle (more than one state, or a
    /// state with an edge to itself); empty otherwise.
    members: Vec<Vec<StateId>>,
    /// The leave bytes of the simple states that have some.
    leave: FastMap<StateId, ByteSet>,
}

impl Loops {
    pub(super) fn new(fsm: &GrammarFsm) -> Self {
        let n = fsm.state_len();
        let mut leave = FastMap::default();
        let simple: Vec<bool> = fsm
            .states()
            .map(|s| match leave_bytes(fsm, s) {
                Some(bytes) if !bytes.is_empty() => leave.insert(s, bytes).is_none(),
                Some(_) => true,
                None => false,
            })
            .collect();
        let successors = |i: usize| {
            let s = StateId::new(i);
            let edges = if simple[i] { fsm.byte_edges(s) } else { &[] };
            edges.iter().map(|e| e.target.index()).filter(|&t| simple[t])
        };
        let mut component = crate::util::scc::strongly_connected_components(n, successors);
        let count = component.iter().max().map_or(0, |&c| c as usize + 1);
        let mut size = vec![0u32; count];
        for &c in &component {
            size[c as usize] += 1;
        }
        let mut cyclic: Vec<bool> = size.iter().map(|&k| k > 1).collect();
        for i in 0..n {
            if simple[i] && fsm.byte_edges(StateId::new(i)).iter().any(|e| e.target.index() == i) {
                cyclic[component[i] as usize] = true;
            }
            if !simple[i] {
                component[i] = u32::MAX;
            }
        }
        let mut members = vec![Vec::new(); count];
        for (i, &c) in component.iter().enumerate() {
            if c != u32::MAX && cyclic[c as usize] {
                members[c as usize].push(StateId::new(i));
            }
        }
        Loops { component, members, leave }
    }

    /// The loop of `state` (sorted), when its entry is worth building from a [`LoopSlice`]: the
    /// state is simple, lies on a cycle of simple states, and its walk would be long.
    pub(super) fn to_slice(&self, fsm: &GrammarFsm, vocab: &Vocabulary, state: StateId) -> Option<Loop<'_>> {
        self.loop_of(state, fsm).filter(|_| first_byte_candidates(fsm, state, vocab) >= MIN_FIRST_BYTE_TOKENS)
    }

    /// Whether `state` is simple and lies on a cycle of simple states (its loop is its own, not
    /// only the cycles its edges lead to).
    pub(super) fn on_cycle(&self, state: StateId) -> bool {
        let c = self.component[state.index()];
        self.members.get(c as usize).is_some_and(|m| !m.is_empty())
    }

    /// The loop of `state`, if it is simple: the cycle of simple states it lies on, or for a state
    /// on none (the first byte of a string, where a pattern or a known key may start), the state
    /// and the cycles its byte edges lead to, if any.
    pub(super) fn loop_of(&self, state: StateId, fsm: &GrammarFsm) -> Option<Loop<'_>> {
        let members = |s: StateId| {
            let c = self.component[s.index()];
            self.members.get(c as usize).filter(|m| !m.is_empty())
        };
        if let Some(states) = members(state) {
            return Some(Loop { states: std::borrow::Cow::Borrowed(states), leave: &self.leave });
        }
        if self.component[state.index()] == u32::MAX {
            return None;
        }
        let mut states = vec![state];
        for e in fsm.byte_edges(state) {
            if let Some(m) = members(e.target).filter(|m| !m.contains(&state) && !states.contains(&m[0])) {
                states.extend_from_slice(m);
            }
        }
        if states.len() == 1 {
            return None;
        }
        states.sort_unstable();
        Some(Loop { states: std::borrow::Cow::Owned(states), leave: &self.leave })
    }
}

/// The byte whose edges a loop's core leaves out ([`core_of`]): the quote that ends a string.
pub(super) const CORE_DELIMITER: u8 = b'"';

/// The slice of `in_loop` from `start`: from the slice of its core when it has one (see
/// [`core_of`]; `core_slice` gets it from wherever slices are kept, by key), else walked whole.
pub(super) fn build_slice(
    fsm: &GrammarFsm,
    vocab: &Vocabulary,
    start: StateId,
    in_loop: &Loop<'_>,
    delimiter: u8,
    core_slice: impl FnOnce(u128, &Loop<'_>) -> Arc<LoopSlice>,
) -> LoopSlice {
    match core_of(fsm, start, in_loop, delimiter) {
        Some(core) => {
            let core_slice = core_slice(loop_key(fsm, start, &core), &core);
            LoopSlice::from_core(&core_slice, fsm, vocab, start, in_loop)
        }
        None => LoopSlice::new(fsm, vocab, start, in_loop),
    }
}

/// The part of `in_loop` that `start` reaches without an edge on `delimiter` alone, when it is
/// smaller than the loop. With the quote ([`CORE_DELIMITER`]): the body of a string inside the
/// loop of an array of strings, say, whose elements, separators and other delimiters are
/// grammar-specific, while the body (its escape and UTF-8 states) is the same in every grammar.
/// The core's slice is shared through the pool, and the loop's is built from it
/// ([`LoopSlice::from_core`]) by walking only the tokens that leave the body (those holding a
/// quote) instead of the whole vocabulary. Any part holding `start` gives the same slice; this
/// one is chosen for being shared.
fn core_of<'a>(fsm: &GrammarFsm, start: StateId, in_loop: &Loop<'a>, delimiter: u8) -> Option<Loop<'a>> {
    let mut states = vec![start];
    let mut i = 0;
    while i < states.len() {
        for e in fsm.byte_edges(states[i]) {
            if !e.reads_only(delimiter) && in_loop.contains(e.target) && !states.contains(&e.target) {
                states.push(e.target);
            }
        }
        i += 1;
    }
    if states.len() == in_loop.states.len() {
        return None;
    }
    states.sort_unstable();
    Some(Loop { states: std::borrow::Cow::Owned(states), leave: in_loop.leave })
}

/// A key for the [`LoopSlice`] of `start` with loop `in_loop`: a breadth-first numbering of the
/// loop's states from `start`, hashed with every byte edge (an edge out of the loop written as
/// such) and the leave bytes. Two loops with the same key walk every token alike.
pub(super) fn loop_key(fsm: &GrammarFsm, start: StateId, in_loop: &Loop<'_>) -> u128 {
    region_key(fsm, start, |t| in_loop.contains(t), |s| in_loop.leave(s))
}

/// The structural key of the region of states `inside` from `start`, each state with the bytes
/// `leave` gives it (see [`loop_key`]; the free-text part of a dispatch is keyed the same way).
pub(super) fn region_key(
    fsm: &GrammarFsm,
    start: StateId,
    inside: impl Fn(StateId) -> bool,
    leave: impl Fn(StateId) -> ByteSet,
) -> u128 {
    const LEAVES: u32 = u32::MAX;
    let mut ids: FastMap<StateId, u32> = FastMap::default();
    let mut queue = vec![start];
    ids.insert(start, 0);
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut i = 0;
    while i < queue.len() {
        let s = queue[i];
        i += 1;
        h.update(&(fsm.byte_edges(s).len() as u32).to_le_bytes());
        for w in leave(s).words() {
            h.update(&w.to_le_bytes());
        }
        for e in fsm.byte_edges(s) {
            let target = if inside(e.target) {
                let next = ids.len() as u32;
                *ids.entry(e.target).or_insert_with(|| {
                    queue.push(e.target);
                    next
                })
            } else {
                LEAVES
            };
            h.update(&[e.lo, e.hi]);
            h.update(&target.to_le_bytes());
        }
    }
    h.digest128()
}

/// How the leaving tokens of a slice are walked (see [`walk_leaving`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct LeavingWalk {
    /// The parser's cost is checked after every this many tokens ...
    pub(super) chunk: usize,
    /// ... and past this many item visits per token so far, the rest go along byte paths.
    pub(super) max_visits_per_token: u64,
}

impl LeavingWalk {
    /// What the cache uses. Most slices' leaving tokens cost the parser a visit or two each (a
    /// string's closing quote and what follows), and along byte paths, with a DFA learned per
    /// entry, they cost more: of the slice entries of every 7th MaskBench file, the parser was
    /// the faster walk for 1,019 of 1,438. But past the loop, the rule may call rules the
    /// parser reads slowly: a URI pattern after its scheme, 50,000 leaving tokens of 12.7
    /// visits each, 6.4 ms by the parser and 1.1 ms along byte paths.
    pub(super) const DEFAULT: LeavingWalk = LeavingWalk { chunk: 1024, max_visits_per_token: 8 };
}

/// The walk from `state` in its certain `context` of a slice's `leaving` tokens (ascending
/// sorted positions): by the parser, unless it costs more than `how` allows so far and at least
/// a chunk of tokens is left, which then go along byte paths where those apply (`path_facts`,
/// asked only then: finding a grammar's facts is a pass over its automaton). Both walks are
/// exact, so the result is [`super::build::walk_listed`]'s whatever the split.
pub(super) fn walk_leaving<'f>(
    fsm: &Arc<GrammarFsm>,
    context: &[StateId],
    vocab: &Vocabulary,
    state: StateId,
    leaving: &[u32],
    path_facts: Option<impl FnOnce() -> &'f PathFacts>,
    how: LeavingWalk,
) -> Walk {
    let mut walker = ListedWalker::new(fsm, context, state);
    let mut walk = Walk::default();
    let mut path_facts = path_facts;
    let mut done = 0;
    while done < leaving.len() {
        let end = (done + how.chunk).min(leaving.len());
        walker.walk(vocab, &leaving[done..end], &mut walk);
        done = end;
        let rest = &leaving[done..];
        let costly = walker.visits() > how.max_visits_per_token.saturating_mul(done as u64);
        if costly && rest.len() >= how.chunk {
            if let Some(facts) = path_facts.take() {
                let source = PathSource { facts: facts(), table: None, pooled: None };
                walk.append(&paths_listed(fsm, context, vocab, state, &source, rest));
                break;
            }
        }
    }
    walk
}

/// The base entry of a state (as [`super::build_base`] walks it) from the slice of its loop and
/// `walk`, the walk of the slice's [`LoopSlice::leaving`] tokens from the state: the tokens
/// inside are accepted, the leaving ones as walked.
pub(super) fn loop_base(vocab: &Vocabulary, slice: &LoopSlice, walk: Walk) -> BaseEntry {
    let mut bits = slice.inside.to_vec();
    for id in &walk.accepted {
        bits[id.word()] |= id.bit();
    }
    let accepted = smallest_form_of_bits(vocab, bits, slice.inside_len + walk.accepted.len());
    walk.into_base(accepted)
}

impl LoopSlice {
    /// Sorted positions of the tokens that take an edge out of the loop (the entry walks them).
    pub(super) fn leaving(&self) -> &[u32] {
        &self.leaving
    }

    /// Whether more than half of the `candidates` (the tokens whose first byte the state
    /// reads) leave the loop (each one a parser walk: see `MaskCache::walk`).
    pub(super) fn leaves_most(&self, candidates: usize) -> bool {
        self.leaving.len() * 2 > candidates
    }

    /// Heap bytes used.
    pub(crate) fn memory_usage(&self) -> usize {
        (self.inside.len() + self.leaving.len()) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{build_grammar_fsm, FsmLimits};
    use crate::tokenizer::VocabularyBuilder;

    /// The set automaton's slice equals the set-by-set walk's, and a walk whose automaton
    /// reaches its cap gives up (the caller then walks set by set), on a loop whose edges
    /// overlap (subset construction given up).
    #[test]
    fn set_automaton_equals_set_by_set_walk_and_gives_up_at_its_cap() {
        let g = crate::parse_ebnf(r#"root ::= "<" ([a-c] | "ab" | "b" [a-c]*)* ">""#, "root").unwrap();
        let limits = FsmLimits { max_dfa_states: 1, ..FsmLimits::default() };
        let fsm = build_grammar_fsm(&g, &limits).unwrap();
        let vocab = VocabularyBuilder::new()
            .tokens(["<", "a", "ab", "abc", "b", "ba", "bab>", "c>", ">", "a<", "ca", "bcb"])
            .build()
            .unwrap();
        let loops = Loops::new(&fsm);
        let (mut compared, mut gave_up) = (0, 0);
        for state in fsm.states() {
            let Some(in_loop) = loops.loop_of(state, &fsm) else { continue };
            let by_sets =
                LoopSlice::walk(&vocab, SetsWalk { fsm: &fsm, in_loop: &in_loop, sets: StateSets::new(state) })
                    .unwrap();
            let dfa = SetDfa::new(&fsm, state, &in_loop, SetDfa::MAX_SETS);
            let by_dfa = LoopSlice::walk(&vocab, SetPath::new(dfa)).unwrap();
            assert_eq!(
                (&by_dfa.inside, by_dfa.inside_len, &by_dfa.leaving),
                (&by_sets.inside, by_sets.inside_len, &by_sets.leaving)
            );
            // Capped at one set, the walk gives up as soon as it needs a second one.
            let capped = SetDfa::new(&fsm, state, &in_loop, 1);
            match LoopSlice::walk(&vocab, SetPath::new(capped)) {
                Some(slice) => assert_eq!(slice.leaving, by_sets.leaving),
                None => gave_up += 1,
            }
            compared += 1;
        }
        assert!(gave_up > 0, "no capped walk gave up");
        assert!(compared > 0, "no loop state");
    }

    /// In the loop of an array of strings, the string body is a core, and the loop's slice built
    /// from the core's equals the one walked whole.
    #[test]
    fn a_string_body_is_the_core_of_an_array_loop() {
        let src = r#"root ::= "[" "\"" ([a-b] | "\\" ["n])* "\"" ("," "\"" ([a-b] | "\\" ["n])* "\"")* "]""#;
        let g = crate::parse_ebnf(src, "root").unwrap();
        let fsm = build_grammar_fsm(&g, &FsmLimits::default()).unwrap();
        let vocab = VocabularyBuilder::new()
            .tokens(["a", "ab", "b\\", "\\n", "\\\"", "\"", "a\"", "\",\"", "a\",\"b", "\"]", "n", "\\", "]"])
            .build()
            .unwrap();
        let loops = Loops::new(&fsm);
        let mut cores = 0;
        for state in fsm.states() {
            let Some(in_loop) = loops.loop_of(state, &fsm) else { continue };
            let Some(core) = core_of(&fsm, state, &in_loop, CORE_DELIMITER) else { continue };
            assert!(core.states.len() < in_loop.states.len());
            let whole = LoopSlice::new(&fsm, &vocab, state, &in_loop);
            let core_slice = LoopSlice::new(&fsm, &vocab, state, &core);
            let composed = LoopSlice::from_core(&core_slice, &fsm, &vocab, state, &in_loop);
            assert_eq!(
                (&composed.inside, composed.inside_len, &composed.leaving),
                (&whole.inside, whole.inside_len, &whole.leaving)
            );
            // From the body, `","` leaves the core but stays in the array.
            cores += (core_slice.leaving.len() > whole.leaving.len()) as usize;
        }
        assert!(cores > 0, "no state of the array loop has a core that a token leaves");
    }

    /// Whether most tokens leave a slice is counted among the tokens whose first byte the state
    /// reads, not in the whole vocabulary: a loop that most of those leave gives way to the
    /// byte-path walk even where they are a small part of the vocabulary.
    #[test]
    fn most_leave_among_the_first_byte_candidates() {
        let g = crate::parse_ebnf(r#"root ::= "<" [a-b]* ">" [x-z]*"#, "root").unwrap();
        let fsm = build_grammar_fsm(&g, &FsmLimits::default()).unwrap();
        let others = ["q", "qq", "qqq", "r", "rr", "rrr", "s", "ss", "sss", "t", "tt"];
        let vocab = VocabularyBuilder::new().tokens(["<", "a", "a>x", "b>", ">y", ">"]).tokens(others).build().unwrap();
        let loops = Loops::new(&fsm);
        let mut found = 0;
        for state in fsm.states() {
            let Some(in_loop) = loops.loop_of(state, &fsm) else { continue };
            if !fsm.byte_edges(state).iter().any(|e| e.lo == b'a') {
                continue;
            }
            let slice = LoopSlice::new(&fsm, &vocab, state, &in_loop);
            let candidates = super::super::build::first_byte_candidates(&fsm, state, &vocab);
            // `a` stays; `a>x`, `b>`, `>y` and `>` leave: four of five, but of 17 tokens.
            assert_eq!((slice.leaving().len(), candidates), (4, 5), "state {state}");
            assert!(slice.leaves_most(candidates));
            assert!(slice.leaving().len() * 2 < vocab.sorted_token_ids().len(), "a few of the vocabulary");
            found += 1;
        }
        assert!(found > 0, "no state of the `[a-b]*` loop");
    }

    /// The leaving tokens walked by the parser, along byte paths after every first token, or
    /// split anywhere between the two, give the same entry.
    #[test]
    fn leaving_tokens_walk_alike_by_parser_and_byte_paths() {
        let src = r#"root ::= "\"" [a-c]* ("\"" [ ]* ("x" | "y" [a-c]* "z") | "\\" "n" [a-c]* "\"")"#;
        let g = crate::parse_ebnf(src, "root").unwrap();
        let fsm = Arc::new(build_grammar_fsm(&g, &FsmLimits::default()).unwrap());
        let vocab = VocabularyBuilder::new()
            .tokens(["\"", "a", "ab", "c\"", "a\" x", "b\"y", "\" yab", "\"yz", "\\n", "a\\na\"", "\" ", "c\"q", "x"])
            .build()
            .unwrap();
        let facts = PathFacts::new(&fsm, &vocab, None);
        let loops = Loops::new(&fsm);
        let mut compared = 0;
        for state in fsm.states() {
            let Some(in_loop) = loops.loop_of(state, &fsm) else { continue };
            let slice = LoopSlice::new(&fsm, &vocab, state, &in_loop);
            let by_parser =
                loop_base(&vocab, &slice, super::super::build::walk_listed(&fsm, &[], &vocab, state, slice.leaving()));
            for chunk in [1, 2, 3] {
                let how = LeavingWalk { chunk, max_visits_per_token: 0 };
                let walk = walk_leaving(&fsm, &[], &vocab, state, slice.leaving(), Some(|| &facts), how);
                assert_eq!(loop_base(&vocab, &slice, walk), by_parser, "state {state}, chunk {chunk}");
            }
            compared += (slice.leaving().len() > 3) as usize;
        }
        assert!(compared > 0, "no slice with enough leaving tokens to split");
    }
}
