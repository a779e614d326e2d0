//! Layer 4: an Earley parser over the rule automata, one byte at a time.
//!
//! An [`Item`] is (global automaton state, origin position, repetition count): the state
//! determines the rule and the position inside it, the origin is the input position where
//! the rule was predicted, and the count is used only by counted repetitions
//! ([`crate::fsm::RuleKind::Counted`], XGrammar-2 §3.6). The three Earley operations
//! (Kallmeyer's formulation, XGrammar-2 appendix D) become:
//!
//! * **scan**: an item whose state has a byte edge covering the input byte moves along it;
//! * **predict**: an item whose state has a rule edge to `B` adds `B`'s start state with origin
//!   here, and records itself as waiting for `B` at this position;
//! * **complete**: an item in a final state of rule `B` with origin `o` advances every item that
//!   was waiting for `B` at position `o`.
//!
//! Nullable rules are handled as Aycock and Horspool propose: predicting a nullable rule also
//! advances the predicting item at once, so completions of empty rules never need items that
//! arrive later in the same set. Left recursion terminates because items are deduplicated per
//! set. A counted repetition loops back to its start only from a state reached by reading at
//! least one byte of the iteration, so counts stay bounded by the input length.
//!
//! One item set is kept per consumed byte, in a single vector with row offsets; rolling back
//! `n` bytes is a truncation, which is what the mask computation uses to share work between
//! tokens with a common prefix.
//!
//! # Bounded work and memory
//!
//! An ambiguous grammar makes sets grow with the input and completions read ever longer
//! waiting lists (`root ::= root root | "a"` costs about n² per byte, and its chart grows as
//! n²), so a parser carries a `StepBudget` (`util::budget`, unlimited unless set): every item a set adds,
//! every item a byte scans and every waiting item recorded or read counts one visit, and the
//! chart's size ([`Parser::state_bytes`]) is checked every 1,024 visits, inside a set too. A byte that goes over either limit is refused and its open set discarded, exactly as
//! a rejected byte, and every later byte is refused until the budget is replaced
//! (`Parser::set_budget`); the caller tells the two apart with `Parser::budget`. The
//! matcher gives each call a fresh budget, so one step's cost and memory are bounded and a
//! refused step leaves the chart as it was.

mod compact;

use std::sync::Arc;

use crate::fsm::{FsmRuleId, GrammarFsm, RuleKind, StateId};
use crate::util::budget::StepBudget;
use crate::util::hash::FastMap;
use crate::util::small_set::SmallSet;

/// An Earley item.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Item {
    /// The automaton state (global id).
    pub state: StateId,
    /// The position where the item's rule was predicted.
    pub origin: u32,
    /// For counted repetitions: how many times the inner rule has matched; otherwise 0.
    pub count: u32,
}

#[derive(Clone, Copy, Debug)]
struct Waiting {
    rule: FsmRuleId,
    parent: Item,
}

/// The first word of [`Parser::configuration`]: no state id of a PDA's configuration, which
/// starts with one, is this large.
pub const CONFIGURATION_TAG: u32 = u32::MAX;
/// The origin [`Parser::configuration`] writes for items predicted at the current position.
pub const CURRENT_ORIGIN: u32 = u32::MAX;
/// The count [`Parser::configuration`] writes for an item of a counted repetition whose
/// minimum is met and whose maximum the checked bytes cannot reach.
pub const COUNT_FREE: u32 = u32::MAX;
/// The count [`Parser::configuration`] writes for an item of a counted repetition whose
/// minimum the checked bytes cannot reach.
pub const COUNT_BELOW_MIN: u32 = u32::MAX - 1;

/// The count an item of a repetition of `min..=max` is keyed by when at most `reach` bytes are
/// read (see [`Parser::configuration`]). Within them the count goes up to `count + reach`, and
/// the parser compares it (`count >= min`) and the iterations done (`count + 1`, against
/// `min` and `max`) with the bounds: where every such comparison has one answer over that
/// range, the count itself does not matter.
fn keyed_count(count: u32, min: u32, max: u32, reach: u32) -> u32 {
    let highest_done = count.saturating_add(reach).saturating_add(1);
    if count >= min && highest_done < max {
        COUNT_FREE
    } else if highest_done < min {
        COUNT_BELOW_MIN
    } else {
        count
    }
}

