//! Byte regions: whole subtrees of the token trie accepted at once by the walks along byte paths
//! (`byte_paths.rs`), from a table computed once per vocabulary and region.
//!
//! A *region* is a strongly connected set of states of one rule under byte edges, holding a
//! cycle: the body of a JSON string (its UTF-8 and escape states), a run of digits. In a counted
//! repetition an edge that ends an iteration counts as an edge back to the start (see
//! [`region_target`]): the body of a string with length bounds is a region too. Whether a
//! string of bytes can be read from a region state without leaving the region (every byte on an
//! edge to another region state) depends only on the region's own edges. So for every node of
//! the vocabulary's token trie ([`crate::tokenizer::TokenTrie`]) a [`RegionTable`] records the
//! region states from which *every* token of the node's subtree, read from the node's depth on,
//! stays in the region: a bitmask of at most [`MAX_REGION_STATES`] states per node, computed
//! bottom-up in one pass over the trie.
//!
//! A walk along byte paths holds, at a trie node, the set of states the prefix reaches. When
//! that set holds a region state whose bit the node's mask has, the isolated parser, which
//! holds the same state, reads every token of the subtree to its end along that state's byte
//! edges: all of them are accepted, and the walk skips the subtree. On a JSON string body or a
//! key position of a 128k vocabulary, that replaces ~120k token walks by a few thousand node
//! visits (the subtrees holding a quote, a backslash or a control byte).
//!
//! The table depends on the vocabulary and the region's structure only (its states numbered
//! breadth first from a canonical start, [`super::lexical_loop::region_key`]), so the pool keeps
//! it for every grammar of the vocabulary, like the slices of lexical loops.

use std::sync::{Arc, OnceLock};

use super::lexical_loop::CORE_DELIMITER;
use super::pool::MaskPool;
use crate::fsm::{FsmRuleId, GrammarFsm, RuleKind, StateId};
use crate::tokenizer::{TokenTrie, Vocabulary};
use crate::util::sentinel::Sentinel;

/// Regions larger than this are not tabled (a mask is one `u64` per trie node; one `u32` for
/// regions of at most 32 states). A word of `\\S` in a JSON string, with the escapes of every
/// character that is no space, is 47 states.
pub(crate) const MAX_REGION_STATES: usize = 64;
/// A set of states of one region: bit `k` for its state `k`.
pub(crate) type StateMask = u64;
/// A region is tabled only when some state of it reads the first byte of at least this many
/// tokens (or half a smaller vocabulary) without leaving it: the table costs a pass over the
/// whole trie, repaid only where walks are long (string bodies, not digit runs).
const MIN_FIRST_BYTE_TOKENS: usize = 16_384;
/// Tokens of the sorted vocabulary read to estimate how many stay in a region.
const SAMPLES: usize = 512;
/// A region is tabled only when at least one sampled token in this many is read entirely
/// inside it from its start: a whitespace loop reads the first byte of half the vocabulary,
/// but whole tokens of whitespace are few, and its table would skip nothing.
const MIN_STAYING_SHARE: usize = 16;
/// No region-internal transition on a byte.
const NONE: u8 = u8::MAX;

/// One region of a grammar: its states in canonical order and their transitions.
#[derive(Debug)]
pub(crate) struct Region {
    /// The states, in breadth-first order from the canonical start: bit `k` of a mask is
    /// `states[k]`.
    states: Box<[StateId]>,
    /// Per state (same order), per byte, the index of the region state its edge leads to, or
    /// [`NONE`] (no edge, an edge out of the region, or the sentinel lead byte).
    next: Box<[[u8; 256]]>,
    /// The structural key of the region (pool key of its table): a hash of `next`.
    pub(crate) key: u128,
}

/// A candidate region of a grammar: its rule and its number among the rule's candidates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RegionId {
    rule: FsmRuleId,
    candidate: u32,
}

/// The tabled regions of a grammar. A region's states are states of one rule (byte edges never
/// leave a rule), so the candidates (strongly connected sets of states) are found rule by rule,
/// when a walk first meets a state of the rule; whether one is worth a table, and its
/// transitions, when a walk first meets one of its states. A grammar with a hundred string
/// properties has a hundred string bodies, and a grammar's 311k states took a component search
/// of 14–23 ms on the first walk, most of it over rules no walk ever meets.
#[derive(Debug)]
pub(crate) struct Regions {
    /// Per rule, its candidates, found on first use.
    rules: Vec<OnceLock<RuleRegions>>,
    vocab: Vocabulary,
    /// Where whether a region is worth a table is asked once per region structure.
    pool: Option<Arc<MaskPool>>,
}

