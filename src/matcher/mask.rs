//! The runtime mask from the cache (XGrammar Algorithm 1 on Earley sets or PDA threads): merge
//! the entries of the distinct scannable states of the current Earley set or threads (union of
//! accepted tokens: an entry is a property of the state, whichever parser reached it), then
//! check the uncertain tokens that no entry accepted against the full parser, sharing prefixes
//! between consecutive checks. A large accepted set is merged from the bitset the cache keeps
//! beside its entry (copied when it is the first written), so a warm step costs one pass per
//! large entry plus its uncertain checks, whatever the entry's stored form. Scratch buffers
//! belong to the matcher and are reused, so a warm step does not allocate.

use super::engine::{Engine, StateUse};
use super::oracle::walk_tokens;
use crate::cache::{AdaptiveTokenMask, EntrySlot};
use crate::compiled::CompiledGrammar;
use crate::util::id::TokenId;

/// One cache entry the current Earley set needs, and how far its accepted set can be trusted.
#[derive(Clone, Copy, Debug)]
struct SlotBudget {
    /// The entry: an item's state, and whether the item's repetition count is below its minimum.
    slot: EntrySlot,
    /// The smallest repetition budget of the items using the entry: tokens longer than this
    /// many bytes may cross the repetition's upper bound and are checked with the parser
    /// (`u32::MAX` outside counted repetitions).
    budget: u32,
}

/// Reusable buffers of the mask computation.
#[derive(Clone, Debug, Default)]
pub struct MaskScratch {
    /// The distinct entries of the current set.
    states: Vec<SlotBudget>,
    /// Positions (in the sorted vocabulary) to check with the parser.
    check: Vec<u32>,
    /// Words for expanding a rejected-list entry.
    words: Vec<u32>,
}

/// Writes into `out` (already zeroed, `ceil(vocab/32)` words) every normal token the grammar
/// allows next. Stop tokens are left to the caller. The parser is restored on return.
pub fn fill_cached_mask(parser: &mut Engine, grammar: &CompiledGrammar, scratch: &mut MaskScratch, out: &mut [u32]) {
    let fsm = grammar.fsm();
    let vocab = grammar.vocabulary();
    let cache = grammar.mask_cache();
    let max_len = vocab.max_token_len() as u32;
    scratch.states.clear();
    scratch.check.clear();
    let states = &mut scratch.states;
    parser.for_each_scannable(|StateUse { state, below_min, budget }| {
        let slot = EntrySlot { state, below_min };
        match states.iter_mut().find(|s| s.slot == slot) {
            Some(s) => s.budget = s.budget.min(budget),
            None => states.push(SlotBudget { slot, budget }),
        }
    });
    let ids = vocab.sorted_token_ids();
    // Whether `out` holds anything yet: the first large accepted set is copied, not merged.
    let mut written = false;
    for k in 0..scratch.states.len() {
        let SlotBudget { slot, budget } = scratch.states[k];
        let (entry, dense) = cache.entry_with_dense(fsm, vocab, slot.state, slot.below_min);
        scratch.check.extend_from_slice(&entry.uncertain);
        if budget >= max_len {
            match dense {
                Some(words) if !written => copy_into(out, words),
                Some(words) => or_into(out, words),
                None => merge_accepted(&entry.accepted, &entry.uncertain, ids, vocab.normal_token_mask(), scratch, out),
            }
            written = true;
        } else {
            written = true;
            // Near the upper bound of a repetition: trust only tokens short enough to fit, and
            // check the others (rare: only within one token length of the bound).
            let mut accepted = Vec::new();
            for_each_accepted(&entry.accepted, &entry.uncertain, ids, vocab, scratch, |id| accepted.push(id));
            for id in accepted {
                if vocab.token_bytes(id.as_u32()).len() as u32 <= budget {
                    out[id.word()] |= id.bit();
                } else {
                    scratch.check.push(vocab.sorted_position(id.as_u32()).expect("accepted tokens are normal"));
                }
            }
        }
    }
    add_token_ids(parser, grammar, out);
    if scratch.check.is_empty() {
        return;
    }
    scratch.check.sort_unstable();
    scratch.check.dedup();
    let ids = vocab.sorted_token_ids();
    walk_tokens(parser, vocab, scratch.check.iter().map(|&pos| ids[pos as usize]), out);
}

