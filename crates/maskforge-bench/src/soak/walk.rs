//! One request's decoding, as a server runs it: a matcher walked along a valid instance, a mask
//! filled before every token, every K-th mask compared bit for bit with the exact oracle, and now
//! and then a rollback (the rolled-back tokens are replayed and their masks must come back the
//! same) or a fork (moved one token away; its parent's next mask must not change).

use std::sync::atomic::{AtomicBool, Ordering};

use rand::rngs::StdRng;
use rand::Rng;

use super::report::{Counters, Mismatch};
use maskforge::{CompiledGrammar, GrammarMatcher, TokenBitmask};

/// The longest rollback tried.
const MAX_ROLLBACK: usize = 8;

/// How a walk ended (mismatches are recorded as they are found, and end it too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// Every token was allowed and accepted, and the stop token is allowed at the end.
    Completed,
    /// The mask and `accept_token` both refuse a token of the valid instance (the grammar's
    /// policy or a ground-truth call the grammar does not take, not a bug of the engine).
    Rejected,
    /// Every token was accepted but the grammar cannot end there.
    CannotEnd,
    /// A mask computation panicked inside the library (the matcher reported it poisoned).
    Poisoned,
    /// A mismatch was found (and recorded).
    Mismatch,
    /// The soak is over.
    Stopped,
}

impl WalkEnd {
    /// The error kind a report counts this end under (none for a completed or stopped walk,
    /// or a mismatch, which is counted apart).
    pub fn error_kind(self) -> Option<&'static str> {
        match self {
            WalkEnd::Rejected => Some("valid_token_rejected"),
            WalkEnd::CannotEnd => Some("cannot_end"),
            WalkEnd::Poisoned => Some("poisoned"),
            WalkEnd::Completed | WalkEnd::Mismatch | WalkEnd::Stopped => None,
        }
    }
}

/// The chances of a rollback and of a fork after each accepted token.
#[derive(Clone, Copy, Debug)]
pub struct Churn {
    /// Chance of a rollback (of 1 to 8 tokens, replayed at once).
    pub rollback: f64,
    /// Chance of a fork.
    pub fork: f64,
}

/// A worker's walker: its buffers, its random source and its count towards the next oracle check.
pub struct Walker<'a> {
    counters: &'a Counters,
    stop: &'a AtomicBool,
    check_every: u64,
    churn: Churn,
    rng: StdRng,
    mask: TokenBitmask,
    exact: TokenBitmask,
    bytes: Vec<u8>,
    since_check: u64,
}

/// Where a mask was filled, for the label of a mismatch.
#[derive(Clone, Copy)]
enum Place {
    Main,
    Replay,
    Fork,
}

/// The matcher being walked and what a mismatch report names.
struct Along<'b> {
    label: &'b str,
    grammar: &'b CompiledGrammar,
}

impl<'a> Walker<'a> {
    /// A walker for a vocabulary of `vocab_size` tokens; `check_every` 0 turns the oracle off.
    pub fn new(
        counters: &'a Counters,
        stop: &'a AtomicBool,
        check_every: u64,
        churn: Churn,
        rng: StdRng,
        vocab_size: usize,
    ) -> Self {
        Walker {
            counters,
            stop,
            check_every,
            churn,
            rng,
            mask: TokenBitmask::new(vocab_size),
            exact: TokenBitmask::new(vocab_size),
            bytes: Vec::new(),
            since_check: 0,
        }
    }

    /// The random source (requests are drawn from it too).
    pub fn rng(&mut self) -> &mut StdRng {
        &mut self.rng
    }

    /// Walks a fresh matcher of `grammar` along `ids`, then checks it can end.
    pub fn walk(&mut self, grammar: &CompiledGrammar, ids: &[u32], label: &str) -> WalkEnd {
        let at = Along { label, grammar };
        match self.walk_tokens(&at, ids) {
            Ok(end) | Err(end) => end,
        }
    }