/// The candidate regions of one rule.
#[derive(Debug, Default)]
struct RuleRegions {
    /// The rule's first state.
    first: usize,
    /// Per state of the rule (from `first` on), the candidate it belongs to, or `u32::MAX`.
    candidate: Vec<u32>,
    candidates: Vec<Candidate>,
}

/// A candidate region: its states (sorted) and its region once asked for (`None`: not worth a
/// table).
#[derive(Debug)]
struct Candidate {
    states: Box<[StateId]>,
    region: OnceLock<Option<Region>>,
}

impl Regions {
    /// The candidate regions of `fsm` over `vocab` (see the module docs), found rule by rule on
    /// first use. With a `pool`, whether a region is worth a table is asked once per region
    /// structure (the same string body recurs in every grammar of a server).
    pub(crate) fn new(fsm: &GrammarFsm, vocab: &Vocabulary, pool: Option<Arc<MaskPool>>) -> Self {
        let rules = (0..fsm.rules().len()).map(|_| OnceLock::new()).collect();
        Regions { rules, vocab: vocab.clone(), pool }
    }

    /// The tabled region `s` belongs to and its bit there, the region decided on first use.
    /// (A state of a counted repetition is only ever in the sets of its own rule's entries: see
    /// [`region_target`].)
    pub(crate) fn of(&self, fsm: &GrammarFsm, s: StateId) -> Option<(RegionId, StateMask)> {
        let rule = fsm.rule_of(s);
        let regions = self.rules[rule.index()].get_or_init(|| RuleRegions::new(fsm, rule));
        let c = regions.candidate[s.index() - regions.first];
        if c == u32::MAX {
            return None;
        }
        let Candidate { states, region } = &regions.candidates[c as usize];
        let region = region.get_or_init(|| Region::new(fsm, &self.vocab, states, self.pool.as_deref())).as_ref()?;
        let k = region.states.iter().position(|&t| t == s).expect("a region holds its candidate's states");
        Some((RegionId { rule, candidate: c }, 1 << k))
    }

    /// Region `id`, as [`Regions::of`] returned it.
    pub(crate) fn region(&self, id: RegionId) -> &Region {
        let regions = self.rules[id.rule.index()].get().expect("a rule `of` searched");
        let region = regions.candidates[id.candidate as usize].region.get();
        region.and_then(Option::as_ref).expect("a region `of` returned")
    }
}

impl RuleRegions {
    /// The candidate regions of rule `rule`: the strongly connected sets of its states under
    /// byte edges, of at most [`MAX_REGION_STATES`] states, that hold a cycle.
    fn new(fsm: &GrammarFsm, rule: FsmRuleId) -> Self {
        let states = fsm.rule_states(rule);
        let n = states.len();
        let Some(first) = states.clone().next().map(StateId::index) else { return Self::default() };
        if fsm.dispatch_rules().any(|d| d == rule) {
            return RuleRegions { first, candidate: vec![u32::MAX; n], candidates: Vec::new() };
        }
        let state = |i: usize| StateId::new(first + i);
        let eligible: Vec<bool> =
            (0..n).map(|i| fsm.byte_edges(state(i)).windows(2).all(|w| w[0].hi < w[1].lo)).collect();
        // Edges on the quote alone do not join components (see `lexical_loop::core_of`): the
        // body of a string is a region of its own, the same in every grammar and tabled once
        // through the pool, not part of the grammar-specific loop of an array of strings.
        let successors = |i: usize| {
            let edges = if eligible[i] { fsm.byte_edges(state(i)) } else { &[] };
            let joins = |e: &&crate::fsm::ByteEdge| !e.reads_only(CORE_DELIMITER);
            let local = |e: &crate::fsm::ByteEdge| region_target(fsm, e.target).index() - first;
            edges.iter().filter(joins).map(local).filter(|&t| eligible[t])
        };
        let component = crate::util::scc::strongly_connected_components(n, successors);
        let mut size = vec![0u32; n];
        for (i, &c) in component.iter().enumerate() {
            if eligible[i] {
                size[c as usize] += 1;
            }
        }
        let is_candidate = |i: usize| {
            let c = component[i] as usize;
            let s = state(i);
            eligible[i]
                && size[c] as usize <= MAX_REGION_STATES
                && (size[c] > 1 || fsm.byte_edges(s).iter().any(|e| e.target == s))
        };
        let mut members: crate::util::hash::FastMap<u32, Vec<StateId>> = Default::default();
        for i in (0..n).filter(|&i| is_candidate(i)) {
            members.entry(component[i]).or_default().push(state(i));
        }
        let mut candidates: Vec<Vec<StateId>> = members.into_values().collect();
        candidates.sort_unstable();
        let mut candidate = vec![u32::MAX; n];
        for (c, states) in candidates.iter().enumerate() {
            for s in states {
                candidate[s.index() - first] = c as u32;
            }
        }
        let candidates = candidates
            .into_iter()
            .map(|m| Candidate { states: m.into_boxed_slice(), region: OnceLock::new() })
            .collect();
        RuleRegions { first, candidate, candidates }
    }
}

