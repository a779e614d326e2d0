//! The tokenizer stored in a GGUF model file (`tokenizer.ggml.*` metadata): a [`Vocabulary`] and
//! a [`TextEncoder`] without any `tokenizer.json`.
//!
//! The metadata is turned into the equivalent Hugging Face `tokenizer.json` document, which the
//! rest of the layer already reads: [`Vocabulary::from_tokenizer_json`] for the bytes of every
//! token, [`TextEncoder::new`] for encoding. So a GGUF vocabulary and a `tokenizer.json`
//! vocabulary of the same model are built by the same code and cannot drift apart.
//!
//! Two tokenizer models are supported, the ones llama.cpp calls:
//!
//! * `gpt2`: byte-level BPE from `tokenizer.ggml.tokens` and `tokenizer.ggml.merges` (SmolLM2,
//!   Llama 3, Qwen). The pre-tokenizer is the GPT-2 one, plus single-digit splitting for
//!   `tokenizer.ggml.pre = "smollm"`; for other pre-tokenizers a prompt may be split differently
//!   from llama.cpp, but every encoding still spells the text exactly.
//! * `llama`: SentencePiece with byte fallback (`<0xNN>` tokens, `▁` for spaces), encoded with a
//!   Unigram model over `tokenizer.ggml.scores` (Llama 2, Mistral v1).
//!
//! Token types: *control* (3) and *unknown* (2) tokens are special (no bytes); *user-defined* (4)
//! tokens are added tokens whose bytes are their text, as Hugging Face treats a non-special added
//! token (llama.cpp's converters write exactly those as user-defined); *unused* (5) ids are
//! special too, since no text maps to them. The stop tokens are `tokenizer.ggml.eos_token_id`,
//! `eot_token_id` and `eom_token_id` where present, else [`DEFAULT_STOP_TOKENS`](super::DEFAULT_STOP_TOKENS).

mod metadata;

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde_json::{json, Map, Value as Json};

use self::metadata::{read_metadata, Metadata, Value};
use super::{TextEncoder, VocabError, Vocabulary};

/// GGUF token types (llama.cpp's `llama_token_type`).
const TYPE_UNKNOWN: i64 = 2;
const TYPE_CONTROL: i64 = 3;
const TYPE_USER_DEFINED: i64 = 4;
const TYPE_UNUSED: i64 = 5;

/// The keys naming stop tokens, in the order they are collected.
const STOP_KEYS: [&str; 3] =
    ["tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"];

/// The tokenizer of a GGUF model file: vocabulary, encoder, BOS token and chat template.
///
/// ```no_run
/// use maskforge::tokenizer::GgufTokenizer;
/// let tokenizer = GgufTokenizer::from_file("SmolLM2-135M-Instruct.Q4_1.gguf")?;
/// let vocab = tokenizer.vocabulary();
/// let ids = tokenizer.encoder().encode_for_matching("{\"a\": 1}")?;
/// assert_eq!(vocab.concat_bytes(&ids), b"{\"a\": 1}");
/// assert_eq!(vocab.token_str(vocab.stop_token_ids()[0]), Some("<|im_end|>"));
/// # Ok::<(), maskforge::tokenizer::VocabError>(())
/// ```
#[derive(Clone, Debug)]
pub struct GgufTokenizer {
    vocab: Vocabulary,
    encoder: TextEncoder,
    model: String,
    bos_token_id: Option<u32>,
    adds_bos: bool,
    chat_template: Option<String>,
}

impl GgufTokenizer {
    /// Reads the tokenizer of a GGUF file. Only the metadata section is read, not the tensors.
    pub fn from_file(path: impl AsRef<Path>) -> Result<GgufTokenizer, VocabError> {
        let (meta, origin) = read_file_metadata(path.as_ref())?;
        Self::from_metadata(&meta, &origin)
    }

