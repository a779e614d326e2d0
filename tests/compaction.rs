//! A matcher with a rollback limit compacts its parser chart on long inputs (flat memory); its
//! masks, verdicts and rollbacks stay those of a matcher that keeps everything.

use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, MatcherConfig, Parser, TokenBitmask};

use crate::support::fixtures::load;

#[test]
fn a_long_generation_with_a_rollback_limit_matches_an_unlimited_one() {
    // The limited matcher on either parser; the reference keeps the whole Earley chart.
    for parser in [Parser::Earley, Parser::Pda] {
        long_generation_with_a_rollback_limit(parser);
    }
}

fn long_generation_with_a_rollback_limit(parser: Parser) {
    let (vocab, encoder) = load("llama3");
    let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default().parser(parser));
    let limited_grammar = compiler.compile_builtin_json_grammar().unwrap();
    assert_eq!(limited_grammar.parser(), parser);
    let grammar = GrammarCompiler::new(vocab.clone(), CompilerConfig::default().parser(Parser::Earley))
        .compile_builtin_json_grammar()
        .unwrap();
    // About 400 KB: several compactions (the first at 64 KB of parser bytes).
    let items: Vec<String> = (0..20_000).map(|i| format!(r#"{{"k{}": [{i}, "x"]}}"#, i % 7)).collect();
    let text = format!("[{}]", items.join(", "));
    let ids = encoder.encode_for_matching(&text).unwrap();
    let mut limited = GrammarMatcher::with_config(&limited_grammar, MatcherConfig::default().max_rollback_tokens(3));
    let mut unlimited = GrammarMatcher::new(&grammar);
    let (mut a, mut b) = (TokenBitmask::new(vocab.vocab_size()), TokenBitmask::new(vocab.vocab_size()));
    for (i, &id) in ids.iter().enumerate() {
        if i % 1_009 == 0 {
            limited.fill_next_token_bitmask(a.as_words_mut());
            unlimited.fill_next_token_bitmask(b.as_words_mut());
            assert!(a.as_words() == b.as_words(), "masks differ before token {i}");
        }
        assert!(limited.accept_token(id) && unlimited.accept_token(id), "token {i}");
        if i % 2_003 == 0 && i > 3 {
            // Roll back within the limit and read the same tokens again.
            limited.rollback(3).unwrap();
            unlimited.rollback(3).unwrap();
            for &again in &ids[i - 2..=i] {
                assert!(limited.accept_token(again) && unlimited.accept_token(again));
            }
        }
    }
    assert!(limited.rollback(4).is_err(), "the limit holds");
    assert_eq!(limited.runs_pda(), parser == Parser::Pda, "no hand-over on JSON");
    assert_eq!(limited.num_accepted_tokens(), unlimited.num_accepted_tokens());
    assert!(limited.can_terminate() && unlimited.can_terminate());
    assert!(
        limited.parser_byte_len() < 200_000 && unlimited.parser_byte_len() == text.len(),
        "the limited matcher's chart was compacted: {} parser bytes for {} of text",
        limited.parser_byte_len(),
        text.len()
    );
    limited.reset();
    assert!(limited.accept_string("[1]") && limited.can_terminate(), "reset starts again after compaction");
}