/// The state byte-path walks hold after an edge into `t`, as far as regions go: `t`, or, when
/// `t` ends an iteration of a counted repetition and reads nothing itself (a character of a
/// string with length bounds), the repetition's start. A region applies to the items of a
/// counted rule only where walks follow it without counts (the entry's own rule, which the
/// isolated parser reads as unbounded, or one no token can finish): there an iteration's end
/// starts the next one (`byte_paths::Closures`), so the body is a loop like a plain rule's.
fn region_target(fsm: &GrammarFsm, t: StateId) -> StateId {
    let rule = fsm.rule(fsm.rule_of(t));
    let ends_iteration = fsm.is_final(t) && fsm.byte_edges(t).is_empty() && fsm.rule_edges(t).is_empty();
    match rule.kind {
        RuleKind::Counted { .. } if ends_iteration && t != rule.start => rule.start,
        _ => t,
    }
}

impl Region {
    /// The region of the states `members` (sorted, one strongly connected set), or `None` when
    /// it is not worth a table.
    fn new(fsm: &GrammarFsm, vocab: &Vocabulary, members: &[StateId], pool: Option<&MaskPool>) -> Option<Self> {
        let inside = |s: StateId| members.binary_search(&s).is_ok();
        let reads = |s: StateId| -> usize {
            let edges = fsm.byte_edges(s).iter().filter(|e| inside(region_target(fsm, e.target)));
            edges.map(|e| vocab.sorted_first_byte_range(e.lo, e.hi).len()).sum()
        };
        let start = members.iter().copied().max_by_key(|&s| (reads(s), std::cmp::Reverse(s)))?;
        if reads(start) < MIN_FIRST_BYTE_TOKENS.min(vocab.sorted_token_ids().len() / 2) {
            return None;
        }
        // Breadth-first from the start over sorted edges: the numbering depends on the
        // structure only, so the table of `next` is the region's structural key.
        let mut states = vec![start];
        let mut i = 0;
        while i < states.len() {
            for e in fsm.byte_edges(states[i]) {
                let t = region_target(fsm, e.target);
                if inside(t) && !states.contains(&t) {
                    states.push(t);
                }
            }
            i += 1;
        }
        let index = |s: StateId| states.iter().position(|&t| t == s);
        let next: Box<[[u8; 256]]> = states
            .iter()
            .map(|&s| {
                let mut row = [NONE; 256];
                for e in fsm.byte_edges(s) {
                    if let Some(k) = index(region_target(fsm, e.target)) {
                        for b in e.lo..=e.hi {
                            if !Sentinel::is_lead(b) {
                                row[b as usize] = k as u8;
                            }
                        }
                    }
                }
                row
            })
            .collect();
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        next.iter().for_each(|row| h.update(row));
        let region = Region { states: states.into_boxed_slice(), next, key: h.digest128() };
        let worth = match pool {
            Some(pool) => pool.region_worth(region.key, || region.worth_a_table(vocab)),
            None => region.worth_a_table(vocab),
        };
        worth.then_some(region)
    }

