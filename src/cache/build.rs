//! Building one cache entry: the vocabulary walk of an isolated parser (see the module docs of
//! [`crate::cache`]).

use std::sync::Arc;

use rayon::prelude::*;

use super::base::{BaseAccepted, BaseEntry};
use super::MaskEntry;
use crate::earley::Parser;
use crate::fsm::{GrammarFsm, StateId};
use crate::tokenizer::Vocabulary;
use crate::util::bitset::mask_words;
use crate::util::byteset::ByteSet;
use crate::util::id::TokenId;
use crate::util::sentinel::Sentinel;

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
    build_base(fsm, context, vocab, state).derive(follow, vocab)
}

/// Walks the vocabulary for `state` in its certain `context` without deciding what the follow
/// set decides (see [`BaseEntry`]).
pub fn build_base(fsm: &Arc<GrammarFsm>, context: &[StateId], vocab: &Vocabulary, state: StateId) -> BaseEntry {
    // Large walks are split into chunks of the sorted vocabulary walked in parallel: a chunk
    // starts with an empty parser, so any split point is correct, and the chunks' results
    // concatenate in order. Small walks stay on the calling thread.
    const CHUNK: usize = 16_384;
    let n = vocab.sorted_token_ids().len();
    let first_bytes = first_byte_candidates(fsm, state, vocab);
    let parts: Vec<Walk> = if first_bytes < 2 * CHUNK {
        vec![walk(fsm, context, vocab, state, 0..n)]
    } else {
        let ranges: Vec<_> = (0..n).step_by(CHUNK).map(|s| s..(s + CHUNK).min(n)).collect();
        ranges.into_par_iter().map(|r| walk(fsm, context, vocab, state, r)).collect()
    };
    let mut all = Walk::default();
    for p in parts {
        all.accepted.extend(p.accepted);
        for (&pos, &x) in p.candidates.iter().zip(&p.candidate_exits) {
            all.push_candidate(pos, p.exit_sets[x as usize]);
        }
    }
    let accepted = smallest_form(vocab, std::mem::take(&mut all.accepted));
    all.into_base(accepted)
}

/// The classification of a range of the sorted vocabulary: accepted ids and candidate
/// positions with their exit bytes; everything else is rejected (materialized only if that is
/// the smallest form).
#[derive(Debug, Default)]
pub(super) struct Walk {
    pub(super) accepted: Vec<TokenId>,
    candidates: Vec<u32>,
    candidate_exits: Vec<u32>,
    exit_sets: Vec<ByteSet>,
}

impl Walk {
    /// The base entry of this walk, whose accepted tokens (these and any others) are `accepted`.
    pub(super) fn into_base(self, accepted: BaseAccepted) -> BaseEntry {
        BaseEntry {
            accepted,
            candidates: self.candidates.into_boxed_slice(),
            candidate_exits: self.candidate_exits.into_boxed_slice(),
            exit_sets: self.exit_sets.into_boxed_slice(),
        }
    }

    /// Appends `other` (a walk of later sorted positions).
    pub(super) fn append(&mut self, other: &Walk) {
        self.accepted.extend_from_slice(&other.accepted);
        for (&pos, &x) in other.candidates.iter().zip(&other.candidate_exits) {
            self.push_candidate(pos, other.exit_sets[x as usize]);
        }
    }

    /// Heap bytes used.
    pub(super) fn memory_usage(&self) -> usize {
        (self.accepted.len() + self.candidates.len() + self.candidate_exits.len()) * 4
            + self.exit_sets.len() * std::mem::size_of::<ByteSet>()
    }

    pub(super) fn push_candidate(&mut self, pos: u32, exits: ByteSet) {
        // Runs of candidates share a set (every token extending one failed prefix), so the last
        // set is tried first; there are few distinct sets per entry (usually one to three, a
        // few hundred when the rule may end before any byte), so a linear search finds others.
        let last = self.candidate_exits.last().map(|&x| x as usize).filter(|&x| self.exit_sets[x] == exits);
        let x = match last.or_else(|| self.exit_sets.iter().position(|s| *s == exits)) {
            Some(x) => x,
            None => {
                self.exit_sets.push(exits);
                self.exit_sets.len() - 1
            }
        };
        self.candidates.push(pos);
        self.candidate_exits.push(x as u32);
    }
}

