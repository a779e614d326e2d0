//! Reading the JSON files of a Hugging Face tokenizer with `serde_json`: the token strings and
//! ids of `tokenizer.json` (model vocabulary and `added_tokens`), the hints that fix the
//! [`VocabKind`], the `eos_token` of `tokenizer_config.json` and the `eos_token_id` of
//! `generation_config.json`.
//!
//! Only the fields we need are typed; the rest (merges, the normalizer's regexes, chat
//! templates) is skipped by the parser without being materialized, which keeps loading a
//! 200,000-token file in the tens of milliseconds and independent of the `tokenizers` crate.

use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::decode::{parse_byte_fallback, METASPACE};
use super::{RawToken, VocabError, VocabKind, MAX_VOCAB_SIZE};

const TOKENIZER_JSON: &str = "tokenizer.json";
const CONFIG_JSON: &str = "tokenizer_config.json";
const GENERATION_JSON: &str = "generation_config.json";

/// The parts of a `tokenizer.json` the vocabulary needs.
#[derive(Deserialize)]
struct TokenizerFile {
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
    #[serde(default)]
    normalizer: Option<Value>,
    #[serde(default)]
    pre_tokenizer: Option<Value>,
    #[serde(default)]
    decoder: Option<Value>,
    model: Model,
}

#[derive(Deserialize)]
struct AddedToken {
    id: u64,
    content: String,
    #[serde(default)]
    special: bool,
}

#[derive(Deserialize)]
struct Model {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    vocab: VocabEntries,
    #[serde(default)]
    byte_fallback: Option<bool>,
}

/// `model.vocab`: an object `{token: id}` (BPE, WordLevel, WordPiece) or a list of
/// `[token, score]` pairs whose index is the id (Unigram).
struct VocabEntries(Vec<(String, u64)>);

impl<'de> Deserialize<'de> for VocabEntries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = VocabEntries;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object {token: id} or a list of [token, score] pairs")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<VocabEntries, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(entry) = map.next_entry::<String, u64>()? {
                    entries.push(entry);
                }
                Ok(VocabEntries(entries))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<VocabEntries, A::Error> {
                let mut entries = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some((token, _score)) = seq.next_element::<(String, IgnoredAny)>()? {
                    entries.push((token, entries.len() as u64));
                }
                Ok(VocabEntries(entries))
            }
        }
        deserializer.deserialize_any(EntriesVisitor)
    }
}

/// A parsed `tokenizer.json`: the detected kind and the tokens by id (`None` = gap).
pub(crate) struct Parsed {
    pub(crate) kind: VocabKind,
    pub(crate) tokens: Vec<Option<RawToken>>,
}

/// Parses a `tokenizer.json`.
pub(crate) fn parse_tokenizer_json(json: &[u8]) -> Result<Parsed, VocabError> {
    let file: TokenizerFile = serde_json::from_slice(json).map_err(|e| VocabError::json(TOKENIZER_JSON, e))?;
    match file.model.kind.as_deref() {
        None | Some("BPE" | "Unigram" | "WordLevel") => {}
        Some(other) => return Err(VocabError::UnsupportedModel { model: other.to_string() }),
    }
    let max_id = file.model.vocab.0.iter().map(|e| e.1).chain(file.added_tokens.iter().map(|t| t.id)).max();
    let Some(max_id) = max_id else { return Err(VocabError::EmptyVocabulary) };
    if max_id >= MAX_VOCAB_SIZE as u64 {
        return Err(VocabError::too_large("a token id", max_id, MAX_VOCAB_SIZE - 1));
    }
    let mut tokens: Vec<Option<RawToken>> = Vec::new();
    tokens.resize_with(max_id as usize + 1, || None);
    let mut has_byte_tokens = false;
    for (text, id) in file.model.vocab.0 {
        has_byte_tokens |= parse_byte_fallback(&text).is_some();
        let slot = &mut tokens[id as usize];
        if let Some(first) = slot {
            return Err(VocabError::DuplicateId { id: id as u32, first: first.text.clone(), second: text });
        }
        *slot = Some(RawToken { text, special: false, added: false });
    }
    for added in file.added_tokens {
        let slot = &mut tokens[added.id as usize];
        match slot {
            // An added token with the content of the model token it overlays (Llama 2's `<s>`).
            Some(t) if t.text == added.content => {
                t.special |= added.special;
                t.added = true;
            }
            Some(t) if t.added => {
                return Err(VocabError::DuplicateId {
                    id: added.id as u32,
                    first: t.text.clone(),
                    second: added.content,
                })
            }
            // A new token, or one overriding a model token (the added vocabulary wins in HF).
            _ => *slot = Some(RawToken { text: added.content, special: added.special, added: true }),
        }
    }
    let kind =
        detect_kind(&file.normalizer, &file.pre_tokenizer, &file.decoder, file.model.byte_fallback, has_byte_tokens);
    Ok(Parsed { kind, tokens })
}

