//! Layer 3: byte-level automata, one per grammar rule.
//!
//! Every rule body becomes a finite automaton whose edges read a **byte range**, or reference
//! another **rule** (the Earley parser predicts into it and resumes on completion). Epsilon
//! edges exist only in Thompson construction's automaton (`nfa::Nfa`); the construction passes
//! (`flat::FlatFsm`, see `determinize::optimize`) remove them and determinize when that stays
//! small, and hand each rule's automaton over as an [`Fsm`] to be frozen. Determinism matters twice: it keeps
//! Earley sets small (one item per position instead of one per NFA path), and it makes the
//! structural hash of an automaton canonical (the cross-grammar cache key, XGrammar-2 §3.3).
//!
//! All rule automata of a grammar are frozen together into one [`GrammarFsm`]: states are
//! numbered globally, edges live in two CSR arrays sorted by label, so an Earley item needs only
//! a global [`StateId`] (one `u32`) and the parser's hot loop reads contiguous memory.
//!
//! Repetition `R{m,n}` is expanded into the automaton when that is small (`[0-9]{4}`), and
//! otherwise becomes a **counted rule** (XGrammar-2 §3.6): the automaton of `R` alone, whose
//! final states loop back to its start while the Earley item counts the iterations, so that
//! compile time and memory do not grow with the bounds (`maxLength: 100000`). Keeping `R`'s
//! automaton inline (rather than a loop over a reference to a rule `R`) means a token spanning
//! several iterations stays inside one automaton, which the mask cache can classify without
//! consulting the context.

mod attrs;
mod build;
mod check;
mod class;
mod determinize;
mod flat;
pub mod follow;
pub mod hash;
pub mod lookahead;
mod minimize;
mod nfa;
mod rule_cache;
mod simulation;
mod suffixes;
mod tag_dispatch;
mod token;

pub use build::{build_grammar_fsm, build_grammar_fsm_cached, FsmLimits};
pub use rule_cache::{RuleFsmCache, RuleFsmCacheStats};
use tag_dispatch::MID_CHAR;

use crate::grammar::{Grammar, RuleId};
use crate::util::id::define_id;

/// Token ids as sorted, disjoint inclusive ranges.
pub type IdRanges = Box<[(u32, u32)]>;

define_id! {
    /// A state of a [`GrammarFsm`] (numbered globally over all rules).
    pub struct StateId;
}

define_id! {
    /// A rule of a [`GrammarFsm`], an index into [`GrammarFsm::rules`]: the grammar's own rules
    /// keep their [`RuleId`] numbers, synthetic rules (counted repetitions) follow.
    pub struct FsmRuleId;
}

impl From<RuleId> for FsmRuleId {
    #[inline]
    fn from(r: RuleId) -> Self {
        FsmRuleId::from_u32(r.as_u32())
    }
}

/// An edge label while building. Ordered bytes first (by `lo`, then `hi`), then rules (by id),
/// then epsilon.
#[derive(Clone, Copy, Debug)]
pub enum Label {
    /// One byte in `lo..=hi`.
    Bytes(u8, u8),
    /// A complete match of a rule.
    Rule(u32),
    /// No input.
    Epsilon,
}

impl Label {
    /// The label as one integer with the same order and equality. Comparisons go through it
    /// (written by hand, `#[inline]`): the derived ones were not inlined across codegen units,
    /// and the construction passes sort and compare labels in their inner loops.
    #[inline]
    fn key(self) -> u64 {
        match self {
            Label::Bytes(lo, hi) => (lo as u64) << 8 | hi as u64,
            Label::Rule(r) => 1 << 32 | r as u64,
            Label::Epsilon => 2 << 32,
        }
    }
}

impl PartialEq for Label {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Label {}

impl std::hash::Hash for Label {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.key());
    }
}

