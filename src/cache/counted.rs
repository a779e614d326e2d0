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
//! within a budget, one AND per step. Items elsewhere walk the tokens longer than their budget,
//! and so do items at the start while no table is built and at most [`WALKED_LONG_TOKENS`]
//! tokens are longer than their budget: the table's walk of the whole vocabulary is then paid
//! only by a string that comes near its bound.
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

use super::rule_steps::{RuleSteps, StateRows};

/// A repetition whose loop-backs are forced (see the module docs).
#[derive(Debug)]
pub(crate) struct Forced {
    start: StateId,
    /// The structural key of the repetition's automaton (pool key of its [`LoopCounts`]).
    pub(crate) key: u128,
    /// Its byte steps, tabled on first use.
    steps: OnceLock<RuleSteps>,
}

/// One byte read in a forced repetition ([`Forced::loops`]).
enum Read {
    /// On at this state, with this many loop-backs.
    On((StateId, u32)),
    /// The repetition ends before the byte.
    Ends,
    /// The repetition cannot read the byte.
    Unknown,
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
        let steps = self.steps(fsm);
        let mut at = (state, 0);
        for &b in bytes {
            match self.read(fsm, steps, at, b) {
                Read::On(next) => at = next,
                Read::Ends => break,
                Read::Unknown => return Reading::Unknown,
            }
        }
        Reading::Loops(at.1)
    }

    /// Reads `b` at `(state, loops)`.
    #[inline]
    fn read(&self, fsm: &GrammarFsm, steps: &RuleSteps, (q, loops): (StateId, u32), b: u8) -> Read {
        if Sentinel::is_lead(b) {
            return Read::Unknown;
        }
        match steps.step(fsm, q, b) {
            Some(next) => Read::On((next, loops)),
            // Before any byte of an iteration (the start has no incoming edge): the
            // repetition ends here, if the item's count allows (the entry decided that).
            None if q == self.start => Read::Ends,
            None if !fsm.is_final(q) => Read::Unknown,
            None => match steps.step(fsm, self.start, b) {
                Some(next) => Read::On((next, loops + 1)),
                // The repetition ends; what follows reads the rest.
                None => Read::Ends,
            },
        }
    }

    /// The repetition's byte steps.
    fn steps(&self, fsm: &GrammarFsm) -> &RuleSteps {
        self.steps.get_or_init(|| RuleSteps::new(fsm, fsm.rule_of(self.start)))
    }

    /// The repetition's start state: items there use a [`LoopCounts`] table.
    pub(crate) fn start(&self) -> StateId {
        self.start
    }
}

/// The forced and bounded repetitions of a grammar, found per rule on first use (a grammar
/// of a length-counted pattern has hundreds of thousands of states, and a pass over all of
/// them per fact cost 4 ms in the first fill that met a bound).
#[derive(Debug)]
pub(crate) struct ForcedRules {
    facts: Box<[OnceLock<RuleFacts>]>,
    /// Per rule, the state its only call returns to (see [`return_states`]), on first use.
    returns: OnceLock<Vec<Option<StateId>>>,
    /// Per rule, the bytes its start may read first, on first use (only a repetition whose
    /// body calls rules needs them).
    first_bytes: OnceLock<Vec<ByteSet>>,
}

/// How one rule's loop-backs are known.
#[derive(Debug, Default)]
struct RuleFacts {
    bound: Option<Bound>,
    forced: Option<Forced>,
}

/// How the loop-backs of a bounded repetition are bounded (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bound {
    /// By walking the body ([`upper_bound`]).
    Walk,
    /// By walking the body and, where a reading leaves the repetition, its caller from the
    /// state its only call returns to ([`Verdict::of_readings`]).
    WalkOn(StateId),
    /// By the token's bytes that may begin an iteration.
    FirstBytes(ByteSet),
}

