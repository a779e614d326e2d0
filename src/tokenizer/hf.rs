//! [`TextEncoder`]: text → token ids with the Hugging Face `tokenizers` crate. This is the only
//! file of maskforge that names that crate; the [`Vocabulary`] never needs it.
//!
//! See [`TextEncoder`] for its two encodings: the tokenizer's own, and the byte-exact one the
//! grammar matcher needs.

use std::sync::{Arc, OnceLock};

use serde_json::Value;
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::Tokenizer;

use super::decode::METASPACE;
use super::{source, VocabError, VocabKind, Vocabulary};

/// Encodes text to token ids with the model's Hugging Face tokenizer. Cheap to clone (an `Arc`
/// inside), `Send + Sync`.
///
/// Two encodings are offered:
///
/// * [`TextEncoder::encode`] is the tokenizer's own encoding of a prompt, without added BOS/EOS
///   (`add_special_tokens = false`). SentencePiece-style tokenizers (Llama 2) prepend a space
///   (`▁`) to the text, and special-token strings in the text become special tokens.
/// * [`TextEncoder::encode_for_matching`] returns ids whose [`Vocabulary::token_bytes`]
///   concatenate to *exactly* the input bytes: the tokens a model would emit to write that text
///   in the middle of its output, which is what the grammar matcher consumes. It uses a variant
///   of the tokenizer that adds no prefix space (the `Prepend` normalizer is dropped, `Metaspace`
///   gets `prepend_scheme: never`, `ByteLevel` gets `add_prefix_space: false`), does not
///   normalize (only `Replace` and `ByteLevel` normalizers are kept, so NFC and friends cannot
///   change the bytes), and treats special-token strings as plain text. In a byte-fallback
///   vocabulary a literal `▁` in the text (which the tokenizer would read as a space) is spelled
///   with its three byte tokens. The result is checked.
///
/// # Example
/// ```no_run
/// // A byte-level BPE tokenizer (Qwen3's, say).
/// let (vocab, encoder) = maskforge::load_tokenizer("tokenizer.json")?;
/// let ids = encoder.encode_for_matching("{\"a\": 1}")?;
/// assert_eq!(vocab.concat_bytes(&ids), b"{\"a\": 1}");
/// # Ok::<(), maskforge::tokenizer::VocabError>(())
/// ```
#[derive(Clone)]
pub struct TextEncoder {
    inner: Arc<EncoderInner>,
}

struct EncoderInner {
    plain: Tokenizer,
    /// Built on first use of `encode_for_matching` (a clone of `plain`, tens of MB for big
    /// vocabularies); the error message if that failed.
    matching: OnceLock<Result<Tokenizer, String>>,
    vocab: Vocabulary,
    adds_prefix_space: bool,
}

impl std::fmt::Debug for TextEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextEncoder")
            .field("vocab", &self.inner.vocab)
            .field("adds_prefix_space", &self.inner.adds_prefix_space)
            .finish_non_exhaustive()
    }
}

fn encoder_error(e: impl std::fmt::Display) -> VocabError {
    VocabError::Encoder { message: e.to_string() }
}

impl TextEncoder {
    /// Loads the tokenizer from the bytes of its `tokenizer.json` (already decompressed) with
    /// `tokenizers::Tokenizer::from_bytes`. `vocab` must be the vocabulary of the same file; the
    /// encoder keeps a clone to check [`encode_for_matching`](Self::encode_for_matching).
    pub fn new(json: &[u8], vocab: &Vocabulary) -> Result<TextEncoder, VocabError> {
        let plain = Tokenizer::from_bytes(json).map_err(encoder_error)?;
        let adds_prefix_space = plain_adds_prefix_space(&plain)?;
        Ok(TextEncoder {
            inner: Arc::new(EncoderInner { plain, matching: OnceLock::new(), vocab: vocab.clone(), adds_prefix_space }),
        })
    }