/// How many tokens start with a byte `state` can read, through the rules it calls (the tokens
/// the walk does not reject at their first byte): the cost of a walk. (Counting the state's own
/// byte edges only, a key position that calls the generic string body counted the digits of
/// its pattern alternative: 1.5k tokens, and a 23 ms parser walk of the whole vocabulary.)
pub(super) fn first_byte_candidates(fsm: &GrammarFsm, state: StateId, vocab: &Vocabulary) -> usize {
    vocab.count_starting_with(&crate::fsm::lookahead::state_first_bytes(fsm, state))
}

/// Walks the tokens at sorted positions `range` with an isolated parser.
fn walk(
    fsm: &Arc<GrammarFsm>,
    context: &[StateId],
    vocab: &Vocabulary,
    state: StateId,
    range: std::ops::Range<usize>,
) -> Walk {
    let mut reader = PrefixReader::new(fsm, state, context);
    let ids = vocab.sorted_token_ids();
    let lcp = vocab.sorted_lcp();
    let mut out = Walk::default();
    let mut i = range.start;
    while i < range.end {
        let bytes = vocab.sorted_token_bytes(i);
        // Tokens skipped since the last walked one all extend its failed prefix, which is
        // longer than this token's common prefix with them, so `lcp[i]` is also the common
        // prefix with the walked token.
        let held = reader.read(bytes, lcp[i] as usize);
        if held == bytes.len() {
            out.accepted.push(TokenId::from_u32(ids[i]));
            i += 1;
            continue;
        }
        // The byte at `held` cannot be read inside the rule. The token is a candidate (uncertain
        // for some follow sets) when the rule can end after some j in 1..=held bytes; the byte
        // after such an end must then follow the rule.
        let exit_bytes = reader.exit_bytes(bytes);
        let candidate = !exit_bytes.is_empty();
        // Every following token that extends `bytes[..=held]` gets the same verdict.
        if candidate {
            out.push_candidate(i as u32, exit_bytes);
        }
        i += 1;
        if held == 0 {
            // Rejected at the first byte: jump over the whole block of that first byte.
            i = vocab.sorted_first_byte_range(bytes[0], bytes[0]).end.clamp(i, range.end);
            continue;
        }
        while i < range.end && lcp[i] as usize > held {
            if candidate {
                out.push_candidate(i as u32, exit_bytes);
            }
            i += 1;
        }
    }
    out
}

/// Classifies the tokens at the sorted positions `positions` (ascending) with an isolated
/// parser, sharing prefixes between consecutive ones, and decides the candidates with `follow`:
/// the accepted ids and the uncertain positions of [`walk_listed`].
pub(super) fn walk_positions(
    fsm: &Arc<GrammarFsm>,
    context: &[StateId],
    follow: &ByteSet,
    vocab: &Vocabulary,
    state: StateId,
    positions: &[u32],
) -> (Vec<TokenId>, Vec<u32>) {
    let walk = walk_listed(fsm, context, vocab, state, positions);
    let live: Vec<bool> = walk.exit_sets.iter().map(|s| s.intersects(follow)).collect();
    let uncertain =
        walk.candidates.iter().zip(&walk.candidate_exits).filter(|(_, &x)| live[x as usize]).map(|(&p, _)| p).collect();
    (walk.accepted, uncertain)
}

/// The walk of [`walk`] over the tokens at the sorted positions `positions` (ascending) only.
pub(super) fn walk_listed(
    fsm: &Arc<GrammarFsm>,
    context: &[StateId],
    vocab: &Vocabulary,
    state: StateId,
    positions: &[u32],
) -> Walk {
    let mut out = Walk::default();
    ListedWalker::new(fsm, context, state).walk(vocab, positions, &mut out);
    out
}

/// The parser walk of [`walk_listed`], fed in pieces: consecutive calls continue one walk
/// (positions ascending across them), sharing prefixes and the parser.
pub(super) struct ListedWalker<'v> {
    reader: PrefixReader,
    prev: &'v [u8],
    /// A prefix length of `prev` whose next byte fails, and the exit bytes of every token
    /// sharing it (empty: rejected).
    failed: Option<(usize, ByteSet)>,
}

impl<'v> ListedWalker<'v> {
    pub(super) fn new(fsm: &Arc<GrammarFsm>, context: &[StateId], state: StateId) -> Self {
        ListedWalker { reader: PrefixReader::new(fsm, state, context), prev: &[], failed: None }
    }