    fn walk_tokens(&mut self, at: &Along<'_>, ids: &[u32]) -> Result<WalkEnd, WalkEnd> {
        let mut m = GrammarMatcher::new(at.grammar);
        // The hash of the mask before each token: what a replay after a rollback must find again.
        let mut hashes = Vec::with_capacity(ids.len() + 1);
        let mut after_fork: Option<u64> = None;
        for step in 0..=ids.len() {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(WalkEnd::Stopped);
            }
            let token = ids.get(step).copied();
            let hash = self.fill(at, &mut m, Place::Main, step, token)?;
            if after_fork.take().is_some_and(|h| h != hash) {
                let detail = "the mask changed after a fork of the matcher accepted a token".to_owned();
                return Err(self.report(at, "fork", step, token, detail));
            }
            hashes.push(hash);
            let Some(id) = token else { break };
            if !self.mask.get(id as usize) {
                // A rejection is a verdict of the grammar only if the parser agrees with the mask.
                if m.accept_token(id) {
                    let detail = "forbidden by the mask, accepted by accept_token".to_owned();
                    return Err(self.report(at, "accept", step, token, detail));
                }
                return Ok(WalkEnd::Rejected);
            }
            if !m.accept_token(id) {
                return Err(self.report(at, "accept", step, token, "allowed by the mask, not accepted".into()));
            }
            Counters::bump(&self.counters.tokens);
            if self.rng.random_bool(self.churn.rollback) {
                self.rollback_and_replay(at, &mut m, &ids[..=step], &hashes)?;
            }
            if self.rng.random_bool(self.churn.fork) {
                after_fork = Some(self.fork_and_diverge(at, &m, step + 1)?);
            }
        }
        let ends = match m.stop_token_ids().first() {
            Some(&stop) => self.mask.get(stop as usize),
            None => m.can_terminate(),
        };
        Ok(if ends { WalkEnd::Completed } else { WalkEnd::CannotEnd })
    }

    /// Rolls back 1–8 of the `accepted` tokens and accepts them again: each mask on the way
    /// must equal the one first filled at that step (`hashes`).
    fn rollback_and_replay(
        &mut self,
        at: &Along<'_>,
        m: &mut GrammarMatcher,
        accepted: &[u32],
        hashes: &[u64],
    ) -> Result<(), WalkEnd> {
        let n = self.rng.random_range(1..=accepted.len().min(MAX_ROLLBACK));
        let from = accepted.len() - n;
        if let Err(e) = m.rollback(n) {
            let detail = format!("rollback({n}) failed: {e}");
            return Err(self.report(at, "rollback", accepted.len(), None, detail));
        }
        Counters::bump(&self.counters.rollbacks);
        for (step, &id) in accepted.iter().enumerate().skip(from) {
            let hash = self.fill(at, m, Place::Replay, step, Some(id))?;
            if hash != hashes[step] {
                let detail = format!("after rollback({n}), the replayed mask differs from the first one");
                return Err(self.report(at, "rollback", step, Some(id), detail));
            }
            if !m.accept_token(id) {
                return Err(self.report(at, "accept", step, Some(id), "not accepted again after a rollback".into()));
            }
        }
        Ok(())
    }

    /// Forks `m` (which has accepted `step` tokens), fills the fork's mask, moves the fork on by
    /// a random allowed token and fills again; returns the hash of the fork's first mask, which
    /// `m`'s next mask must equal.
    fn fork_and_diverge(&mut self, at: &Along<'_>, m: &GrammarMatcher, step: usize) -> Result<u64, WalkEnd> {
        let mut fork = m.fork();
        Counters::bump(&self.counters.forks);
        let hash = self.fill(at, &mut fork, Place::Fork, step, None)?;
        let allowed = self.mask.count_allowed();
        if allowed == 0 || fork.is_terminated() {
            return Ok(hash);
        }
        let pick = self.rng.random_range(0..allowed);
        let id = self.mask.allowed_ids().nth(pick).expect("pick < allowed") as u32;
        if !fork.accept_token(id) {
            return Err(self.report(at, "accept", step, Some(id), "a fork's allowed token is not accepted".into()));
        }
        self.fill(at, &mut fork, Place::Fork, step + 1, None)?;
        Ok(hash)
    }

    /// Fills `self.mask` from `m`, checks it against the oracle when one is due, and returns its
    /// hash. `token` is the instance's next token (for reports).
    fn fill(
        &mut self,
        at: &Along<'_>,
        m: &mut GrammarMatcher,
        place: Place,
        step: usize,
        token: Option<u32>,
    ) -> Result<u64, WalkEnd> {
        if m.try_fill_next_token_bitmask(self.mask.as_words_mut()).is_err() {
            return Err(WalkEnd::Poisoned);
        }
        Counters::bump(&self.counters.masks);
        self.since_check += 1;
        if self.check_every > 0 && self.since_check >= self.check_every {
            self.since_check = 0;
            if m.fill_next_token_bitmask_exact(self.exact.as_words_mut()).is_err() {
                return Err(WalkEnd::Poisoned);
            }
            Counters::bump(&self.counters.oracle_checks);
            if let Some(detail) = first_difference(&self.mask, &self.exact) {
                let detail = format!("{}{detail}", place.prefix());
                return Err(self.report(at, "oracle", step, token, detail));
            }
        }
        self.bytes.clear();
        self.bytes.extend(self.mask.as_words().iter().flat_map(|w| w.to_le_bytes()));
        Ok(xxhash_rust::xxh3::xxh3_64(&self.bytes))
    }

    fn report(&self, at: &Along<'_>, kind: &'static str, step: usize, token: Option<u32>, detail: String) -> WalkEnd {
        let vocab = at.grammar.vocabulary();
        let token_text = token
            .filter(|&t| (t as usize) < vocab.vocab_size())
            .map_or_else(String::new, |t| String::from_utf8_lossy(vocab.token_bytes(t)).into_owned());
        self.counters.mismatch(Mismatch { label: at.label.to_owned(), kind, step, token, token_text, detail });
        WalkEnd::Mismatch
    }
}

impl Place {
    fn prefix(self) -> &'static str {
        match self {
            Place::Main => "",
            Place::Replay => "in a replay after a rollback: ",
            Place::Fork => "in a fork: ",
        }
    }
}

/// `None` when the masks are equal, else how they differ: the number of differing tokens and
/// the first one, with its bit in each mask.
pub fn first_difference(cached: &TokenBitmask, exact: &TokenBitmask) -> Option<String> {
    let (a, b) = (cached.as_words(), exact.as_words());
    let differing: u32 = a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum();
    let (word, (x, y)) = a.iter().zip(b).enumerate().find(|(_, (x, y))| x != y)?;
    let id = word * 32 + (x ^ y).trailing_zeros() as usize;
    Some(format!(
        "{differing} tokens differ; first: token {id}, cached {}, oracle {}",
        cached.get(id) as u8,
        exact.get(id) as u8
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_flipped_bit_is_a_difference() {
        let mut exact = TokenBitmask::new(100);
        exact.set(3, true);
        exact.set(70, true);
        assert_eq!(first_difference(&exact.clone(), &exact), None);
        let mut cached = exact.clone();
        cached.set(70, false);
        let d = first_difference(&cached, &exact).expect("a difference");
        assert!(d.starts_with("1 tokens differ; first: token 70, cached 0, oracle 1"), "{d}");
        cached.set(5, true);
        let d = first_difference(&cached, &exact).expect("a difference");
        assert!(d.starts_with("2 tokens differ; first: token 5, cached 1, oracle 0"), "{d}");
    }
}