    /// Reads the tokenizer from the bytes of a GGUF file (the metadata section is enough).
    pub fn from_bytes(bytes: &[u8]) -> Result<GgufTokenizer, VocabError> {
        let origin = "GGUF data";
        Self::from_metadata(&read_metadata(bytes, bytes.len() as u64, origin)?, origin)
    }

    fn from_metadata(meta: &Metadata, origin: &str) -> Result<GgufTokenizer, VocabError> {
        let fields = Fields { meta, origin };
        let json = fields.tokenizer_json()?;
        let vocab = fields.with_stop_tokens(Vocabulary::from_tokenizer_json(&json, None)?)?;
        let encoder = TextEncoder::new(&json, &vocab)?;
        Ok(GgufTokenizer {
            vocab,
            encoder,
            model: fields.str("tokenizer.ggml.model")?.to_string(),
            bos_token_id: fields.token_id("tokenizer.ggml.bos_token_id")?,
            adds_bos: matches!(meta.pairs.get("tokenizer.ggml.add_bos_token"), Some(Value::Bool(true))),
            chat_template: fields.optional_str("tokenizer.chat_template")?.map(str::to_string),
        })
    }

    /// The vocabulary.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.vocab
    }

    /// The encoder.
    pub fn encoder(&self) -> &TextEncoder {
        &self.encoder
    }

    /// The tokenizer model named by the file: `gpt2` or `llama`.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// `tokenizer.ggml.bos_token_id`, if the file names one.
    pub fn bos_token_id(&self) -> Option<u32> {
        self.bos_token_id
    }

    /// Whether the model expects the BOS token before a prompt (`tokenizer.ggml.add_bos_token`).
    pub fn adds_bos(&self) -> bool {
        self.adds_bos
    }

    /// The chat template (`tokenizer.chat_template`, Jinja), if the file has one.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }
}

impl Vocabulary {
    /// Loads the vocabulary of a GGUF model file from its `tokenizer.ggml.*` metadata (see
    /// [`GgufTokenizer`], which also builds the encoder).
    pub fn from_gguf_file(path: impl AsRef<Path>) -> Result<Vocabulary, VocabError> {
        let (meta, origin) = read_file_metadata(path.as_ref())?;
        let fields = Fields { meta: &meta, origin: &origin };
        fields.with_stop_tokens(Vocabulary::from_tokenizer_json(&fields.tokenizer_json()?, None)?)
    }
}

fn read_file_metadata(path: &Path) -> Result<(Metadata, String), VocabError> {
    let io = |source| VocabError::Io { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let origin = format!("`{}`", path.display());
    Ok((read_metadata(BufReader::new(file), len, &origin)?, origin))
}

/// Typed access to the metadata pairs, with errors naming the key.
struct Fields<'a> {
    meta: &'a Metadata,
    origin: &'a str,
}

impl<'a> Fields<'a> {
    fn key_error(&self, key: &str, message: &str) -> VocabError {
        VocabError::GgufKey { origin: self.origin.to_string(), key: key.to_string(), message: message.to_string() }
    }