impl ForcedRules {
    /// Nothing known yet about the rules of `fsm`.
    pub(crate) fn new(fsm: &GrammarFsm) -> Self {
        let facts = (0..fsm.rules().len()).map(|_| OnceLock::new()).collect();
        ForcedRules { facts, returns: OnceLock::new(), first_bytes: OnceLock::new() }
    }

    /// How the loop-backs of the repetition `state` belongs to are bounded, if they are;
    /// `follow` holds the bytes that may follow each rule.
    pub(crate) fn bound(&self, fsm: &GrammarFsm, follow: &[ByteSet], state: StateId) -> Option<Bound> {
        self.facts(fsm, follow, fsm.rule_of(state)).bound
    }

    /// The forced repetition `state` belongs to, if any.
    pub(crate) fn of(&self, fsm: &GrammarFsm, follow: &[ByteSet], state: StateId) -> Option<&Forced> {
        self.facts(fsm, follow, fsm.rule_of(state)).forced.as_ref()
    }

    fn facts(&self, fsm: &GrammarFsm, follow: &[ByteSet], r: FsmRuleId) -> &RuleFacts {
        self.facts[r.index()].get_or_init(|| self.find(fsm, follow, r))
    }

    /// The facts of rule `r`.
    fn find(&self, fsm: &GrammarFsm, follow: &[ByteSet], r: FsmRuleId) -> RuleFacts {
        let rule = fsm.rule(r);
        let RuleKind::Counted { min, .. } = rule.kind else { return RuleFacts::default() };
        // Every iteration reads a byte: the start is not final, and calls no rule that may
        // read nothing.
        let reads_a_byte =
            !fsm.is_final(rule.start) && fsm.rule_edges(rule.start).iter().all(|e| !fsm.rule(e.rule).nullable);
        if !reads_a_byte {
            return RuleFacts::default();
        }
        // Bytes only and one edge per byte: walked.
        let walked = fsm.rule_states(r).all(|s| {
            let edges = fsm.byte_edges(s);
            fsm.rule_edges(s).is_empty() && edges.windows(2).all(|w| w[0].hi < w[1].lo)
        });
        let bound = match (walked, min) {
            (true, 0) => self.returns.get_or_init(|| return_states(fsm))[r.index()].map_or(Bound::Walk, Bound::WalkOn),
            (true, _) => Bound::Walk,
            (false, _) => {
                let first = self.first_bytes.get_or_init(|| crate::fsm::lookahead::start_first_sets(fsm));
                Bound::FirstBytes(first[r.index()])
            }
        };
        // ... and an iteration ends where nothing more is read.
        let ends_at_its_last_byte = fsm.rule_states(r).all(|s| fsm.byte_edges(s).is_empty() || !fsm.is_final(s));
        let mut first = ByteSet::EMPTY;
        for e in fsm.byte_edges(rule.start) {
            first.insert_range(e.lo, e.hi);
        }
        // A nullable body (its start is final) may loop back without a byte. A rule that is
        // nullable only for its minimum of 0 is not excluded: at its start, the first byte
        // alone decides between an iteration and what follows.
        let forced = walked && ends_at_its_last_byte && !first.intersects(&follow[r]);
        let forced = forced.then(|| {
            let inside = |s: StateId| fsm.rule_of(s) == r;
            // Where iterations end matters to the counts: final states are marked.
            let finals = |s: StateId| if fsm.is_final(s) { ByteSet::FULL } else { ByteSet::EMPTY };
            let key = super::lexical_loop::region_key(fsm, rule.start, inside, finals);
            Forced { start: rule.start, key, steps: OnceLock::new() }
        });
        RuleFacts { bound: Some(bound), forced }
    }
}