impl PartialOrd for Label {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Label {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// One rule's automaton as it is frozen: the construction passes' result, or a `TagDispatch`
/// automaton built directly (no epsilon edges once the passes ran).
#[derive(Clone, Debug, Default)]
pub struct Fsm {
    /// Outgoing edges per state: (label, target).
    pub edges: Vec<Vec<(Label, u32)>>,
    /// Accepting states.
    pub finals: Vec<bool>,
    /// The initial state.
    pub start: u32,
}

impl Fsm {
    /// Adds a state and returns its id.
    pub fn add_state(&mut self) -> u32 {
        self.edges.push(Vec::new());
        self.finals.push(false);
        (self.edges.len() - 1) as u32
    }
    /// Adds an edge.
    pub fn add_edge(&mut self, from: u32, label: Label, to: u32) {
        self.edges[from as usize].push((label, to));
    }
    /// The number of states.
    pub fn state_len(&self) -> usize {
        self.edges.len()
    }
}

/// How a rule of the automaton set behaves.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum RuleKind {
    /// An ordinary rule: its automaton accepts when it reaches a final state.
    Plain,
    /// A counted repetition of a body: the automaton is the body's, plus a start state with no
    /// incoming edges. The Earley item's count is the number of finished iterations. At the
    /// start state the rule may end when `count >= min`; at a state final for the body, the
    /// current iteration may end, so the rule may end when `count + 1 >= min`, and a new
    /// iteration may begin (back at the start, with `count + 1`) when `count + 1 < max`.
    /// Iterations that consume nothing never count, so `min` is 0 when the body is nullable.
    Counted {
        /// Least count.
        min: u32,
        /// Largest count (`u32::MAX` for unbounded).
        max: u32,
    },
}

/// One rule of a [`GrammarFsm`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FsmRule {
    /// The rule's name (synthetic rules get `parent_name$rep`-style names).
    pub name: String,
    /// Its initial state.
    pub start: StateId,
    /// How it accepts.
    pub kind: RuleKind,
    /// Whether it matches the empty string.
    pub nullable: bool,
}

/// A byte edge of the frozen automaton.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub struct ByteEdge {
    /// Lowest byte.
    pub lo: u8,
    /// Highest byte (inclusive).
    pub hi: u8,
    /// Target state.
    pub target: StateId,
}

impl ByteEdge {
    /// Whether the edge reads `b` and no other byte.
    #[inline]
    pub fn reads_only(&self, b: u8) -> bool {
        self.lo == b && self.hi == b
    }
}

/// A rule-reference edge of the frozen automaton.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub struct RuleEdge {
    /// The referenced rule.
    pub rule: FsmRuleId,
    /// Target state once the rule has matched.
    pub target: StateId,
}

/// The frozen automata of every rule of a grammar, with global state numbering.
///
/// Rules `0..grammar.rules().len()` are the grammar's own rules with the same ids; synthetic
/// rules (counted repetitions and their bodies) follow.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GrammarFsm {
    pub(crate) rules: Vec<FsmRule>,
    pub(crate) root: FsmRuleId,
    pub(crate) state_rule: Vec<FsmRuleId>,
    pub(crate) finals: Vec<bool>,
    pub(crate) byte_offsets: Vec<u32>,
    pub(crate) byte_edges: Vec<ByteEdge>,
    pub(crate) rule_offsets: Vec<u32>,
    pub(crate) rule_edges: Vec<RuleEdge>,
    /// Per state that can read a token sentinel, the token ids it accepts (sorted by state).
    pub(crate) token_sets: Vec<(StateId, IdRanges)>,
    /// Per `TagDispatch` rule (sorted by first state): its first state and, per state, the
    /// Aho-Corasick depth of free-text states (`MID_CHAR` inside a character, `u32::MAX` for
    /// other states). Dense per rule so that the cache's free-text walk looks states up in O(1).
    pub(crate) free_text: Vec<(StateId, Box<[u32]>)>,
}