    fn get(&self, key: &str) -> Result<&'a Value, VocabError> {
        self.meta.pairs.get(key).ok_or_else(|| self.key_error(key, "missing"))
    }

    fn str(&self, key: &str) -> Result<&'a str, VocabError> {
        match self.get(key)? {
            Value::Str(s) => Ok(s),
            _ => Err(self.key_error(key, "not a string")),
        }
    }

    fn optional_str(&self, key: &str) -> Result<Option<&'a str>, VocabError> {
        if self.meta.pairs.contains_key(key) {
            self.str(key).map(Some)
        } else {
            Ok(None)
        }
    }

    fn array(&self, key: &str) -> Result<&'a [Value], VocabError> {
        match self.get(key)? {
            Value::Array(items) => Ok(items),
            _ => Err(self.key_error(key, "not an array")),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<&'a str>, VocabError> {
        let items = self.array(key)?;
        let strings: Option<Vec<&str>> =
            items.iter().map(|v| if let Value::Str(s) = v { Some(s.as_str()) } else { None }).collect();
        strings.ok_or_else(|| self.key_error(key, "not an array of strings"))
    }

    /// An optional token id, which must be below the number of tokens.
    fn token_id(&self, key: &str) -> Result<Option<u32>, VocabError> {
        let Some(value) = self.meta.pairs.get(key) else { return Ok(None) };
        let id = value.as_u64().ok_or_else(|| self.key_error(key, "not an integer"))?;
        let count = self.array("tokenizer.ggml.tokens")?.len() as u64;
        if id >= count {
            return Err(self.key_error(key, &format!("token id {id} is past the last token ({count} tokens)")));
        }
        Ok(Some(id as u32))
    }

    /// Per token, its GGUF type (1, normal, where the file has no `token_type`).
    fn token_types(&self, count: usize) -> Result<Vec<i64>, VocabError> {
        const KEY: &str = "tokenizer.ggml.token_type";
        if !self.meta.pairs.contains_key(KEY) {
            return Ok(vec![1; count]);
        }
        let items = self.array(KEY)?;
        if items.len() != count {
            return Err(self.key_error(KEY, &format!("{} types for {count} tokens", items.len())));
        }
        let types: Option<Vec<i64>> = items
            .iter()
            .map(|v| match *v {
                Value::Int(t) => Some(t),
                Value::UInt(t) => i64::try_from(t).ok(),
                _ => None,
            })
            .collect();
        types.ok_or_else(|| self.key_error(KEY, "not an array of integers"))
    }

    fn scores(&self, count: usize) -> Result<Vec<f64>, VocabError> {
        const KEY: &str = "tokenizer.ggml.scores";
        let items = self.array(KEY)?;
        let scores: Option<Vec<f64>> =
            items.iter().map(|v| if let Value::Float(f) = *v { Some(f) } else { None }).collect();
        match scores {
            Some(scores) if scores.len() == count => Ok(scores),
            Some(scores) => Err(self.key_error(KEY, &format!("{} scores for {count} tokens", scores.len()))),
            None => Err(self.key_error(KEY, "not an array of floats")),
        }
    }

    /// The Hugging Face `tokenizer.json` equivalent to the metadata.
    fn tokenizer_json(&self) -> Result<Vec<u8>, VocabError> {
        if !self.meta.pairs.contains_key("tokenizer.ggml.tokens") {
            return Err(VocabError::GgufNoTokenizer { origin: self.origin.to_string() });
        }
        let tokens = self.strings("tokenizer.ggml.tokens")?;
        let types = self.token_types(tokens.len())?;
        let model = self.str("tokenizer.ggml.model")?;
        let (model_json, pre_tokenizer, normalizer, decoder) = match model {
            "gpt2" => self.byte_level_parts(&tokens)?,
            "llama" => self.sentencepiece_parts(&tokens)?,
            other => {
                return Err(self.key_error(
                    "tokenizer.ggml.model",
                    &format!("tokenizer model `{other}` is not supported (only gpt2 and llama)"),
                ))
            }
        };
        let added: Vec<Json> = tokens
            .iter()
            .zip(&types)
            .enumerate()
            .filter(|(_, (_, &t))| matches!(t, TYPE_UNKNOWN | TYPE_CONTROL | TYPE_USER_DEFINED | TYPE_UNUSED))
            .map(|(id, (text, &t))| {
                json!({"id": id, "content": text, "single_word": false, "lstrip": false, "rstrip": false,
                       "normalized": false, "special": t != TYPE_USER_DEFINED})
            })
            .collect();
        let doc = json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
            "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": null,
            "decoder": decoder, "model": model_json,
        });
        serde_json::to_vec(&doc).map_err(|e| VocabError::json("tokenizer.json", e))
    }

    /// Byte-level BPE: (model, pre-tokenizer, normalizer, decoder).
    fn byte_level_parts(&self, tokens: &[&str]) -> Result<(Json, Json, Json, Json), VocabError> {
        let mut merges = Vec::new();
        for merge in self.strings("tokenizer.ggml.merges")? {
            let (left, right) = merge
                .split_once(' ')
                .ok_or_else(|| self.key_error("tokenizer.ggml.merges", "a merge without a space"))?;
            merges.push(json!([left, right]));
        }
        let vocab: Map<String, Json> = tokens.iter().enumerate().map(|(id, t)| (t.to_string(), json!(id))).collect();
        let model = json!({"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": vocab, "merges": merges});
        let byte_level =
            json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true});
        let pre_tokenizer = match self.optional_str("tokenizer.ggml.pre")? {
            Some("smollm") => json!({"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": true}, byte_level.clone()]}),
            _ => byte_level.clone(),
        };
        Ok((model, pre_tokenizer, Json::Null, byte_level))
    }

    /// SentencePiece with byte fallback, as a Unigram model: (model, pre-tokenizer, normalizer,
    /// decoder).
    fn sentencepiece_parts(&self, tokens: &[&str]) -> Result<(Json, Json, Json, Json), VocabError> {
        let scores = self.scores(tokens.len())?;
        let vocab: Vec<Json> = tokens.iter().zip(&scores).map(|(t, s)| json!([t, s])).collect();
        let unk = self.token_id("tokenizer.ggml.unknown_token_id")?.unwrap_or(0);
        let model = json!({"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": true});
        let normalizer = json!({"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u{2581}"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u{2581}"}]});
        let decoder = json!({"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u{2581}"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]});
        Ok((model, Json::Null, normalizer, decoder))
    }

    /// `vocab` with the stop tokens the file names, if it names any.
    fn with_stop_tokens(&self, vocab: Vocabulary) -> Result<Vocabulary, VocabError> {
        let mut ids = Vec::new();
        for key in STOP_KEYS {
            ids.extend(self.token_id(key)?);
        }
        if ids.is_empty() {
            Ok(vocab)
        } else {
            vocab.with_stop_tokens(ids)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::metadata::tests::Writer;
    use super::*;
    use crate::tokenizer::VocabKind;

    /// A tiny byte-level BPE tokenizer: `a`, `b`, `ab`, `Ġ`, `Ġab`, two control tokens and one
    /// user-defined token.
    fn gpt2_file() -> Writer {
        Writer::default()
            .string("general.architecture", "llama")
            .string("tokenizer.ggml.model", "gpt2")
            .strings("tokenizer.ggml.tokens", &["<|endoftext|>", "a", "b", "ab", "Ġ", "Ġab", "<|im_end|>", "<x>"])
            .i32s("tokenizer.ggml.token_type", &[3, 1, 1, 1, 1, 1, 3, 4])
            .strings("tokenizer.ggml.merges", &["a b", "Ġ ab"])
            .u32("tokenizer.ggml.bos_token_id", 0)
            .u32("tokenizer.ggml.eos_token_id", 6)
    }

    #[test]
    fn builds_a_byte_level_vocabulary_and_encoder() {
        let tokenizer = GgufTokenizer::from_bytes(&gpt2_file().finish()).unwrap();
        let vocab = tokenizer.vocabulary();
        assert_eq!(vocab.kind(), VocabKind::ByteLevel);
        assert_eq!(vocab.vocab_size(), 8);
        assert_eq!(vocab.special_token_ids(), &[0, 6]);
        assert_eq!(vocab.stop_token_ids(), &[6]);
        assert_eq!(vocab.token_bytes(5), b" ab");
        assert_eq!(vocab.token_bytes(7), b"<x>");
        assert_eq!(tokenizer.bos_token_id(), Some(0));
        assert_eq!(tokenizer.model(), "gpt2");
        assert_eq!(tokenizer.chat_template(), None);
        let encoder = tokenizer.encoder();
        assert_eq!(encoder.encode("ab ab").unwrap(), vec![3, 5]);
        assert_eq!(encoder.encode("<|im_end|>").unwrap(), vec![6]);
        assert_eq!(vocab.concat_bytes(&encoder.encode_for_matching("ba ab").unwrap()), b"ba ab");
    }

    #[test]
    fn builds_a_sentencepiece_vocabulary() {
        let mut tokens = vec!["<unk>", "<s>", "</s>", "▁", "a", "▁a"];
        let bytes: Vec<String> = (0..=255).map(|b| format!("<0x{b:02X}>")).collect();
        tokens.extend(bytes.iter().map(String::as_str));
        let mut types = vec![2, 3, 3, 1, 1, 1];
        types.extend([6; 256]);
        let mut file = Writer::default()
            .string("tokenizer.ggml.model", "llama")
            .strings("tokenizer.ggml.tokens", &tokens)
            .i32s("tokenizer.ggml.token_type", &types)
            .u32("tokenizer.ggml.eos_token_id", 2);
        file = file.f32s("tokenizer.ggml.scores", &vec![-1.0; tokens.len()]);
        let tokenizer = GgufTokenizer::from_bytes(&file.finish()).unwrap();
        let vocab = tokenizer.vocabulary();
        assert_eq!(vocab.kind(), VocabKind::ByteFallback);
        assert_eq!(vocab.token_bytes(5), b" a");
        assert_eq!(vocab.token_bytes(6 + 0x0A), b"\n");
        assert_eq!(vocab.stop_token_ids(), &[2]);
        let encoder = tokenizer.encoder();
        assert!(encoder.adds_prefix_space());
        assert_eq!(vocab.concat_bytes(&encoder.encode("a\n").unwrap()), b" a\n");
        assert_eq!(vocab.concat_bytes(&encoder.encode_for_matching("aa\n").unwrap()), b"aa\n");
    }

    #[test]
    fn missing_and_malformed_tokenizer_metadata_are_clear_errors() {
        let no_tokenizer = Writer::default().string("general.architecture", "llama").finish();
        let err = GgufTokenizer::from_bytes(&no_tokenizer).unwrap_err();
        assert!(matches!(err, VocabError::GgufNoTokenizer { .. }), "{err}");
        assert!(err.to_string().contains("no tokenizer metadata"), "{err}");

        let no_merges =
            Writer::default().string("tokenizer.ggml.model", "gpt2").strings("tokenizer.ggml.tokens", &["a"]).finish();
        let err = GgufTokenizer::from_bytes(&no_merges).unwrap_err().to_string();
        assert!(err.contains("`tokenizer.ggml.merges`: missing"), "{err}");

        let bad_eos = gpt2_file().u32("tokenizer.ggml.eot_token_id", 99).finish();
        let err = GgufTokenizer::from_bytes(&bad_eos).unwrap_err().to_string();
        assert!(err.contains("token id 99 is past the last token (8 tokens)"), "{err}");

        let bert =
            Writer::default().string("tokenizer.ggml.model", "bert").strings("tokenizer.ggml.tokens", &["a"]).finish();
        let err = GgufTokenizer::from_bytes(&bert).unwrap_err().to_string();
        assert!(err.contains("tokenizer model `bert` is not supported"), "{err}");
    }

    #[test]
    fn files_that_are_missing_or_not_gguf_are_clear_errors() {
        let err = GgufTokenizer::from_file("/nonexistent/model.gguf").unwrap_err();
        assert!(matches!(err, VocabError::Io { .. }), "{err}");
        let path = std::env::temp_dir().join(format!("maskforge-not-gguf-{}.gguf", std::process::id()));
        std::fs::write(&path, b"{\"model\": {}}").unwrap();
        let err = Vocabulary::from_gguf_file(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(err, VocabError::NotGguf { .. }), "{err}");
        assert!(err.to_string().contains("not a GGUF file"), "{err}");
    }
}
