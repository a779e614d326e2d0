//! One compiled grammar shared by requests on several threads: a `CompiledGrammar` is
//! `Send + Sync` (an `Arc` inside), each request has its own `GrammarMatcher`, and the token-mask
//! cache entries one thread builds serve the others.
//!
//! `cargo run --release --example shared_across_threads`
use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions};
use maskforge::{TokenBitmask, VocabularyBuilder};

/// The stop token of the vocabulary below: ids 0..128 are the ASCII bytes.
const EOS: u32 = 128;

/// Compile-time check that a value can be shared between threads.
fn shareable<T: Send + Sync>(_: &T) {}

/// One request: at each step the engine would sample from the mask; here the "model" wants the
/// bytes of `doc` then the stop token, and the request fails when the mask forbids one.
fn run_request(grammar: &CompiledGrammar, doc: &str) -> bool {
    let mut matcher = GrammarMatcher::new(grammar); // per request, never shared
    let mut mask = TokenBitmask::new(grammar.vocabulary().vocab_size());
    for id in doc.bytes().map(u32::from).chain([EOS]) {
        matcher.fill_next_token_bitmask(mask.as_words_mut());
        if !mask.get(id as usize) {
            return false;
        }
        assert!(matcher.accept_token(id), "the mask and the matcher agree");
    }
    matcher.is_terminated()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ascii = (0..128u8).map(|b| [b]);
    let vocab = VocabularyBuilder::new().tokens(ascii).tokens(["<eos>"]).special(EOS).stop_tokens([EOS]).build()?;
    let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
    let schema = serde_json::json!({"type": "object",
        "properties": {"id": {"type": "integer", "minimum": 0}, "ok": {"type": "boolean"}}, "required": ["id", "ok"]});
    let grammar = compiler.compile_json_schema(&schema, &JsonSchemaOptions::default())?;
    shareable(&grammar);
    shareable(&compiler); // a server may also compile from any thread

    let requests = [
        (r#"{"id": 7, "ok": true}"#, true),
        (r#"{ "id":12,"ok":false }"#, true),
        (r#"{"id": -3, "ok": true}"#, false), // below the minimum
        (r#"{"id": 7}"#, false),              // `ok` is required
        (r#"{"ok": true, "id": 7}"#, false),  // properties in the declared order
    ];
    // Scoped threads borrow the grammar; each builds its own matcher.
    std::thread::scope(|scope| {
        let grammar = &grammar;
        let handles: Vec<_> = requests.iter().map(|&(doc, _)| scope.spawn(move || run_request(grammar, doc))).collect();
        for (handle, (doc, expected)) in handles.into_iter().zip(requests) {
            let accepted = handle.join().expect("no panic");
            println!("{doc}: {}", if accepted { "accepted" } else { "rejected" });
            assert_eq!(accepted, expected, "{doc}");
        }
    });

    // A thread that outlives the caller (a worker pool) takes a clone: an `Arc` increment.
    let for_worker = grammar.clone();
    let worker = std::thread::spawn(move || run_request(&for_worker, r#"{"id": 0, "ok": true}"#));
    assert!(worker.join().expect("no panic"));
    println!("mask cache entries built, shared by all threads: {}", grammar.mask_cache_stats().entries);
    Ok(())
}
