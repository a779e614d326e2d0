//! The default tokenizer of the command: Qwen3's (Apache-2.0, see `assets/qwen3/NOTICE`),
//! compiled into the binary so that `maskforge generate` works on a fresh machine with no file.
//! It lives here and not in the library: a serving engine brings its own tokenizer, and should
//! not carry 2 MB of one it does not use.

use std::io::Read;
use std::sync::OnceLock;

use maskforge::{TextEncoder, VocabError, Vocabulary};

const TOKENIZER_JSON_GZ: &[u8] = include_bytes!("../assets/qwen3/qwen3.tokenizer.json.gz");
const TOKENIZER_CONFIG: &[u8] = include_bytes!("../assets/qwen3/qwen3.tokenizer_config.json");

/// The vocabulary and encoder of the embedded Qwen3 tokenizer: byte-level BPE, vocabulary size
/// 151,669, stop token `<|im_end|>`. Loaded once per process (about 11 MB of JSON), then cloned.
pub fn load_default() -> Result<(Vocabulary, TextEncoder), String> {
    static LOADED: OnceLock<(Vocabulary, TextEncoder)> = OnceLock::new();
    if let Some(pair) = LOADED.get() {
        return Ok(pair.clone());
    }
    let pair = load().map_err(|e| format!("the embedded Qwen3 tokenizer: {e}"))?;
    Ok(LOADED.get_or_init(|| pair).clone())
}

fn load() -> Result<(Vocabulary, TextEncoder), VocabError> {
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(TOKENIZER_JSON_GZ)
        .read_to_end(&mut json)
        .map_err(|source| VocabError::Gzip { origin: "the embedded tokenizer".into(), source })?;
    let vocab = Vocabulary::from_tokenizer_json(&json, Some(TOKENIZER_CONFIG))?;
    let encoder = TextEncoder::new(&json, &vocab)?;
    Ok((vocab, encoder))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_is_qwen3_with_its_stop_token() {
        let (vocab, encoder) = super::load_default().unwrap();
        assert_eq!(vocab.vocab_size(), 151_669);
        assert_eq!(vocab.stop_token_ids(), &[vocab.token_id("<|im_end|>").unwrap()]);
        let ids = encoder.encode_for_matching("{\"a\": 1}").unwrap();
        assert_eq!(vocab.concat_bytes(&ids), b"{\"a\": 1}");
    }
}
