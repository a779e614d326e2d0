//! The dense form of an entry's accepted tokens, for the warm mask.
//!
//! An entry stores its accepted tokens in their smallest form ([`AdaptiveTokenMask`]), which is
//! right for memory and for saving a grammar, but a list form costs the warm mask a pass per
//! listed token, and the rejected form three passes over the whole vocabulary (copy the normal
//! tokens, clear the rejected and uncertain ones, merge). When the accepted set is large, one
//! pass over a precomputed bitset is cheaper, and when a single entry decides a step, the mask
//! is a plain copy of it. The memo keeps that bitset beside the entry, built on the first warm
//! use (the cold fill it replaces costs the same one pass, so the first mask does not pay more).

use super::{AdaptiveTokenMask, MaskEntry};
use crate::tokenizer::Vocabulary;
use crate::util::bitset::mask_words;
use crate::util::id::TokenId;

/// A listed token costs a scattered write, a bitset word an eighth of a vectorised pass or
/// so: lists of more than a quarter as many tokens as the mask has words are merged as bitsets.
const LIST_PER_WORD: usize = 4;

/// The accepted tokens of `entry` as a mask of `vocab` when merging that beats merging the
/// entry's own form; `None` for a small accepted list (and for a bitset, already dense).
pub(crate) fn dense_accepted(entry: &MaskEntry, vocab: &Vocabulary) -> Option<Box<[u32]>> {
    let words = mask_words(vocab.vocab_size());
    match &entry.accepted {
        AdaptiveTokenMask::Bitset(_) => None,
        AdaptiveTokenMask::Accepted(list) if list.len() * LIST_PER_WORD <= words => None,
        AdaptiveTokenMask::Accepted(list) => {
            let mut out = vec![0u32; words];
            for id in list.iter() {
                out[id.word()] |= id.bit();
            }
            Some(out.into())
        }
        AdaptiveTokenMask::Rejected(list) => {
            // accepted = normal tokens - rejected - uncertain
            let mut out = vocab.normal_token_mask().to_vec();
            out.resize(words, 0);
            let ids = vocab.sorted_token_ids();
            let uncertain = entry.uncertain.iter().map(|&pos| TokenId::from_u32(ids[pos as usize]));
            for id in list.iter().copied().chain(uncertain) {
                out[id.word()] &= !id.bit();
            }
            Some(out.into())
        }
    }
}