    /// The vocabulary this encoder was built with.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.inner.vocab
    }

    /// Whether [`encode`](Self::encode) prepends a space to the text (SentencePiece style:
    /// Llama 2 encodes `"abc"` as `▁abc`, whose bytes are `" abc"`).
    pub fn adds_prefix_space(&self) -> bool {
        self.inner.adds_prefix_space
    }

    /// The tokenizer's encoding of `text`, without BOS/EOS (`add_special_tokens = false`).
    /// Special-token strings in `text` become special tokens; with a prefix-space tokenizer
    /// ([`adds_prefix_space`](Self::adds_prefix_space)) the bytes of the ids are `" " + text`.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, VocabError> {
        let encoding = self.inner.plain.encode_fast(text, false).map_err(encoder_error)?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Ids whose bytes concatenate to exactly `text` (see [`TextEncoder`]): no prefix
    /// space, no normalization, special-token strings spelled with normal tokens. Fails with
    /// [`VocabError::NotByteExact`] if the tokenizer cannot spell the text (an unknown token).
    ///
    /// ```no_run
    /// // Qwen3's tokenizer, whose `<|im_end|>` is a special token.
    /// let (vocab, encoder) = maskforge::load_tokenizer("tokenizer.json")?;
    /// let ids = encoder.encode_for_matching("<|im_end|>")?;
    /// assert!(ids.len() > 1 && ids.iter().all(|&id| !vocab.is_special(id)));
    /// assert_eq!(encoder.encode("<|im_end|>")?, vec![vocab.token_id("<|im_end|>").unwrap()]);
    /// # Ok::<(), maskforge::tokenizer::VocabError>(())
    /// ```
    pub fn encode_for_matching(&self, text: &str) -> Result<Vec<u32>, VocabError> {
        let matching =
            self.inner.matching.get_or_init(|| matching_tokenizer(&self.inner.plain).map_err(|e| e.to_string()));
        let tokenizer = matching.as_ref().map_err(|message| VocabError::Encoder { message: message.clone() })?;
        let encode = |piece: &str| {
            Ok::<_, VocabError>(tokenizer.encode_fast(piece, false).map_err(encoder_error)?.get_ids().to_vec())
        };
        let vocab = &self.inner.vocab;
        let ids = if vocab.kind() == VocabKind::ByteFallback && text.contains(METASPACE) {
            // A literal `▁` in the text would be read as a space: spell it with its byte tokens.
            let mut utf8 = [0; 3];
            let bytes = METASPACE.encode_utf8(&mut utf8).as_bytes();
            let byte_ids: Vec<u32> = bytes.iter().filter_map(|b| vocab.token_id(&format!("<0x{b:02X}>"))).collect();
            let mut ids = Vec::new();
            for (i, piece) in text.split(METASPACE).enumerate() {
                if i > 0 {
                    ids.extend_from_slice(&byte_ids);
                }
                if !piece.is_empty() {
                    ids.extend(encode(piece)?);
                }
            }
            ids
        } else {
            encode(text)?
        };
        let got = self.inner.vocab.concat_bytes(&ids);
        if got != text.as_bytes() {
            let cut = |b: &[u8]| String::from_utf8_lossy(&b[..b.len().min(200)]).into_owned();
            return Err(VocabError::NotByteExact { text: cut(text.as_bytes()), got: cut(&got) });
        }
        Ok(ids)
    }
}

/// Loads the vocabulary and the encoder of a tokenizer found by
/// [`resolve_tokenizer`](super::resolve_tokenizer) (a fixture name, a file or a model folder).
///
/// ```no_run
/// let (vocab, encoder) = maskforge::tokenizer::load_tokenizer("llama2")?;
/// assert!(encoder.adds_prefix_space());
/// assert_eq!(vocab.concat_bytes(&encoder.encode("abc")?), b" abc");
/// assert_eq!(vocab.concat_bytes(&encoder.encode_for_matching("abc")?), b"abc");
/// # Ok::<(), maskforge::tokenizer::VocabError>(())
/// ```
pub fn load_tokenizer(name_or_path: &str) -> Result<(Vocabulary, TextEncoder), VocabError> {
    let files = source::resolve_tokenizer(name_or_path)?;
    let json = source::read_maybe_gzip(&files.tokenizer)?;
    let config = files.config.as_deref().map(source::read_maybe_gzip).transpose()?;
    let vocab = Vocabulary::from_tokenizer_json(&json, config.as_deref())?;
    let encoder = TextEncoder::new(&json, &vocab)?;
    Ok((vocab, encoder))
}

