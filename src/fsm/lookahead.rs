//! Inferred one-byte lookahead: for every rule, the bytes that can follow it in any context
//! (XGrammar's context expansion, reduced to its first byte).
//!
//! The mask cache classifies a token as *uncertain* when, out of context, the token leaves the
//! rule part-way; the rest of the token must then be read by whatever follows the rule. If the
//! first remaining byte cannot follow the rule anywhere in the grammar, that way of reading the
//! token is impossible, and the token need not be checked at run time. The sets are computed
//! from the grammar alone, so they are sound by construction (user-written `(= ...)`
//! assertions are not trusted for this; see [`crate::grammar::Rule::lookahead`]).

use super::{GrammarFsm, RuleKind, StateId};
use crate::util::byteset::ByteSet;

/// For each rule of a [`GrammarFsm`], the set of bytes that may follow it.
pub fn follow_sets(fsm: &GrammarFsm) -> Vec<ByteSet> {
    let (active, sets) = first_sets(fsm);
    // follow[callee] ⊇ after, and ⊇ follow[parent] when the callee may end its parent: the
    // first part once, the second by a worklist over the rules whose follow set grew.
    let mut follow = vec![ByteSet::EMPTY; fsm.rules().len()];
    let mut ending_calls: Vec<Vec<usize>> = vec![Vec::new(); fsm.rules().len()];
    for (parent, callee, after, may_end) in calls(fsm, &active, &sets) {
        follow[callee].union_with(&after);
        if may_end {
            ending_calls[parent].push(callee);
        }
    }
    let mut work: Vec<usize> = (0..fsm.rules().len()).collect();
    let mut queued = vec![true; fsm.rules().len()];
    while let Some(parent) = work.pop() {
        queued[parent] = false;
        let add = follow[parent];
        for &callee in &ending_calls[parent] {
            if follow[callee].union_with(&add) && !queued[callee] {
                queued[callee] = true;
                work.push(callee);
            }
        }
    }
    follow
}

/// The first bytes of every state the follow sets need (see [`StateSets`]), to a fixpoint;
/// with the active states.
fn first_sets(fsm: &GrammarFsm) -> (Vec<StateId>, StateSets) {
    let active = active_states(fsm);
    let mut sets = StateSets::new(fsm, &active);
    // Only states with rule edges or an iteration end can change below (the others keep what
    // their byte edges give). A worklist over those: a state is recomputed when a state it
    // reads changed (rounds over every state took as many rounds as the grammar is deep).
    // readers[slot of x]: the active states whose sets read state x's.
    let mut readers: Vec<Vec<StateId>> = vec![Vec::new(); sets.len()];
    for &s in &active {
        for x in reads(fsm, s) {
            readers[sets.slot(x)].push(s);
        }
    }
    let mut queued = vec![false; sets.len()];
    let mut work: Vec<StateId> = active.clone();
    for &s in &active {
        queued[sets.slot(s)] = true;
    }
    while let Some(s) = work.pop() {
        queued[sets.slot(s)] = false;
        if update(fsm, s, &mut sets) {
            for &r in &readers[sets.slot(s)] {
                if !queued[sets.slot(r)] {
                    queued[sets.slot(r)] = true;
                    work.push(r);
                }
            }
        }
    }
    (active, sets)
}

/// For every rule of a [`GrammarFsm`], the bytes its start may read first (through the rules it
/// calls): for a counted repetition, the first byte of every iteration.
pub fn start_first_sets(fsm: &GrammarFsm) -> Vec<ByteSet> {
    let (_, sets) = first_sets(fsm);
    fsm.rules().iter().map(|r| sets.first(r.start)).collect()
}

/// The bytes an item at `state` may read next before its rule ends: its byte edges, the first
/// bytes of the rules it calls (and of what follows a nullable call), and of the next iteration
/// where a counted rule may loop back. Computed by a search over rule starts and the states
/// after nullable calls only, so it costs a few states for most schema grammars, not the
/// whole fixpoint of [`follow_sets`].
pub fn state_first_bytes(fsm: &GrammarFsm, state: StateId) -> ByteSet {
    let mut first = predicted_first_bytes(fsm, state);
    for e in fsm.byte_edges(state) {
        first.insert_range(e.lo, e.hi);
    }
    first
}

