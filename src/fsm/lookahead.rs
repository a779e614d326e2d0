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
    let n_states = fsm.state_len();
    // first[s]: bytes readable from state s before leaving its rule;
    // endable[s]: whether the rule can end from s without reading a byte.
    let mut first = vec![ByteSet::EMPTY; n_states];
    let mut endable = vec![false; n_states];
    let loops_to = |s: StateId| -> Option<StateId> {
        let r = &fsm.rules()[fsm.rule_of(s) as usize];
        match r.kind {
            RuleKind::Counted { .. } if s != r.start && fsm.is_final(s) => Some(r.start),
            _ => None,
        }
    };
    for s in 0..n_states as StateId {
        for e in fsm.byte_edges(s) {
            first[s as usize].insert_range(e.lo, e.hi);
        }
        let r = &fsm.rules()[fsm.rule_of(s) as usize];
        endable[s as usize] = match r.kind {
            RuleKind::Plain => fsm.is_final(s),
            // Out of context any count is possible, so any iteration end may end the rule.
            RuleKind::Counted { .. } => s == r.start || fsm.is_final(s),
        };
    }
    // Only states with rule edges or an iteration end can change below (the others keep what
    // their byte edges give): iterate over those alone, not over every state per round.
    let active: Vec<StateId> =
        (0..n_states as StateId).filter(|&s| !fsm.rule_edges(s).is_empty() || loops_to(s).is_some()).collect();
    loop {
        let mut changed = false;
        for &s in &active {
            let mut f = first[s as usize];
            let mut end = endable[s as usize];
            for e in fsm.rule_edges(s) {
                let callee = &fsm.rules()[e.rule as usize];
                f.union_with(&first[callee.start as usize].clone());
                if callee.nullable {
                    f.union_with(&first[e.target as usize].clone());
                    end |= endable[e.target as usize];
                }
            }
            if let Some(start) = loops_to(s) {
                f.union_with(&first[start as usize].clone());
            }
            if f != first[s as usize] || end != endable[s as usize] {
                first[s as usize] = f;
                endable[s as usize] = end;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // Every rule edge once, with what follows it: (caller, callee, bytes after, may end after).
    let calls: Vec<(usize, usize, ByteSet, bool)> = active
        .iter()
        .flat_map(|&s| {
            let parent = fsm.rule_of(s) as usize;
            let (first, endable) = (&first, &endable);
            fsm.rule_edges(s)
                .iter()
                .map(move |e| (parent, e.rule as usize, first[e.target as usize], endable[e.target as usize]))
        })
        .collect();
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
