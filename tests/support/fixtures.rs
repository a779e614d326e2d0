//! Real fixtures: tokenizers (`scripts/fetch-tokenizers`) and the corpus (`scripts/fetch-corpus`).
//! A missing fixture fails the test with the command that fetches it; nothing is skipped.

use std::path::PathBuf;
use std::sync::OnceLock;

use maskforge::tokenizer::{load_tokenizer, TextEncoder, Vocabulary, FIXTURE_NAMES};

/// A real tokenizer by fixture name, loaded once for the whole test binary.
pub fn load(name: &str) -> &'static (Vocabulary, TextEncoder) {
    static CACHE: [OnceLock<(Vocabulary, TextEncoder)>; 4] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let i = FIXTURE_NAMES.iter().position(|&n| n == name).expect("a fixture name");
    CACHE[i].get_or_init(|| load_tokenizer(name).unwrap_or_else(|e| panic!("{e}")))
}

/// The vocabulary of a real tokenizer.
pub fn vocab(name: &str) -> &'static Vocabulary {
    &load(name).0
}

/// Token ids whose bytes spell `text` exactly.
pub fn encode(name: &str, text: &str) -> Vec<u32> {
    load(name).1.encode_for_matching(text).unwrap_or_else(|e| panic!("encoding {text:?} with {name}: {e}"))
}

/// One part of the corpus (`fixtures/corpus/PART`: `maskbench-dev` or `tools`), failing loudly
/// when it has not been fetched.
pub fn corpus_dir(part: &str) -> PathBuf {
    let dir = maskforge::tokenizer::fixtures_dir().join("corpus").join(part);
    assert!(dir.is_dir(), "the test corpus is missing {part}/ at {}: run scripts/fetch-corpus", dir.display());
    dir
}

/// The MaskBench files of the dev split, sorted by name, parsed.
pub fn maskbench_files() -> &'static [(String, serde_json::Value)] {
    static FILES: OnceLock<Vec<(String, serde_json::Value)>> = OnceLock::new();
    FILES.get_or_init(|| {
        let dir = corpus_dir("maskbench-dev");
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let text = std::fs::read_to_string(dir.join(&n)).unwrap();
                let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{n}: {e}"));
                (n, v)
            })
            .collect()
    })
}

/// Token ids for `text` as a model emits it: every occurrence of a special token's text is
/// that special token (the longest text wins), the text between is spelled byte-exactly with
/// normal tokens.
pub fn encode_with_special(name: &str, text: &str) -> Vec<u32> {
    let (vocab, encoder) = load(name);
    let mut specials: Vec<(&str, u32)> =
        vocab.special_token_ids().iter().filter_map(|&id| vocab.token_str(id).map(|s| (s, id))).collect();
    specials.retain(|(s, _)| !s.is_empty());
    specials.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
    let mut ids = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < text.len() {
        match specials.iter().find(|(s, _)| text[i..].starts_with(s)) {
            Some(&(s, id)) => {
                if start < i {
                    ids.extend(encoder.encode_for_matching(&text[start..i]).unwrap_or_else(|e| panic!("{name}: {e}")));
                }
                ids.push(id);
                i += s.len();
                start = i;
            }
            None => i += text[i..].chars().next().map_or(1, char::len_utf8),
        }
    }
    if start < text.len() {
        ids.extend(encoder.encode_for_matching(&text[start..]).unwrap_or_else(|e| panic!("{name}: {e}")));
    }
    ids
}