/// The bytes that the items an item at `state` adds without reading (the rules it calls, what
/// follows a nullable call, the next iteration of a counted rule) may read first: the bytes of
/// [`state_first_bytes`] other than the item's own, unless those items lead back to `state`
/// (left recursion, through nullable calls too).
pub fn predicted_first_bytes(fsm: &GrammarFsm, state: StateId) -> ByteSet {
    let mut first = ByteSet::EMPTY;
    let mut seen = crate::util::hash::FastSet::default();
    let mut todo: Vec<StateId> = reads(fsm, state).collect();
    while let Some(s) = todo.pop() {
        if !seen.insert(s) {
            continue;
        }
        for e in fsm.byte_edges(s) {
            first.insert_range(e.lo, e.hi);
        }
        todo.extend(reads(fsm, s).filter(|next| !seen.contains(next)));
    }
    first
}

/// Per tracked state, the bytes that can come next from it before its rule ends (`first`) and
/// whether its rule may end there (`endable`). Only the states the fixpoint reads or writes are
/// tracked: active states, rule starts and the targets of rule edges. Most states of a schema
/// grammar (key tries, literals) are none of these, and sets for every state cost more than
/// the fixpoint itself.
struct StateSets {
    /// Per state, its index into `first` / `endable`, or `UNTRACKED`.
    slots: Vec<u32>,
    first: Vec<ByteSet>,
    endable: Vec<bool>,
}

const UNTRACKED: u32 = u32::MAX;

impl StateSets {
    /// The tracked states' sets where the fixpoint starts: their own byte edges, and whether
    /// their rule may end there.
    fn new(fsm: &GrammarFsm, active: &[StateId]) -> Self {
        let mut sets = StateSets { slots: vec![UNTRACKED; fsm.state_len()], first: Vec::new(), endable: Vec::new() };
        for r in fsm.rules() {
            sets.track(fsm, r.start);
        }
        for &s in active {
            sets.track(fsm, s);
            for e in fsm.rule_edges(s) {
                sets.track(fsm, e.target);
            }
        }
        sets
    }

    fn track(&mut self, fsm: &GrammarFsm, s: StateId) {
        if self.slots[s] != UNTRACKED {
            return;
        }
        self.slots[s] = self.first.len() as u32;
        let mut first = ByteSet::EMPTY;
        for e in fsm.byte_edges(s) {
            first.insert_range(e.lo, e.hi);
        }
        let r = fsm.rule(fsm.rule_of(s));
        self.first.push(first);
        self.endable.push(match r.kind {
            RuleKind::Plain => fsm.is_final(s),
            // Out of context any count is possible, so any iteration end may end the rule.
            RuleKind::Counted { .. } => s == r.start || fsm.is_final(s),
        });
    }

    fn len(&self) -> usize {
        self.first.len()
    }

    /// The slot of a tracked state.
    #[inline]
    fn slot(&self, s: StateId) -> usize {
        debug_assert_ne!(self.slots[s], UNTRACKED, "state {s} is read but not tracked");
        self.slots[s] as usize
    }

    #[inline]
    fn first(&self, s: StateId) -> ByteSet {
        self.first[self.slot(s)]
    }

    #[inline]
    fn endable(&self, s: StateId) -> bool {
        self.endable[self.slot(s)]
    }
}

/// The start of a counted rule, for a state that may end an iteration of it (the next
/// iteration reads on from there).
fn loops_to(fsm: &GrammarFsm, s: StateId) -> Option<StateId> {
    let r = fsm.rule(fsm.rule_of(s));
    match r.kind {
        RuleKind::Counted { .. } if s != r.start && fsm.is_final(s) => Some(r.start),
        _ => None,
    }
}

/// The states whose sets can grow beyond their byte edges: with rule edges or an iteration end.
fn active_states(fsm: &GrammarFsm) -> Vec<StateId> {
    fsm.states().filter(|&s| !fsm.rule_edges(s).is_empty() || loops_to(fsm, s).is_some()).collect()
}

/// The states whose sets active state `s`'s sets are computed from (see [`update`]).
fn reads(fsm: &GrammarFsm, s: StateId) -> impl Iterator<Item = StateId> + '_ {
    fsm.rule_edges(s)
        .iter()
        .flat_map(move |e| {
            let callee = fsm.rule(e.rule);
            [Some(callee.start), callee.nullable.then_some(e.target)]
        })
        .chain([loops_to(fsm, s)])
        .flatten()
}

/// Recomputes state `s`'s sets from the states it reads; whether they changed.
fn update(fsm: &GrammarFsm, s: StateId, sets: &mut StateSets) -> bool {
    let mut f = sets.first(s);
    let mut end = sets.endable(s);
    for e in fsm.rule_edges(s) {
        let callee = fsm.rule(e.rule);
        f.union_with(&sets.first(callee.start));
        if callee.nullable {
            f.union_with(&sets.first(e.target));
            end |= sets.endable(e.target);
        }
    }
    if let Some(start) = loops_to(fsm, s) {
        f.union_with(&sets.first(start));
    }
    let slot = sets.slot(s);
    let changed = f != sets.first[slot] || end != sets.endable[slot];
    sets.first[slot] = f;
    sets.endable[slot] = end;
    changed
}