/// The Earley parser state: one item set per consumed byte (see the unit test
/// `reads_rolls_back_and_accepts` for a walk-through).
#[derive(Clone, Debug)]
pub struct Parser {
    fsm: Arc<GrammarFsm>,
    chart: Chart,
}

/// The item sets and scratch of a [`Parser`], apart from the automata so that the closure can
/// borrow both at once.
#[derive(Clone, Debug)]
struct Chart {
    /// The rule whose completion from origin 0 makes a position accepting: the root, or for
    /// an isolated parser, the start item's rule.
    start_rule: FsmRuleId,
    /// Whether this is an isolated parser (see [`Parser::isolated`]).
    isolated: bool,
    items: Vec<Item>,
    set_starts: Vec<u32>,
    waiting: Vec<Waiting>,
    waiting_starts: Vec<u32>,
    accepting: Vec<bool>,
    /// The fewest bytes [`Parser::pop_bytes`] may leave: above 0 after [`Parser::compact`],
    /// whose older positions hold no items.
    floor: usize,
    /// The work the current call may still do (see the module documentation).
    budget: StepBudget,
    // Scratch, cleared per set.
    seen: SmallSet<Item>,
    /// (rule, origin) pairs completed in the open set.
    completed: SmallSet<(FsmRuleId, u32)>,
    loops: FastMap<(StateId, u32), u32>,
}

impl Parser {
    /// A parser at the start of the root rule.
    pub fn new(fsm: Arc<GrammarFsm>) -> Self {
        let root = fsm.root();
        let start = fsm.rule(root).start;
        Self::with_start_items(fsm, &[Item { state: start, origin: 0, count: 0 }])
    }

    /// A parser whose first set holds `items` (and their closure). Items of the root rule with
    /// origin 0 count as the root: their completion makes the parser accepting.
    pub fn with_start_items(fsm: Arc<GrammarFsm>, items: &[Item]) -> Self {
        let start_rule = fsm.root();
        let mut p = Parser::empty(fsm, start_rule, false);
        p.open_set();
        for &it in items {
            p.add(it);
        }
        p.close_first_set();
        p
    }

    /// A parser for the mask cache: the item `(state, origin 0, count 0)` seen with only the
    /// context that is certain.
    ///
    /// `context` lists parent states, innermost first: `context[0]` is a state with a rule edge
    /// to the item's rule, `context[1]` a state with a rule edge to `context[0]`'s rule, and so on
    /// (the caller passes only parents that every real occurrence of the item has: rules with a
    /// single use site). Position 0 holds no items, only these parents waiting for their child,
    /// all with origin 0; the item starts at position 1. When the outermost rule completes from
    /// origin 0 (it *exits* to a context the parser does not know), nothing advances: the
    /// position is only marked accepting ([`Parser::is_accepting_at`]). Predictions inside start
    /// at position 1 and complete normally. A counted repetition the item belongs to is treated
    /// as unbounded (`{0,}`): the count of the real item is unknown here, and the caller bounds
    /// it by the token length (see `crate::cache`); parents must not be counted repetitions.
    pub fn isolated(fsm: Arc<GrammarFsm>, state: StateId, context: &[StateId]) -> Self {
        let mut child = fsm.rule_of(state);
        let mut waits = Vec::with_capacity(context.len());
        for &q in context {
            waits.push(Waiting { rule: child, parent: Item { state: q, origin: 0, count: 0 } });
            child = fsm.rule_of(q);
        }
        let mut p = Parser::empty(fsm, child, true);
        p.open_set();
        p.chart.waiting.extend(waits);
        p.open_set();
        p.add(Item { state, origin: 0, count: 0 });
        p.close_first_set();
        p
    }

    fn empty(fsm: Arc<GrammarFsm>, start_rule: FsmRuleId, isolated: bool) -> Self {
        Parser {
            fsm,
            chart: Chart {
                start_rule,
                isolated,
                items: Vec::new(),
                set_starts: Vec::new(),
                waiting: Vec::new(),
                waiting_starts: Vec::new(),
                accepting: Vec::new(),
                floor: 0,
                budget: StepBudget::UNLIMITED,
                seen: SmallSet::default(),
                completed: SmallSet::default(),
                loops: FastMap::default(),
            },
        }
    }