/// ORs into `out` the tokens some item of the current set reads by id (its sentinel), from the
/// id ranges the automaton records per state: no parser run (see `fsm::token`).
fn add_token_ids(parser: &Engine, grammar: &CompiledGrammar, out: &mut [u32]) {
    let fsm = grammar.fsm();
    let tokens = grammar.vocabulary().token_mask();
    parser.for_each_token_state(|state| {
        for &(lo, hi) in fsm.token_ids(state) {
            set_range(out, tokens, lo, hi);
        }
    });
}

/// Sets the bits `lo..=hi` of `out` that are set in `allowed`.
fn set_range(out: &mut [u32], allowed: &[u32], lo: u32, hi: u32) {
    let hi = hi.min((allowed.len() * 32) as u32 - 1);
    if lo > hi {
        return;
    }
    let (wlo, whi) = (lo as usize / 32, hi as usize / 32);
    for w in wlo..=whi {
        let mut bits = u32::MAX;
        if w == wlo {
            bits &= u32::MAX << (lo % 32);
        }
        if w == whi {
            bits &= u32::MAX >> (31 - hi % 32);
        }
        out[w] |= bits & allowed[w];
    }
}

/// ORs the accepted tokens of an entry into `out`.
fn merge_accepted(
    mask: &AdaptiveTokenMask,
    uncertain: &[u32],
    ids: &[u32],
    normal: &[u32],
    scratch: &mut MaskScratch,
    out: &mut [u32],
) {
    match mask {
        AdaptiveTokenMask::Accepted(list) => {
            for &id in list.iter() {
                out[id.word()] |= id.bit();
            }
        }
        AdaptiveTokenMask::Bitset(bits) => or_into(out, bits),
        AdaptiveTokenMask::Rejected(list) => {
            // accepted = normal tokens - rejected - uncertain
            scratch.words.clear();
            scratch.words.extend_from_slice(normal);
            scratch.words.resize(out.len(), 0);
            for &id in list.iter() {
                scratch.words[id.word()] &= !id.bit();
            }
            for &pos in uncertain {
                let id = TokenId::from_u32(ids[pos as usize]);
                scratch.words[id.word()] &= !id.bit();
            }
            or_into(out, &scratch.words);
        }
    }
}

/// Copies `words` over `out` (all zero before: a shorter `words` leaves the rest zero).
fn copy_into(out: &mut [u32], words: &[u32]) {
    for (o, w) in out.iter_mut().zip(words) {
        *o = *w;
    }
}

/// ORs `words` into `out`, word by word.
fn or_into(out: &mut [u32], words: &[u32]) {
    for (o, w) in out.iter_mut().zip(words) {
        *o |= w;
    }
}

/// Calls `f` on every accepted token of an entry (slow path, near repetition bounds).
fn for_each_accepted(
    mask: &AdaptiveTokenMask,
    uncertain: &[u32],
    ids: &[u32],
    vocab: &crate::tokenizer::Vocabulary,
    scratch: &mut MaskScratch,
    mut f: impl FnMut(TokenId),
) {
    let mut words = vec![0u32; out_words(vocab.vocab_size())];
    merge_accepted(mask, uncertain, ids, vocab.normal_token_mask(), scratch, &mut words);
    for id in crate::util::bitset::allowed_ids(&words) {
        f(TokenId::new(id));
    }
}

fn out_words(vocab_size: usize) -> usize {
    crate::util::bitset::mask_words(vocab_size)
}
