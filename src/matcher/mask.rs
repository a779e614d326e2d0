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
use crate::cache::counted::{for_each_accepted_of_lengths, Reading};
use crate::cache::{AdaptiveTokenMask, EntrySlot, NearBound};
use crate::compiled::CompiledGrammar;
use crate::pda::{content_states_hash, matches_cut_content};
use crate::util::id::TokenId;
use std::sync::Arc;

/// One cache entry the current Earley set needs, and how far its accepted set can be trusted.
#[derive(Clone, Copy, Debug)]
struct SlotBudget {
    /// The entry: an item's state, and whether the item's repetition count is below its minimum.
    slot: EntrySlot,
    /// The smallest repetition budget of the items using the entry: tokens longer than this
    /// many bytes may cross the repetition's upper bound and are checked with the parser
    /// (`u32::MAX` outside counted repetitions).
    budget: u32,
    /// The largest: a token that crosses this one crosses every item's bound.
    budget_max: u32,
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
    /// Words of the tokens an item near its repetition's bound trusts.
    trusted: Vec<u32>,
    /// Ids of the accepted tokens no item near its repetition's bound may read.
    refused: Vec<u32>,
    /// The parser's configuration, and the checks' verdicts by configuration (see
    /// `verdicts.rs`).
    configuration: Vec<u32>,
    verdicts: super::verdicts::VerdictMemo,
    /// The configuration by content (then cut to what the checks read), the key of the
    /// grammar's shared verdicts.
    content: Vec<u32>,
}

impl MaskScratch {
    /// Forgets the kept verdicts (the matcher rolled back or reset).
    pub(crate) fn forget_verdicts(&mut self) {
        self.verdicts.clear();
    }
}

/// The longest check list whose verdicts a matcher keeps (see `verdicts.rs`).
const MAX_KEPT_CHECKS: usize = 1024;

/// The longest configuration (words, [`Engine::configuration_content`]) the grammar's shared
/// verdicts are keyed by: stacks nested deeper are rare, and walking them at every fill would
/// cost more than the checks it might save.
const MAX_SHARED_KEY: usize = 512;

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
            Some(s) => {
                s.budget = s.budget.min(budget);
                s.budget_max = s.budget_max.max(budget);
            }
            None => states.push(SlotBudget { slot, budget, budget_max: budget }),
        }
    });
    let ids = vocab.sorted_token_ids();
    // Whether `out` holds anything yet: the first large accepted set is copied, not merged.
    let mut written = false;
    for k in 0..scratch.states.len() {
        let SlotBudget { slot, budget, budget_max } = scratch.states[k];
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
            merge_near_bound(grammar, slot, (budget, budget_max), entry, dense, scratch, out);
        }
    }
    add_token_ids(parser, grammar, out);
    if scratch.check.is_empty() {
        return;
    }
    scratch.check.sort_unstable();
    scratch.check.dedup();
    check_uncertain(parser, grammar, scratch, out);
}

/// Sets in `out` the tokens of `scratch.check` (sorted positions) the parser accepts. Their
/// verdicts come from the matcher's memo, else the grammar's shared one, else from walking
/// them with the parser (then kept in both; see `verdicts.rs` and `cache/verdicts.rs`).
fn check_uncertain(parser: &mut Engine, grammar: &CompiledGrammar, scratch: &mut MaskScratch, out: &mut [u32]) {
    let (cache, ids) = (grammar.mask_cache(), grammar.vocabulary().sorted_token_ids());
    // The most bytes a check reads (the Earley parser keys counts by it).
    let check = &scratch.check;
    let vocab = grammar.vocabulary();
    let reach = || check.iter().map(|&pos| vocab.sorted_token_bytes(pos as usize).len() as u32).max().unwrap_or(0);
    // Long check lists (free text, thousands of tokens) are not kept: copying them at every
    // new configuration cost toolbench's tail more than their rare repeats saved.
    let keyed = check.len() <= MAX_KEPT_CHECKS && parser.configuration(&mut scratch.configuration, reach);
    if keyed {
        if let Some(allowed) = scratch.verdicts.find(&scratch.configuration, &scratch.check) {
            set_ids(out, allowed);
            return;
        }
    }
    let shared = keyed && parser.configuration_content(&mut scratch.content, MAX_SHARED_KEY);
    if shared {
        let full = &scratch.content;
        let states = content_states_hash(full);
        if let Some(allowed) = cache.verdicts().find(states, &scratch.check, |cut| matches_cut_content(cut, full)) {
            set_ids(out, &allowed);
            scratch.verdicts.keep(&scratch.configuration, &scratch.check, allowed);
            return;
        }
    }
    parser.record_pops();
    walk_tokens(parser, grammar.vocabulary(), scratch.check.iter().map(|&pos| ids[pos as usize]), out);
    // Verdicts the work budget cut short are not kept (the fill reports the budget's error).
    if keyed && !parser.budget().exceeded() {
        let is_set = |id: u32| out[id as usize / 32] >> (id % 32) & 1 == 1;
        let allowed: Arc<[u32]> = scratch.check.iter().map(|&pos| ids[pos as usize]).filter(|&id| is_set(id)).collect();
        if shared && parser.popped_content(&mut scratch.content, MAX_SHARED_KEY) {
            let states = content_states_hash(&scratch.content);
            cache.verdicts().keep(states, &scratch.content, &scratch.check, allowed.clone());
        }
        scratch.verdicts.keep(&scratch.configuration, &scratch.check, allowed);
    }
}

