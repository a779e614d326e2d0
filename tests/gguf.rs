//! The tokenizer of a GGUF model file, on the real test model (SmolLM2-135M-Instruct, fetched by
//! `scripts/fetch-model`): its vocabulary against the tokenizer's known facts, and encode/decode
//! round trips of the corpus. A missing model fails with the fetch instruction; nothing skips.

use std::path::PathBuf;
use std::sync::OnceLock;

use maskforge::tokenizer::{fixtures_dir, GgufTokenizer, VocabError, VocabKind, Vocabulary};

use crate::support::fixtures::corpus_dir;

/// The test model's file.
fn model_path() -> PathBuf {
    let path = fixtures_dir().join("model").join("SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(path.is_file(), "the test model is missing at {}: run scripts/fetch-model", path.display());
    path
}

fn tokenizer() -> &'static GgufTokenizer {
    static TOKENIZER: OnceLock<GgufTokenizer> = OnceLock::new();
    TOKENIZER.get_or_init(|| GgufTokenizer::from_file(model_path()).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn smollm2_vocabulary_special_and_stop_tokens() {
    let t = tokenizer();
    let vocab = t.vocabulary();
    // SmolLM2's tokenizer: 49,152 byte-level BPE tokens, the first 17 special (`<|endoftext|>`,
    // `<|im_start|>`, `<|im_end|>`, then `<repo_name>` ... `<empty_output>`).
    assert_eq!(t.model(), "gpt2");
    assert_eq!(vocab.kind(), VocabKind::ByteLevel);
    assert_eq!(vocab.vocab_size(), 49_152);
    assert_eq!(vocab.token_id("<|endoftext|>"), Some(0));
    assert_eq!(vocab.token_id("<|im_start|>"), Some(1));
    assert_eq!(vocab.token_id("<|im_end|>"), Some(2));
    assert_eq!(vocab.special_token_ids(), (0..17).collect::<Vec<u32>>());
    assert_eq!(vocab.stop_token_ids(), &[2]);
    assert_eq!(t.bos_token_id(), Some(1));
    // Byte-level strings: `Ġ` is a space, `Ċ` a newline.
    let the = vocab.token_id("Ġthe").expect("Ġthe");
    assert_eq!(vocab.token_bytes(the), b" the");
    assert_eq!(vocab.token_bytes(vocab.token_id("Ċ").expect("Ċ")), b"\n");
    // Every printable ASCII character and the newline is a token of its own, so any JSON text
    // can be spelled.
    for byte in (b' '..=b'~').chain([b'\n']) {
        let single = (0..vocab.vocab_size() as u32).any(|id| vocab.token_bytes(id) == [byte]);
        assert!(single, "no token for byte {byte:#04x}");
    }
    let template = t.chat_template().expect("a chat template");
    assert!(template.contains("<|im_start|>") && template.contains("SmolLM"), "{template}");
    // The vocabulary-only loader agrees.
    let alone = Vocabulary::from_gguf_file(model_path()).unwrap();
    assert_eq!(alone.vocab_size(), vocab.vocab_size());
    assert_eq!(alone.stop_token_ids(), vocab.stop_token_ids());
    assert_eq!(alone.sorted_token_ids(), vocab.sorted_token_ids());
}

/// The texts of the corpus: the MaskBench documents and the tool definitions, as files.
fn corpus_texts() -> Vec<String> {
    let mut texts = Vec::new();
    let mut names: Vec<_> =
        std::fs::read_dir(corpus_dir("maskbench-dev")).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    for path in names.iter().filter(|p| p.extension().is_some_and(|e| e == "json")).step_by(10) {
        texts.push(std::fs::read_to_string(path).unwrap());
    }
    let tools = std::fs::read_to_string(corpus_dir("tools").join("tools.jsonl")).unwrap();
    texts.extend(tools.lines().step_by(10).map(str::to_string));
    texts.extend(
        [
            "",
            " ",
            "\n\n",
            "Hello, world!",
            "中文分词测试",
            "emoji 🦀🚀 👩‍💻",
            "e\u{301}",
            "1234567890 3.14159",
            "<|im_end|>",
        ]
        .map(str::to_string),
    );
    texts
}

#[test]
fn encode_decode_round_trips_of_the_corpus() {
    let t = tokenizer();
    let (vocab, encoder) = (t.vocabulary(), t.encoder());
    assert!(!encoder.adds_prefix_space());
    let texts = corpus_texts();
    assert!(texts.len() > 300, "{}", texts.len());
    for text in &texts {
        let ids = encoder.encode_for_matching(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(vocab.concat_bytes(&ids), text.as_bytes());
        assert!(ids.iter().all(|&id| !vocab.is_special(id)));
        if !text.contains("<|") {
            let ids = encoder.encode(text).unwrap();
            assert_eq!(vocab.concat_bytes(&ids), text.as_bytes());
        }
    }
    // The plain encoding reads special-token texts as the special tokens; digits stay single
    // (SmolLM2's pre-tokenizer splits them).
    assert_eq!(encoder.encode("<|im_start|>user").unwrap()[0], 1);
    let digits = encoder.encode("2024").unwrap();
    assert_eq!(digits.len(), 4, "{digits:?}");
}

#[test]
fn bad_gguf_inputs_are_clear_errors() {
    let dir = std::env::temp_dir().join(format!("maskforge-gguf-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.gguf");
    let err = GgufTokenizer::from_file(&missing).unwrap_err();
    assert!(matches!(err, VocabError::Io { .. }) && err.to_string().contains("missing.gguf"), "{err}");

    let not_gguf = dir.join("tokenizer.json");
    std::fs::write(&not_gguf, br#"{"model": {"type": "BPE"}}"#).unwrap();
    let err = GgufTokenizer::from_file(&not_gguf).unwrap_err();
    assert!(err.to_string().contains("is not a GGUF file"), "{err}");

    // The real file cut inside its metadata: truncated, whatever the cut.
    let head = {
        use std::io::Read;
        let mut head = vec![0u8; 1 << 20];
        std::fs::File::open(model_path()).unwrap().read_exact(&mut head).unwrap();
        head
    };
    for cut in [5, 30, 1000, 100_000, 600_000] {
        let err = GgufTokenizer::from_bytes(&head[..cut]).unwrap_err();
        assert!(matches!(err, VocabError::Gguf { .. }), "cut {cut}: {err}");
        assert!(err.to_string().contains("truncated"), "cut {cut}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