impl GrammarFsm {
    /// Builds the automata of `grammar` with default limits.
    ///
    /// # Errors
    /// [`crate::fsm::FsmLimits`] exceeded.
    pub fn new(grammar: &Grammar) -> Result<Self, crate::grammar::GrammarError> {
        build_grammar_fsm(grammar, &FsmLimits::default())
    }
    /// All rules (grammar rules first, then synthetic ones).
    #[inline]
    pub fn rules(&self) -> &[FsmRule] {
        &self.rules
    }
    /// The root rule.
    #[inline]
    pub fn root(&self) -> FsmRuleId {
        self.root
    }
    /// The number of states.
    #[inline]
    pub fn state_len(&self) -> usize {
        self.finals.len()
    }
    /// The rule a state belongs to.
    #[inline]
    pub fn rule_of(&self, s: StateId) -> FsmRuleId {
        self.state_rule[s]
    }
    /// The states of rule `r` (a rule's states are numbered together, rule by rule).
    pub fn rule_states(&self, r: FsmRuleId) -> crate::util::id::IdRange<StateId> {
        let start = self.state_rule.partition_point(|&x| x < r);
        let end = start + self.state_rule[start..].partition_point(|&x| x == r);
        crate::util::id::IdRange::new(StateId::new(start), StateId::new(end))
    }
    /// The rule `r`.
    #[inline]
    pub fn rule(&self, r: FsmRuleId) -> &FsmRule {
        &self.rules[r]
    }
    /// Every state, in order.
    #[inline]
    pub fn states(&self) -> crate::util::id::IdRange<StateId> {
        StateId::range(self.state_len())
    }
    /// Whether `s` is final (for counted rules: when the count allows it).
    #[inline]
    pub fn is_final(&self, s: StateId) -> bool {
        self.finals[s]
    }
    /// The byte edges of `s`, sorted by `lo`, disjoint in deterministic states.
    #[inline]
    pub fn byte_edges(&self, s: StateId) -> &[ByteEdge] {
        &self.byte_edges[self.byte_offsets[s] as usize..self.byte_offsets[s.index() + 1] as usize]
    }
    /// The rule edges of `s`, sorted by rule.
    #[inline]
    pub fn rule_edges(&self, s: StateId) -> &[RuleEdge] {
        &self.rule_edges[self.rule_offsets[s] as usize..self.rule_offsets[s.index() + 1] as usize]
    }
    /// The bytes some state of `states` can read, as a 256-bit set (for the parsers'
    /// `next_bytes`).
    pub fn next_bytes(&self, states: impl IntoIterator<Item = StateId>) -> [u64; 4] {
        let mut set = [0u64; 4];
        for s in states {
            for e in self.byte_edges(s) {
                for b in e.lo..=e.hi {
                    set[(b >> 6) as usize] |= 1 << (b & 63);
                }
            }
        }
        set
    }
    /// Whether state `s` can read a token by id (has an edge on the sentinel lead byte `0xFF`;
    /// see [`crate::util::sentinel::Sentinel`]).
    #[inline]
    pub fn reads_token(&self, s: StateId) -> bool {
        token::reads_sentinel(self, s)
    }
    /// The token ids state `s` accepts by id, as sorted disjoint inclusive ranges (empty when
    /// it reads no token). Ids are not limited to a vocabulary: a negated set reaches `2^24 - 1`.
    pub fn token_ids(&self, s: StateId) -> &[(u32, u32)] {
        match self.token_sets.binary_search_by_key(&s, |e| e.0) {
            Ok(i) => &self.token_sets[i].1,
            Err(_) => &[],
        }
    }
    /// For a free-text state of a `TagDispatch` rule at a character boundary, the length of the
    /// pending trigger/exclude/stop-string prefix: after reading more bytes than that from `s`
    /// without completing a pattern, the rule is where the same bytes lead from its start state.
    /// `None` for every other state. The mask cache uses it to classify most tokens without a
    /// parser walk.
    #[inline]
    pub fn free_text_depth(&self, s: StateId) -> Option<u32> {
        self.free_text_raw(s).filter(|&d| d < MID_CHAR)
    }
    /// Whether `s` is a free-text state of a `TagDispatch` rule (at a character boundary or
    /// inside a character).
    #[inline]
    pub fn is_free_text(&self, s: StateId) -> bool {
        self.free_text_raw(s).is_some()
    }

    /// The recorded depth of `s` if it is a free-text state (see `free_text`).
    #[inline]
    fn free_text_raw(&self, s: StateId) -> Option<u32> {
        let i = self.free_text.partition_point(|e| e.0 <= s).checked_sub(1)?;
        let (first, depths) = &self.free_text[i];
        depths.get(s.index() - first.index()).copied().filter(|&d| d != u32::MAX)
    }

