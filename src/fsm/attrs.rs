//! Rule attributes that change a rule's language (`lazy`, `max_chars`; see
//! [`RuleAttrs`]), enforced exactly on the rule's finished automaton.
//!
//! Both are statements about where an occurrence of the rule must end, so they need the
//! rule's own deterministic automaton, read over text only: no rule references (the rule's
//! references must all have been inlined), no token ids (the `0xFF` sentinel), no
//! `TagDispatch`. On such an automaton:
//!
//! * `lazy` (committed-shortest matching): a final state keeps no outgoing edge, so the rule
//!   ends at the first position where its body can end. In a deterministic automaton the
//!   first final state on the input's path is exactly that position.
//! * `max_chars=N`: the product with a character counter `0..=N` (saturating at `N`). A
//!   character starts at every byte that is not a UTF-8 continuation byte (`80`–`BF`); once
//!   the counter is at `N`, a final state keeps no outgoing edge. The rule therefore ends at
//!   the first position at or after `N` characters where its body can end — XGrammar's
//!   semantics ("forced to end when it can, relaxed until it can"), and an exact bound of `N`
//!   characters when the body can end after every character.
//!
//! The product has at most `(N + 1) × states` states; past the budget the rule is an error
//! (never a silent relaxation).

use super::determinize::{determinize, is_deterministic};
use super::flat::FlatFsm;
use super::minimize::minimize;
use super::Label;
use crate::grammar::{GrammarError, RuleAttrs};
use crate::util::hash::FastMap;

/// `fsm` (rule `rule`'s automaton) restricted by `attrs`; `max_states` bounds the result.
pub(super) fn restrict(
    fsm: &FlatFsm,
    attrs: &RuleAttrs,
    rule: &str,
    max_states: usize,
) -> Result<FlatFsm, GrammarError> {
    let attribute = if attrs.lazy { "lazy" } else { "max_chars" };
    let unsupported = |reason: &str| GrammarError::UnsupportedAttribute {
        rule: rule.to_string(),
        attribute,
        reason: reason.to_string(),
    };
    let text_only = (0..fsm.state_len() as u32)
        .all(|s| fsm.edges(s).iter().all(|&(l, _)| matches!(l, Label::Bytes(_, hi) if hi < 0xFF)));
    if !text_only {
        return Err(unsupported(
            "needs a body of strings, character classes and rules that can be inlined into it \
             (no recursion, token sets or TagDispatch)",
        ));
    }
    let dfa = if is_deterministic(fsm) {
        fsm.clone()
    } else {
        determinize(fsm.clone(), max_states, max_states.saturating_mul(64))
            .map_err(|_| unsupported("needs a deterministic automaton and this body's is too large"))?
    };
    let budget = attrs.max_chars;
    let limit = budget.map_or(0, |n| n as usize);
    let must_end = |q: u32, k: u32| dfa.finals[q as usize] && (attrs.lazy || budget.is_some_and(|n| k >= n));
    let mut out = FlatFsm::with_capacity(dfa.state_len(), dfa.edge_len());
    let mut ids: FastMap<(u32, u32), u32> = FastMap::default();
    let mut order: Vec<(u32, u32)> = vec![(dfa.start, 0)];
    ids.insert((dfa.start, 0), out.add_state(dfa.finals[dfa.start as usize]));
    out.start = 0;
    let mut next = 0;
    while next < order.len() {
        let (q, k) = order[next];
        next += 1;
        if !must_end(q, k) {
            for &(label, t) in dfa.edges(q) {
                let Label::Bytes(lo, hi) = label else { continue };
                // Without a budget there is nothing to count: the edge stays whole.
                let pieces: Vec<(u8, u8, bool)> = match budget {
                    Some(_) => split_continuation(lo, hi).collect(),
                    None => vec![(lo, hi, false)],
                };
                for (lo, hi, starts_char) in pieces {
                    let k2 = if starts_char { (k + 1).min(limit as u32) } else { k };
                    let id = match ids.get(&(t, k2)) {
                        Some(&id) => id,
                        None => {
                            if order.len() >= max_states {
                                return Err(GrammarError::TooLarge {
                                    what: "automaton states of a rule with `max_chars`",
                                    actual: order.len() + 1,
                                    limit: max_states,
                                });
                            }
                            let id = out.add_state(dfa.finals[t as usize]);
                            ids.insert((t, k2), id);
                            order.push((t, k2));
                            id
                        }
                    };
                    out.push_edge(Label::Bytes(lo, hi), id);
                }
            }
            // Splitting one range in up to three keeps byte order, except that two pieces of
            // neighbouring ranges can now be adjacent; the edges stay disjoint and sorted.
        }
        out.end_state();
    }
    let mut out = minimize(out);
    out.shrink_to_fit();
    Ok(out)
}

/// `lo..=hi` cut at the UTF-8 continuation bytes `80..=BF`: pieces in order, each with
/// whether its bytes start a character.
fn split_continuation(lo: u8, hi: u8) -> impl Iterator<Item = (u8, u8, bool)> {
    const CONT: (u8, u8) = (0x80, 0xBF);
    let before = (lo < CONT.0).then(|| (lo, hi.min(CONT.0 - 1), true));
    let inside = (lo <= CONT.1 && hi >= CONT.0).then(|| (lo.max(CONT.0), hi.min(CONT.1), false));
    let after = (hi > CONT.1).then(|| (lo.max(CONT.1 + 1), hi, true));
    [before, inside, after].into_iter().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_cut_at_continuation_bytes() {
        let cut = |lo, hi| split_continuation(lo, hi).collect::<Vec<_>>();
        assert_eq!(cut(0x00, 0xFE), vec![(0x00, 0x7F, true), (0x80, 0xBF, false), (0xC0, 0xFE, true)]);
        assert_eq!(cut(0x61, 0x7A), vec![(0x61, 0x7A, true)]);
        assert_eq!(cut(0x90, 0x9F), vec![(0x90, 0x9F, false)]);
        assert_eq!(cut(0xA0, 0xC3), vec![(0xA0, 0xBF, false), (0xC0, 0xC3, true)]);
    }
}
