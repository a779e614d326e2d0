//! An engine with its own tokenizer (no `tokenizer.json`) builds the `Vocabulary` from the bytes
//! of its tokens with `VocabularyBuilder`: special tokens, stop tokens and the padded size of
//! the model's embedding table, then constrains its output with a grammar.
//!
//! `cargo run --release --example custom_vocabulary`
use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, TokenBitmask, Vocabulary, VocabularyBuilder};

/// The engine's control tokens (ids 0..4): not text.
const SPECIAL: [&str; 4] = ["<bos>", "<eos>", "<|end_of_turn|>", "<sep>"];
/// Its text tokens (ids 4..16).
const TEXT: [&str; 12] = ["go ", "turn ", "left", "right", "0", "1", "2", "3", "12", "30", " ", "go"];
const BOS: u32 = 0;
const EOS: u32 = 1;
const END_OF_TURN: u32 = 2;
const SEP: u32 = 3;

/// The engine's tokenizer for text: longest match first (special tokens are never text).
fn encode(mut text: &str) -> Vec<u32> {
    let mut ids = Vec::new();
    while !text.is_empty() {
        let (id, token) = (SPECIAL.len() as u32..)
            .zip(TEXT)
            .filter(|(_, t)| text.starts_with(t))
            .max_by_key(|(_, t)| t.len())
            .expect("the text is spelled by the tokens");
        ids.push(id);
        text = &text[token.len()..];
    }
    ids
}

/// The texts of tokens, to print and compare.
fn texts(vocab: &Vocabulary, ids: impl IntoIterator<Item = usize>) -> Vec<String> {
    ids.into_iter().map(|id| vocab.token_text_lossy(id as u32).into_owned()).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let vocab = VocabularyBuilder::new()
        .tokens(SPECIAL)
        .tokens(TEXT)
        .special(BOS)
        .special(EOS)
        .special(END_OF_TURN)
        .special(SEP)
        .stop_tokens([EOS, END_OF_TURN]) // either ends the generation
        .vocab_size(64) // the model's logits have 64 entries: ids 16..64 are padding
        .build()?;
    let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
    // `"<sep>"` is the text of a special token: the grammar means that token, not text.
    let grammar = compiler.compile_grammar(
        r#"root ::= command ("<sep>" command)*
           command ::= "go " [0-9]+ | "turn " ("left" | "right")"#,
    )?;

    let vocab = grammar.vocabulary();
    let mut matcher = GrammarMatcher::new(&grammar);
    let mut mask = TokenBitmask::new(64);
    matcher.fill_next_token_bitmask(mask.as_words_mut());
    // No special, stop or padding id can start; "go" can, as the grammar reads bytes: " " may follow.
    assert_eq!(texts(vocab, mask.allowed_ids()), ["go ", "turn ", "go"]);

    let mut output = encode("go 123");
    assert!(output.iter().all(|&id| matcher.accept_token(id)));
    matcher.fill_next_token_bitmask(mask.as_words_mut());
    // More digits, the separator, or the end: both stop tokens are allowed.
    let allowed = texts(vocab, mask.allowed_ids());
    println!("after \"go 123\": {allowed:?}");
    assert_eq!(allowed, ["<eos>", "<|end_of_turn|>", "<sep>", "0", "1", "2", "3", "12", "30"]);

    assert!(matcher.accept_token(SEP));
    assert!(!matcher.accept_token(EOS), "a command must follow the separator");
    output.push(SEP);
    for id in encode("turn left").into_iter().chain([END_OF_TURN]) {
        assert!(matcher.accept_token(id));
        output.push(id);
    }
    assert!(matcher.is_terminated());
    println!("accepted: {:?}", texts(vocab, output.iter().map(|&id| id as usize)));
    Ok(())
}