    /// Whether enough tokens of `vocab` are read entirely inside the region from its start
    /// (estimated on [`SAMPLES`] tokens spread over the sorted vocabulary).
    fn worth_a_table(&self, vocab: &Vocabulary) -> bool {
        let n = vocab.sorted_token_ids().len();
        let step = (n / SAMPLES).max(1);
        let staying = (0..n).step_by(step).filter(|&pos| self.reads(vocab.sorted_token_bytes(pos))).count();
        staying * MIN_STAYING_SHARE >= n.div_ceil(step)
    }

    /// Whether `bytes` are read from the start without leaving the region.
    fn reads(&self, bytes: &[u8]) -> bool {
        let mut k = 0usize;
        bytes.iter().all(|&b| {
            let t = self.next[k][b as usize];
            k = t as usize;
            t != NONE
        })
    }

    /// The region states that read `b` into a region state of `mask`, state by state (the
    /// reference for [`ReadingInto`]).
    #[cfg(test)]
    fn reading_into(&self, b: u8, mask: StateMask) -> StateMask {
        let mut out = 0;
        for (k, row) in self.next.iter().enumerate() {
            let t = row[b as usize];
            if t != NONE && mask >> t & 1 == 1 {
                out |= 1 << k;
            }
        }
        out
    }

    /// The mask of all the region's states.
    fn all(&self) -> StateMask {
        StateMask::MAX >> (MAX_REGION_STATES - self.states.len())
    }
}

/// The region states reading a byte into a set of region states, for one table's pass. A
/// region state has at most one edge per byte into the region, so the states reading `b` into
/// a union of targets are the union of those reading it into each: an answer is the OR of the
/// answers of the mask's states (memoized by a table's pass in [`Answers`]).
struct ReadingInto {
    all: StateMask,
    /// Per byte, its column class (bytes that every region state reads alike share one).
    class: [u8; 256],
    /// Per class and region state `t`, the states reading its bytes into `t`.
    into_state: Vec<[StateMask; MAX_REGION_STATES]>,
}

/// The answers of [`ReadingInto`] met in one table's pass, memoized in a direct-mapped array.
/// A pass asks for 190k answers on a 128k vocabulary, but for at most a few thousand distinct
/// (class, mask) pairs (250–1,400 in MaskBench). Tables of every answer by byte of the mask
/// were up to 540 KiB for a wide region with many classes: their lookups missed the caches,
/// and a wide table took 1.7 ms (1.1 ms with the memo).
struct Answers {
    slots: Box<[Slot]>,
    /// 64 minus the log2 of the slots' count: a key's hash shifted by it is its slot.
    shift: u32,
}

/// One memoized answer: the states reading a byte of `class` into a state of `mask`.
#[derive(Clone, Copy)]
struct Slot {
    mask: StateMask,
    /// The column class, or `u16::MAX` while the slot is empty.
    class: u16,
    answer: StateMask,
}

impl Answers {
    /// The log2 of the slots' count: above the distinct pairs of most passes (96 KiB).
    const SLOTS_LOG2: u32 = 12;

    fn new() -> Self {
        Self::with_slots_log2(Self::SLOTS_LOG2)
    }

    /// A memo of `1 << log2` slots (`log2` from 1 to 63).
    fn with_slots_log2(log2: u32) -> Self {
        let empty = Slot { mask: 0, class: u16::MAX, answer: 0 };
        Answers { slots: vec![empty; 1 << log2].into_boxed_slice(), shift: 64 - log2 }
    }

    /// The answer for (`class`, `mask`), computed by `compute` when its slot holds another.
    #[inline]
    fn of(&mut self, class: u8, mask: StateMask, compute: impl FnOnce(u8, StateMask) -> StateMask) -> StateMask {
        let key = mask ^ (u64::from(class) << 56 | u64::from(class));
        let index = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize;
        let slot = &mut self.slots[index];
        if slot.mask != mask || slot.class != u16::from(class) {
            *slot = Slot { mask, class: class.into(), answer: compute(class, mask) };
        }
        slot.answer
    }
}

impl ReadingInto {
    /// Per byte, its column class: bytes that every region state reads alike share one.
    fn classes(region: &Region) -> [u8; 256] {
        let mut class = [0u8; 256];
        let mut columns: Vec<Vec<u8>> = Vec::new();
        for b in 0..256 {
            let column: Vec<u8> = region.next.iter().map(|row| row[b]).collect();
            let c = columns.iter().position(|c| *c == column).unwrap_or_else(|| {
                columns.push(column);
                columns.len() - 1
            });
            class[b] = c as u8;
        }
        class
    }

