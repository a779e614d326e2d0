//! Building one cache entry: the vocabulary walk of an isolated parser (see the module docs of
//! [`crate::cache`]).

use std::sync::Arc;

use super::{AdaptiveTokenMask, MaskEntry};
use crate::earley::Parser;
use crate::fsm::{GrammarFsm, StateId};
use crate::tokenizer::Vocabulary;
use crate::util::bitset::mask_words;
use crate::util::byteset::ByteSet;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Accepted,
    Uncertain,
    Rejected,
}

/// Classifies every normal token of `vocab` for the scannable state `state` seen in its certain
/// `context` (see [`Parser::isolated`]); `follow` is the set of bytes that may follow the
/// outermost rule of that context.
pub fn build_entry(
    fsm: &Arc<GrammarFsm>,
    context: &[StateId],
    follow: &ByteSet,
    vocab: &Vocabulary,
    state: StateId,
) -> MaskEntry {
    let mut parser = Parser::isolated(Arc::clone(fsm), state, context);
    let base = parser.byte_len();
    let ids = vocab.sorted_token_ids();
    let lcp = vocab.sorted_lcp();
    let mut accepted: Vec<u32> = Vec::new();
    let mut rejected: Vec<u32> = Vec::new();
    let mut uncertain: Vec<u32> = Vec::new();
    // `held` bytes of the last walked token are in the parser; `exits[k]` counts the positions
    // 1..=k of that prefix where the rule could end.
    let mut held = 0usize;
    let mut exits: Vec<u32> = vec![0];
    let mut record = |pos: usize, class: Class| match class {
        Class::Accepted => accepted.push(ids[pos]),
        Class::Rejected => rejected.push(ids[pos]),
        Class::Uncertain => uncertain.push(pos as u32),
    };
    let mut i = 0;
    while i < ids.len() {
        let bytes = vocab.token_bytes(ids[i]);
        // Tokens skipped since the last walked one all extend its failed prefix, which is
        // longer than this token's common prefix with them, so `lcp[i]` is also the common
        // prefix with the walked token.
        let common = (lcp[i] as usize).min(held);
        if held > common {
            parser.pop_bytes(held - common);
            held = common;
            exits.truncate(held + 1);
        }
        while held < bytes.len() && parser.advance_byte(bytes[held]) {
            held += 1;
            let exit = parser.is_accepting_at(base + held) as u32;
            exits.push(exits[held - 1] + exit);
        }
        if held == bytes.len() {
            record(i, Class::Accepted);
            i += 1;
            continue;
        }
        // The byte at `held` cannot be read inside the rule. The token is uncertain when the
        // rule can end after some j in 1..=held bytes and the byte after it can follow the rule.
        let class = if exits[held] > 0 && (1..=held).any(|j| exits[j] > exits[j - 1] && follow.contains(bytes[j])) {
            Class::Uncertain
        } else {
            Class::Rejected
        };
        // Every following token that extends `bytes[..=held]` gets the same verdict.
        record(i, class);
        i += 1;
        while i < ids.len() && lcp[i] as usize > held {
            record(i, class);
            i += 1;
        }
    }
    let accepted = smallest_form(vocab, accepted, rejected);
    MaskEntry { accepted, uncertain: uncertain.into_boxed_slice() }
}

fn smallest_form(vocab: &Vocabulary, mut accepted: Vec<u32>, mut rejected: Vec<u32>) -> AdaptiveTokenMask {
    let bitset_words = mask_words(vocab.vocab_size());
    if accepted.len() <= rejected.len() && accepted.len() <= bitset_words {
        accepted.sort_unstable();
        AdaptiveTokenMask::Accepted(accepted.into_boxed_slice())
    } else if rejected.len() <= bitset_words {
        rejected.sort_unstable();
        AdaptiveTokenMask::Rejected(rejected.into_boxed_slice())
    } else {
        let mut bits = vec![0u32; bitset_words];
        for id in accepted {
            bits[id as usize / 32] |= 1 << (id % 32);
        }
        AdaptiveTokenMask::Bitset(bits.into_boxed_slice())
    }
}
