//! [`VocabularyBuilder`]: small vocabularies from token bytes, for tests, doctests and engines
//! that hold their vocabulary in another form than a `tokenizer.json`.

use std::sync::Arc;

use super::{build_byte_table, build_text_table, decode, sorted_unique, RawToken, VocabError, VocabKind, Vocabulary};

/// Builds a [`Vocabulary`] from token bytes: ids are given in order, then some are marked special
/// or stop tokens, and the vocabulary may be enlarged with padding ids.
///
/// Each token gets a string form in the convention of the [kind](Self::kind) (see
/// [`decode::encode_token_text`]), so that [`Vocabulary::token_id`] works as on a loaded file;
/// a special token's string form is its bytes as text (`<|im_end|>`).
///
/// # Example
/// ```
/// use maskforge::tokenizer::{VocabKind, VocabularyBuilder};
/// let vocab = VocabularyBuilder::new()
///     .kind(VocabKind::ByteFallback)
///     .tokens(["<unk>", "<s>", "</s>"])
///     .tokens([b" hello".as_slice(), &[0xE4]])
///     .special(0)
///     .special(1)
///     .special(2)
///     .vocab_size(32)
///     .build()?;
/// assert_eq!(vocab.token_id("▁hello"), Some(3));
/// assert_eq!(vocab.token_id("<0xE4>"), Some(4));
/// assert_eq!(vocab.stop_token_ids(), &[2]); // `</s>` is among DEFAULT_STOP_TOKENS
/// assert_eq!(vocab.vocab_size(), 32);
/// # Ok::<(), maskforge::tokenizer::VocabError>(())
/// ```
#[derive(Clone, Debug)]
pub struct VocabularyBuilder {
    kind: VocabKind,
    tokens: Vec<Vec<u8>>,
    special: Vec<u32>,
    stop: Option<Vec<u32>>,
    vocab_size: usize,
}

impl Default for VocabularyBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl VocabularyBuilder {
    /// An empty builder: kind [`VocabKind::Raw`], no token.
    pub fn new() -> Self {
        VocabularyBuilder { kind: VocabKind::Raw, tokens: Vec::new(), special: Vec::new(), stop: None, vocab_size: 0 }
    }

    /// The kind recorded in the vocabulary; it decides the string forms of the tokens, not their
    /// bytes, which are given.
    pub fn kind(&mut self, kind: VocabKind) -> &mut Self {
        self.kind = kind;
        self
    }

    /// Appends tokens, given by their bytes, with the next ids.
    pub fn tokens<I, T>(&mut self, tokens: I) -> &mut Self
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        self.tokens.extend(tokens.into_iter().map(|t| t.as_ref().to_vec()));
        self
    }

    /// Marks token `id` as special: it keeps its bytes as string form and has no bytes.
    pub fn special(&mut self, id: u32) -> &mut Self {
        self.special.push(id);
        self
    }

    /// Sets the stop tokens. Without this call, the special tokens among
    /// [`DEFAULT_STOP_TOKENS`](super::DEFAULT_STOP_TOKENS) are the stop tokens.
    pub fn stop_tokens(&mut self, ids: impl IntoIterator<Item = u32>) -> &mut Self {
        self.stop = Some(ids.into_iter().collect());
        self
    }

    /// Sets the vocabulary size; ids past the last token are padding ids.
    pub fn vocab_size(&mut self, vocab_size: usize) -> &mut Self {
        self.vocab_size = vocab_size;
        self
    }

    /// Builds the vocabulary. Fails if a special or stop id is not a token, if there is no token,
    /// or if a limit ([`MAX_VOCAB_SIZE`](super::MAX_VOCAB_SIZE)) is exceeded.
    pub fn build(&self) -> Result<Vocabulary, VocabError> {
        let n = self.tokens.len();
        let mut is_special = vec![false; n];
        for &id in &self.special {
            match is_special.get_mut(id as usize) {
                Some(s) => *s = true,
                None => return Err(VocabError::NotAToken { role: "special token", id, vocab_size: n }),
            }
        }
        let raw = self
            .tokens
            .iter()
            .zip(&is_special)
            .map(|(bytes, &special)| {
                let text = if special {
                    String::from_utf8_lossy(bytes).into_owned()
                } else {
                    decode::encode_token_text(self.kind, bytes)
                };
                Some(RawToken { text, special, added: special })
            })
            .collect();
        let texts = build_text_table(raw)?;
        let bytes = build_byte_table(&texts, self.kind, Some(&self.tokens))?;
        let mut vocab =
            Vocabulary { texts: Arc::new(texts), bytes: Arc::new(bytes), stop_ids: Arc::new([]), vocab_size: n };
        vocab.set_vocab_size(self.vocab_size)?;
        vocab = match &self.stop {
            Some(ids) => vocab.with_stop_tokens(ids.iter().copied())?,
            None => {
                let ids = vocab.default_stop_ids();
                Vocabulary { stop_ids: sorted_unique(ids).into(), ..vocab }
            }
        };
        Ok(vocab)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_errors() {
        let err = VocabularyBuilder::new().tokens(["a"]).special(1).build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "special token id 1 is not a token of the vocabulary (vocab size 1; padding ids are not tokens)"
        );
        let err = VocabularyBuilder::new().tokens(["a"]).vocab_size(3).stop_tokens([2]).build().unwrap_err();
        assert!(matches!(err, VocabError::NotAToken { role: "stop token", id: 2, vocab_size: 3 }), "{err}");
    }

    #[test]
    fn builder_kinds_give_string_forms_bytes_unchanged() {
        let tokens: [&[u8]; 3] = [b" a\n", &[0xE4, 0xB8], b"<|x|>"];
        for kind in [VocabKind::Raw, VocabKind::ByteFallback, VocabKind::ByteLevel] {
            let vocab = VocabularyBuilder::new().kind(kind).tokens(tokens).special(2).build().unwrap();
            assert_eq!(vocab.kind(), kind);
            assert_eq!(vocab.token_bytes(0), b" a\n");
            assert_eq!(vocab.token_bytes(1), &[0xE4, 0xB8]);
            assert_eq!(vocab.token_bytes(2), b"");
            assert_eq!(vocab.token_id("<|x|>"), Some(2));
            assert_eq!(vocab.stop_token_ids(), &[] as &[u32]);
        }
        let vocab = VocabularyBuilder::new().kind(VocabKind::ByteLevel).tokens(tokens).build().unwrap();
        assert_eq!(vocab.token_str(0), Some("ĠaĊ"));
        // Re-decoding the byte-level string forms gives the same bytes.
        let again = vocab.with_kind(VocabKind::ByteLevel).unwrap();
        assert_eq!(again.token_bytes(1), &[0xE4, 0xB8]);
    }
}