    /// The parser's item visits so far (see `util::budget`): what the walk has cost.
    pub(super) fn visits(&self) -> u64 {
        self.reader.parser.budget().used()
    }

    /// Classifies the tokens at `positions` (ascending, after those of earlier calls) into `out`.
    pub(super) fn walk(&mut self, vocab: &'v Vocabulary, positions: &[u32], out: &mut Walk) {
        let ids = vocab.sorted_token_ids();
        for &pos in positions {
            let bytes = vocab.sorted_token_bytes(pos as usize);
            let lcp = crate::tokenizer::common_prefix_len(self.prev, bytes);
            if let Some((f, exits)) = self.failed {
                if lcp > f {
                    if !exits.is_empty() {
                        out.push_candidate(pos, exits);
                    }
                    continue;
                }
                self.failed = None;
            }
            let held = self.reader.read(bytes, lcp);
            self.prev = bytes;
            if held == bytes.len() {
                out.accepted.push(TokenId::from_u32(ids[pos as usize]));
                continue;
            }
            let exits = self.reader.exit_bytes(bytes);
            if !exits.is_empty() {
                out.push_candidate(pos, exits);
            }
            self.failed = Some((held, exits));
        }
    }
}

/// An isolated parser reading consecutive tokens of the sorted vocabulary: it keeps the prefix
/// a token shares with the previous one, and remembers after which bytes of what it holds the
/// rule could end (where a token that fails later may leave the rule instead).
struct PrefixReader {
    parser: Parser,
    base: usize,
    /// Bytes of the last token in the parser.
    held: usize,
    /// `exits[k]`: how many of the positions 1..=k of the held prefix could end the rule.
    exits: Vec<u32>,
}

impl PrefixReader {
    fn new(fsm: &Arc<GrammarFsm>, state: StateId, context: &[StateId]) -> Self {
        let parser = Parser::isolated(Arc::clone(fsm), state, context);
        let base = parser.byte_len();
        PrefixReader { parser, base, held: 0, exits: vec![0] }
    }

    /// Keeps at most the first `common` bytes held (the prefix `bytes` shares with the last
    /// token), then reads `bytes` on as far as the rule allows; returns how many are held.
    #[inline]
    fn read(&mut self, bytes: &[u8], common: usize) -> usize {
        let mut held = self.held;
        if held > common {
            self.parser.pop_bytes(held - common);
            held = common;
            self.exits.truncate(common + 1);
        }
        // The sentinel lead byte is never text (see [`Sentinel`]): a token holding it is
        // rejected or uncertain from there, as if the automaton could not read it.
        while held < bytes.len() && !Sentinel::is_lead(bytes[held]) && self.parser.advance_byte(bytes[held]) {
            held += 1;
            let exit = self.parser.is_accepting_at(self.base + held) as u32;
            self.exits.push(self.exits[held - 1] + exit);
        }
        self.held = held;
        held
    }

    /// The bytes of `bytes` (the token last read) that come right after a length `j` in
    /// 1..=held after which the rule could end.
    fn exit_bytes(&self, bytes: &[u8]) -> ByteSet {
        let mut exits = ByteSet::EMPTY;
        if self.exits[self.held] > 0 {
            for j in (1..=self.held).filter(|&j| self.exits[j] > self.exits[j - 1]) {
                exits.insert(bytes[j]);
            }
        }
        exits
    }
}

/// The smallest form of a walk's accepted tokens.
pub(super) fn smallest_form(vocab: &Vocabulary, mut accepted: Vec<TokenId>) -> BaseAccepted {
    let bitset_words = mask_words(vocab.vocab_size());
    let not_accepted_len = vocab.sorted_token_ids().len() - accepted.len();
    if accepted.len() <= not_accepted_len && accepted.len() <= bitset_words {
        accepted.sort_unstable();
        return BaseAccepted::Accepted(accepted.into_boxed_slice());
    }
    let mut bits = vec![0u32; bitset_words];
    for &id in &accepted {
        bits[id.word()] |= id.bit();
    }
    smallest_form_of_bits(vocab, bits, accepted.len())
}