/// The components of a normalizer, pre-tokenizer or decoder, with `Sequence`s flattened.
fn components<'a>(value: &'a Option<Value>, out: &mut Vec<&'a Value>) {
    fn walk<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
        let nested = ["decoders", "pretokenizers", "normalizers"].iter().find_map(|k| v.get(k)?.as_array());
        match nested {
            Some(items) => items.iter().for_each(|item| walk(item, out)),
            None => out.push(v),
        }
    }
    if let Some(v) = value {
        walk(v, out);
    }
}

fn type_is(v: &Value, name: &str) -> bool {
    v.get("type").and_then(Value::as_str) == Some(name)
}

/// A `Replace` whose pattern is the literal string `from` and whose content is `to`.
fn is_replace(v: &Value, from: &str, to: &str) -> bool {
    type_is(v, "Replace")
        && v.get("pattern").and_then(|p| p.get("String")).and_then(Value::as_str) == Some(from)
        && v.get("content").and_then(Value::as_str) == Some(to)
}

/// Detects the kind; see [`Vocabulary::from_tokenizer_json`](super::Vocabulary::from_tokenizer_json).
fn detect_kind(
    normalizer: &Option<Value>,
    pre_tokenizer: &Option<Value>,
    decoder: &Option<Value>,
    model_byte_fallback: Option<bool>,
    has_byte_tokens: bool,
) -> VocabKind {
    let (mut norm, mut pre, mut dec) = (Vec::new(), Vec::new(), Vec::new());
    components(normalizer, &mut norm);
    components(pre_tokenizer, &mut pre);
    components(decoder, &mut dec);
    if dec.iter().chain(&pre).any(|v| type_is(v, "ByteLevel")) {
        return VocabKind::ByteLevel;
    }
    let metaspace = METASPACE.to_string();
    let is_metaspace = dec.iter().chain(&pre).any(|v| type_is(v, "Metaspace"))
        || dec.iter().any(|v| is_replace(v, &metaspace, " "))
        || norm.iter().any(|v| is_replace(v, " ", &metaspace));
    let byte_fallback = model_byte_fallback == Some(true) || dec.iter().any(|v| type_is(v, "ByteFallback"));
    if is_metaspace || (byte_fallback && has_byte_tokens) {
        VocabKind::ByteFallback
    } else {
        VocabKind::Raw
    }
}

/// Parses a small JSON document that must be an object (a config file).
fn parse_object(json: &[u8], what: &'static str) -> Result<serde_json::Map<String, Value>, VocabError> {
    match serde_json::from_slice(json).map_err(|e| VocabError::json(what, e))? {
        Value::Object(map) => Ok(map),
        other => {
            Err(VocabError::json(what, format!("expected a JSON object, found {}", crate::util::json::kind(&other))))
        }
    }
}

/// The string forms named by the `eos_token` of a `tokenizer_config.json` (empty when absent or null).
pub(crate) fn parse_config_eos(config: &[u8]) -> Result<Vec<String>, VocabError> {
    let file = parse_object(config, CONFIG_JSON)?;
    let mut names = Vec::new();
    if let Some(eos) = file.get("eos_token") {
        collect_eos(eos, &mut names, true)?;
    }
    Ok(names)
}