    fn new(region: &Region) -> Self {
        let class = Self::classes(region);
        let classes = class.iter().map(|&c| c as usize + 1).max().unwrap_or(1);
        let mut into_state = vec![[0; MAX_REGION_STATES]; classes];
        for b in 0..256 {
            let c = class[b] as usize;
            for (k, row) in region.next.iter().enumerate() {
                let t = row[b];
                if t != NONE {
                    into_state[c][t as usize] |= 1 << k;
                }
            }
        }
        ReadingInto { all: region.all(), class, into_state }
    }

    /// For a region of at most 8 states, every answer: entry `c << 8 | mask` is the states
    /// reading a byte of class `c` into a state of `mask`.
    fn every_tiny_answer(&self) -> Vec<u8> {
        let classes = self.into_state.len();
        let mut answers = vec![0u8; classes << 8];
        for c in 0..classes {
            for mask in 1..256usize {
                // The answer of the mask without its lowest state, and that state's.
                let state = mask.trailing_zeros() as usize;
                let answer = answers[c << 8 | (mask & (mask - 1))] | self.into_state[c][state] as u8;
                answers[c << 8 | mask] = answer;
            }
        }
        answers
    }

    /// The region states that read a byte of column class `c` into a region state of `mask`.
    fn compute(&self, c: u8, mask: StateMask) -> StateMask {
        let mut out = 0;
        let mut bits = mask & self.all;
        while bits != 0 {
            out |= self.into_state[c as usize][bits.trailing_zeros() as usize];
            bits &= bits - 1;
        }
        out
    }
}

/// Per node of a vocabulary's token trie, the states of one region from which every token of
/// the node's subtree, read from the node's depth on, stays in the region (see the module docs).
#[derive(Debug)]
pub(crate) struct RegionTable {
    masks: Masks,
}

/// The masks of a [`RegionTable`], narrow for a region of at most 32 states (the string bodies
/// of most grammars) and tiny for one of at most 8 (a run of a character class): a table is a
/// few MiB for a 128k vocabulary, and a pool keeps dozens.
#[derive(Debug)]
enum Masks {
    Tiny(Box<[u8]>),
    Narrow(Box<[u32]>),
    Wide(Box<[u64]>),
}

impl RegionTable {
    /// The table of `region` over `vocab`'s trie: one pass over the trie's nodes in reverse
    /// preorder, so that every node's mask is final (the meet of what its children allow) when
    /// it is folded into its parent's.
    pub(crate) fn new(vocab: &Vocabulary, region: &Region) -> Self {
        let reading = ReadingInto::new(region);
        let (all, class) = (reading.all, &reading.class);
        if let Ok(tiny) = u8::try_from(all) {
            // Every answer, by class and mask: at most 64 KiB, most often a few hundred bytes.
            let answers = reading.every_tiny_answer();
            let masks = Self::pass(vocab, tiny, class, |c, mask| answers[usize::from(c) << 8 | usize::from(mask)]);
            return RegionTable { masks: Masks::Tiny(masks) };
        }
        let mut answers = Answers::new();
        let mut read = |c: u8, mask: StateMask| answers.of(c, mask, |c, mask| reading.compute(c, mask));
        let masks = match u32::try_from(all) {
            Ok(narrow) => Masks::Narrow(Self::pass(vocab, narrow, class, |c, mask| read(c, mask.into()) as u32)),
            Err(_) => Masks::Wide(Self::pass(vocab, all, class, read)),
        };
        RegionTable { masks }
    }

    /// The pass of [`RegionTable::new`] for a region of the states `all` and the column classes
    /// `class`, with `reading(class, mask)` the region states reading a byte of the class into a
    /// state of `mask`.
    fn pass<M: Copy + std::ops::BitAndAssign>(
        vocab: &Vocabulary,
        all: M,
        class: &[u8; 256],
        mut reading: impl FnMut(u8, M) -> M,
    ) -> Box<[M]> {
        let trie = vocab.trie();
        let mut masks = vec![all; trie.node_count()];
        for node in (0..masks.len()).rev() {
            let parent = trie.parent(node);
            if parent != TokenTrie::ROOT {
                let read = reading(class[trie.byte(node) as usize], masks[node]);
                masks[parent as usize] &= read;
            }
        }
        masks.into_boxed_slice()
    }

