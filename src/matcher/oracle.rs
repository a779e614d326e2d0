//! The exact mask: every token's bytes are run through the Earley parser.
//!
//! This is the reference every fast path (mask cache, shared pool, repetition compression,
//! TagDispatch) is checked against, bit for bit, so it stays deliberately simple. The one
//! optimization is prefix sharing: tokens are visited in byte order, and between consecutive
//! tokens the parser rolls back only to their common prefix. Once a prefix is rejected, every
//! following token with that prefix is skipped without touching the parser.

use crate::earley::Parser;
use crate::tokenizer::Vocabulary;

/// Sets the bit of every normal token whose bytes the parser accepts from its current state.
/// Stop tokens and special tokens are left to the caller. The parser is restored on return.
pub fn fill_exact_mask(parser: &mut Parser, vocab: &Vocabulary, out: &mut [u32]) {
    let base = parser.byte_len();
    let mut prev: &[u8] = &[];
    // Bytes of `prev` the parser currently holds, and the length of a prefix known to fail.
    let mut held = 0usize;
    let mut failed_at: Option<usize> = None;
    for &id in vocab.sorted_token_ids() {
        let bytes = vocab.token_bytes(id);
        let lcp = common_prefix(prev, bytes);
        if let Some(f) = failed_at {
            // `prev[..=f]` was rejected; a token sharing it is rejected too.
            if lcp > f {
                prev = bytes;
                continue;
            }
            failed_at = None;
        }
        if held > lcp {
            parser.pop_bytes(held - lcp);
            held = lcp;
        }
        let n = parser.advance_bytes(&bytes[held..]);
        held += n;
        if held == bytes.len() {
            out[id as usize / 32] |= 1 << (id % 32);
        } else {
            failed_at = Some(held);
        }
        prev = bytes;
    }
    parser.truncate_bytes(base);
}

#[inline]
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