fn to_value(v: &impl serde::Serialize) -> Result<Value, VocabError> {
    serde_json::to_value(v).map_err(encoder_error)
}

/// The components of a (possibly nested) `Sequence` under key `list`.
fn any_component(v: &Value, list: &str, pred: &dyn Fn(&Value) -> bool) -> bool {
    match v.get(list).and_then(Value::as_array) {
        Some(items) => items.iter().any(|item| any_component(item, list, pred)),
        None => pred(v),
    }
}

fn type_of(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("")
}

fn plain_adds_prefix_space(tokenizer: &Tokenizer) -> Result<bool, VocabError> {
    let normalizer = tokenizer.get_normalizer().map(to_value).transpose()?;
    let pre_tokenizer = tokenizer.get_pre_tokenizer().map(to_value).transpose()?;
    let prepends = normalizer.is_some_and(|n| any_component(&n, "normalizers", &|v| type_of(v) == "Prepend"));
    let pre_adds = pre_tokenizer.is_some_and(|p| {
        any_component(&p, "pretokenizers", &|v| match type_of(v) {
            "Metaspace" => v.get("prepend_scheme").and_then(Value::as_str) != Some("never"),
            "ByteLevel" => v.get("add_prefix_space").and_then(Value::as_bool) == Some(true),
            _ => false,
        })
    });
    Ok(prepends || pre_adds)
}

/// Keeps only the normalizers that map text to the vocabulary's alphabet without changing what
/// it spells (`Replace`, `ByteLevel`); `None` if nothing is left.
fn matching_normalizer(v: Value) -> Option<Value> {
    match type_of(&v) {
        "Sequence" => {
            let Value::Object(mut map) = v else { return None };
            let items = match map.remove("normalizers") {
                Some(Value::Array(items)) => items.into_iter().filter_map(matching_normalizer).collect::<Vec<_>>(),
                _ => Vec::new(),
            };
            if items.is_empty() {
                return None;
            }
            map.insert("normalizers".into(), Value::Array(items));
            Some(Value::Object(map))
        }
        "Replace" | "ByteLevel" => Some(v),
        _ => None,
    }
}

/// Turns off every prefix space of a pre-tokenizer.
fn matching_pre_tokenizer(v: &mut Value) {
    if let Some(Value::Array(items)) = v.get_mut("pretokenizers") {
        items.iter_mut().for_each(matching_pre_tokenizer);
        return;
    }
    let kind = type_of(v).to_string();
    if let Value::Object(map) = v {
        match kind.as_str() {
            "Metaspace" => {
                map.insert("prepend_scheme".into(), Value::from("never"));
                map.remove("add_prefix_space");
            }
            "ByteLevel" => {
                map.insert("add_prefix_space".into(), Value::from(false));
            }
            _ => {}
        }
    }
}