/// The most tokens longer than an item's budget that a step walks rather than building the
/// [`LoopCounts`] table: Llama 3 has 1,312 tokens longer than 16 bytes, so budgets of 16 and
/// more walk. A fill walks only the accepted ones among them, tens of microseconds; the table
/// costs 2–3 ms in the fill that first needs it (`Github_medium---o63939`: four strings with a
/// `maxLength` of 32 to 1024, four tables; its fills took 5.0 ms in all, 2.0 ms with the walks,
/// the slowest 1.8 ms → 0.4 ms).
pub(crate) const WALKED_LONG_TOKENS: usize = 1400;

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
    ///
    /// The tokens are read in sorted order, each from where the previous one's reading of
    /// their common prefix got to (`path[i]`: after `i + 1` bytes), so shared prefixes are read
    /// once (2.8 → 1.9 ms for Llama 3 with the vocabulary's common prefix lengths).
    pub(crate) fn new(fsm: &GrammarFsm, vocab: &Vocabulary, forced: &Forced) -> Self {
        let mut loops = vec![u32::MAX; vocab.vocab_size()].into_boxed_slice();
        let steps = forced.steps(fsm);
        let mut path: Vec<(StateId, u32)> = Vec::new();
        let lcp = vocab.sorted_lcp();
        for (pos, &id) in vocab.sorted_token_ids().iter().enumerate() {
            let bytes = vocab.sorted_token_bytes(pos);
            path.truncate(lcp[pos] as usize);
            let mut at = path.last().copied().unwrap_or((forced.start, 0));
            let mut reading = Some(at.1);
            for &b in &bytes[path.len()..] {
                match forced.read(fsm, steps, at, b) {
                    Read::On(next) => {
                        at = next;
                        path.push(at);
                        reading = Some(at.1);
                    }
                    Read::Ends => break,
                    Read::Unknown => {
                        reading = None;
                        break;
                    }
                }
            }
            if let Some(n) = reading {
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
pub(crate) fn upper_bound(fsm: &GrammarFsm, steps: &RuleSteps, state: StateId, bytes: &[u8]) -> u32 {
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
            if let Some(t) = steps.step(fsm, s, b) {
                next.add(t, n);
            }
            if fsm.is_final(s) {
                if let Some(t) = steps.step(fsm, start, b) {
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

/// Per counted rule, the state its only call returns to, when its caller's automaton has one
/// byte edge per byte: there a reading that leaves the repetition can be read on. Each
/// occurrence of a repetition is a counted rule of its own, so it is called once, unless the
/// rule holding it was copied by inlining.
fn return_states(fsm: &GrammarFsm) -> Vec<Option<StateId>> {
    let n = fsm.rules().len();
    let mut calls = vec![0u32; n];
    let mut returns: Vec<Option<StateId>> = vec![None; n];
    let mut one_edge_per_byte = vec![true; n];
    for s in fsm.states() {
        if fsm.byte_edges(s).windows(2).any(|w| w[0].hi >= w[1].lo) {
            one_edge_per_byte[fsm.rule_of(s).index()] = false;
        }
    }
    for s in fsm.states() {
        for e in fsm.rule_edges(s) {
            let r = e.rule.index();
            if matches!(fsm.rule(e.rule).kind, RuleKind::Counted { .. }) {
                calls[r] += 1;
                returns[r] = one_edge_per_byte[fsm.rule_of(s).index()].then_some(e.target);
            }
        }
    }
    for (r, &c) in calls.iter().enumerate() {
        if c != 1 {
            returns[r] = None;
        }
    }
    returns
}

/// What the readings of one token say about the budgets it is valid with (see
/// [`Verdict::of_readings`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// The token is valid with this many loop-backs left or more.
    pub(crate) valid_from: u32,
    /// With this many or more (and fewer than `valid_from`), only the parser can tell.
    pub(crate) check_from: u32,
}

impl Verdict {
    /// The verdict of a bound alone: valid within it, the parser's to decide beyond.
    fn bounded(bound: u32) -> Self {
        Verdict { valid_from: bound, check_from: 0 }
    }

    /// The verdict on `bytes` read from `state`, a state of a repetition bounded by
    /// [`Bound::WalkOn`] whose only call returns to `returns_to`.
    ///
    /// A reading that stays inside the repetition to the token's end is valid when its
    /// loop-backs fit the budget: the repetition can end its iteration and stop there. A
    /// reading that leaves the repetition where an iteration ends (its minimum is 0) hands the
    /// rest to the caller at `returns_to`; walking the caller's automaton decides it unless
    /// the walk passes a state where the caller may end or call a rule, when what reads on
    /// depends on the stack. The least loop-backs of a valid reading and of an undecided one
    /// make the verdict. A token at a word count's bound (` the` after the last word but one,
    /// which may begin the last word) is decided here, where a bound alone sent every such
    /// token to the parser (57,096 of Llama 3's tokens, 6–8 ms per step).
    pub(crate) fn of_readings(
        fsm: &GrammarFsm,
        (steps, caller): (&RuleSteps, &mut StateRows),
        state: StateId,
        bytes: &[u8],
        returns_to: StateId,
    ) -> Self {
        let start = fsm.rule(fsm.rule_of(state)).start;
        let mut verdict = Verdict { valid_from: u32::MAX, check_from: u32::MAX };
        let mut live = Readings::default();
        live.add_least(state, 0);
        for (at, &b) in bytes.iter().enumerate() {
            if Sentinel::is_lead(b) {
                return Verdict::bounded(bytes.len() as u32);
            }
            // One reading (a word count never has more): stepped in place, no set built.
            if let [(s, n)] = *live.as_slice() {
                let on = steps.step(fsm, s, b);
                let back = if fsm.is_final(s) {
                    verdict.leave(fsm, caller, returns_to, &bytes[at..], n);
                    steps.step(fsm, start, b)
                } else {
                    None
                };
                match (on, back) {
                    (Some(t), None) => live.at[0] = (t, n),
                    (None, Some(t)) => live.at[0] = (t, n + 1),
                    (None, None) => return verdict.within_length(bytes.len()),
                    (Some(t), Some(u)) => {
                        live.at[0] = (t, n);
                        live.add_least(u, n + 1);
                    }
                }
                continue;
            }
            let mut next = Readings::default();
            let mut leaving: Option<u32> = None;
            for &(s, n) in live.as_slice() {
                if let Some(t) = steps.step(fsm, s, b) {
                    next.add_least(t, n);
                }
                if fsm.is_final(s) {
                    leaving = Some(leaving.map_or(n, |m| m.min(n)));
                    if let Some(t) = steps.step(fsm, start, b) {
                        next.add_least(t, n + 1);
                    }
                }
            }
            if let Some(n) = leaving {
                verdict.leave(fsm, caller, returns_to, &bytes[at..], n);
            }
            if next.overflowed {
                return Verdict::bounded(bytes.len() as u32);
            }
            if next.len == 0 {
                return verdict.within_length(bytes.len());
            }
            live = next;
        }
        if let Some(n) = live.as_slice().iter().map(|&(_, n)| n).min() {
            verdict.valid_from = verdict.valid_from.min(n);
        }
        verdict.within_length(bytes.len())
    }

    /// Takes in a reading that leaves the repetition with `n` loop-backs, `rest` to be read by
    /// the caller from `returns_to`.
    #[inline]
    fn leave(&mut self, fsm: &GrammarFsm, caller: &mut StateRows, returns_to: StateId, rest: &[u8], n: u32) {
        // A reading that leaves with as many loop-backs as a valid one changes nothing.
        if n >= self.valid_from {
            return;
        }
        match caller_reads(fsm, caller, returns_to, rest) {
            Some(true) => self.valid_from = n,
            Some(false) => {}
            None => self.check_from = self.check_from.min(n),
        }
    }

    /// No reading of an accepted token loops back more often than it has bytes, so it is
    /// valid with that many left, whatever the readings said.
    fn within_length(mut self, len: usize) -> Self {
        self.valid_from = self.valid_from.min(len as u32);
        self.check_from = self.check_from.min(self.valid_from);
        self
    }
}

/// Whether the caller reads `rest` from `state` (its automaton has one edge per byte): `None`
/// when the walk dies after passing a state where the caller may end or call a rule (what
/// reads on there depends on the stack).
fn caller_reads(fsm: &GrammarFsm, caller: &mut StateRows, state: StateId, rest: &[u8]) -> Option<bool> {
    let mut s = state;
    let mut depends = false;
    for &b in rest {
        depends |= fsm.is_final(s) || !fsm.rule_edges(s).is_empty();
        match caller.step(fsm, s, b) {
            Some(t) => s = t,
            None => return if depends { None } else { Some(false) },
        }
    }
    Some(true)
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

    /// Adds a reading at `t` with `n` loop-backs; readings at one state keep the most.
    fn add(&mut self, t: StateId, n: u32) {
        self.merge(t, n, u32::max);
    }

    /// Adds a reading at `t` with `n` loop-backs; readings at one state keep the least.
    fn add_least(&mut self, t: StateId, n: u32) {
        self.merge(t, n, u32::min);
    }

    fn merge(&mut self, t: StateId, n: u32, keep: fn(u32, u32) -> u32) {
        match self.at[..self.len].iter_mut().find(|(q, _)| *q == t) {
            Some((_, m)) => *m = keep(*m, n),
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
    /// The repetition's byte steps, tabled on first use.
    steps: OnceLock<RuleSteps>,
    /// (A std mutex: matchers of the grammar share the bounds; see `cache::MaskCache`.)
    so_far: Mutex<BoundsSoFar>,
}

#[derive(Debug)]
struct BoundsSoFar {
    /// The verdict of every normal token longer than this many bytes is indexed.
    longer_than: usize,
    /// Per `valid_from` from 1 on (index `valid_from - 1`), the tokens with it and their
    /// `check_from` (see [`Verdict`]).
    by_bound: Vec<Vec<(u32, u32)>>,
    /// The byte steps of the caller's states the verdicts walked.
    caller: StateRows,
}

impl LoopBounds {
    /// No bound known yet, for items of `state` (bounded by `bound`) over `vocab`.
    pub(crate) fn new(state: StateId, bound: Bound, vocab: &Vocabulary) -> Self {
        let so_far =
            BoundsSoFar { longer_than: vocab.max_token_len(), by_bound: Vec::new(), caller: StateRows::default() };
        LoopBounds { state, bound, steps: OnceLock::new(), so_far: Mutex::new(so_far) }
    }

    /// The verdict on a token of `bytes`.
    fn of(&self, fsm: &GrammarFsm, bytes: &[u8], caller: &mut StateRows) -> Verdict {
        let steps = || self.steps(fsm);
        match &self.bound {
            Bound::Walk => Verdict::bounded(upper_bound(fsm, steps(), self.state, bytes)),
            Bound::WalkOn(returns_to) => Verdict::of_readings(fsm, (steps(), caller), self.state, bytes, *returns_to),
            Bound::FirstBytes(first) => Verdict::bounded(bytes.iter().filter(|&&b| first.contains(b)).count() as u32),
        }
    }

    /// Calls `beyond(id, check)` with every normal token of `vocab` that `accepted` (a bitset
    /// by id) holds and that items with `least` loop-backs left cannot trust: `check` when
    /// items with up to `most` left may read it (the parser decides), else it is valid for no
    /// item. `accepted` (the tokens the entry of the bounds' slot accepts) must be the same set
    /// at every call: only its tokens get a verdict (most tokens of a list item's state are not
    /// accepted, and a walk of the whole vocabulary cost 10 ms at budget 0).
    pub(crate) fn for_each_beyond(
        &self,
        fsm: &GrammarFsm,
        vocab: &Vocabulary,
        (least, most): (u32, u32),
        accepted: &[u32],
        mut beyond: impl FnMut(u32, bool),
    ) {
        let mut so_far = self.so_far.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let so_far = &mut *so_far;
        let budget = least as usize;
        if budget < so_far.longer_than {
            let newly_longer = (budget + 1)..=so_far.longer_than;
            for_each_accepted_of_lengths(vocab, &newly_longer, accepted, |id, bytes| {
                self.record(fsm, so_far, id, bytes)
            });
            so_far.longer_than = budget;
        }
        for (i, tokens) in so_far.by_bound.iter().enumerate().skip(budget) {
            // `by_bound[i]` holds the tokens valid from `i + 1` loop-backs left.
            let valid_for_some = (i as u32) < most;
            for &(id, check_from) in tokens {
                beyond(id, valid_for_some || check_from <= most);
            }
        }
    }

    /// The repetition's byte steps.
    fn steps(&self, fsm: &GrammarFsm) -> &RuleSteps {
        self.steps.get_or_init(|| RuleSteps::new(fsm, fsm.rule_of(self.state)))
    }

    /// Indexes the verdict on token `id` of `bytes` by its `valid_from`.
    fn record(&self, fsm: &GrammarFsm, so_far: &mut BoundsSoFar, id: u32, bytes: &[u8]) {
        let verdict = self.of(fsm, bytes, &mut so_far.caller);
        let bound = verdict.valid_from as usize;
        if bound > 0 {
            if so_far.by_bound.len() < bound {
                so_far.by_bound.resize_with(bound, Vec::new);
            }
            so_far.by_bound[bound - 1].push((id, verdict.check_from));
        }
    }

    /// Heap bytes used.
    pub(crate) fn memory_usage(&self) -> usize {
        let so_far = self.so_far.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let steps = self.steps.get().map_or(0, RuleSteps::memory_usage);
        steps + so_far.caller.memory_usage() + so_far.by_bound.iter().map(|ids| ids.capacity() * 8).sum::<usize>()
    }
}

/// Calls `f(id, bytes)` with each normal token of `accepted` (a bitset by id) whose length in
/// bytes is in `lengths`: from the tokens of those lengths or from the accepted ones, whichever
/// are fewer (an enum item's state, a state per letter of each name, accepts a few dozen
/// tokens, and each of its budgets would otherwise test a hundred thousand). The tokens of some
/// lengths are read in memory order ([`Vocabulary::tokens_of_lengths`]): reading 26,766 tokens
/// by id cost 2.7 ms in one fill, a cache miss or two each.
pub(crate) fn for_each_accepted_of_lengths(
    vocab: &Vocabulary,
    lengths: &std::ops::RangeInclusive<usize>,
    accepted: &[u32],
    mut f: impl FnMut(u32, &[u8]),
) {
    let known = vocab.tokens_longer_than(*lengths.end()).len();
    let of_lengths = vocab.tokens_longer_than(lengths.start() - 1).len() - known;
    if of_lengths <= count_allowed(accepted) {
        for (id, bytes) in vocab.tokens_of_lengths(lengths.clone()) {
            if is_allowed(accepted, id) {
                f(id, bytes);
            }
        }
        return;
    }
    let normal = vocab.normal_token_mask();
    for id in allowed_ids(accepted).map(|id| id as u32).filter(|&id| is_allowed(normal, id)) {
        let bytes = vocab.token_bytes(id);
        if lengths.contains(&bytes.len()) {
            f(id, bytes);
        }
    }
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
            let steps = RuleSteps::new(&fsm, fsm.rule_of(start));
            assert_eq!(upper_bound(&fsm, &steps, from, text.as_bytes()), bound, "{text:?}");
        }
    }

    /// The count table, read along shared prefixes, gives every token the count of its own
    /// reading from the start (a string of at most 40 characters; tokens of `a`, `b`, `é` and
    /// the closing quote, many sharing prefixes, some ending the string part-way).
    #[test]
    fn a_count_table_read_along_shared_prefixes_equals_each_tokens_reading() {
        let g = crate::parse_ebnf("r ::= ([ab] | \"é\"){0,40} \"\\\"\"", "r").unwrap();
        let limits = crate::fsm::FsmLimits { max_expanded_repeat: 2, ..crate::fsm::FsmLimits::default() };
        let fsm = crate::fsm::build_grammar_fsm(&g, &limits).unwrap();
        let counted = fsm.rules().iter().position(|r| matches!(r.kind, RuleKind::Counted { .. })).unwrap();
        let forced = ForcedRules::new(&fsm);
        let follow = crate::fsm::lookahead::follow_sets(&fsm);
        let start = fsm.rule(FsmRuleId::new(counted)).start;
        let f = forced.of(&fsm, &follow, start).expect("one character per iteration is forced");
        let mut next = xorshift(0x1234_5678_9abc_def1);
        let pieces = ["a", "b", "\"", "é"];
        let mut texts: Vec<String> =
            (0..400).map(|_| (0..1 + next(6)).map(|_| pieces[next(4) as usize]).collect()).collect();
        texts.sort();
        texts.dedup();
        let vocab = crate::tokenizer::VocabularyBuilder::new().tokens(texts).build().unwrap();
        let counts = LoopCounts::new(&fsm, &vocab, f);
        for (pos, &id) in vocab.sorted_token_ids().iter().enumerate() {
            let want = match f.loops(&fsm, start, vocab.sorted_token_bytes(pos)) {
                Reading::Loops(n) => n,
                Reading::Unknown => u32::MAX,
            };
            assert_eq!(counts.loops[id as usize], want, "{:?}", vocab.sorted_token_bytes(pos));
        }
    }

    /// A word count's verdicts: a reading inside the count needs its loop-backs, a reading that
    /// leaves it needs none but its rest read by the caller (`[ab]+ "!"`); a rest read past the
    /// caller's end is the parser's to decide.
    #[test]
    fn a_word_counts_verdict_reads_the_rest_in_its_caller() {
        let (fsm, start) = word_count();
        let steps = RuleSteps::new(&fsm, fsm.rule_of(start));
        let returns_to = return_states(&fsm)[fsm.rule_of(start).index()].expect("one call site");
        let in_word = super::super::lexical_loop::step(&fsm, start, b'a').unwrap();
        let valid = |n| Verdict { valid_from: n, check_from: n };
        for (text, want) in [
            ("a", valid(0)),
            (" a", valid(0)),
            (" a b", valid(1)),
            (" a b a", valid(2)),
            (" a!", valid(0)),
            (" a!x", Verdict { valid_from: 4, check_from: 0 }),
            (" a x", valid(4)),
        ] {
            let mut caller = StateRows::default();
            let got = Verdict::of_readings(&fsm, (&steps, &mut caller), in_word, text.as_bytes(), returns_to);
            assert_eq!(got, want, "{text:?}");
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
        let steps = RuleSteps::new(&fsm, fsm.rule_of(start));
        for round in 0..40 {
            // Every other round accepts one or two tokens only: the accepted tokens are listed.
            let mut accepted = vec![0u32; vocab.vocab_size().div_ceil(32)];
            for id in 0..texts.len() as u32 {
                if next(if round % 2 == 0 { 2 } else { 8 }) == 0 {
                    accepted[id as usize / 32] |= 1 << (id % 32);
                }
            }
            // Every state of the body: the one after a word's space ends an iteration, and its
            // first byte may loop back at once.
            for state in fsm.rule_states(fsm.rule_of(start)) {
                let bounds = LoopBounds::new(state, Bound::Walk, &vocab);
                for _ in 0..6 {
                    let budget = next(8) as u32;
                    let mut beyond = Vec::new();
                    bounds.for_each_beyond(&fsm, &vocab, (budget, budget), &accepted, |id, _| beyond.push(id));
                    beyond.sort_unstable();
                    let expected: Vec<u32> = (0..texts.len() as u32)
                        .filter(|&id| is_allowed(&accepted, id))
                        .filter(|&id| upper_bound(&fsm, &steps, state, vocab.token_bytes(id)) > budget)
                        .collect();
                    assert_eq!(beyond, expected, "state {state:?}, budget {budget}, accepted {accepted:?}");
                }
            }
        }
    }
}