    /// Closes the first set of a new parser, whose budget is unlimited (so it cannot fail).
    fn close_first_set(&mut self) {
        let closed = self.chart.close_set(&self.fsm);
        debug_assert!(closed, "a new parser's budget is unlimited");
    }

    /// The automata this parser runs on.
    pub fn fsm(&self) -> &Arc<GrammarFsm> {
        &self.fsm
    }

    /// Replaces the budget: the visits counted from now on, and the limits (see the module
    /// documentation). [`StepBudget::UNLIMITED`] removes them.
    pub(crate) fn set_budget(&mut self, budget: StepBudget) {
        self.chart.budget = budget;
    }

    /// The budget: its limits, the visits counted since it was set, and whether a byte was
    /// refused for going over one.
    pub(crate) fn budget(&self) -> StepBudget {
        self.chart.budget
    }

    /// The bytes the chart holds (its items, waiting items and per-position rows), counted by
    /// length: what the budget's byte limit and a per-matcher memory bound compare. The
    /// vectors' spare capacity (at most as much again) and the per-set scratch (at most the
    /// largest set) are not counted.
    pub fn state_bytes(&self) -> usize {
        self.chart.state_bytes()
    }

    /// The number of bytes consumed.
    #[inline]
    pub fn byte_len(&self) -> usize {
        self.chart.set_starts.len() - 1
    }

    /// Whether the input so far is a complete match of the root rule.
    #[inline]
    pub fn is_accepting(&self) -> bool {
        *self.chart.accepting.last().expect("a parser always has a set")
    }

    /// Whether the start rule completed from origin 0 after `len` consumed bytes.
    #[inline]
    pub fn is_accepting_at(&self, len: usize) -> bool {
        self.chart.accepting[len]
    }

    /// The items of the newest set.
    #[inline]
    pub fn current_items(&self) -> &[Item] {
        &self.chart.items[*self.chart.set_starts.last().unwrap() as usize..]
    }

    /// Writes the current set into `out`, the key under which a matcher keeps the verdicts of
    /// the checks it makes here (`matcher/verdicts.rs`): [`CONFIGURATION_TAG`], then per item
    /// its state, its origin ([`CURRENT_ORIGIN`] for the current position, whose waiting items
    /// are the set's own) and its count. What the parser reads from here depends on those
    /// items and on the waiting items of the positions their origins name, so two positions
    /// with equal lists read every byte string alike while those positions are neither popped
    /// nor renumbered (the matcher forgets its keys on rollback and compaction). Inside a JSON
    /// string the list is the same at every byte, and the checks of the tokens that close the
    /// string into an object of many optional members (~150 tokens, 0.8 µs each) were made
    /// again at every step. Returns `false` for a set of more than `max_items` items.
    ///
    /// The checks read at most `reach` bytes. A count of a counted repetition is compared with
    /// its bounds only, and rises by at most one a byte (an iteration reads at least one), so
    /// counts that every comparison within `reach` bytes treats alike are written as one
    /// ([`COUNT_FREE`], [`COUNT_BELOW_MIN`]): inside a string with a `maxLength` the count
    /// changes at every character, and its closing tokens were checked again at every step
    /// (`Snowplow---sp_345`: 1,100 fills of 100–270 µs).
    pub fn configuration(&self, out: &mut Vec<u32>, max_items: usize, reach: u32) -> bool {
        let items = self.current_items();
        if items.len() > max_items {
            return false;
        }
        let current = self.byte_len() as u32;
        out.clear();
        out.push(CONFIGURATION_TAG);
        for it in items {
            let origin = if it.origin == current { CURRENT_ORIGIN } else { it.origin };
            let count = match self.chart.kind_of(&self.fsm, it) {
                RuleKind::Plain => it.count,
                RuleKind::Counted { min, max } => keyed_count(it.count, min, max, reach),
            };
            out.extend([it.state.as_u32(), origin, count]);
        }
        true
    }

