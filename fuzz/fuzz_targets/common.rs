//! What every target shares: a small vocabulary (so that a compile and a mask cost little and
//! the oracle can check every token) and a compiler with a deadline, so that a slow input is a
//! typed error the fuzzer moves past, not a hang.

use std::sync::OnceLock;
use std::time::Duration;

use maskforge::{CompilerConfig, GrammarCompiler, Vocabulary, VocabularyBuilder};

/// Bytes and short strings that JSON, EBNF and regex inputs are made of, plus a stop token.
pub fn vocab() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = (0x20u8..0x7f).map(|b| vec![b]).collect();
    for t in ["\"", "{\"", "\":", "\",", "\"}", "[]", "{}", "true", "false", "null", "12", "a\"", "\\n", "é", "\n"] {
        tokens.push(t.as_bytes().to_vec());
    }
    tokens.extend([vec![0xC3], vec![0xA9], vec![0xFF]]);
    tokens.push(b"</s>".to_vec());
    let stop = (tokens.len() - 1) as u32;
    VocabularyBuilder::new().tokens(tokens).special(stop).stop_tokens([stop]).build().expect("a valid vocabulary")
}

/// One compiler per process (its caches are part of what is fuzzed), with a 2 s deadline.
pub fn compiler() -> &'static GrammarCompiler {
    static COMPILER: OnceLock<GrammarCompiler> = OnceLock::new();
    COMPILER.get_or_init(|| {
        GrammarCompiler::new(vocab(), CompilerConfig::default().compile_timeout(Duration::from_secs(2)))
    })
}

/// Drives a matcher of `grammar` with operations read from `ops`, checking every mask against
/// the oracle and against `accept_token`. Panics (a finding) on any disagreement.
#[allow(dead_code)]
pub fn walk(grammar: &maskforge::CompiledGrammar, ops: &[u8]) {
    use maskforge::{GrammarMatcher, MatcherConfig, TokenBitmask};
    let n = grammar.vocabulary().vocab_size();
    let mut matcher = GrammarMatcher::with_config(grammar, MatcherConfig::default().max_rollback_tokens(16));
    let (mut cached, mut exact) = (TokenBitmask::new(n), TokenBitmask::new(n));
    for pair in ops.chunks(2).take(64) {
        let (op, arg) = (pair[0], *pair.get(1).unwrap_or(&0));
        match op % 4 {
            // Fill: the cached mask is the oracle's and what accept_token does.
            0 => {
                matcher.fill_next_token_bitmask(cached.as_words_mut());
                if matcher.fill_next_token_bitmask_exact(exact.as_words_mut()).is_ok() {
                    assert!(cached == exact, "cached mask differs from the oracle");
                }
                let token = u32::from(arg) % n as u32;
                let ok = matcher.accept_token(token);
                assert_eq!(ok, cached.get(token as usize), "mask and accept_token disagree on {token}");
                if ok {
                    let _ = matcher.rollback(1);
                }
            }
            // Accept a token, perhaps out of range (a typed refusal).
            1 => {
                let _ = matcher.accept_token(u32::from(arg) * 3);
            }
            // Roll back, perhaps past the limit (an error, nothing changed).
            2 => {
                let _ = matcher.rollback(usize::from(arg % 20));
            }
            _ => {
                let _ = matcher.find_jump_forward_string();
                if arg == 0 {
                    matcher.reset();
                }
            }
        }
    }
}
