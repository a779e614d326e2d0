//! [`BaseEntry`]: the lookahead-independent result of a vocabulary walk, from which the
//! [`MaskEntry`] of any follow set is derived without running the parser again.
//!
//! A cache entry depends on the follow set of the rule it is built in (the bytes that may come
//! after the rule) only through one decision: a token that fails inside the rule after the
//! rule could have ended is *uncertain* when the byte after such an end can follow the rule,
//! else *rejected*. The walk therefore records, for every token that fails after a possible
//! end (a *candidate*), the set of bytes that come right after those ends (its *exit bytes*).
//! Deriving the entry for a follow set `F` keeps the candidates whose exit bytes meet `F`.
//!
//! This is what makes a *partial hit* of the cross-grammar pool ([`super::pool`]) cheap: the
//! same automaton state in another grammar, with another follow set, re-decides only the
//! candidates (typically tens of tokens), never the whole vocabulary. Exit-byte sets repeat a
//! lot (mostly `}`, `,`, `]`, `"`), so candidates point into a small table of distinct sets.

use super::{AdaptiveTokenMask, MaskEntry};
use crate::tokenizer::Vocabulary;
use crate::util::byteset::ByteSet;
use crate::util::id::TokenId;

/// The accepted tokens of a [`BaseEntry`], in the smallest of three forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BaseAccepted {
    /// The accepted token ids, ascending.
    Accepted(Box<[TokenId]>),
    /// The normal token ids that are *not* accepted (rejected or candidates), ascending.
    NotAccepted(Box<[TokenId]>),
    /// Accepted tokens as a bitmask in the engine layout.
    Bitset(Box<[u32]>),
}

impl BaseAccepted {
    /// The accepted part of an entry whose uncertain tokens are the sorted positions
    /// `uncertain` (rejected = not accepted and not uncertain).
    pub fn to_mask(&self, uncertain: &[u32], vocab: &Vocabulary) -> AdaptiveTokenMask {
        match self {
            BaseAccepted::Accepted(v) => AdaptiveTokenMask::Accepted(v.clone()),
            BaseAccepted::Bitset(v) => AdaptiveTokenMask::Bitset(v.clone()),
            BaseAccepted::NotAccepted(v) => {
                let ids = vocab.sorted_token_ids();
                let mut unc: Vec<TokenId> = uncertain.iter().map(|&p| TokenId::from_u32(ids[p as usize])).collect();
                unc.sort_unstable();
                let rejected: Box<[TokenId]> = v.iter().copied().filter(|id| unc.binary_search(id).is_err()).collect();
                AdaptiveTokenMask::Rejected(rejected)
            }
        }
    }
}

/// The walk of one scannable state in its certain context, before the follow set is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseEntry {
    /// Tokens read entirely inside the rule (and its certain context).
    pub accepted: BaseAccepted,
    /// Tokens that fail after a possible end of the rule, as positions in
    /// [`Vocabulary::sorted_token_ids`], ascending.
    pub candidates: Box<[u32]>,
    /// Per candidate, an index into [`BaseEntry::exit_sets`].
    pub candidate_exits: Box<[u32]>,
    /// The distinct exit-byte sets of the candidates.
    pub exit_sets: Box<[ByteSet]>,
}

impl BaseEntry {
    /// The entry for a rule whose follow set is `follow`.
    pub fn derive(&self, follow: &ByteSet, vocab: &Vocabulary) -> MaskEntry {
        let live: Vec<bool> = self.exit_sets.iter().map(|s| s.intersects(follow)).collect();
        let uncertain: Box<[u32]> = self
            .candidates
            .iter()
            .zip(self.candidate_exits.iter())
            .filter(|(_, &x)| live[x as usize])
            .map(|(&pos, _)| pos)
            .collect();
        let accepted = self.accepted.to_mask(&uncertain, vocab);
        MaskEntry { accepted, uncertain }
    }

    /// Heap bytes used.
    pub fn memory_usage(&self) -> usize {
        let list = match &self.accepted {
            BaseAccepted::Accepted(v) | BaseAccepted::NotAccepted(v) => v.len(),
            BaseAccepted::Bitset(v) => v.len(),
        };
        list * 4
            + self.candidates.len() * 4
            + self.candidate_exits.len() * 4
            + self.exit_sets.len() * std::mem::size_of::<ByteSet>()
    }
}