    /// Consumes one byte. Returns `false`, leaving the state unchanged, when no item can read it
    /// or when reading it goes over the work budget (`Parser::budget` says which).
    pub fn advance_byte(&mut self, b: u8) -> bool {
        let cur_start = *self.chart.set_starts.last().unwrap() as usize;
        let cur_end = self.chart.items.len();
        // The scan visits every item of the current set.
        if !self.chart.charge((cur_end - cur_start) as u64) {
            return false;
        }
        self.open_set();
        let (fsm, Chart { items, seen, .. }) = (&self.fsm, &mut self.chart);
        for i in cur_start..cur_end {
            let it = items[i];
            for e in fsm.byte_edges(it.state) {
                if e.lo <= b && b <= e.hi {
                    push_item(seen, items, Item { state: e.target, origin: it.origin, count: it.count });
                } else if e.lo > b {
                    break;
                }
            }
        }
        if self.chart.items.len() == cur_end || !self.chart.close_set(&self.fsm) {
            self.discard_open_set();
            return false;
        }
        true
    }

    /// Consumes bytes until one is rejected; returns how many were consumed.
    pub fn advance_bytes(&mut self, bytes: &[u8]) -> usize {
        for (i, &b) in bytes.iter().enumerate() {
            if !self.advance_byte(b) {
                return i;
            }
        }
        bytes.len()
    }

    /// Undoes the last `n` consumed bytes.
    ///
    /// # Panics
    /// When `n` exceeds [`Parser::byte_len`].
    pub fn pop_bytes(&mut self, n: usize) {
        assert!(
            n + self.chart.floor <= self.byte_len(),
            "cannot pop {n} bytes from a parser holding {} (compacted below {})",
            self.byte_len(),
            self.chart.floor
        );
        if n == 0 {
            return;
        }
        let keep = self.chart.set_starts.len() - n;
        self.chart.items.truncate(self.chart.set_starts[keep] as usize);
        self.chart.set_starts.truncate(keep);
        self.chart.waiting.truncate(self.chart.waiting_starts[keep] as usize);
        self.chart.waiting_starts.truncate(keep);
        self.chart.accepting.truncate(keep);
    }

    /// Truncates to the state after `len` bytes.
    pub fn truncate_bytes(&mut self, len: usize) {
        self.pop_bytes(self.byte_len() - len);
    }

    /// The set of bytes some item of the newest set can read, as a 256-bit set.
    pub fn next_bytes(&self) -> [u64; 4] {
        self.fsm.next_bytes(self.current_items().iter().map(|it| it.state))
    }

    fn open_set(&mut self) {
        self.chart.set_starts.push(self.chart.items.len() as u32);
        self.chart.waiting_starts.push(self.chart.waiting.len() as u32);
        self.chart.accepting.push(false);
        self.chart.seen.clear();
        self.chart.completed.clear();
        if !self.chart.loops.is_empty() {
            self.chart.loops.clear();
        }
    }

    fn discard_open_set(&mut self) {
        let start = self.chart.set_starts.pop().unwrap() as usize;
        self.chart.items.truncate(start);
        let ws = self.chart.waiting_starts.pop().unwrap() as usize;
        self.chart.waiting.truncate(ws);
        self.chart.accepting.pop();
    }

    #[inline]
    fn add(&mut self, it: Item) {
        push_item(&mut self.chart.seen, &mut self.chart.items, it);
    }
}

impl Chart {
    /// The kind of the rule of `it` as this chart treats it: out of context (an isolated
    /// parser), the count of the start item's repetition is unknown, so it is unbounded.
    fn kind_of(&self, fsm: &GrammarFsm, it: &Item) -> RuleKind {
        match fsm.rule(fsm.rule_of(it.state)).kind {
            RuleKind::Counted { .. } if self.isolated && it.origin == 0 => RuleKind::Counted { min: 0, max: u32::MAX },
            kind => kind,
        }
    }

    /// Counts `n` visits; `false` once over a limit, the state size checked when due.
    #[inline]
    fn charge(&mut self, n: u64) -> bool {
        !self.budget.tick(n) || self.settle()
    }

    /// The budget's slow path, when a tick asks for it: the work limit, and the state size when
    /// it is due (see `util::budget`).
    #[cold]
    #[inline(never)]
    fn settle(&mut self) -> bool {
        let bytes = self.budget.bytes_due().then(|| self.state_bytes());
        self.budget.settle(bytes)
    }

    /// See [`Parser::state_bytes`].
    fn state_bytes(&self) -> usize {
        self.items.len() * std::mem::size_of::<Item>()
            + self.waiting.len() * std::mem::size_of::<Waiting>()
            + (self.set_starts.len() + self.waiting_starts.len()) * std::mem::size_of::<u32>()
            + self.accepting.len()
    }

