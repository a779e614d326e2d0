//! [`BatchGrammarMatcher`]: one call per decoding step for all the requests of a batch.
//!
//! A serving engine holds one [`GrammarMatcher`] per request and one 2-D bitmask for the batch
//! (`rows × ceil(vocab_size / 32)` words, flattened row-major). The batch calls run the single
//! calls on a rayon pool the caller sizes; each matcher touches only its own state and its own
//! row, so the result is the same as N single calls, bit for bit, whatever the thread count.
//! Every argument is checked before any matcher or row is touched: on error nothing is written.

use rayon::prelude::*;

use super::{GrammarMatcher, MatcherError};
use crate::util::bitset::mask_words;

/// Runs mask fills and token acceptance for many matchers at once, in parallel.
///
/// # Example
/// ```
/// use maskforge::{BatchGrammarMatcher, CompilerConfig, GrammarCompiler, GrammarMatcher, VocabularyBuilder};
/// let vocab = VocabularyBuilder::new().tokens(["{", "}", "{}", " ", "</s>"]).special(4).stop_tokens([4]).build()?;
/// let grammar = GrammarCompiler::new(vocab, CompilerConfig::default()).compile_builtin_json_grammar()?;
/// let mut matchers = vec![GrammarMatcher::new(&grammar), GrammarMatcher::new(&grammar)];
/// let batch = BatchGrammarMatcher::new(2)?;
/// assert_eq!(batch.batch_accept_token(&mut matchers, &[2, 1])?, vec![true, false]);
/// let mut bitmask = vec![0u32; 2]; // two rows of one word (5 tokens)
/// batch.batch_fill_next_token_bitmask(&mut matchers, &mut bitmask, None)?;
/// assert_eq!(bitmask, vec![0b11000, 0b01101]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct BatchGrammarMatcher {
    pool: rayon::ThreadPool,
}

impl BatchGrammarMatcher {
    /// A batch runner with its own pool of `num_threads` threads (0: rayon's default, one per
    /// core).
    ///
    /// # Errors
    /// [`MatcherError::ThreadPool`] when the threads cannot be started.
    pub fn new(num_threads: usize) -> Result<Self, MatcherError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(num_threads)
            .thread_name(|i| format!("maskforge-batch-{i}"))
            .build()
            .map_err(|e| MatcherError::ThreadPool(e.to_string()))?;
        Ok(BatchGrammarMatcher { pool })
    }

    /// The number of threads of the pool.
    pub fn num_threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Fills the next-token mask of every matcher into `bitmask`, one row of
    /// `ceil(vocab_size / 32)` words each: matcher `i` into row `i`, or into row `indices[i]`
    /// when `indices` is given (rows no matcher maps to are left as they are). All matchers
    /// must share the vocabulary size.
    ///
    /// # Errors
    /// [`MatcherError::BatchLengthMismatch`] when `indices` and `matchers` differ in length,
    /// [`MatcherError::VocabSizeMismatch`], [`MatcherError::BitmaskTooShort`] (without
    /// `indices`), [`MatcherError::RowIndexOutOfRange`], [`MatcherError::DuplicateRowIndex`],
    /// checked before anything is written. Then a matcher's own fill error
    /// ([`MatcherError::StepTooExpensive`], [`MatcherError::Poisoned`], see
    /// [`GrammarMatcher::try_fill_next_token_bitmask`]): every row is filled all the same, a
    /// failed matcher's row all zero, and the error of the first failed matcher (in the order
    /// of `matchers`) is returned.
    pub fn batch_fill_next_token_bitmask(
        &self,
        matchers: &mut [GrammarMatcher],
        bitmask: &mut [u32],
        indices: Option<&[usize]>,
    ) -> Result<(), MatcherError> {
        let Some(first) = matchers.first() else { return Ok(()) };
        let vocab_size = first.grammar().vocabulary().vocab_size();
        if let Some(other) = matchers.iter().map(|m| m.grammar().vocabulary().vocab_size()).find(|&n| n != vocab_size) {
            return Err(MatcherError::VocabSizeMismatch { expected: vocab_size, got: other });
        }
        let words_per_row = mask_words(vocab_size);
        let rows = assign_rows(bitmask, words_per_row, matchers.len(), indices)?;
        let results: Vec<Result<bool, MatcherError>> = self
            .pool
            .install(|| matchers.par_iter_mut().zip(rows).map(|(m, row)| m.try_fill_next_token_bitmask(row)).collect());
        results.into_iter().find_map(Result::err).map_or(Ok(()), Err)
    }

    /// Accepts `tokens[i]` into matcher `i`, for every `i`; returns each matcher's verdict (as
    /// [`GrammarMatcher::accept_token`]: `false` leaves that matcher unchanged, and a matcher's
    /// own error, such as [`MatcherError::StepTooExpensive`], reads as `false`).
    ///
    /// # Errors
    /// [`MatcherError::BatchLengthMismatch`] when `tokens` and `matchers` differ in length.
    pub fn batch_accept_token(
        &self,
        matchers: &mut [GrammarMatcher],
        tokens: &[u32],
    ) -> Result<Vec<bool>, MatcherError> {
        check_len(matchers.len(), tokens.len())?;
        Ok(self.pool.install(|| matchers.par_iter_mut().zip(tokens).map(|(m, &id)| m.accept_token(id)).collect()))
    }

    /// Accepts `strings[i]` into matcher `i`, for every `i`, each as one step (as
    /// [`GrammarMatcher::accept_string`]); returns each matcher's verdict.
    ///
    /// # Errors
    /// [`MatcherError::BatchLengthMismatch`] when `strings` and `matchers` differ in length.
    pub fn batch_accept_string<S: AsRef<[u8]> + Sync>(
        &self,
        matchers: &mut [GrammarMatcher],
        strings: &[S],
    ) -> Result<Vec<bool>, MatcherError> {
        check_len(matchers.len(), strings.len())?;
        Ok(self.pool.install(|| matchers.par_iter_mut().zip(strings).map(|(m, s)| m.accept_string(s)).collect()))
    }
}

fn check_len(matchers: usize, given: usize) -> Result<(), MatcherError> {
    if matchers == given {
        Ok(())
    } else {
        Err(MatcherError::BatchLengthMismatch { matchers, given })
    }
}

/// The row of `bitmask` each of `n` matchers writes, in matcher order, after checking every
/// argument (so that an error leaves the bitmask untouched).
fn assign_rows<'a>(
    bitmask: &'a mut [u32],
    words_per_row: usize,
    n: usize,
    indices: Option<&[usize]>,
) -> Result<Vec<&'a mut [u32]>, MatcherError> {
    let (words, available) = (bitmask.len(), bitmask.len() / words_per_row);
    let rows = bitmask.chunks_exact_mut(words_per_row);
    let Some(indices) = indices else {
        if available < n {
            return Err(MatcherError::BitmaskTooShort { got: words, need: n * words_per_row });
        }
        return Ok(rows.take(n).collect());
    };
    check_len(n, indices.len())?;
    let mut slots: Vec<Option<&mut [u32]>> = rows.map(Some).collect();
    let mut taken = Vec::with_capacity(n);
    for &index in indices {
        match slots.get_mut(index) {
            None => return Err(MatcherError::RowIndexOutOfRange { index, rows: available }),
            Some(slot) => match slot.take() {
                Some(row) => taken.push(row),
                None => return Err(MatcherError::DuplicateRowIndex { index }),
            },
        }
    }
    Ok(taken)
}