/// Sets the bits of `ids` in `out`.
fn set_ids(out: &mut [u32], ids: &[u32]) {
    for &id in ids {
        out[id as usize / 32] |= 1 << (id % 32);
    }
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

/// ORs into `out` the accepted tokens of an entry that the items of `state`, with `budgets`
/// (the least and the most) loop-backs left, may read (within one token length of a
/// repetition's upper bound; see `cache/counted.rs`), and lists in `scratch.check` those only
/// the parser can decide: a token whose loop-backs fit the most but not the least budget is
/// valid for some items only.
fn merge_near_bound(
    grammar: &CompiledGrammar,
    slot: EntrySlot,
    (least, most): (u32, u32),
    entry: &crate::cache::MaskEntry,
    dense: Option<&[u32]>,
    scratch: &mut MaskScratch,
    out: &mut [u32],
) {
    let (fsm, vocab) = (grammar.fsm(), grammar.vocabulary());
    let mut trusted = std::mem::take(&mut scratch.trusted);
    trusted.clear();
    trusted.resize(out.len(), 0);
    match dense {
        Some(words) => copy_into(&mut trusted, words),
        None => merge_accepted(
            &entry.accepted,
            &entry.uncertain,
            vocab.sorted_token_ids(),
            vocab.normal_token_mask(),
            scratch,
            &mut trusted,
        ),
    }
    let position = |id: u32| vocab.sorted_position(id).expect("accepted tokens are normal");
    // The accepted tokens an item's budget cannot trust by their length alone.
    let longer_than_least = (least as usize + 1)..=vocab.max_token_len();
    let distrust = |trusted: &mut [u32], id: u32| trusted[id as usize / 32] &= !(1 << (id % 32));
    let state = slot.state;
    // The accepted tokens beyond the least budget: to check (the parser decides) or refused;
    // either way no longer trusted.
    let from = scratch.check.len();
    let (check, refused) = (&mut scratch.check, &mut scratch.refused);
    refused.clear();
    match grammar.mask_cache().near_bound(fsm, vocab, slot, least) {
        NearBound::Table(counts) => {
            let within_least = counts.within(least);
            let within_most = counts.within_or_all(most);
            for (w, t) in trusted.iter_mut().enumerate() {
                // Accepted tokens within the most but not the least budget: the parser decides.
                let mut undecided = *t & !within_least[w] & within_most.map_or(u32::MAX, |m| m[w]);
                while undecided != 0 {
                    check.push(position((w * 32) as u32 + undecided.trailing_zeros()));
                    undecided &= undecided - 1;
                }
                *t &= within_least[w];
            }
        }
        NearBound::Walk(forced) => for_each_accepted_of_lengths(vocab, &longer_than_least, &trusted, |id, bytes| {
            match forced.loops(fsm, state, bytes) {
                Reading::Loops(n) if n <= least => {}
                Reading::Loops(n) if n > most => refused.push(id),
                _ => check.push(position(id)),
            }
        }),
        NearBound::Bounds(bounds) => {
            bounds.for_each_beyond(fsm, vocab, (least, most), &trusted, |id, checked| match checked {
                true => check.push(position(id)),
                false => refused.push(id),
            })
        }
        NearBound::Parser => {
            for_each_accepted_of_lengths(vocab, &longer_than_least, &trusted, |id, _| check.push(position(id)))
        }
    }
    let ids = vocab.sorted_token_ids();
    for &pos in &scratch.check[from..] {
        distrust(&mut trusted, ids[pos as usize]);
    }
    for &id in &scratch.refused {
        distrust(&mut trusted, id);
    }
    or_into(out, &trusted);
    scratch.trusted = trusted;
}