    /// Runs predict and complete to a fixpoint over the open set. Returns `false`, with the set
    /// half closed (the caller discards it), when the budget runs out: its work, or its bytes
    /// (checked whenever the budget says so, inside the set and at its end).
    fn close_set(&mut self, fsm: &GrammarFsm) -> bool {
        let pos = (self.set_starts.len() - 1) as u32;
        let mut i = *self.set_starts.last().unwrap() as usize;
        while i < self.items.len() {
            let it = self.items[i];
            // Every item the set adds is visited once here, with the waiting items its rule
            // edges record (each rule edge once per item: items are unique in a set).
            let rule_edges = fsm.rule_edges(it.state);
            if !self.charge(1 + rule_edges.len() as u64) {
                return false;
            }
            i += 1;
            let rule = fsm.rule_of(it.state);
            let info = fsm.rule(rule);
            let kind = self.kind_of(fsm, &it);
            let is_final = match kind {
                RuleKind::Plain => fsm.is_final(it.state),
                RuleKind::Counted { min, .. } if it.state == info.start => it.count >= min,
                RuleKind::Counted { min, max } if fsm.is_final(it.state) => {
                    // Unbounded (out-of-context) repetitions need no count at all.
                    let done = if max == u32::MAX && min == 0 { 0 } else { it.count + 1 };
                    if done < max && self.first_loop(info.nullable, info.start, it.origin, done) {
                        push_item(
                            &mut self.seen,
                            &mut self.items,
                            Item { state: info.start, origin: it.origin, count: done },
                        );
                    }
                    done >= min
                }
                RuleKind::Counted { .. } => false,
            };
            if is_final {
                if rule == self.start_rule && it.origin == 0 {
                    *self.accepting.last_mut().unwrap() = true;
                }
                if self.completed.insert((rule, it.origin)) {
                    self.complete(fsm, rule, it.origin, pos);
                }
            }
            for e in rule_edges {
                self.waiting.push(Waiting { rule: e.rule, parent: it });
                let callee = fsm.rule(e.rule);
                push_item(&mut self.seen, &mut self.items, Item { state: callee.start, origin: pos, count: 0 });
                if callee.nullable {
                    push_item(
                        &mut self.seen,
                        &mut self.items,
                        Item { state: e.target, origin: it.origin, count: it.count },
                    );
                }
            }
        }
        // A completion may have gone over a limit after the last item's check.
        !self.budget.exceeded()
    }

    /// Whether a counted rule may loop back to its start with count `done`. A body that can
    /// match the empty string could otherwise loop without reading anything, once per count up
    /// to the maximum; such a rule has no minimum (see `RuleKind::Counted`), so the loop item
    /// with the lowest count in a set allows everything a higher one does, and only it is kept.
    fn first_loop(&mut self, nullable_body: bool, start: StateId, origin: u32, done: u32) -> bool {
        if !nullable_body {
            return true;
        }
        match self.loops.entry((start, origin)) {
            std::collections::hash_map::Entry::Occupied(e) if *e.get() <= done => false,
            std::collections::hash_map::Entry::Occupied(mut e) => {
                e.insert(done);
                true
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(done);
                true
            }
        }
    }

    /// Advances every item waiting at `origin` for `rule`, which matched `origin..pos`.
    fn complete(&mut self, fsm: &GrammarFsm, rule: FsmRuleId, origin: u32, pos: u32) {
        let ws = self.waiting_starts[origin as usize] as usize;
        let we = if origin == pos { self.waiting.len() } else { self.waiting_starts[origin as usize + 1] as usize };
        // Reading the waiting list visits each of its items; over the budget, the caller
        // abandons the set, so the rest need not be read.
        if !self.charge((we - ws) as u64) {
            return;
        }
        for w in ws..we {
            let Waiting { rule: r, parent } = self.waiting[w];
            if r != rule {
                continue;
            }
            let Chart { items, seen, .. } = self;
            for e in fsm.rule_edges(parent.state) {
                if e.rule == rule {
                    push_item(seen, items, Item { state: e.target, origin: parent.origin, count: parent.count });
                }
            }
        }
    }
}

