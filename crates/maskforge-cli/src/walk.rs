//! `maskforge generate`: a seeded random walk over the allowed tokens that reads like a
//! document. A uniform walk over 150k tokens picks whitespace and multilingual fragments, and
//! never closes a string; this one first draws a *kind* of token with fixed odds, then a token
//! of that kind uniformly, so that hundreds of whitespace tokens cannot crowd out the few that
//! carry the structure:
//!
//! * while the first half of the token budget lasts: structure (JSON punctuation, digits,
//!   literals) and short ASCII words are likely, whitespace and other tokens rare;
//! * then the walk *closes*: it takes a stop token when one is allowed, else prefers closing
//!   punctuation (`"`, `}`, `]`, `)`), so that open structures end; it may run past the budget
//!   (up to twice it) to finish.
//!
//! Every token is still one the mask allows, so the output is valid whatever the odds.

use std::time::Instant;

use maskforge::{CompiledGrammar, GrammarMatcher, MatcherConfig, TokenBitmask, Vocabulary};
use rand::{Rng, SeedableRng};

/// What the walk produced.
pub struct Walk {
    /// The token ids, in order (the stop token, if any, excluded).
    pub tokens: Vec<u32>,
    /// Whether the walk ended with a stop token.
    pub stopped: bool,
    /// Whether the grammar accepts the output as it is (ended, or could end here).
    pub complete: bool,
    /// The time of each mask fill, in microseconds.
    pub mask_us: Vec<f64>,
}

/// Walks `grammar` from its start for about `budget` tokens, with a matcher of `config`; a
/// step over the matcher's bounds is an error.
pub fn walk(grammar: &CompiledGrammar, seed: u64, budget: usize, config: MatcherConfig) -> Result<Walk, String> {
    let vocab = grammar.vocabulary();
    let mut matcher = GrammarMatcher::with_config(grammar, config);
    let mut mask = TokenBitmask::new(vocab.vocab_size());
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (mut tokens, mut mask_us, mut allowed) = (Vec::new(), Vec::new(), Vec::new());
    let mut stopped = false;
    for step in 0..budget.saturating_mul(2) {
        let closing = step >= budget / 2;
        if step >= budget && matcher.can_terminate() {
            break;
        }
        let t = Instant::now();
        matcher
            .try_fill_next_token_bitmask(mask.as_words_mut())
            .map_err(|e| format!("the mask of step {step}: {e}"))?;
        mask_us.push(t.elapsed().as_secs_f64() * 1e6);
        allowed.clear();
        allowed.extend(mask.allowed_ids().map(|id| id as u32));
        let Some(id) = pick(vocab, &matcher, &allowed, closing, &mut rng) else {
            return Err("no token is allowed: the grammar cannot continue with this vocabulary".into());
        };
        if !matcher.try_accept_token(id).map_err(|e| format!("token {id} at step {step}: {e}"))? {
            return Err(format!("token {id} was allowed by the mask but not accepted (a bug: please report it)"));
        }
        if matcher.is_terminated() {
            stopped = true;
            break;
        }
        tokens.push(id);
    }
    let complete = stopped || matcher.can_terminate();
    Ok(Walk { tokens, stopped, complete, mask_us })
}

/// The time of each mask fill when the same tokens are walked again on a fresh matcher (of the
/// walk's `config`, whose bounds the walk kept): every cache entry the walk needs exists by
/// then, so this is the warm cost of a step.
pub fn warm_mask_us(grammar: &CompiledGrammar, tokens: &[u32], config: MatcherConfig) -> Vec<f64> {
    let mut matcher = GrammarMatcher::with_config(grammar, config);
    let mut mask = TokenBitmask::new(grammar.vocabulary().vocab_size());
    let mut out = Vec::with_capacity(tokens.len());
    for &id in tokens {
        let t = Instant::now();
        matcher.fill_next_token_bitmask(mask.as_words_mut());
        out.push(t.elapsed().as_secs_f64() * 1e6);
        matcher.accept_token(id);
    }
    out
}

/// The kinds of token the walk tells apart.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Stop,
    /// One or two bytes of closing punctuation: `"`, `}`, `]`, `)`.
    Closer,
    /// One or two bytes of JSON punctuation or digits, and the literals.
    Structure,
    /// An ASCII word of up to 8 letters, with an optional leading space.
    Word,
    Whitespace,
    Other,
}

/// The odds of each kind, while writing and while closing. In free text (a string body: most of
/// the vocabulary is allowed) words are what reads well.
fn odds(kind: Kind, closing: bool, free_text: bool) -> f64 {
    match (kind, closing) {
        (Kind::Word, false) if free_text => 0.9,
        (Kind::Structure | Kind::Whitespace | Kind::Other, _) if free_text => 0.002,
        (Kind::Stop, false) => 0.02,
        (Kind::Stop, true) => 1e6,
        (Kind::Closer, false) => 0.15,
        (Kind::Closer, true) => 100.0,
        (Kind::Structure, _) => 0.35,
        (Kind::Word, false) => 0.45,
        (Kind::Word, true) => 0.05,
        (Kind::Whitespace, _) => 0.02,
        (Kind::Other, _) => 0.01,
    }
}

fn kind(vocab: &Vocabulary, matcher: &GrammarMatcher, id: u32) -> Kind {
    if matcher.stop_token_ids().contains(&id) {
        return Kind::Stop;
    }
    let bytes = vocab.token_bytes(id);
    let word = bytes.strip_prefix(b" ").unwrap_or(bytes);
    if bytes.is_empty() {
        // A special token the grammar asks for (a protocol's `<|call|>`).
        Kind::Structure
    } else if bytes.len() <= 2 && bytes.iter().all(|b| matches!(b, b'"' | b'}' | b']' | b')')) {
        Kind::Closer
    } else if (bytes.len() <= 2 && bytes.iter().all(|b| b"{}[]:,\"-.0123456789".contains(b)))
        || matches!(bytes, b"true" | b"false" | b"null")
    {
        Kind::Structure
    } else if !word.is_empty() && word.len() <= 8 && word.iter().all(u8::is_ascii_alphabetic) {
        Kind::Word
    } else if bytes.iter().all(u8::is_ascii_whitespace) {
        Kind::Whitespace
    } else {
        Kind::Other
    }
}

/// A token drawn from `allowed`: a kind by its odds, then a token of that kind uniformly.
fn pick(
    vocab: &Vocabulary,
    matcher: &GrammarMatcher,
    allowed: &[u32],
    closing: bool,
    rng: &mut impl Rng,
) -> Option<u32> {
    const KINDS: [Kind; 6] = [Kind::Stop, Kind::Closer, Kind::Structure, Kind::Word, Kind::Whitespace, Kind::Other];
    let mut by_kind: [Vec<u32>; 6] = Default::default();
    for &id in allowed {
        let k = kind(vocab, matcher, id);
        by_kind[KINDS.iter().position(|&x| x == k).expect("listed")].push(id);
    }
    let free_text = allowed.len() > vocab.vocab_size() / 2;
    let odds = |k: Kind| odds(k, closing, free_text);
    let total: f64 = KINDS.iter().zip(&by_kind).filter(|(_, ids)| !ids.is_empty()).map(|(&k, _)| odds(k)).sum();
    let mut at = rng.random_range(0.0..total.max(f64::MIN_POSITIVE));
    for (&k, ids) in KINDS.iter().zip(&by_kind).filter(|(_, ids)| !ids.is_empty()) {
        if at < odds(k) {
            return Some(ids[rng.random_range(0..ids.len())]);
        }
        at -= odds(k);
    }
    by_kind.iter().flatten().next().copied()
}
