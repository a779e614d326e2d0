//! Counted repetitions near their upper bound: which accepted tokens still fit, without the
//! parser.
//!
//! An entry's accepted set is built with the repetition unbounded (see the module docs of
//! [`crate::cache`]); an item with `budget` loop-backs left may trust it only for tokens that
//! loop back at most `budget` times. Bounding that by the token's length in bytes is always
//! sound, but near the bound of a `maxLength` string it sends tens of thousands of accepted
//! tokens to the parser at every step (a 10-character string: every token longer than the
//! characters left).
//!
//! For most repetitions the count a token reaches is *forced*: when the repetition's automaton
//! is deterministic, reads bytes only (no rule edges), ends an iteration only where it can read
//! nothing more (final states have no byte edges), and no byte that begins an iteration may
//! follow the repetition, then at an iteration's end the next byte either begins the next
//! iteration (it cannot follow the rule) or ends the repetition (the start cannot read it). A
//! token therefore has one reading inside the repetition, whose loop-backs a walk of the
//! automaton counts ([`Forced::loops`]); an accepted token is valid for an item exactly when
//! that count is within the item's budget.
//!
//! Items at the repetition's start (a token boundary between characters, the common case) use a
//! per-vocabulary table of every token's count from the start ([`LoopCounts`], pooled like the
//! other vocabulary tables, keyed by the repetition's structure) and its mask of the tokens
//! within a budget, one AND per step. Items elsewhere walk the tokens longer than their budget.
//!
//! The loop-backs of other repetitions whose body cannot be empty are *bounded*: a token may
//! have several readings, but no reading loops back more often than [`Bound`] says. When the
//! body reads bytes only, one edge per byte (an iteration may end where it could read on, or
//! what follows may begin like an iteration: `(\S+\s+){0,29}\S+`, a word count), a walk of
//! the body finds the most loop-backs any reading makes; else (the body calls rules: the items
//! of an array with `maxItems`) each loop-back reads one of the bytes that may begin an
//! iteration, and the token's bytes among those bound it. A token within the budget by its
//! bound is trusted; the other accepted tokens go to the parser (a bound is not a count: it
//! never rejects). [`LoopBounds`] keeps the bounds per entry slot.

use std::sync::{Mutex, OnceLock};

use crate::fsm::{FsmRuleId, GrammarFsm, RuleKind, StateId};
use crate::tokenizer::Vocabulary;
use crate::util::bitset::{allowed_ids, count_allowed, is_allowed, mask_words};
use crate::util::byteset::ByteSet;
use crate::util::sentinel::Sentinel;

/// A repetition whose loop-backs are forced (see the module docs).
#[derive(Debug)]
pub(crate) struct Forced {
    start: StateId,
    /// The structural key of the repetition's automaton (pool key of its [`LoopCounts`]).
    pub(crate) key: u128,
}

/// How a token reads inside a forced repetition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reading {
    /// The token is read with this many loop-backs (it may end the repetition part-way, the
    /// rest being read by what follows).
    Loops(u32),
    /// The repetition cannot read it (the caller asks the parser).
    Unknown,
}

impl Forced {
    /// The reading of `bytes` from `state` (a state of the repetition).
    pub(crate) fn loops(&self, fsm: &GrammarFsm, state: StateId, bytes: &[u8]) -> Reading {
        let mut q = state;
        let mut loops = 0;
        for &b in bytes {
            if Sentinel::is_lead(b) {
                return Reading::Unknown;
            }
            match super::lexical_loop::step(fsm, q, b) {
                Some(next) => q = next,
                // Before any byte of an iteration (the start has no incoming edge): the
                // repetition ends here, if the item's count allows (the entry decided that).
                None if q == self.start => break,
                None if !fsm.is_final(q) => return Reading::Unknown,
                None => match super::lexical_loop::step(fsm, self.start, b) {
                    Some(next) => {
                        loops += 1;
                        q = next;
                    }
                    // The repetition ends; what follows reads the rest.
                    None => break,
                },
            }
        }
        Reading::Loops(loops)
    }

    /// The repetition's start state: items there use a [`LoopCounts`] table.
    pub(crate) fn start(&self) -> StateId {
        self.start
    }
}

/// The forced repetitions of a grammar, by rule, found on first use.
#[derive(Debug)]
pub(crate) struct ForcedRules {
    by_rule: Vec<Option<Forced>>,
    /// Per rule, how the loop-backs of a bounded repetition are bounded (see the module docs;
    /// forced ones too).
    bounded: Vec<Option<Bound>>,
}

