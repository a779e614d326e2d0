//! Speculative decoding on one matcher: forking, accepting a run of draft tokens, and the masks
//! a verifier needs for every position of a draft, computed with rollback.

use super::{GrammarMatcher, MatcherError};
use crate::util::bitset::mask_words;

impl GrammarMatcher {
    /// An independent copy of this matcher, in the same state (for exploring a branch).
    ///
    /// # Cost
    /// The compiled grammar, its automata, its token-mask cache and the compiler's mask pool are
    /// shared (reference-counted), not copied. What is copied is the per-request state: the
    /// Earley chart, linear in the bytes accepted so far (bounded with
    /// [`super::MatcherConfig::max_rollback_tokens`], which compacts it), and the list of
    /// accepted steps. The fork starts with empty mask scratch buffers.
    pub fn fork(&self) -> GrammarMatcher {
        GrammarMatcher {
            grammar: self.grammar.clone(),
            parser: self.parser.clone(),
            steps: self.steps.clone(),
            forgotten_steps: self.forgotten_steps,
            next_compaction: self.next_compaction,
            terminated: self.terminated,
            stop_tokens: self.stop_tokens.clone(),
            config: self.config.clone(),
            scratch: Default::default(),
        }
    }

    /// Accepts the longest accepted prefix of `draft`, token by token, and returns its length.
    /// The tokens after the first rejected one are not applied; each accepted token is one
    /// step for [`GrammarMatcher::rollback`].
    pub fn accept_tokens(&mut self, draft: &[u32]) -> usize {
        draft.iter().take_while(|&&id| self.accept_token(id)).count()
    }

    /// Fills the masks a verifier needs to check `draft`: row 0 is the mask now, row `i + 1` the
    /// mask after `draft[..=i]`, each `ceil(vocab_size / 32)` words. Stops after the first
    /// rejected draft token (its row and later ones are left as they are) and returns how many
    /// rows were filled (1 + the accepted prefix). The matcher is rolled back to its state
    /// before the call.
    ///
    /// # Errors
    /// Checked before anything is written: [`MatcherError::InvalidTokenId`] for a draft id
    /// outside the vocabulary, [`MatcherError::MaskTooSmall`] when `out` has fewer than
    /// `(draft.len() + 1)` rows, [`MatcherError::RollbackTooFar`] when the draft is longer than
    /// [`super::MatcherConfig::max_rollback_tokens`].
    pub fn fill_draft_bitmasks(&mut self, draft: &[u32], out: &mut [u32]) -> Result<usize, MatcherError> {
        let vocab_size = self.grammar.vocabulary().vocab_size();
        if let Some(&id) = draft.iter().find(|&&id| id as usize >= vocab_size) {
            return Err(MatcherError::InvalidTokenId { id, vocab_size });
        }
        let words_per_row = mask_words(vocab_size);
        let need = (draft.len() + 1) * words_per_row;
        if out.len() < need {
            return Err(MatcherError::MaskTooSmall { got: out.len(), need });
        }
        if let Some(limit) = self.config.max_rollback_tokens.filter(|&limit| draft.len() > limit) {
            return Err(MatcherError::RollbackTooFar { requested: draft.len(), available: limit });
        }
        let mut rows = out.chunks_exact_mut(words_per_row);
        self.fill_next_token_bitmask(rows.next().expect("row 0 exists"));
        let mut accepted = 0;
        for (&id, row) in draft.iter().zip(rows) {
            if !self.accept_token(id) {
                break;
            }
            accepted += 1;
            self.fill_next_token_bitmask(row);
        }
        self.rollback(accepted).expect("the draft is within the rollback limit");
        Ok(accepted + 1)
    }
}