fn collect_eos(v: &Value, out: &mut Vec<String>, allow_list: bool) -> Result<(), VocabError> {
    match v {
        Value::Null => {}
        Value::String(s) => out.push(s.clone()),
        Value::Object(map) => match map.get("content") {
            Some(Value::String(s)) => out.push(s.clone()),
            _ => return Err(VocabError::json(CONFIG_JSON, "eos_token: an object without a string `content`")),
        },
        Value::Array(items) if allow_list => {
            for item in items {
                collect_eos(item, out, false)?;
            }
        }
        _ => {
            return Err(VocabError::json(
                CONFIG_JSON,
                format!("eos_token must be a string, an object with `content` or a list of them, not {v}"),
            ))
        }
    }
    Ok(())
}

/// The `eos_token_id` of a `generation_config.json` (`None` when absent or null).
pub(crate) fn parse_generation_eos(json: &[u8]) -> Result<Option<Vec<u32>>, VocabError> {
    let file = parse_object(json, GENERATION_JSON)?;
    let as_id = |v: &Value| {
        v.as_u64().and_then(|id| u32::try_from(id).ok()).ok_or_else(|| {
            VocabError::json(GENERATION_JSON, format!("eos_token_id must be a token id or a list of ids, not {v}"))
        })
    };
    match file.get("eos_token_id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items.iter().map(as_id).collect::<Result<Vec<_>, _>>().map(Some),
        Some(v) => Ok(Some(vec![as_id(v)?])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Parsed, VocabError> {
        parse_tokenizer_json(json.as_bytes())
    }

    fn kind_of(extra: &str, vocab: &str) -> VocabKind {
        let json = format!(r#"{{ {extra} "model": {{"vocab": {vocab}}} }}"#);
        parse(&json).unwrap().kind
    }

    #[test]
    fn kind_detection() {
        let bytes = r#"{"<0x0A>": 0, "a": 1}"#;
        let plain = r#"{"a": 0}"#;
        assert_eq!(kind_of(r#""decoder": {"type": "ByteLevel"},"#, plain), VocabKind::ByteLevel);
        let seq =
            r#""pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split"}, {"type": "ByteLevel"}]},"#;
        assert_eq!(kind_of(seq, plain), VocabKind::ByteLevel);
        let llama2 = r#""decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}]},"#;
        assert_eq!(kind_of(llama2, bytes), VocabKind::ByteFallback);
        assert_eq!(kind_of(r#""decoder": {"type": "Metaspace", "replacement": "▁"},"#, plain), VocabKind::ByteFallback);
        assert_eq!(kind_of(r#""decoder": {"type": "ByteFallback"},"#, bytes), VocabKind::ByteFallback);
        // Byte fallback without any `<0xNN>` token and no metaspace: raw text.
        assert_eq!(kind_of(r#""decoder": {"type": "ByteFallback"},"#, plain), VocabKind::Raw);
        assert_eq!(kind_of("", bytes), VocabKind::Raw);
        assert_eq!(kind_of(r#""decoder": null, "normalizer": null,"#, plain), VocabKind::Raw);
    }

    #[test]
    fn unigram_list_vocab() {
        let p = parse(r#"{"model": {"type": "Unigram", "vocab": [["<unk>", 0.0], ["▁a", -1.5]]}, "decoder": {"type": "Metaspace"}}"#)
            .unwrap();
        assert_eq!(p.kind, VocabKind::ByteFallback);
        assert_eq!(p.tokens.len(), 2);
        assert_eq!(p.tokens[1].as_ref().unwrap().text, "▁a");
    }

    #[test]
    fn errors_are_precise() {
        let err = |json: &str| parse(json).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            err(r#"{"model": {"type": "WordPiece", "vocab": {"a": 0}}}"#),
            "unsupported tokenizer model type `WordPiece`: only BPE, Unigram and WordLevel vocabularies are supported"
        );
        assert_eq!(err(r#"{"model": {"vocab": {"a": 0, "b": 0}}}"#), "token id 0 is assigned to both `a` and `b`");
        assert_eq!(
            err(
                r#"{"model": {"vocab": {"a": 0}}, "added_tokens": [{"id": 1, "content": "x"}, {"id": 1, "content": "y"}]}"#
            ),
            "token id 1 is assigned to both `x` and `y`"
        );
        assert_eq!(err(r#"{"model": {"vocab": {"a": 99999999}}}"#), "a token id is 99999999, the limit is 16777215");
        assert_eq!(err(r#"{"model": {"vocab": {}}}"#), "the vocabulary has no tokens");
        assert!(err(r#"{"model": {"vocab": {"a": -1}}}"#).starts_with("invalid tokenizer.json: invalid value"));
        assert!(err(r#"{"model": {"vocab": 3}}"#).contains("an object {token: id} or a list of [token, score] pairs"));
        assert!(err("{").starts_with("invalid tokenizer.json: EOF while parsing an object at line 1 column 1"));
        assert!(err("{}").contains("missing field `model`"));
    }

    #[test]
    fn added_tokens_overlay_and_override() {
        let p = parse(
            r#"{"model": {"vocab": {"<s>": 0, "a": 1, "b": 2}},
                "added_tokens": [{"id": 0, "content": "<s>", "special": true}, {"id": 2, "content": "<x>"}, {"id": 5, "content": "<y>"}]}"#,
        )
        .unwrap();
        let t = |i: usize| p.tokens[i].as_ref().map(|t| (t.text.as_str(), t.special, t.added));
        assert_eq!(t(0), Some(("<s>", true, true)));
        assert_eq!(t(1), Some(("a", false, false)));
        assert_eq!(t(2), Some(("<x>", false, true)));
        assert_eq!(t(3), None);
        assert_eq!(t(5), Some(("<y>", false, true)));
    }

    #[test]
    fn config_eos_forms() {
        let eos = |json: &str| parse_config_eos(json.as_bytes()).map_err(|e| e.to_string());
        assert_eq!(eos(r#"{"eos_token": "</s>"}"#).unwrap(), vec!["</s>"]);
        assert_eq!(eos(r#"{"eos_token": {"content": "<|im_end|>", "lstrip": false}}"#).unwrap(), vec!["<|im_end|>"]);
        assert_eq!(eos(r#"{"eos_token": ["a", {"content": "b"}]}"#).unwrap(), vec!["a", "b"]);
        assert_eq!(eos(r#"{"eos_token": null}"#).unwrap(), Vec::<String>::new());
        assert_eq!(eos(r#"{"bos_token": "<s>"}"#).unwrap(), Vec::<String>::new());
        assert_eq!(
            eos(r#"{"eos_token": 3}"#).unwrap_err(),
            "invalid tokenizer_config.json: eos_token must be a string, an object with `content` or a list of them, not 3"
        );
        assert!(eos(r#"{"eos_token": [["a"]]}"#).is_err());
        assert_eq!(eos("[]").unwrap_err(), "invalid tokenizer_config.json: expected a JSON object, found an array");
        assert!(eos("{").unwrap_err().starts_with("invalid tokenizer_config.json: EOF while parsing"));
    }

    #[test]
    fn generation_eos_forms() {
        let eos = |json: &str| parse_generation_eos(json.as_bytes()).map_err(|e| e.to_string());
        assert_eq!(eos(r#"{"eos_token_id": 2}"#).unwrap(), Some(vec![2]));
        assert_eq!(eos(r#"{"eos_token_id": [128001, 128009]}"#).unwrap(), Some(vec![128001, 128009]));
        assert_eq!(eos(r#"{"bos_token_id": 1}"#).unwrap(), None);
        assert_eq!(
            eos(r#"{"eos_token_id": "x"}"#).unwrap_err(),
            "invalid generation_config.json: eos_token_id must be a token id or a list of ids, not \"x\""
        );
        assert!(eos(r#"{"eos_token_id": [-1]}"#).is_err());
    }
}