/// The variant of `plain` used by `encode_for_matching`.
fn matching_tokenizer(plain: &Tokenizer) -> Result<Tokenizer, VocabError> {
    let normalizer = match plain.get_normalizer().map(to_value).transpose()?.and_then(matching_normalizer) {
        Some(v) => Some(serde_json::from_value::<NormalizerWrapper>(v).map_err(encoder_error)?),
        None => None,
    };
    let pre_tokenizer = match plain.get_pre_tokenizer().map(to_value).transpose()? {
        Some(mut v) => {
            matching_pre_tokenizer(&mut v);
            Some(serde_json::from_value::<PreTokenizerWrapper>(v).map_err(encoder_error)?)
        }
        None => None,
    };
    let mut tokenizer = plain.clone();
    tokenizer.with_normalizer(normalizer);
    tokenizer.with_pre_tokenizer(pre_tokenizer);
    tokenizer.set_encode_special_tokens(true);
    Ok(tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matching_normalizer_keeps_replace_and_byte_level() {
        let llama2 = json!({"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]});
        assert_eq!(
            matching_normalizer(llama2),
            Some(
                json!({"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})
            )
        );
        assert_eq!(matching_normalizer(json!({"type": "NFC"})), None);
        assert_eq!(matching_normalizer(json!({"type": "Sequence", "normalizers": [{"type": "NFKC"}]})), None);
        assert_eq!(matching_normalizer(json!({"type": "ByteLevel"})), Some(json!({"type": "ByteLevel"})));
    }

    #[test]
    fn matching_pre_tokenizer_removes_prefix_spaces() {
        let mut v = json!({"type": "Sequence", "pretokenizers": [
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
            {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}]});
        matching_pre_tokenizer(&mut v);
        assert_eq!(v["pretokenizers"][0]["prepend_scheme"], "never");
        assert_eq!(v["pretokenizers"][1]["add_prefix_space"], false);
        assert!(serde_json::from_value::<PreTokenizerWrapper>(v).is_ok());
    }

    #[test]
    fn sentencepiece_style_prefix_space_is_removed_for_matching() {
        let json = br#"{
          "version": "1.0", "truncation": null, "padding": null, "pre_tokenizer": null, "post_processor": null,
          "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
              "normalized": false, "special": true}],
          "normalizer": {"type": "Sequence", "normalizers": [
              {"type": "Prepend", "prepend": "\u2581"},
              {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
          "decoder": {"type": "Sequence", "decoders": [
              {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"}]},
          "model": {"type": "BPE", "byte_fallback": true, "fuse_unk": true,
              "vocab": {"<s>": 0, "\u2581": 1, "a": 2, "b": 3, "\u2581a": 4, "<0x0A>": 5, "<": 6, "s": 7, ">": 8,
                  "<0xE2>": 9, "<0x96>": 10, "<0x81>": 11},
              "merges": [["\u2581", "a"]]}
        }"#;
        let vocab = Vocabulary::from_tokenizer_json(json, None).unwrap();
        let encoder = TextEncoder::new(json, &vocab).unwrap();
        assert!(encoder.adds_prefix_space());
        assert_eq!(encoder.encode("ab").unwrap(), vec![4, 3]);
        assert_eq!(encoder.encode_for_matching("ab").unwrap(), vec![2, 3]);
        assert_eq!(encoder.encode_for_matching(" a\n").unwrap(), vec![4, 5]);
        assert_eq!(encoder.encode("<s>").unwrap(), vec![0]);
        assert_eq!(encoder.encode_for_matching("<s>").unwrap(), vec![6, 7, 8]);
        // A literal `▁` is spelled with byte tokens, not read as a space.
        assert_eq!(encoder.encode_for_matching("a\u{2581}b").unwrap(), vec![2, 9, 10, 11, 3]);
        assert_eq!(vocab.concat_bytes(&encoder.encode("\u{2581}").unwrap()), b"  ");
        let err = encoder.encode_for_matching("z").unwrap_err().to_string();
        assert!(err.starts_with("cannot encode \"z\" byte-exactly"), "{err}");
    }

    /// Every token's bytes and string form agree with the Hugging Face tokenizer, for the four
    /// real tokenizers (fails with the fetch instruction if they are missing).
    #[test]
    fn token_bytes_agree_with_the_hf_decoder() {
        for name in source::FIXTURE_NAMES {
            let files = source::resolve_tokenizer(name).unwrap_or_else(|e| panic!("{e}"));
            let json = source::read_maybe_gzip(&files.tokenizer).unwrap();
            let vocab = Vocabulary::from_tokenizer_json(&json, None).unwrap();
            let hf = Tokenizer::from_bytes(&json).unwrap();
            assert_eq!(hf.get_vocab_size(true), vocab.vocab_size(), "{name}");
            for id in 0..vocab.vocab_size() as u32 {
                assert_eq!(hf.id_to_token(id).as_deref(), vocab.token_str(id), "{name} id {id}");
                if vocab.is_special(id) {
                    continue;
                }
                let decoded = hf.decode(&[id], false).unwrap();
                let bytes = vocab.token_bytes(id);
                // Llama 2's decoder strips one leading space of the whole text (`Strip`).
                let bytes = match vocab.kind() {
                    VocabKind::ByteFallback => bytes.strip_prefix(b" ").unwrap_or(bytes),
                    _ => bytes,
                };
                assert_eq!(decoded, String::from_utf8_lossy(bytes), "{name} id {id}");
            }
        }
    }
}
