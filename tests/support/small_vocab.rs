//! Small synthetic vocabularies: for property tests over the random grammars of `gen`, for
//! token-level elements, and for character-level checks.

use maskforge::{Vocabulary, VocabularyBuilder};

/// Every string over {a, b, c} of length 1 to 3 (39), each followed by its extensions.
fn abc_strings() -> Vec<Vec<u8>> {
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    let letters = [b'a', b'b', b'c'];
    for &x in &letters {
        tokens.push(vec![x]);
        for &y in &letters {
            tokens.push(vec![x, y]);
            for &z in &letters {
                tokens.push(vec![x, y, z]);
            }
        }
    }
    tokens
}

/// Every string over {a, b, c} of length 1 to 3, the two bytes of "é" separately and together,
/// "éa", a special stop token, and two padding ids.
pub fn small_vocab() -> Vocabulary {
    let mut tokens = abc_strings();
    tokens.extend([vec![0xC3], vec![0xA9], "é".as_bytes().to_vec(), "éa".as_bytes().to_vec()]);
    tokens.push(b"</s>".to_vec());
    let stop = (tokens.len() - 1) as u32;
    VocabularyBuilder::new()
        .tokens(tokens)
        .special(stop)
        .stop_tokens([stop])
        .vocab_size(stop as usize + 3)
        .build()
        .unwrap()
}

/// The ids of the special tokens of [`token_vocab`].
pub const SPECIAL_A: u32 = 40;
/// A second special token of [`token_vocab`].
pub const SPECIAL_B: u32 = 41;
/// The stop token of [`token_vocab`].
pub const STOP: u32 = 42;
/// A normal token whose bytes are the sentinel of id 1 (`0xFF 80 80 80 81`): never text.
pub const FAKE_SENTINEL: u32 = 43;
/// A normal single-byte token `0xFF` (byte-level BPE has one): never text.
pub const BYTE_FF: u32 = 44;

/// [`small_vocab`]'s 39 strings over {a, b, c} (ids 0..39), `<t>` (id 39), two special tokens
/// `<|a|>` and `<|b|>`, a special stop token `</s>`, two normal tokens holding the byte `0xFF`,
/// and three padding ids.
pub fn token_vocab() -> Vocabulary {
    let mut tokens = abc_strings();
    tokens.push(b"<t>".to_vec());
    assert_eq!(tokens.len(), SPECIAL_A as usize);
    tokens.extend([b"<|a|>".to_vec(), b"<|b|>".to_vec(), b"</s>".to_vec()]);
    tokens.extend([vec![0xFF, 0x80, 0x80, 0x80, 0x81], vec![0xFF]]);
    VocabularyBuilder::new()
        .tokens(tokens)
        .special(SPECIAL_A)
        .special(SPECIAL_B)
        .special(STOP)
        .stop_tokens([STOP])
        .vocab_size(BYTE_FF as usize + 4)
        .build()
        .unwrap()
}

/// The id of the normal token whose bytes are `text` (panics when there is none).
pub fn id(vocab: &Vocabulary, text: &str) -> u32 {
    vocab.sorted_token_ids().iter().copied().find(|&i| vocab.token_bytes(i) == text.as_bytes()).unwrap()
}

/// Every single byte as a token (id = byte) plus a special stop token `</s>` (id 256):
/// character-level checks, where any text is spelled one byte per token.
pub fn byte_vocab() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    tokens.push(b"</s>".to_vec());
    VocabularyBuilder::new().tokens(tokens).special(256).stop_tokens([256]).build().unwrap()
}