#[inline]
fn push_item(seen: &mut SmallSet<Item>, items: &mut Vec<Item>, it: Item) {
    if seen.insert(it) {
        items.push(it);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A count is written as a class only where every bound comparison within the checked
    /// bytes has one answer; next to a bound, and where the sums saturate, it is itself.
    #[test]
    fn counts_are_keyed_by_what_their_bounds_make_of_them() {
        // `{2,10}`, checks of at most 3 bytes.
        assert_eq!(keyed_count(0, 2, 10, 3), 0, "may reach the minimum");
        assert_eq!(keyed_count(2, 2, 10, 3), COUNT_FREE);
        assert_eq!(keyed_count(5, 2, 10, 3), COUNT_FREE);
        assert_eq!(keyed_count(6, 2, 10, 3), 6, "may reach the maximum");
        // `{10,}`.
        assert_eq!(keyed_count(5, 10, u32::MAX, 3), COUNT_BELOW_MIN);
        assert_eq!(keyed_count(6, 10, u32::MAX, 3), 6, "may reach the minimum");
        assert_eq!(keyed_count(10, 10, u32::MAX, 3), COUNT_FREE);
        assert_eq!(keyed_count(u32::MAX - 2, 0, u32::MAX, 8), u32::MAX - 2, "saturated");
    }

    #[test]
    fn reads_rolls_back_and_accepts() {
        let g = crate::parse_ebnf(r#"root ::= "a" root "b" | "" "#, "root").unwrap();
        let mut p = Parser::new(Arc::new(GrammarFsm::new(&g).unwrap()));
        assert!(p.advance_bytes(b"aab") == 3 && !p.is_accepting());
        assert!(p.advance_byte(b'b') && p.is_accepting());
        assert!(!p.advance_byte(b'b'));
        p.pop_bytes(2);
        assert_eq!(p.byte_len(), 2);
        assert!(!p.is_accepting() && p.advance_bytes(b"bb") == 2 && p.is_accepting());
    }

    #[test]
    fn a_byte_over_the_budget_is_refused_and_the_chart_is_as_before() {
        // Ambiguous: the n-th byte costs about n² visits.
        let g = crate::parse_ebnf(r#"root ::= root root | "a""#, "root").unwrap();
        let mut p = Parser::new(Arc::new(GrammarFsm::new(&g).unwrap()));
        assert_eq!(p.advance_bytes(&[b'a'; 40]), 40);
        let before = (p.byte_len(), p.state_bytes(), p.current_items().to_vec(), p.is_accepting());
        let mut free = p.clone();
        free.set_budget(StepBudget::new(u64::MAX - 1, usize::MAX));
        assert_eq!(free.advance_bytes(&[b'a'; 4]), 4);
        let cost = free.budget().used();
        assert!(!free.budget().exceeded() && cost > 2 * crate::util::budget::BYTES_CHECK_PERIOD, "{cost}");

        p.set_budget(StepBudget::new(cost - 1, usize::MAX));
        let read = p.advance_bytes(&[b'a'; 4]);
        assert!(read < 4 && p.budget().exceeded() && p.budget().used() > cost - 1);
        assert!(!p.advance_byte(b'a'), "an exceeded budget refuses every byte");
        p.pop_bytes(read);
        assert_eq!((p.byte_len(), p.state_bytes(), p.current_items().to_vec(), p.is_accepting()), before);
        // A fresh budget reads on, to the same state as without one.
        p.set_budget(StepBudget::new(cost, usize::MAX));
        assert_eq!(p.advance_bytes(&[b'a'; 4]), 4);
        assert_eq!((p.current_items(), p.state_bytes()), (free.current_items(), free.state_bytes()));
        // A byte limit, checked every so many visits: a byte is refused before the state has
        // grown much past it (a visit adds at most an item or a waiting item), nothing kept.
        use crate::util::budget::{Stop, BYTES_CHECK_PERIOD};
        free.pop_bytes(4);
        free.set_budget(StepBudget::new(u64::MAX, before.1));
        let read = free.advance_bytes(&[b'a'; 40]);
        let over = match free.budget().stop() {
            Some(Stop::Bytes(b)) => b - before.1,
            other => panic!("{other:?}"),
        };
        assert!(read < 40 && over > 0 && over < 32 * BYTES_CHECK_PERIOD as usize, "{read} {over}");
        free.pop_bytes(read);
        assert_eq!(free.state_bytes(), before.1);
    }
}
