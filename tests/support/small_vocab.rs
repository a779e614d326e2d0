//! A small synthetic vocabulary for property tests over the random grammars of `gen`.

use maskforge::{Vocabulary, VocabularyBuilder};

/// Every string over {a, b, c} of length 1 to 3, the two bytes of "é" separately and together,
/// "éa", a special stop token, and two padding ids.
pub fn small_vocab() -> Vocabulary {
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
