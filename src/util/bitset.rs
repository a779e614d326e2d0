//! [`TokenBitmask`]: one bit per token id, in the layout of a serving engine's int32 mask.
//!
//! The layout is fixed by the engines that consume it (XGrammar, vLLM, SGLang): word `i / 32`,
//! bit `i % 32`, a set bit meaning "token `i` is allowed". Keeping exactly that layout lets
//! [`crate::GrammarMatcher::fill_next_token_bitmask`] write straight into the engine's buffer.

/// A bitmask over a vocabulary: bit `i % 32` of word `i / 32` is set when token `i` is allowed.
///
/// # Example
/// ```
/// use maskforge::TokenBitmask;
/// let mut mask = TokenBitmask::new(70);
/// assert_eq!(mask.as_words().len(), 3);
/// mask.set(65, true);
/// assert!(mask.get(65));
/// assert_eq!(mask.count_allowed(), 1);
/// assert_eq!(mask.allowed_ids().collect::<Vec<_>>(), vec![65]);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TokenBitmask {
    words: Vec<u32>,
    len: usize,
}

/// The number of `u32` words a mask over `vocab_size` tokens needs: `ceil(vocab_size / 32)`.
#[inline]
pub fn mask_words(vocab_size: usize) -> usize {
    vocab_size.div_ceil(32)
}

impl TokenBitmask {
    /// A mask over `vocab_size` tokens with every token forbidden.
    pub fn new(vocab_size: usize) -> Self {
        TokenBitmask { words: vec![0; mask_words(vocab_size)], len: vocab_size }
    }

    /// The number of tokens the mask covers.
    #[inline]
    pub fn vocab_size(&self) -> usize {
        self.len
    }

    /// Whether token `id` is allowed. Ids past the vocabulary are never allowed.
    #[inline]
    pub fn get(&self, id: usize) -> bool {
        id < self.len && self.words[id / 32] >> (id % 32) & 1 == 1
    }

    /// Allows (`true`) or forbids (`false`) token `id`.
    ///
    /// # Panics
    /// When `id` is not below [`TokenBitmask::vocab_size`].
    #[inline]
    pub fn set(&mut self, id: usize, allowed: bool) {
        assert!(id < self.len, "token id {id} out of range for a mask of {} tokens", self.len);
        let bit = 1u32 << (id % 32);
        if allowed {
            self.words[id / 32] |= bit;
        } else {
            self.words[id / 32] &= !bit;
        }
    }

    /// Forbids every token.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    /// The words, in the engine layout.
    #[inline]
    pub fn as_words(&self) -> &[u32] {
        &self.words
    }

    /// The words, mutable, in the engine layout.
    #[inline]
    pub fn as_words_mut(&mut self) -> &mut [u32] {
        &mut self.words
    }

    /// How many tokens are allowed.
    pub fn count_allowed(&self) -> usize {
        count_allowed(&self.words)
    }

    /// The allowed token ids in increasing order.
    pub fn allowed_ids(&self) -> impl Iterator<Item = usize> + '_ {
        allowed_ids(&self.words)
    }
}

/// Whether a mask given as words allows token `id`; ids past its words are not allowed (a mask
/// of the normal tokens may be shorter than one of the whole vocabulary).
#[inline]
pub fn is_allowed(words: &[u32], id: u32) -> bool {
    words.get(id as usize / 32).is_some_and(|w| w >> (id % 32) & 1 == 1)
}

/// How many bits are set in a mask given as words.
pub fn count_allowed(words: &[u32]) -> usize {
    words.iter().map(|w| w.count_ones() as usize).sum()
}

/// Whether a mask given as words allows exactly the tokens `0..n`: `count_allowed(words) == n`
/// for any mask without bits past `n`, but it stops at the first word with a token missing
/// (the first word, mostly), where counting reads the whole vocabulary.
pub fn all_allowed(words: &[u32], n: usize) -> bool {
    let (full, rest) = (n / 32, n % 32);
    if words.len() < n.div_ceil(32) || !words[..full].iter().all(|&w| w == u32::MAX) {
        return false;
    }
    let last = if rest == 0 { 0 } else { (1u32 << rest) - 1 };
    let tail = words.get(full).copied().unwrap_or(0);
    tail == last && words.get(full + 1..).unwrap_or(&[]).iter().all(|&w| w == 0)
}

/// The set bits of a mask given as words, in increasing order.
pub fn allowed_ids(words: &[u32]) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(|(wi, &w)| {
        let mut rest = w;
        std::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let bit = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            Some(wi * 32 + bit)
        })
    })
}

impl std::fmt::Debug for TokenBitmask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenBitmask({} of {} allowed)", self.count_allowed(), self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_allowed_agrees_with_counting() {
        for n in [0, 1, 31, 32, 33, 64, 100] {
            let words = mask_words(n);
            let mut full = TokenBitmask::new(n);
            (0..n).for_each(|id| full.set(id, true));
            assert!(all_allowed(&full.words[..words], n), "n={n}");
            for hole in [0, n / 2, n.saturating_sub(1)].into_iter().filter(|&h| h < n) {
                let mut m = full.clone();
                m.set(hole, false);
                assert_eq!(all_allowed(&m.words[..words], n), count_allowed(&m.words) == n, "n={n} hole={hole}");
                assert!(!all_allowed(&m.words[..words], n));
            }
        }
    }

    #[test]
    fn set_get_and_iterate() {
        let mut m = TokenBitmask::new(100);
        for id in [0, 31, 32, 63, 99] {
            m.set(id, true);
        }
        assert_eq!(m.allowed_ids().collect::<Vec<_>>(), vec![0, 31, 32, 63, 99]);
        m.set(31, false);
        assert!(!m.get(31));
        assert!(!m.get(1000));
        assert_eq!(m.count_allowed(), 4);
    }
}