    /// The `TagDispatch` rules that have free-text states.
    pub(crate) fn dispatch_rules(&self) -> impl Iterator<Item = FsmRuleId> + '_ {
        self.free_text.iter().map(|e| self.rule_of(e.0))
    }
    /// The grammar rule id of rule index `r`, if it is one of the grammar's own rules.
    pub fn grammar_rule(&self, r: FsmRuleId, grammar: &Grammar) -> Option<RuleId> {
        (r.index() < grammar.rules().len()).then(|| RuleId::new(r.index()))
    }
    /// Heap bytes used.
    pub fn memory_usage(&self) -> usize {
        self.rules.capacity() * std::mem::size_of::<FsmRule>()
            + self.rules.iter().map(|r| r.name.capacity()).sum::<usize>()
            + self.state_rule.capacity() * 4
            + self.finals.capacity()
            + self.byte_offsets.capacity() * 4
            + self.byte_edges.capacity() * std::mem::size_of::<ByteEdge>()
            + self.rule_offsets.capacity() * 4
            + self.rule_edges.capacity() * std::mem::size_of::<RuleEdge>()
            + self.token_sets.iter().map(|e| 8 + e.1.len() * 8).sum::<usize>()
            + self.free_text.iter().map(|e| 16 + e.1.len() * 4).sum::<usize>()
    }
}

/// Every word of at most `max_len` symbols over `symbols`, shortest first (for tests that
/// compare an automaton's language with a reference on all short words).
#[cfg(test)]
pub(crate) fn all_words<T: Clone>(symbols: &[T], max_len: usize) -> Vec<Vec<T>> {
    let mut all = vec![Vec::new()];
    let mut layer: Vec<Vec<T>> = vec![Vec::new()];
    for _ in 0..max_len {
        layer = layer
            .iter()
            .flat_map(|w| {
                symbols.iter().map(move |s| {
                    let mut v = w.clone();
                    v.push(s.clone());
                    v
                })
            })
            .collect();
        all.extend(layer.iter().cloned());
    }
    all
}

#[cfg(test)]
mod tests {
    use super::Label;

    /// The hand-written order is the one the passes rely on (and the derived one was): bytes by
    /// `lo` then `hi`, then rules by id, then epsilon.
    #[test]
    fn labels_order_bytes_then_rules_then_epsilon() {
        let mut labels = vec![
            Label::Epsilon,
            Label::Rule(u32::MAX),
            Label::Bytes(0xFF, 0xFF),
            Label::Rule(0),
            Label::Bytes(3, 9),
            Label::Bytes(3, 4),
            Label::Bytes(0, 0xFF),
        ];
        labels.sort();
        let want = [
            Label::Bytes(0, 0xFF),
            Label::Bytes(3, 4),
            Label::Bytes(3, 9),
            Label::Bytes(0xFF, 0xFF),
            Label::Rule(0),
            Label::Rule(u32::MAX),
            Label::Epsilon,
        ];
        assert_eq!(labels, want);
        assert_ne!(Label::Bytes(0, 1), Label::Rule(1));
    }

    /// A rule's states are exactly those `rule_of` gives it; a read-back automaton whose rules'
    /// states are not numbered together is malformed (`rule_states` could not find them).
    #[test]
    fn rule_states_are_the_states_of_their_rule() {
        let g = crate::parse_ebnf(
            r#"root ::= "[" item ("," item)* "]"
            item ::= [a-z]+ | "\"" [^"]* "\"" "#,
            "root",
        )
        .unwrap();
        let mut fsm = super::build_grammar_fsm(&g, &super::FsmLimits::default()).unwrap();
        for (i, _) in fsm.rules().iter().enumerate() {
            let r = super::FsmRuleId::new(i);
            let want: Vec<_> = fsm.states().filter(|&s| fsm.rule_of(s) == r).collect();
            assert!(!want.is_empty());
            assert_eq!(fsm.rule_states(r).collect::<Vec<_>>(), want, "rule {i}");
        }
        assert_eq!(fsm.check_structure(), Ok(()));
        let first = fsm.rule(super::FsmRuleId::new(0)).start;
        let other = fsm.states().find(|&s| fsm.rule_of(s) == fsm.rule_of(first) && s != first).unwrap();
        let later = fsm.states().find(|&s| s > other && fsm.rule_of(s) != fsm.rule_of(first)).unwrap();
        fsm.state_rule[other] = fsm.rule_of(later);
        let err = fsm.check_structure().unwrap_err();
        assert!(err.contains("belongs to an earlier rule"), "{err}");
    }
}