/// How the loop-backs of a bounded repetition are bounded (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bound {
    /// By walking the body ([`upper_bound`]).
    Walk,
    /// By the token's bytes that may begin an iteration.
    FirstBytes(ByteSet),
}

impl ForcedRules {
    /// Every counted rule of `fsm` whose loop-backs are forced, given `follow`, the bytes that
    /// may follow each rule.
    pub(crate) fn new(fsm: &GrammarFsm, follow: &[ByteSet]) -> Self {
        let rules = FsmRuleId::range(fsm.rules().len());
        // Bytes only and one edge per byte: walked.
        let walked: Vec<bool> = rules
            .clone()
            .map(|r| {
                fsm.rule_states(r).all(|s| {
                    let edges = fsm.byte_edges(s);
                    fsm.rule_edges(s).is_empty() && edges.windows(2).all(|w| w[0].hi < w[1].lo)
                })
            })
            .collect();
        // The first bytes of rule starts, only when some repetition calls rules.
        let mut first_bytes: Option<Vec<ByteSet>> = None;
        let bounded: Vec<Option<Bound>> = rules
            .clone()
            .map(|r| {
                let rule = fsm.rule(r);
                // Every iteration reads a byte: the start is not final, and calls no rule that
                // may read nothing.
                let reads_a_byte =
                    !fsm.is_final(rule.start) && fsm.rule_edges(rule.start).iter().all(|e| !fsm.rule(e.rule).nullable);
                match rule.kind {
                    RuleKind::Counted { .. } if reads_a_byte && walked[r] => Some(Bound::Walk),
                    RuleKind::Counted { .. } if reads_a_byte => {
                        let first = first_bytes.get_or_insert_with(|| crate::fsm::lookahead::start_first_sets(fsm));
                        Some(Bound::FirstBytes(first[r.index()]))
                    }
                    _ => None,
                }
            })
            .collect();
        let by_rule = rules
            .map(|r| {
                let rule = fsm.rule(r);
                // ... and an iteration ends where nothing more is read.
                let ends_at_its_last_byte =
                    fsm.rule_states(r).all(|s| fsm.byte_edges(s).is_empty() || !fsm.is_final(s));
                let mut first = ByteSet::EMPTY;
                for e in fsm.byte_edges(rule.start) {
                    first.insert_range(e.lo, e.hi);
                }
                // A nullable body (its start is final) may loop back without a byte. A rule
                // that is nullable only for its minimum of 0 is not excluded: at its start, the
                // first byte alone decides between an iteration and what follows.
                let forced =
                    matches!(bounded[r], Some(Bound::Walk)) && ends_at_its_last_byte && !first.intersects(&follow[r]);
                forced.then(|| {
                    let inside = |s: StateId| fsm.rule_of(s) == r;
                    // Where iterations end matters to the counts: final states are marked.
                    let finals = |s: StateId| if fsm.is_final(s) { ByteSet::FULL } else { ByteSet::EMPTY };
                    let key = super::lexical_loop::region_key(fsm, rule.start, inside, finals);
                    Forced { start: rule.start, key }
                })
            })
            .collect();
        ForcedRules { by_rule, bounded }
    }

    /// How the loop-backs of the repetition `state` belongs to are bounded, if they are.
    pub(crate) fn bound(&self, fsm: &GrammarFsm, state: StateId) -> Option<Bound> {
        self.bounded[fsm.rule_of(state)]
    }

    /// The forced repetition `state` belongs to, if any.
    pub(crate) fn of(&self, fsm: &GrammarFsm, state: StateId) -> Option<&Forced> {
        self.by_rule[fsm.rule_of(state)].as_ref()
    }
}

/// Per token of a vocabulary, its loop-backs read from the start of one forced repetition, and
/// the masks of the tokens within each budget (built on first use).
#[derive(Debug)]
pub(crate) struct LoopCounts {
    /// Per token id: the loop-backs, or `u32::MAX` when the repetition cannot read the token
    /// (or it is not a normal token).
    loops: Box<[u32]>,
    /// Per budget below the longest token, the tokens whose loop-backs fit it.
    within: Box<[OnceLock<Box<[u32]>>]>,
}

impl LoopCounts {
    /// The counts of every token of `vocab` read from the start of `forced`.
    pub(crate) fn new(fsm: &GrammarFsm, vocab: &Vocabulary, forced: &Forced) -> Self {
        let mut loops = vec![u32::MAX; vocab.vocab_size()].into_boxed_slice();
        for (pos, &id) in vocab.sorted_token_ids().iter().enumerate() {
            if let Reading::Loops(n) = forced.loops(fsm, forced.start, vocab.sorted_token_bytes(pos)) {
                loops[id as usize] = n;
            }
        }
        Self::from_loops(loops, vocab.max_token_len())
    }