/// The smallest form of the accepted tokens given as a vocabulary mask `bits` (engine layout)
/// with `count` bits set: the form [`smallest_form`] picks for the same tokens.
pub(super) fn smallest_form_of_bits(vocab: &Vocabulary, bits: Vec<u32>, count: usize) -> BaseAccepted {
    let bitset_words = bits.len();
    let ids = vocab.sorted_token_ids();
    let not_accepted_len = ids.len() - count;
    let has = |id: TokenId| bits[id.word()] & id.bit() != 0;
    if count <= not_accepted_len && count <= bitset_words {
        let mut accepted = Vec::with_capacity(count);
        for (w, &word) in bits.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                accepted.push(TokenId::from_u32((w * 32) as u32 + rest.trailing_zeros()));
                rest &= rest - 1;
            }
        }
        BaseAccepted::Accepted(accepted.into_boxed_slice())
    } else if not_accepted_len <= bitset_words {
        let mut other: Vec<TokenId> = ids.iter().map(|&id| TokenId::from_u32(id)).filter(|&id| !has(id)).collect();
        other.sort_unstable();
        BaseAccepted::NotAccepted(other.into_boxed_slice())
    } else {
        BaseAccepted::Bitset(bits.into_boxed_slice())
    }
}

/// The smallest form (as [`smallest_form`] picks it) of the accepted tokens given as ascending,
/// disjoint runs of sorted positions `runs` (`runs_len` tokens in all) and the ids `extra`
/// (accepted outside the runs). When most tokens are accepted, it is built from the others:
/// an entry that accepts 120k tokens in a few runs costs a pass over the few thousand it does
/// not accept, not a write per accepted token.
pub(super) fn smallest_form_of_runs(
    vocab: &Vocabulary,
    runs: &[(u32, u32)],
    runs_len: usize,
    extra: &[TokenId],
) -> BaseAccepted {
    let ids = vocab.sorted_token_ids();
    let bitset_words = mask_words(vocab.vocab_size());
    let count = runs_len + extra.len();
    let not_accepted_len = ids.len() - count;
    let accepted = || {
        let in_runs = runs.iter().flat_map(|&(from, to)| ids[from as usize..to as usize].iter());
        in_runs.map(|&id| TokenId::from_u32(id)).chain(extra.iter().copied())
    };
    if count <= not_accepted_len && count <= bitset_words {
        let mut list: Vec<TokenId> = accepted().collect();
        list.sort_unstable();
        return BaseAccepted::Accepted(list.into_boxed_slice());
    }
    if not_accepted_len > bitset_words && count <= not_accepted_len {
        let mut bits = vec![0u32; bitset_words];
        for id in accepted() {
            bits[id.word()] |= id.bit();
        }
        return BaseAccepted::Bitset(bits.into_boxed_slice());
    }
    // Most tokens are accepted: clear the gaps between the runs from the normal tokens, set
    // `extra` again, and list what is left out in id order from the bits (sorting the gaps'
    // ids instead cost a third of a key position's entry).
    let mut bits = vocab.normal_token_mask().to_vec();
    bits.resize(bitset_words, 0);
    let mut from = 0u32;
    let gaps = runs.iter().copied().chain(std::iter::once((ids.len() as u32, ids.len() as u32)));
    for (run_start, run_end) in gaps {
        for &id in &ids[from as usize..run_start as usize] {
            let id = TokenId::from_u32(id);
            bits[id.word()] &= !id.bit();
        }
        from = run_end;
    }
    for id in extra {
        bits[id.word()] |= id.bit();
    }
    if not_accepted_len <= bitset_words {
        return BaseAccepted::NotAccepted(ids_left_out(vocab.normal_token_mask(), &bits, not_accepted_len));
    }
    BaseAccepted::Bitset(bits.into_boxed_slice())
}

/// The ids set in `normal` and clear in `bits` (`len` of them), ascending.
fn ids_left_out(normal: &[u32], bits: &[u32], len: usize) -> Box<[TokenId]> {
    let mut out = Vec::with_capacity(len);
    for (w, (&n, &b)) in normal.iter().zip(bits).enumerate() {
        let mut left = n & !b;
        while left != 0 {
            out.push(TokenId::from_u32(w as u32 * 32 + left.trailing_zeros()));
            left &= left - 1;
        }
    }
    debug_assert_eq!(out.len(), len);
    out.into_boxed_slice()
}