    /// The region states from which every token of `node`'s subtree stays in the region.
    #[inline]
    pub(crate) fn mask(&self, node: usize) -> StateMask {
        match &self.masks {
            Masks::Tiny(masks) => masks[node].into(),
            Masks::Narrow(masks) => masks[node].into(),
            Masks::Wide(masks) => masks[node],
        }
    }

    /// Heap bytes used.
    pub(crate) fn memory_usage(&self) -> usize {
        match &self.masks {
            Masks::Tiny(masks) => masks.len(),
            Masks::Narrow(masks) => masks.len() * 4,
            Masks::Wide(masks) => masks.len() * 8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{build_grammar_fsm, FsmLimits};
    use crate::tokenizer::VocabularyBuilder;

    /// Every token over a small alphabet up to length 3, with a multi-byte character and the
    /// sentinel lead byte.
    fn vocab() -> Vocabulary {
        let alphabet: [&[u8]; 6] = [b"a", b"b", b"\"", b"\\", "\u{e9}".as_bytes(), &[0xFF]];
        let mut tokens: Vec<Vec<u8>> = Vec::new();
        let mut layer: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..3 {
            layer = layer.iter().flat_map(|p| alphabet.iter().map(move |c| [p.as_slice(), c].concat())).collect();
            tokens.extend(layer.iter().cloned());
        }
        tokens.push(vec![0xC3]);
        VocabularyBuilder::new().tokens(tokens).build().unwrap()
    }

    /// The grammar's one tabled region (a string body).
    fn only_region<'a>(fsm: &GrammarFsm, regions: &'a Regions) -> &'a Region {
        let found: std::collections::BTreeSet<RegionId> =
            fsm.states().filter_map(|s| regions.of(fsm, s)).map(|(r, _)| r).collect();
        assert_eq!(found.len(), 1, "the string body is one region");
        regions.region(*found.first().unwrap())
    }

    /// Whether `rest` read from region state `k` stays in the region.
    fn stays(region: &Region, mut k: usize, rest: &[u8]) -> bool {
        for &b in rest {
            match region.next[k][b as usize] {
                NONE => return false,
                t => k = t as usize,
            }
        }
        true
    }

