//! The fast path for cache entries of `TagDispatch` free-text states (XGrammar-2 §3.2's "tokens
//! that cannot complete a trigger are accepted without a walk").
//!
//! A free-text state accepts nearly the whole vocabulary, so the Earley walk of a normal entry
//! (one parser step per byte of every token) costs tens of milliseconds on a 128k vocabulary,
//! and a dispatch has one such state per prefix of every trigger. Instead, tokens are run
//! through the dispatch automaton itself (deterministic; one edge lookup per byte), and only
//! the tokens that leave free text (complete a trigger, an exclude or a stop string, or are not
//! valid UTF-8 there) go through the isolated parser, which classifies them exactly as the
//! normal walk would (a token completing a trigger may well be accepted: `>{"` after
//! `<function=f` reads on into the body).
//!
//! Most tokens are not even run: per dispatch rule, one walk from the start state records
//! which tokens stay in free text ([`FreeTextBase`]). From another free-text state `s`, once a
//! token's prefix of `k` bytes reaches a free-text state whose Aho-Corasick depth is at most `k`
//! ([`GrammarFsm::free_text_depth`]), the pending pattern prefix of `s` has been dropped and the
//! automaton is where the same prefix leads from the start (the longest suffix that is a pattern
//! prefix lies inside the token); the token, and every token sharing that prefix, fares as it
//! does from the start. For almost every first byte this holds after one byte, so an entry
//! costs a pass over the first-byte blocks plus the few tokens that continue the pending prefix.

use std::sync::Arc;

use super::build::{smallest_form, walk_positions};
use super::lexical_loop::{region_key, step};
use super::MaskEntry;
use crate::fsm::{GrammarFsm, StateId};
use crate::tokenizer::Vocabulary;
use crate::util::byteset::ByteSet;
use crate::util::id::TokenId;

/// Which tokens (by sorted position) a dispatch rule reads entirely as free text from its start
/// state.
#[derive(Debug)]
pub(crate) struct FreeTextBase {
    free: Vec<u64>,
}

impl FreeTextBase {
    /// Runs every token from `start`, the start state of a dispatch rule.
    pub(super) fn new(fsm: &GrammarFsm, vocab: &Vocabulary, start: StateId) -> Self {
        let mut free = vec![0u64; vocab.sorted_token_ids().len().div_ceil(64)];
        free_walk(fsm, vocab, start, None, |pos, fate| {
            if fate == Fate::Free {
                free[pos / 64] |= 1 << (pos % 64);
            }
        });
        FreeTextBase { free }
    }

    fn fate(&self, pos: usize) -> Fate {
        if self.free[pos / 64] >> (pos % 64) & 1 == 1 {
            Fate::Free
        } else {
            Fate::Parser
        }
    }
}

/// A key for the [`FreeTextBase`] of the dispatch rule starting at `start`: the base is a
/// function of the vocabulary and of the free-text part of the automaton alone (which byte
/// leads from which free-text state to which, and which bytes leave free text), not of the
/// bodies the triggers lead to. So two requests whose dispatches share their triggers,
/// excludes and stop strings (a protocol's, whatever the tools) share one base through the
/// pool. A breadth-first numbering of the free-text states reachable from `start`, hashed
/// with every byte edge (an edge leaving free text is written as such).
pub(super) fn free_text_key(fsm: &GrammarFsm, start: StateId) -> u128 {
    region_key(fsm, start, |t| fsm.is_free_text(t), |_| ByteSet::EMPTY)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Read entirely in free text: accepted in every context.
    Free,
    /// Leaves free text: classified by the parser.
    Parser,
}

/// The entry of free-text state `state` (see the module docs); `context` and `follow` as for
/// [`super::build_entry`].
pub(super) fn free_text_entry(
    fsm: &Arc<GrammarFsm>,
    context: &[StateId],
    follow: &ByteSet,
    vocab: &Vocabulary,
    state: StateId,
    base: &FreeTextBase,
) -> MaskEntry {
    let ids = vocab.sorted_token_ids();
    let mut accepted = Vec::new();
    let mut check = Vec::new();
    free_walk(fsm, vocab, state, Some(base), |pos, fate| match fate {
        Fate::Free => accepted.push(TokenId::from_u32(ids[pos])),
        Fate::Parser => check.push(pos as u32),
    });
    let (more, uncertain) = walk_positions(fsm, context, follow, vocab, state, &check);
    accepted.extend(more);
    let accepted = smallest_form(vocab, accepted).to_mask(&uncertain, vocab);
    MaskEntry { accepted, uncertain: uncertain.into_boxed_slice() }
}

/// Runs every token (in sorted order, sharing prefixes) through the automaton from `from` while
/// it stays in free text, and reports each token's fate by sorted position. With `base`, a
/// prefix that reaches the start's behaviour (see the module docs) gives every token sharing it
/// the fate `base` records.
fn free_walk(
    fsm: &GrammarFsm,
    vocab: &Vocabulary,
    from: StateId,
    base: Option<&FreeTextBase>,
    mut report: impl FnMut(usize, Fate),
) {
    let ids = vocab.sorted_token_ids();
    let lcp = vocab.sorted_lcp();
    let n = ids.len();
    // `stack[k]`: the state after the first `k` bytes of the last walked token.
    let mut stack: Vec<StateId> = vec![from];
    let mut i = 0;
    while i < n {
        let bytes = vocab.sorted_token_bytes(i);
        stack.truncate((lcp[i] as usize).min(stack.len() - 1) + 1);
        let mut k = stack.len() - 1;
        let mut coincide = None;
        let mut leave = None;
        while k < bytes.len() {
            match step(fsm, stack[k], bytes[k]) {
                Some(t) if fsm.is_free_text(t) => {
                    stack.push(t);
                    k += 1;
                    if let (Some(b), Some(d)) = (base, fsm.free_text_depth(t)) {
                        if d as usize <= k {
                            coincide = Some((b, k));
                            break;
                        }
                    }
                }
                _ => {
                    leave = Some(k);
                    break;
                }
            }
        }
        if let Some((b, k)) = coincide {
            // Every token sharing the first `k` bytes fares as from the start.
            report(i, b.fate(i));
            i += 1;
            while i < n && lcp[i] as usize >= k {
                report(i, b.fate(i));
                i += 1;
            }
        } else if let Some(k) = leave {
            // Every token sharing the first `k + 1` bytes leaves free text at the same byte.
            report(i, Fate::Parser);
            i += 1;
            while i < n && lcp[i] as usize > k {
                report(i, Fate::Parser);
                i += 1;
            }
        } else {
            report(i, Fate::Free);
            i += 1;
        }
    }
}
