//! Sampling the next token from the logits, with the grammar's mask applied first.

use maskforge::TokenBitmask;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Picks tokens from logits: greedy at temperature 0, else from the softmax of
/// `logits / temperature`, with a seeded generator (the same seed gives the same tokens).
pub struct Sampler {
    rng: StdRng,
    temperature: f32,
    repeat_penalty: f32,
    /// Scratch: the logits with the repetition penalty applied.
    penalized: Vec<f32>,
}

impl Sampler {
    /// A sampler; a temperature `<= 0` (or not finite) means greedy decoding.
    pub fn new(seed: u64, temperature: f32) -> Sampler {
        let temperature = if temperature.is_finite() { temperature.max(0.0) } else { 0.0 };
        Sampler { rng: StdRng::seed_from_u64(seed), temperature, repeat_penalty: 1.0, penalized: Vec::new() }
    }

    /// With a repetition penalty (see `GenerateOptions::repeat_penalty`); 1, or a value that is
    /// not finite and positive, is none.
    pub fn with_repeat_penalty(mut self, penalty: f32) -> Sampler {
        self.repeat_penalty = if penalty.is_finite() && penalty > 0.0 { penalty } else { 1.0 };
        self
    }

    /// [`sample`](Self::sample) after the repetition penalty for the tokens of `recent`.
    pub fn sample_after(&mut self, logits: &[f32], mask: Option<&TokenBitmask>, recent: &[u32]) -> Option<u32> {
        if self.repeat_penalty == 1.0 || recent.is_empty() {
            return self.sample(logits, mask);
        }
        let mut penalized = std::mem::take(&mut self.penalized);
        penalized.clear();
        penalized.extend_from_slice(logits);
        let mut seen: Vec<u32> = recent.to_vec();
        seen.sort_unstable();
        seen.dedup();
        for id in seen {
            if let Some(l) = penalized.get_mut(id as usize) {
                *l = if *l > 0.0 { *l / self.repeat_penalty } else { *l * self.repeat_penalty };
            }
        }
        let id = self.sample(&penalized, mask);
        self.penalized = penalized;
        id
    }

    /// The next token among those `mask` allows (every id when `mask` is `None`); `None` if no
    /// id is allowed. Ids past the end of the mask (padding of the model's output) are never
    /// chosen under a mask.
    pub fn sample(&mut self, logits: &[f32], mask: Option<&TokenBitmask>) -> Option<u32> {
        let allowed = |id: usize| mask.is_none_or(|m| id < m.vocab_size() && m.get(id));
        let best = (0..logits.len()).filter(|&id| allowed(id)).max_by(|&a, &b| logits[a].total_cmp(&logits[b]))?;
        if self.temperature == 0.0 {
            return Some(best as u32);
        }
        // Softmax relative to the best allowed logit, so that exp never overflows.
        let top = logits[best];
        let weight = |id: usize| if allowed(id) { ((logits[id] - top) / self.temperature).exp() } else { 0.0 };
        let total: f32 = (0..logits.len()).map(weight).sum();
        let mut target = self.rng.random::<f32>() * total;
        for id in 0..logits.len() {
            let w = weight(id);
            if w > 0.0 && target < w {
                return Some(id as u32);
            }
            target -= w;
        }
        // Rounding left a sliver of `target`: the best token is as good an answer as any.
        Some(best as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_decides_and_greedy_takes_the_best_allowed() {
        let logits = [5.0, 1.0, 3.0, 9.0];
        let mut mask = TokenBitmask::new(4);
        mask.set(1, true);
        mask.set(2, true);
        assert_eq!(Sampler::new(0, 0.0).sample(&logits, None), Some(3));
        assert_eq!(Sampler::new(0, 0.0).sample(&logits, Some(&mask)), Some(2));
        let mut sampler = Sampler::new(7, 1.0);
        for _ in 0..100 {
            assert!(matches!(sampler.sample(&logits, Some(&mask)), Some(1 | 2)));
        }
        assert_eq!(Sampler::new(0, 1.0).sample(&logits, Some(&TokenBitmask::new(4))), None);
    }

    #[test]
    fn the_repetition_penalty_lowers_recent_tokens_only() {
        let logits = [4.0, 3.9, -1.0, -1.05];
        let mut greedy = Sampler::new(0, 0.0).with_repeat_penalty(1.1);
        assert_eq!(greedy.sample_after(&logits, None, &[]), Some(0));
        // 4.0 / 1.1 < 3.9: the repeated token loses its lead.
        assert_eq!(greedy.sample_after(&logits, None, &[0, 0]), Some(1));
        // A negative logit is multiplied: -1.0 * 1.1 < -1.05.
        let mut mask = TokenBitmask::new(4);
        mask.set(2, true);
        mask.set(3, true);
        assert_eq!(greedy.sample_after(&logits, Some(&mask), &[]), Some(2));
        assert_eq!(greedy.sample_after(&logits, Some(&mask), &[2]), Some(3));
        // Off at 1, and for nonsense values.
        assert_eq!(Sampler::new(0, 0.0).with_repeat_penalty(f32::NAN).sample_after(&logits, None, &[0]), Some(0));
    }

    #[test]
    fn the_same_seed_gives_the_same_tokens() {
        let logits: Vec<f32> = (0..50).map(|i| (i % 7) as f32).collect();
        let draw = |seed| {
            let mut s = Sampler::new(seed, 0.8);
            (0..20).map(|_| s.sample(&logits, None).unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
    }
}
