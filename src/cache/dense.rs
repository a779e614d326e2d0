//! The dense form of an entry's accepted tokens, for the warm mask.
//!
//! An entry stores its accepted tokens in their smallest form ([`AdaptiveTokenMask`]), which is
//! right for memory and for saving a grammar, but a list form costs the warm mask a pass per
//! listed token, and the rejected form three passes over the whole vocabulary (copy the normal
//! tokens, clear the rejected and uncertain ones, merge). When the accepted set is large, one
//! pass over a precomputed bitset is cheaper, and when a single entry decides a step, the mask
//! is a plain copy of it. The memo keeps that bitset beside the entry, built on the first warm
//! use (the cold fill it replaces costs the same one pass, so the first mask does not pay more),
//! or with the entry by a precompute (AOT), up to a byte budget: a warm fill that builds one
//! pays the pass at 200k tokens (~10 µs), and the builtin JSON grammar's warm p99 was made of
//! such first uses.

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

#[cfg(test)]
mod tests {
    use crate::{CompilerConfig, GrammarCompiler, GrammarMatcher, MaskCacheMode, VocabularyBuilder};

    /// A precompute builds the dense forms with the entries, so fills along a document build
    /// none; compiled for first use, the same fills build them.
    #[test]
    fn a_precompute_builds_the_dense_forms_its_fills_use() {
        let tokens = ["{", "}", "[", "]", "\"", ":", ",", " ", "a", "b", "1", "2", "ab", "\"a", "a\"", "\":", "</s>"];
        let vocab = VocabularyBuilder::new().tokens(tokens).special(16).stop_tokens([16]).build().unwrap();
        let doc = [0, 13, 14, 5, 2, 10, 6, 11, 3, 1];
        let dense_after_fills = |mode| {
            let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default().cache_mode(mode));
            let grammar = compiler.compile_builtin_json_grammar().unwrap();
            let compiled = grammar.mask_cache().dense_bytes();
            let mut m = GrammarMatcher::new(&grammar);
            for id in doc {
                m.fill_next_token_bitmask(&mut [0u32; 1]);
                assert!(m.accept_token(id), "token {id} of the document");
            }
            (compiled, grammar.mask_cache().dense_bytes())
        };
        let (compiled, filled) = dense_after_fills(MaskCacheMode::Aot);
        assert!(compiled > 0, "the precompute builds dense forms");
        assert_eq!(filled, compiled, "the fills build none");
        let (compiled, filled) = dense_after_fills(MaskCacheMode::Jit);
        assert!(compiled == 0 && filled > 0, "compiled for first use, the fills build them");
    }
}