/// Every rule edge once, with what follows it: (caller, callee, bytes after, may end after).
fn calls<'a>(
    fsm: &'a GrammarFsm,
    active: &'a [StateId],
    sets: &'a StateSets,
) -> impl Iterator<Item = (usize, usize, ByteSet, bool)> + 'a {
    active.iter().flat_map(move |&s| {
        let parent = fsm.rule_of(s).index();
        fsm.rule_edges(s).iter().map(move |e| (parent, e.rule.index(), sets.first(e.target), sets.endable(e.target)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{build_grammar_fsm, FsmLimits};

    /// The previous order of evaluation (rounds over every active state until nothing
    /// changes), as the reference: the worklists must reach the same least fixpoint.
    fn follow_sets_by_rounds(fsm: &GrammarFsm) -> Vec<ByteSet> {
        let active = active_states(fsm);
        let mut sets = StateSets::new(fsm, &active);
        loop {
            let mut changed = false;
            for &s in &active {
                changed |= update(fsm, s, &mut sets);
            }
            if !changed {
                break;
            }
        }
        let calls: Vec<_> = calls(fsm, &active, &sets).collect();
        let mut follow = vec![ByteSet::EMPTY; fsm.rules().len()];
        loop {
            let mut changed = false;
            for &(parent, callee, after, may_end) in &calls {
                let mut add = after;
                if may_end {
                    add.union_with(&follow[parent].clone());
                }
                changed |= follow[callee].union_with(&add);
            }
            if !changed {
                return follow;
            }
        }
    }

    /// Grammars with nullable rules, recursion through nullable prefixes, counted repetitions
    /// and deep nesting (so that the rounds needed many passes).
    fn grammars() -> Vec<crate::grammar::Grammar> {
        use crate::grammar::{Expr, GrammarBuilder};
        let lit = Expr::literal;
        let mut out = Vec::new();
        // root ::= a "x" | b ; a ::= b? "y" a | "" ; b ::= a "z" | "w"
        let mut g = GrammarBuilder::new();
        let (root, a, b) = (g.rule("root"), g.rule("a"), g.rule("b"));
        let r = Expr::Rule;
        g.define(root, Expr::Choice(vec![Expr::Seq(vec![r(a), lit("x")]), r(b)]), None).unwrap();
        let opt_b = Expr::repeat(r(b), 0, Some(1));
        g.define(a, Expr::Choice(vec![Expr::Seq(vec![opt_b, lit("y"), r(a)]), Expr::Empty]), None).unwrap();
        g.define(b, Expr::Choice(vec![Expr::Seq(vec![r(a), lit("z")]), lit("w")]), None).unwrap();
        out.push(g.build("root").unwrap());
        // A chain of 40 nested bracket rules, each optional inside the previous one.
        let mut g = GrammarBuilder::new();
        let ids: Vec<_> = (0..40).map(|i| g.rule(&format!("n{i}"))).collect();
        for (i, &id) in ids.iter().enumerate() {
            let inner = ids.get(i + 1).map_or(lit("."), |&next| Expr::repeat(Expr::Rule(next), 0, Some(1)));
            let open = [b'(' + (i % 2) as u8];
            g.define(id, Expr::Seq(vec![Expr::Bytes(open.to_vec()), inner, Expr::star(Expr::Rule(ids[0]))]), None)
                .unwrap();
        }
        out.push(g.build("n0").unwrap());
        // A counted repetition of a nullable rule, then a terminator.
        let mut g = GrammarBuilder::new();
        let (root, s, t) = (g.rule("root"), g.rule("s"), g.rule("t"));
        g.define(root, Expr::Seq(vec![Expr::repeat(Expr::Rule(s), 2, Some(40)), lit("!")]), None).unwrap();
        g.define(s, Expr::Choice(vec![lit("a"), Expr::Rule(t)]), None).unwrap();
        g.define(t, Expr::Choice(vec![Expr::Empty, Expr::Seq(vec![lit("b"), Expr::Rule(s)])]), None).unwrap();
        out.push(g.build("root").unwrap());
        out
    }

    #[test]
    fn the_worklist_reaches_the_fixpoint_of_the_rounds() {
        for g in &grammars() {
            let fsm = build_grammar_fsm(g, &FsmLimits::default()).unwrap();
            assert_eq!(follow_sets(&fsm), follow_sets_by_rounds(&fsm), "{g}");
        }
    }
}
