//! Token-level elements in byte automata: [`Expr::Token`](crate::grammar::Expr::Token) lowers
//! to the [sentinels](crate::util::sentinel) of its ids, and the frozen automaton records, per
//! state that can read a sentinel, which ids it accepts.
//!
//! A negated set is the complement within all sentinel ids (`0..2^24`), not within a
//! vocabulary: the automata do not know the vocabulary, and the matcher only ever feeds the
//! sentinels of real tokens (normal or special, never padding ids), so both complements
//! accept the same tokens.
//!
//! After the lead byte `0xFF`, a sentinel's four digit bytes can only be read by the
//! sentinel automata (no text contains `0xFF`, so no text path shares these states), so the
//! ids a state accepts are a property of its `0xFF` edge alone: [`token_sets`] computes them
//! once per automaton, and the mask sets those bits without running the parser.

use super::nfa::Nfa;
use super::{GrammarFsm, IdRanges, Label, StateId};
use crate::grammar::TokenSet;
use crate::util::ranges::canonical;
use crate::util::sentinel::Sentinel;

/// The label of the edge on a sentinel's lead byte, where reading a token by id starts.
pub(super) const LEAD_LABEL: Label = Label::Bytes(Sentinel::LEAD, Sentinel::LEAD);

/// The id ranges `set` stands for, within `0..=Sentinel::MAX_ID`.
pub(crate) fn resolved_ids(set: &TokenSet) -> Vec<(u32, u32)> {
    if set.is_negated() {
        Sentinel::complement(set.ranges())
    } else {
        set.ranges()
            .iter()
            .filter(|r| r.0 <= Sentinel::MAX_ID)
            .map(|&(lo, hi)| (lo, hi.min(Sentinel::MAX_ID)))
            .collect()
    }
}

/// Adds the sentinels of `set` to `nfa` from `from`; returns the state where they end.
pub(super) fn lower_token_set(nfa: &mut Nfa, set: &TokenSet, from: u32) -> u32 {
    let lead = nfa.add_state();
    nfa.add_edge(from, LEAD_LABEL, lead);
    let end = nfa.add_state();
    for (lo, hi) in resolved_ids(set) {
        for seq in Sentinel::sequences(lo, hi) {
            let mut cur = lead;
            for (k, &(blo, bhi)) in seq.iter().enumerate() {
                let next = if k + 1 == seq.len() { end } else { nfa.add_state() };
                nfa.add_edge(cur, Label::Bytes(blo, bhi), next);
                cur = next;
            }
        }
    }
    end
}

/// Whether state `s` of `fsm` can read the lead byte of a sentinel.
#[inline]
pub(crate) fn reads_sentinel(fsm: &GrammarFsm, s: StateId) -> bool {
    fsm.byte_edges(s).last().is_some_and(|e| Sentinel::is_lead(e.hi))
}

/// For every state that can read a sentinel, the ids it accepts (sorted, disjoint, merged
/// ranges), sorted by state.
pub(super) fn token_sets(fsm: &GrammarFsm) -> Vec<(StateId, IdRanges)> {
    let mut out = Vec::new();
    for s in fsm.states() {
        if !reads_sentinel(fsm, s) {
            continue;
        }
        let mut ranges = Vec::new();
        for e in fsm.byte_edges(s).iter().filter(|e| Sentinel::is_lead(e.hi)) {
            ranges.extend(digit_ranges(fsm, e.target, Sentinel::DIGITS));
        }
        out.push((s, canonical(ranges, u32::MAX).into_boxed_slice()));
    }
    out
}

/// The values of the `digits`-digit strings readable from `s`, as ranges.
fn digit_ranges(fsm: &GrammarFsm, s: StateId, digits: usize) -> Vec<(u32, u32)> {
    let unit = 1u32 << (6 * (digits - 1));
    let mut out = Vec::new();
    for e in fsm.byte_edges(s) {
        let (lo, hi) = (e.lo.max(0x80), e.hi.min(0xBF));
        if lo > hi {
            continue;
        }
        let (dlo, dhi) = ((lo & 63) as u32, (hi & 63) as u32);
        if digits == 1 {
            out.push((dlo, dhi));
            continue;
        }
        let sub = canonical(digit_ranges(fsm, e.target, digits - 1), u32::MAX);
        if sub == [(0, unit - 1)] {
            out.push((dlo * unit, (dhi + 1) * unit - 1));
        } else {
            for d in dlo..=dhi {
                out.extend(sub.iter().map(|&(a, b)| (d * unit + a, d * unit + b)));
            }
        }
    }
    out
}
