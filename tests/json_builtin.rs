//! The builtin JSON grammar with real tokenizers: real documents (the `data` of MaskBench
//! instances) in several layouts are accepted token by token and can terminate; syntactic
//! mutations of them are rejected. serde_json is the independent judge of what is JSON.

use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, TokenBitmask};
use serde_json::Value;

use crate::support::fixtures::{encode, load, maskbench_files};
use crate::support::json_text::{dump, mutations, Layout};

fn json_grammar(tokenizer: &str) -> CompiledGrammar {
    let vocab = load(tokenizer).0.clone();
    GrammarCompiler::new(vocab, CompilerConfig::default()).compile_builtin_json_grammar().unwrap()
}

/// Real JSON documents: the data of the first valid instance of each MaskBench file, chosen
/// so that documents with non-ASCII text and with string escapes are included.
fn documents(n: usize) -> Vec<Value> {
    let mut docs = Vec::new();
    let (mut non_ascii, mut escapes) = (0, 0);
    for (_, file) in maskbench_files() {
        let Some(test) = file["tests"].as_array().and_then(|t| t.iter().find(|t| t["valid"] == true)) else { continue };
        let text = test["data"].to_string();
        let is_non_ascii = !text.is_ascii();
        let has_escape = text.contains("\\\\") || text.contains("\\n") || text.contains("\\\"");
        // Keep a balance: every document with non-ASCII text or escapes, plus the first others.
        if is_non_ascii || has_escape || docs.len() < n / 2 {
            non_ascii += is_non_ascii as usize;
            escapes += has_escape as usize;
            docs.push(test["data"].clone());
        }
        if docs.len() >= n && non_ascii >= 5 && escapes >= 5 {
            break;
        }
    }
    assert!(
        docs.len() >= n && non_ascii >= 5 && escapes >= 5,
        "{} docs, {non_ascii} non-ASCII, {escapes} with escapes",
        docs.len()
    );
    docs
}

/// Accepts `text` token by token. Checks the mask before every `mask_every`-th token (the
/// exact mask is slow; the mask/accept agreement is tested exhaustively elsewhere).
/// Returns whether every token was accepted and the matcher can terminate.
fn run(grammar: &CompiledGrammar, tokenizer: &str, text: &str, mask_every: usize) -> bool {
    let ids = encode(tokenizer, text);
    let mut m = GrammarMatcher::new(grammar);
    let mut mask = TokenBitmask::new(grammar.vocabulary().vocab_size());
    for (i, &id) in ids.iter().enumerate() {
        let check_mask = mask_every > 0 && i % mask_every == 0;
        if check_mask {
            m.fill_next_token_bitmask(mask.as_words_mut());
        }
        let accepted = m.accept_token(id);
        if check_mask {
            assert_eq!(mask.get(id as usize), accepted, "mask and accept_token disagree on token {i} of {text:?}");
        }
        if !accepted {
            return false;
        }
    }
    if mask_every > 0 {
        m.fill_next_token_bitmask(mask.as_words_mut());
        let stop = m.stop_token_ids()[0] as usize;
        assert_eq!(mask.get(stop), m.can_terminate(), "stop token mask at the end of {text:?}");
    }
    m.can_terminate()
}

fn check_tokenizer(tokenizer: &str) {
    let grammar = json_grammar(tokenizer);
    let docs = documents(60);
    let (mut valid, mut invalid) = (0, 0);
    for (k, doc) in docs.iter().enumerate() {
        for layout in [Layout::Compact, Layout::Python, Layout::IndentedAscii] {
            let text = dump(doc, layout);
            assert!(serde_json::from_str::<Value>(&text).is_ok());
            let mask_every = if k < 3 { 7 } else { 0 };
            assert!(
                run(&grammar, tokenizer, &text, mask_every),
                "{tokenizer}: valid JSON rejected ({layout:?}):\n{text}"
            );
            valid += 1;
        }
        for bad in mutations(&dump(doc, Layout::Python)) {
            let is_json = serde_json::from_str::<Value>(&bad).is_ok();
            assert_eq!(
                run(&grammar, tokenizer, &bad, 0),
                is_json,
                "{tokenizer}: verdict differs from serde_json on:\n{bad}"
            );
            invalid += !is_json as usize;
        }
    }
    assert!(valid >= 150 && invalid >= 50, "{valid} valid, {invalid} invalid");
}

#[test]
fn llama3_accepts_valid_and_rejects_invalid_json() {
    check_tokenizer("llama3");
}

#[test]
fn llama2_accepts_valid_and_rejects_invalid_json() {
    check_tokenizer("llama2");
}

#[test]
fn qwen3_accepts_valid_and_rejects_invalid_json() {
    check_tokenizer("qwen3");
}

/// Tokens that hold part of a multi-byte character: single-byte tokens (byte-level BPE has one
/// per byte; SentencePiece has `<0xNN>` byte-fallback tokens) spelling "日" one byte at a time.
#[test]
fn tokens_splitting_a_code_point() {
    for tokenizer in ["llama3", "llama2"] {
        let grammar = json_grammar(tokenizer);
        let vocab = grammar.vocabulary();
        let byte_token = |b: u8| -> u32 {
            vocab
                .sorted_token_ids()
                .iter()
                .copied()
                .find(|&id| vocab.token_bytes(id) == [b])
                .unwrap_or_else(|| panic!("{tokenizer}: no token for byte {b:#x}"))
        };
        let mut m = GrammarMatcher::new(&grammar);
        let mut mask = TokenBitmask::new(vocab.vocab_size());
        assert!(m.accept_token(byte_token(b'"')));
        let bytes = "日".as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            m.fill_next_token_bitmask(mask.as_words_mut());
            assert!(mask.get(byte_token(b) as usize), "{tokenizer}: byte {i} of a code point is masked out");
            if i > 0 {
                // Inside a code point only continuation bytes may follow.
                assert!(!mask.get(byte_token(b'"') as usize) && !mask.get(byte_token(0xE6) as usize));
            }
            assert!(m.accept_token(byte_token(b)));
        }
        assert!(m.accept_token(byte_token(b'"')) && m.can_terminate());
        // A lone continuation byte inside a string is not UTF-8 and is rejected.
        let mut m = GrammarMatcher::new(&grammar);
        assert!(m.accept_token(byte_token(b'"')));
        assert!(!m.accept_token(byte_token(0x97)));
    }
}