    /// The table of `loops` (per token id, as [`LoopCounts::loops`]), with masks for the budgets
    /// below `budgets`.
    fn from_loops(loops: Box<[u32]>, budgets: usize) -> Self {
        let within = (0..budgets).map(|_| OnceLock::new()).collect();
        LoopCounts { loops, within }
    }

    /// The tokens read with at most `budget` loop-backs (`budget` below the longest token).
    pub(crate) fn within(&self, budget: u32) -> &[u32] {
        self.within[budget as usize].get_or_init(|| self.derive_within(budget as usize))
    }

    /// The mask of [`LoopCounts::within`] `budget`, from the nearest budget's mask already
    /// built: a string's budget shrinks a little at every step, so that mask differs by the
    /// few tokens whose loop-backs lie between the two budgets (a copy and a read of the counts
    /// that sets a few bits, instead of setting a bit for every token within the budget). No
    /// index of the tokens by count is kept: building one (half a megabyte of fresh pages)
    /// cost more in the fill that first needs the table than the reads it saves.
    fn derive_within(&self, budget: usize) -> Box<[u32]> {
        let built = |b: usize| self.within[b].get().map(|words| (b, words));
        let above = (budget + 1..self.within.len()).find_map(built);
        let below = (0..budget).rev().find_map(built);
        let nearest = match (above, below) {
            (Some(a), Some(b)) => Some(if a.0 - budget <= budget - b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        let Some((from, words)) = nearest else {
            let mut words = vec![0u32; mask_words(self.loops.len())];
            for (id, &n) in self.loops.iter().enumerate() {
                if n <= budget as u32 {
                    words[id / 32] |= 1 << (id % 32);
                }
            }
            return words.into_boxed_slice();
        };
        // The tokens whose loop-backs lie between the two budgets: added when the budget
        // grows, removed when it shrinks.
        let mut words = words.to_vec();
        let (lo, hi) = (from.min(budget) as u32, from.max(budget) as u32);
        for (id, &n) in self.loops.iter().enumerate() {
            if lo < n && n <= hi {
                words[id / 32] ^= 1 << (id % 32);
            }
        }
        words.into_boxed_slice()
    }

    /// [`LoopCounts::within`], or `None` (every token) for a budget at least the longest
    /// token's length (no token has more loop-backs than bytes).
    pub(crate) fn within_or_all(&self, budget: u32) -> Option<&[u32]> {
        ((budget as usize) < self.within.len()).then(|| self.within(budget))
    }

    /// Heap bytes used.
    pub(crate) fn memory_usage(&self) -> usize {
        self.loops.len() * 4 + self.within.iter().filter_map(|w| w.get()).map(|w| w.len() * 4).sum::<usize>()
    }
}

/// The most loop-backs any reading of `bytes` from `state`, a state of a repetition bounded by
/// [`Bound::Walk`], makes inside the repetition (see the module docs). A reading may loop back
/// wherever an iteration ends and the start reads the next byte, read on where it is, or leave
/// the repetition where an iteration ends (its count then no longer matters); readings in the
/// same state keep the most.
pub(crate) fn upper_bound(fsm: &GrammarFsm, state: StateId, bytes: &[u8]) -> u32 {
    let start = fsm.rule(fsm.rule_of(state)).start;
    // At most MAX_READINGS states at once, on the stack (a bound is computed for up to the
    // whole vocabulary at a small budget); beyond that, the token's length bounds it.
    let mut live = Readings::default();
    live.add(state, 0);
    let mut most = 0;
    for &b in bytes {
        if Sentinel::is_lead(b) {
            break;
        }
        let mut next = Readings::default();
        for &(s, n) in live.as_slice() {
            if let Some(t) = super::lexical_loop::step(fsm, s, b) {
                next.add(t, n);
            }
            if fsm.is_final(s) {
                if let Some(t) = super::lexical_loop::step(fsm, start, b) {
                    next.add(t, n + 1);
                    most = most.max(n + 1);
                }
            }
        }
        if next.overflowed {
            return bytes.len() as u32;
        }
        if next.len == 0 {
            break;
        }
        live = next;
    }
    most
}

/// The most readings [`upper_bound`] follows at once.
const MAX_READINGS: usize = 8;

/// The readings alive in [`upper_bound`]: a state, and the most loop-backs of those there.
#[derive(Default)]
struct Readings {
    at: [(StateId, u32); MAX_READINGS],
    len: usize,
    /// A reading did not fit.
    overflowed: bool,
}

impl Readings {
    fn as_slice(&self) -> &[(StateId, u32)] {
        &self.at[..self.len]
    }

    fn add(&mut self, t: StateId, n: u32) {
        match self.at[..self.len].iter_mut().find(|(q, _)| *q == t) {
            Some((_, m)) => *m = (*m).max(n),
            None if self.len < MAX_READINGS => {
                self.at[self.len] = (t, n);
                self.len += 1;
            }
            None => self.overflowed = true,
        }
    }
}

/// The bounds of the loop-backs ([`Bound`]) of the tokens the entry of one slot of a bounded
/// repetition's state accepts, for the tokens that need one. No token loops back more often
/// than it has bytes, so only tokens longer than a budget need a bound; a string's budget
/// shrinks a little at every step, so the bounds are computed, longest tokens first, for those
/// longer than the smallest budget asked so far, and indexed by bound: an item then sends the
/// parser the few tokens beyond its budget instead of every token longer than it.
#[derive(Debug)]
pub(crate) struct LoopBounds {
    state: StateId,
    bound: Bound,
    /// (A std mutex: matchers of the grammar share the bounds; see `cache::MaskCache`.)
    so_far: Mutex<BoundsSoFar>,
}

#[derive(Debug)]
struct BoundsSoFar {
    /// The bound of every normal token longer than this many bytes is indexed.
    longer_than: usize,
    /// Per bound from 1 on (index `bound - 1`), the tokens with that bound.
    by_bound: Vec<Vec<u32>>,
}

impl LoopBounds {
    /// No bound known yet, for items of `state` (bounded by `bound`) over `vocab`.
    pub(crate) fn new(state: StateId, bound: Bound, vocab: &Vocabulary) -> Self {
        let so_far = BoundsSoFar { longer_than: vocab.max_token_len(), by_bound: Vec::new() };
        LoopBounds { state, bound, so_far: Mutex::new(so_far) }
    }

    /// The bound of a token of `bytes`.
    fn of(&self, fsm: &GrammarFsm, bytes: &[u8]) -> usize {
        match &self.bound {
            Bound::Walk => upper_bound(fsm, self.state, bytes) as usize,
            Bound::FirstBytes(first) => bytes.iter().filter(|&&b| first.contains(b)).count(),
        }
    }

    /// Calls `beyond` with every normal token of `vocab` that `accepted` (a bitset by id) holds
    /// and whose bound exceeds `budget`. `accepted` (the tokens the entry of the bounds' slot
    /// accepts) must be the same set at every call: only its tokens get a bound (most tokens of
    /// a list item's state are not accepted, and a walk of the whole vocabulary cost 10 ms at
    /// budget 0).
    pub(crate) fn for_each_beyond(
        &self,
        fsm: &GrammarFsm,
        vocab: &Vocabulary,
        budget: u32,
        accepted: &[u32],
        beyond: impl FnMut(u32),
    ) {
        let mut so_far = self.so_far.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let budget = budget as usize;
        if budget < so_far.longer_than {
            let newly_longer = (budget + 1)..=so_far.longer_than;
            for id in accepted_of_lengths(vocab, &newly_longer, accepted) {
                let bound = self.of(fsm, vocab.token_bytes(id));
                if bound > 0 {
                    if so_far.by_bound.len() < bound {
                        so_far.by_bound.resize_with(bound, Vec::new);
                    }
                    so_far.by_bound[bound - 1].push(id);
                }
            }
            so_far.longer_than = budget;
        }
        so_far.by_bound.iter().skip(budget).flatten().copied().for_each(beyond);
    }

    /// Heap bytes used.
    pub(crate) fn memory_usage(&self) -> usize {
        let so_far = self.so_far.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        so_far.by_bound.iter().map(|ids| ids.capacity() * 4).sum()
    }
}

/// The normal tokens of `accepted` (a bitset by id) whose length in bytes is in `lengths`: from
/// the tokens of those lengths or from the accepted ones, whichever are fewer (an enum item's
/// state, a state per letter of each name, accepts a few dozen tokens, and each of its budgets
/// would otherwise test a hundred thousand).
pub(crate) fn accepted_of_lengths(
    vocab: &Vocabulary,
    lengths: &std::ops::RangeInclusive<usize>,
    accepted: &[u32],
) -> Vec<u32> {
    let known = vocab.tokens_longer_than(*lengths.end()).len();
    let of_lengths = &vocab.tokens_longer_than(lengths.start() - 1)[known..];
    if of_lengths.len() <= count_allowed(accepted) {
        return of_lengths.iter().copied().filter(|&id| is_allowed(accepted, id)).collect();
    }
    let normal = vocab.normal_token_mask();
    allowed_ids(accepted)
        .map(|id| id as u32)
        .filter(|&id| is_allowed(normal, id) && lengths.contains(&vocab.token_bytes(id).len()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word count of at most ten words, and the start of its counted repetition.
    fn word_count() -> (GrammarFsm, StateId) {
        let g = crate::parse_ebnf(r#"r ::= ([ab]+ " "+){0,9} [ab]+ "!""#, "r").unwrap();
        let limits = crate::fsm::FsmLimits { max_expanded_repeat: 2, ..crate::fsm::FsmLimits::default() };
        let fsm = crate::fsm::build_grammar_fsm(&g, &limits).unwrap();
        let counted = fsm.rules().iter().position(|r| matches!(r.kind, RuleKind::Counted { .. })).unwrap();
        let start = fsm.rule(FsmRuleId::new(counted)).start;
        (fsm, start)
    }

    /// A seeded pseudo-random number below `n` per call (xorshift64).
    fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    /// The bound of a word count's loop-backs is the most new words any reading starts.
    #[test]
    fn a_word_count_is_bounded_by_the_words_a_token_starts() {
        let (fsm, start) = word_count();
        let in_word = super::super::lexical_loop::step(&fsm, start, b'a').unwrap();
        for (from, text, bound) in [
            (start, "ab ab a", 2),
            (start, "ab", 0),
            (start, "   ", 0),
            (in_word, " a", 1),
            (in_word, "b  a b ", 2),
            (in_word, "!", 0),
        ] {
            assert_eq!(upper_bound(&fsm, from, text.as_bytes()), bound, "{text:?}");
        }
    }

    /// Every budget's mask, whatever order the budgets are asked in (so whichever neighbour
    /// it is derived from), equals the tokens whose loop-backs fit it.
    #[test]
    fn a_derived_budget_mask_equals_the_tokens_within_it() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..20 {
            let budgets = 1 + next(40) as usize;
            let loops: Box<[u32]> = (0..1 + next(300))
                .map(|_| if next(5) == 0 { u32::MAX } else { next(budgets as u64 + 3) as u32 })
                .collect();
            let counts = LoopCounts::from_loops(loops.clone(), budgets);
            for _ in 0..budgets * 2 {
                let budget = next(budgets as u64) as u32;
                let words = counts.within(budget);
                for (id, &n) in loops.iter().enumerate() {
                    let within = words[id / 32] >> (id % 32) & 1 == 1;
                    assert_eq!(within, n <= budget, "token {id} with {n} loop-backs, budget {budget}");
                }
            }
        }
    }

    /// The tokens beyond a budget are the accepted tokens whose bound exceeds it, whether they
    /// are found among the tokens of each length (most tokens accepted) or among the accepted
    /// ones (few), and whatever order the budgets come in.
    #[test]
    fn the_tokens_beyond_a_budget_are_the_accepted_ones_bounded_above_it() {
        let (fsm, start) = word_count();
        let texts = ["a", "b", "ab", " a", "a b", "ab ab", "a b a", "ab ab a", "b  a b ", "a a a a", " ", "!"];
        let vocab = crate::tokenizer::VocabularyBuilder::new().tokens(texts).build().unwrap();
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for round in 0..40 {
            // Every other round accepts one or two tokens only: the accepted tokens are listed.
            let mut accepted = vec![0u32; vocab.vocab_size().div_ceil(32)];
            for id in 0..texts.len() as u32 {
                if next(if round % 2 == 0 { 2 } else { 8 }) == 0 {
                    accepted[id as usize / 32] |= 1 << (id % 32);
                }
            }
            let bounds = LoopBounds::new(start, Bound::Walk, &vocab);
            for _ in 0..6 {
                let budget = next(8) as u32;
                let mut beyond = Vec::new();
                bounds.for_each_beyond(&fsm, &vocab, budget, &accepted, |id| beyond.push(id));
                beyond.sort_unstable();
                let expected: Vec<u32> = (0..texts.len() as u32)
                    .filter(|&id| is_allowed(&accepted, id))
                    .filter(|&id| upper_bound(&fsm, start, vocab.token_bytes(id)) > budget)
                    .collect();
                assert_eq!(beyond, expected, "budget {budget}, accepted {accepted:?}");
            }
        }
    }
}
