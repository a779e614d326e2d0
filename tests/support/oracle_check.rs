//! Masks checked against the exact oracle and against `accept_token`, for property tests.

use maskforge::{CompiledGrammar, GrammarMatcher, TokenBitmask};
use proptest::prelude::*;

/// The cached mask, asserted equal to the oracle's.
pub fn checked_mask(m: &mut GrammarMatcher) -> Result<TokenBitmask, TestCaseError> {
    let n = m.grammar().vocabulary().vocab_size();
    let (mut cached, mut exact) = (TokenBitmask::new(n), TokenBitmask::new(n));
    m.fill_next_token_bitmask(cached.as_words_mut());
    m.fill_next_token_bitmask_exact(exact.as_words_mut()).unwrap();
    prop_assert_eq!(&cached, &exact, "cached vs oracle after {} tokens", m.num_accepted_tokens());
    // The mask is what accept_token does.
    for t in 0..n as u32 {
        let ok = m.accept_token(t);
        prop_assert_eq!(ok, cached.get(t as usize), "token {} vs mask", t);
        if ok {
            m.rollback(1).unwrap();
        }
    }
    Ok(cached)
}

/// A random walk through `grammar` (each step takes the allowed token `picks[i]` selects),
/// checking every mask on the way with [`checked_mask`].
pub fn checked_random_walk(grammar: &CompiledGrammar, picks: &[prop::sample::Index]) -> Result<(), TestCaseError> {
    let mut m = GrammarMatcher::new(grammar);
    for pick in picks {
        let mask = checked_mask(&mut m)?;
        let ids: Vec<usize> = mask.allowed_ids().collect();
        if ids.is_empty() || m.is_terminated() {
            break;
        }
        prop_assert!(m.accept_token(ids[pick.index(ids.len())] as u32));
    }
    checked_mask(&mut m)?;
    Ok(())
}
