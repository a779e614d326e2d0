//! The exact mask: every token's bytes are run through the Earley parser (also for a matcher
//! that runs the PDA: the oracle is the reference the PDA is checked against).
//!
//! This is the reference every fast path (mask cache, shared pool, repetition compression,
//! TagDispatch) is checked against, bit for bit, so it stays deliberately simple. The one
//! optimization is prefix sharing: tokens are visited in byte order, and between consecutive
//! tokens the parser rolls back only to their common prefix. Once a prefix is rejected, every
//! following token with that prefix is skipped without touching the parser.

use super::engine::Engine;
use crate::earley::Parser;
use crate::tokenizer::{common_prefix_len, Vocabulary};
use crate::util::id::TokenId;
use crate::util::sentinel::Sentinel;

/// Sets the bit of every token that the parser accepts from its current state, by its text
/// or by its id (its sentinel; see the matcher module). Stop tokens are left to the caller.
/// The parser is restored on return.
pub fn fill_exact_mask(parser: &mut Parser, vocab: &Vocabulary, out: &mut [u32]) {
    walk_tokens(parser, vocab, vocab.sorted_token_ids().iter().copied(), out);
    if !Sentinel::lead_in(&parser.next_bytes()) {
        return;
    }
    for id in 0..vocab.vocab_size() as u32 {
        if vocab.is_token(id) {
            let n = parser.advance_bytes(Sentinel::encode(TokenId::from_u32(id)).as_bytes());
            if n == Sentinel::LEN {
                out[id as usize / 32] |= 1 << (id % 32);
            }
            parser.pop_bytes(n);
        }
    }
}

/// Runs the tokens `ids` (in the vocabulary's byte order) through the parser, sharing common
/// prefixes between consecutive ones, and sets the bits of those it accepts. Tokens whose bit
/// is already set are skipped. Stops early when the parser's work budget runs out (the caller
/// reads [`ByteParser::budget_exceeded`] and discards the mask). The parser is restored on
/// return. Used by the oracle over the whole vocabulary and by the cached mask over its
/// uncertain tokens.
pub(crate) fn walk_tokens<P: ByteParser>(
    parser: &mut P,
    vocab: &Vocabulary,
    ids: impl Iterator<Item = u32>,
    out: &mut [u32],
) {
    // The last walked token, the bytes of it the parser holds, and the length of a prefix of it
    // known to fail.
    let mut prev: &[u8] = &[];
    let mut held = 0usize;
    let mut failed_at: Option<usize> = None;
    for id in ids {
        if out[id as usize / 32] >> (id % 32) & 1 == 1 {
            continue;
        }
        let bytes = vocab.token_bytes(id);
        let lcp = common_prefix_len(prev, bytes);
        if let Some(f) = failed_at {
            // `prev[..=f]` was rejected; a token sharing it is rejected too.
            if lcp > f {
                continue;
            }
            failed_at = None;
        }
        let common = lcp.min(held);
        if held > common {
            parser.pop_bytes(held - common);
            held = common;
        }
        // Text never contains the sentinel lead byte: a token holding it is not text.
        let text_len = Sentinel::text_len(bytes);
        if held < text_len {
            let read = parser.advance_bytes(&bytes[held..text_len]);
            held += read;
            // A byte the budget refused is refused like a rejected one: look only then.
            if held < text_len && parser.budget_exceeded() {
                break;
            }
        }
        if held == bytes.len() {
            out[id as usize / 32] |= 1 << (id % 32);
        } else {
            failed_at = Some(held);
        }
        prev = bytes;
    }
    // Popped by count, not truncated to a length: a PDA that hands over to Earley mid-walk
    // (see `engine`) may number its positions differently, but holds the same bytes.
    parser.pop_bytes(held);
}

/// What [`walk_tokens`] needs of a parser: statically dispatched, for the Earley parser (the
/// oracle) and for a matcher's [`Engine`] (the cached mask's uncertain tokens).
pub(crate) trait ByteParser {
    /// Consumes bytes until one is rejected; returns how many were consumed.
    fn advance_bytes(&mut self, bytes: &[u8]) -> usize;
    /// Undoes the last `n` consumed bytes.
    fn pop_bytes(&mut self, n: usize);
    /// Whether the last bytes were refused for the work budget (see `crate::util::budget`).
    fn budget_exceeded(&self) -> bool;
}

impl ByteParser for Parser {
    fn advance_bytes(&mut self, bytes: &[u8]) -> usize {
        Parser::advance_bytes(self, bytes)
    }
    fn pop_bytes(&mut self, n: usize) {
        Parser::pop_bytes(self, n)
    }
    fn budget_exceeded(&self) -> bool {
        self.budget().exceeded()
    }
}

impl ByteParser for Engine {
    fn advance_bytes(&mut self, bytes: &[u8]) -> usize {
        Engine::advance_bytes(self, bytes)
    }
    fn pop_bytes(&mut self, n: usize) {
        Engine::pop_bytes(self, n)
    }
    fn budget_exceeded(&self) -> bool {
        self.budget().exceeded()
    }
}
