//! Speculative decoding on one matcher: forking, accepting a run of draft tokens, and the masks
//! a verifier needs for every position of a draft or every node of a draft tree, computed with
//! rollback.

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
            poisoned: self.poisoned,
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
    /// [`super::MatcherConfig::max_rollback_tokens`]. Then any error of a fill or an accept on
    /// the way ([`MatcherError::StepTooExpensive`], [`MatcherError::StateTooLarge`],
    /// [`MatcherError::Poisoned`]): the matcher is rolled back all the same, the rows are not
    /// to be used.
    pub fn fill_draft_bitmasks(&mut self, draft: &[u32], out: &mut [u32]) -> Result<usize, MatcherError> {
        let words_per_row = self.check_draft(draft, draft.len(), out.len())?;
        let mut accepted = 0;
        let filled = self.fill_draft_rows(draft, out.chunks_exact_mut(words_per_row), &mut accepted);
        self.rollback(accepted)?;
        filled.map(|()| accepted + 1)
    }

    /// The rows of [`GrammarMatcher::fill_draft_bitmasks`], counting the tokens accepted (to
    /// be rolled back by the caller, on success or error).
    fn fill_draft_rows<'a>(
        &mut self,
        draft: &[u32],
        mut rows: impl Iterator<Item = &'a mut [u32]>,
        accepted: &mut usize,
    ) -> Result<(), MatcherError> {
        self.try_fill_next_token_bitmask(rows.next().expect("row 0 exists"))?;
        for (&id, row) in draft.iter().zip(rows) {
            if !self.try_accept_token(id)? {
                break;
            }
            *accepted += 1;
            self.try_fill_next_token_bitmask(row)?;
        }
        Ok(())
    }

    /// Fills the masks a verifier needs to check a draft *tree* (the layout of EAGLE- or
    /// Medusa-style speculators): node `i` holds token `tokens[i]` and hangs below node
    /// `parents[i]` (`None`: below the current state), with every parent before its children.
    /// Row 0 is the mask now, row `i + 1` the mask after the path from the root to node `i`
    /// (all zeros when the grammar rejects a token of that path). Returns, per node, whether its
    /// path is accepted. The matcher is rolled back to its state before the call.
    ///
    /// # Errors
    /// Checked before anything is written: [`MatcherError::BatchLengthMismatch`] when `parents`
    /// and `tokens` differ in length, [`MatcherError::InvalidDraftParent`] for a parent that does
    /// not come before its child, [`MatcherError::InvalidTokenId`],
    /// [`MatcherError::MaskTooSmall`] for fewer than `tokens.len() + 1` rows, and
    /// [`MatcherError::RollbackTooFar`] when the tree is deeper than
    /// [`super::MatcherConfig::max_rollback_tokens`]. Then any error of a fill or an accept on
    /// the way, as [`GrammarMatcher::fill_draft_bitmasks`]: the matcher is rolled back all the
    /// same.
    pub fn fill_draft_tree_bitmasks(
        &mut self,
        tokens: &[u32],
        parents: &[Option<usize>],
        out: &mut [u32],
    ) -> Result<Vec<bool>, MatcherError> {
        if parents.len() != tokens.len() {
            return Err(MatcherError::BatchLengthMismatch { matchers: tokens.len(), given: parents.len() });
        }
        let mut depth = Vec::with_capacity(tokens.len());
        for (node, &parent) in parents.iter().enumerate() {
            match parent {
                Some(p) if p >= node => return Err(MatcherError::InvalidDraftParent { node, parent: p }),
                Some(p) => depth.push(depth[p] + 1),
                None => depth.push(1),
            }
        }
        let words_per_row = self.check_draft(tokens, depth.iter().copied().max().unwrap_or(0), out.len())?;
        let mut accepted = vec![false; tokens.len()];
        // The nodes whose tokens the matcher holds now, root first.
        let mut path: Vec<usize> = Vec::new();
        let filled =
            self.fill_tree_rows(tokens, parents, out.chunks_exact_mut(words_per_row), &mut accepted, &mut path);
        self.rollback(path.len())?;
        filled.map(|()| accepted)
    }

    /// The rows of [`GrammarMatcher::fill_draft_tree_bitmasks`]; `path` holds the nodes whose
    /// tokens the matcher holds (for the caller to roll back, on success or error).
    fn fill_tree_rows<'a>(
        &mut self,
        tokens: &[u32],
        parents: &[Option<usize>],
        mut rows: impl Iterator<Item = &'a mut [u32]>,
        accepted: &mut [bool],
        path: &mut Vec<usize>,
    ) -> Result<(), MatcherError> {
        self.try_fill_next_token_bitmask(rows.next().expect("row 0 exists"))?;
        for (node, row) in rows.take(tokens.len()).enumerate() {
            row.fill(0);
            if parents[node].is_some_and(|p| !accepted[p]) {
                continue;
            }
            let ancestors = ancestors(parents, node);
            let common = path.iter().zip(&ancestors).take_while(|(a, b)| a == b).count();
            self.rollback(path.len() - common)?;
            path.truncate(common);
            for &a in &ancestors[common..] {
                let ok = self.try_accept_token(tokens[a])?;
                debug_assert!(ok, "an accepted node is accepted again on the same path");
                path.push(a);
            }
            if self.try_accept_token(tokens[node])? {
                path.push(node);
                accepted[node] = true;
                self.try_fill_next_token_bitmask(row)?;
            }
        }
        Ok(())
    }

    /// Checks a draft of `tokens` at most `depth` deep against the vocabulary, an output of
    /// `out_words` words (one row more than tokens) and the rollback limit; returns the words
    /// per row.
    fn check_draft(&self, tokens: &[u32], depth: usize, out_words: usize) -> Result<usize, MatcherError> {
        let vocab_size = self.grammar.vocabulary().vocab_size();
        if let Some(&id) = tokens.iter().find(|&&id| id as usize >= vocab_size) {
            return Err(MatcherError::InvalidTokenId { id, vocab_size });
        }
        let words_per_row = mask_words(vocab_size);
        let need = (tokens.len() + 1) * words_per_row;
        if out_words < need {
            return Err(MatcherError::MaskTooSmall { got: out_words, need });
        }
        if let Some(limit) = self.config.max_rollback_tokens.filter(|&limit| depth > limit) {
            return Err(MatcherError::RollbackTooFar { requested: depth, available: limit });
        }
        Ok(words_per_row)
    }
}

/// The ancestors of `node` in a draft tree, root first (without `node`).
fn ancestors(parents: &[Option<usize>], node: usize) -> Vec<usize> {
    let mut chain = Vec::new();
    let mut at = parents[node];
    while let Some(p) = at {
        chain.push(p);
        at = parents[p];
    }
    chain.reverse();
    chain
}