    /// A counted repetition of one character (a string with length bounds) is a region: an
    /// iteration's end leads back to its start.
    #[test]
    fn a_counted_character_loops_back_to_its_start() {
        let g = crate::parse_ebnf(r#"root ::= "\"" ([ab] | "\u00e9"){2,1000} "\"" "#, "root").unwrap();
        let fsm = build_grammar_fsm(&g, &FsmLimits::default()).unwrap();
        let counted = fsm.rules().iter().position(|r| matches!(r.kind, RuleKind::Counted { .. })).unwrap();
        let start = fsm.rule(crate::fsm::FsmRuleId::new(counted)).start;
        let regions = Regions::new(&fsm, &vocab(), None);
        let (r, bit) = regions.of(&fsm, start).expect("the counted body is a region");
        let region = regions.region(r);
        let k = bit.trailing_zeros() as usize;
        assert!(stays(region, k, "ab\u{e9}ba".as_bytes()) && !stays(region, k, b"a\""));
    }

    /// A string body with escapes and UTF-8 states: escapes of four more characters (as `\\u`
    /// has) make it a region of more than 8 states (masks of two bytes).
    const LARGE_BODY: &str = r#"root ::= "\"" ([ab] | "\u00e9" | "𐍈" | "\\" ([b"] | "a" [ab] [ab] [ab] [ab]))* "\"" "#;
    /// The same with escapes of 30 more characters (written out: a repetition would be a rule of
    /// its own): a region of more than 32 states (wide masks).
    fn wide_body() -> String {
        let escape = " [ab]".repeat(30);
        format!(r#"root ::= "\"" ([ab] | "\u00e9" | "𐍈" | "\\" ([b"] | "a"{escape}))* "\"" "#)
    }

    #[test]
    fn node_masks_hold_exactly_the_states_reading_the_whole_subtree() {
        let small = r#"root ::= "\"" ([ab] | "\u00e9" | "\\" [ab"])* "\"" "#;
        for (grammar, least_states) in [(small.to_string(), 3), (LARGE_BODY.to_string(), 9), (wide_body(), 33)] {
            let g = crate::parse_ebnf(&grammar, "root").unwrap();
            let fsm = build_grammar_fsm(&g, &FsmLimits::default()).unwrap();
            let vocab = vocab();
            let regions = Regions::new(&fsm, &vocab, None);
            let region = only_region(&fsm, &regions);
            assert!(region.states.len() >= least_states, "{} states", region.states.len());
            let table = RegionTable::new(&vocab, region);
            let (trie, lcp) = (vocab.trie(), vocab.sorted_lcp());
            let mut checked = 0;
            for pos in 0..lcp.len() {
                let bytes = vocab.sorted_token_bytes(pos);
                for depth in lcp[pos] as usize + 1..=bytes.len() {
                    let node = trie.node(lcp, pos, depth);
                    for k in 0..region.states.len() {
                        let want = (pos..trie.subtree_end(node))
                            .all(|j| stays(region, k, &vocab.sorted_token_bytes(j)[depth..]));
                        assert_eq!(table.mask(node) >> k & 1 == 1, want, "node {:?}, state {k}", &bytes[..depth]);
                        checked += want as usize;
                    }
                }
            }
            assert!(checked > 50, "only {checked} (node, state) pairs read their subtree");
        }
    }

    /// A region of at most 8 states has every answer computed up front; they equal the
    /// state-by-state ones for every byte and every mask.
    #[test]
    fn every_tiny_answer_equals_state_by_state() {
        let g = crate::parse_ebnf(r#"root ::= "\"" ([ab] | "\u00e9" | "\\" [ab"])* "\"" "#, "root").unwrap();
        let fsm = build_grammar_fsm(&g, &FsmLimits::default()).unwrap();
        let regions = Regions::new(&fsm, &vocab(), None);
        let region = only_region(&fsm, &regions);
        assert!((3..=8).contains(&region.states.len()), "{} states", region.states.len());
        let reading = ReadingInto::new(region);
        let answers = reading.every_tiny_answer();
        for mask in 0..=region.all() {
            for b in 0..=255u8 {
                let c = usize::from(reading.class[b as usize]);
                let want = region.reading_into(b, mask);
                assert_eq!(StateMask::from(answers[c << 8 | mask as usize]), want, "byte {b:#x}, mask {mask:#b}");
            }
        }
    }

    /// The answers by class and by memo equal the state-by-state ones, for every byte and many
    /// masks, on regions of more than 8 and more than 32 states (the escape states and UTF-8
    /// states of a string). The masks are asked twice, of a pass's memo and of one of two slots
    /// (pairs of different classes and masks share a slot).
    #[test]
    fn memoized_answers_equal_state_by_state() {
        for grammar in [LARGE_BODY.to_string(), wide_body()] {
            let g = crate::parse_ebnf(&grammar, "root").unwrap();
            let fsm = build_grammar_fsm(&g, &FsmLimits::default()).unwrap();
            let regions = Regions::new(&fsm, &vocab(), None);
            let region = only_region(&fsm, &regions);
            assert!(region.states.len() > 8, "body, escapes, and the middles of two characters");
            let reading = ReadingInto::new(region);
            let all = region.all();
            let mut masks: Vec<StateMask> = (0..5000u64).map(|i| all & i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
            masks.extend([0, all]);
            masks.extend((0..region.states.len()).flat_map(|k| [1 << k, all & !(1 << k)]));
            // The memo of a pass, and one of two slots (every other pair shares a slot).
            for mut answers in [Answers::new(), Answers::with_slots_log2(1)] {
                let mut computed = 0;
                for _ in 0..2 {
                    for &mask in &masks {
                        for b in 0..=255u8 {
                            let c = reading.class[b as usize];
                            let want = region.reading_into(b, mask);
                            assert_eq!(reading.compute(c, mask), want, "byte {b:#x}, mask {mask:#b}");
                            let memoized = answers.of(c, mask, |c, mask| {
                                computed += 1;
                                reading.compute(c, mask)
                            });
                            assert_eq!(memoized, want, "byte {b:#x}, mask {mask:#b}");
                        }
                    }
                }
                let asked = 2 * masks.len() * 256;
                assert!(computed < asked / 2, "the memo answers repeated pairs: {computed} of {asked} computed");
            }
        }
    }
}
