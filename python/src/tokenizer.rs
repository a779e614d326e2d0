//! `TokenizerInfo` and `VocabType`: a [`Vocabulary`] as XGrammar's Python API shows it.

use std::path::Path;

use maskforge::tokenizer::{decode, VocabKind, Vocabulary, VocabularyBuilder, DEFAULT_STOP_TOKENS};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::errors::{detached, vocab_err, TokenizerError};

/// How the token strings of a vocabulary encode bytes (XGrammar's `VocabType`).
#[pyclass(eq, eq_int, module = "maskforge", from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[allow(clippy::upper_case_acronyms, non_camel_case_types)]
pub enum VocabType {
    /// The string is the text (UTF-8).
    RAW = 0,
    /// SentencePiece: `<0xNN>` is byte `NN`, `▁` a space (Llama 2, Mistral v1).
    BYTE_FALLBACK = 1,
    /// GPT-2 byte-level BPE (Llama 3, Qwen, gpt-oss, SmolLM2).
    BYTE_LEVEL = 2,
}

impl From<VocabType> for VocabKind {
    fn from(t: VocabType) -> VocabKind {
        match t {
            VocabType::RAW => VocabKind::Raw,
            VocabType::BYTE_FALLBACK => VocabKind::ByteFallback,
            VocabType::BYTE_LEVEL => VocabKind::ByteLevel,
        }
    }
}

impl From<VocabKind> for VocabType {
    fn from(k: VocabKind) -> VocabType {
        match k {
            VocabKind::Raw => VocabType::RAW,
            VocabKind::ByteFallback => VocabType::BYTE_FALLBACK,
            VocabKind::ByteLevel => VocabType::BYTE_LEVEL,
        }
    }
}

/// The tokenizer facts a grammar needs: the bytes of every token, special and stop tokens, and
/// the model's vocabulary size. Immutable; shared by compilers.
#[pyclass(module = "maskforge", frozen, from_py_object)]
#[derive(Clone)]
pub struct TokenizerInfo {
    pub(crate) vocab: Vocabulary,
    add_prefix_space: bool,
}

impl TokenizerInfo {
    /// Wraps a vocabulary.
    pub fn wrap(vocab: Vocabulary) -> Self {
        TokenizerInfo { vocab, add_prefix_space: false }
    }
}

#[pymethods]
impl TokenizerInfo {
    /// Builds the vocabulary from the *encoded* token strings (`"Ġthe"` for byte-level,
    /// `"<0x0A>"` / `"▁the"` for byte fallback; `bytes` items are taken as the token's bytes).
    /// Stop tokens and `special_token_ids` are special (no bytes); without `stop_token_ids`, the
    /// tokens named like common end-of-sequence tokens (`</s>`, `<|im_end|>`, ...) are.
    #[new]
    #[pyo3(signature = (encoded_vocab, vocab_type = VocabType::RAW, *, vocab_size = None, stop_token_ids = None, add_prefix_space = false, special_token_ids = None))]
    fn new(
        encoded_vocab: Vec<Bound<'_, PyAny>>,
        vocab_type: VocabType,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<u32>>,
        add_prefix_space: bool,
        special_token_ids: Option<Vec<u32>>,
    ) -> PyResult<Self> {
        let kind = VocabKind::from(vocab_type);
        let mut tokens = Vec::with_capacity(encoded_vocab.len());
        let mut special = special_token_ids.unwrap_or_default();
        for (id, item) in encoded_vocab.iter().enumerate() {
            let (bytes, text) = token_bytes(item, kind)?;
            if stop_token_ids.is_none() && text.as_deref().is_some_and(|t| DEFAULT_STOP_TOKENS.contains(&t)) {
                special.push(id as u32);
            }
            tokens.push(bytes);
        }
        special.extend(stop_token_ids.iter().flatten());
        let mut builder = VocabularyBuilder::new();
        builder.kind(kind).tokens(&tokens).vocab_size(vocab_size.unwrap_or(0));
        for id in special {
            builder.special(id);
        }
        if let Some(ids) = stop_token_ids {
            builder.stop_tokens(ids);
        }
        Ok(TokenizerInfo { vocab: builder.build().map_err(vocab_err)?, add_prefix_space })
    }

    /// Loads a Hugging Face `tokenizer.json`, given as its text or as a path (plain or gzip).
    /// The stop tokens are `stop_token_ids`, else the `eos_token` of `tokenizer_config` (a
    /// `tokenizer_config.json`: its text when `path_or_str` is text, its path when it is a
    /// path), else the special tokens named like common end-of-sequence tokens. `vocab_size` is the model's (padding ids are never allowed).
    #[staticmethod]
    #[pyo3(signature = (path_or_str, *, vocab_size = None, stop_token_ids = None, tokenizer_config = None))]
    fn from_tokenizer_json(
        py: Python<'_>,
        path_or_str: &str,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<u32>>,
        tokenizer_config: Option<&str>,
    ) -> PyResult<Self> {
        let vocab = detached(py, || {
            let mut vocab = if path_or_str.trim_start().starts_with('{') {
                Vocabulary::from_tokenizer_json(path_or_str.as_bytes(), tokenizer_config.map(str::as_bytes))
            } else {
                Vocabulary::from_files(Path::new(path_or_str), tokenizer_config.map(Path::new))
            }
            .map_err(vocab_err)?;
            if let Some(ids) = stop_token_ids {
                vocab = vocab.with_stop_tokens(ids).map_err(vocab_err)?;
            }
            if let Some(n) = vocab_size {
                vocab.set_vocab_size(n).map_err(vocab_err)?;
            }
            Ok(vocab)
        })?;
        Ok(TokenizerInfo { vocab, add_prefix_space: false })
    }

    /// From a Hugging Face transformers *fast* tokenizer (its backend `tokenizer.json`). The
    /// stop tokens are `stop_token_ids` (an id or a list), else the tokenizer's
    /// `eos_token_id`. `vocab_size` is the model's (its embedding rows), when larger.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, vocab_size = None, stop_token_ids = None))]
    fn from_huggingface(
        tokenizer: &Bound<'_, PyAny>,
        vocab_size: Option<usize>,
        stop_token_ids: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let py = tokenizer.py();
        let backend = tokenizer.getattr("backend_tokenizer").map_err(|_| {
            TokenizerError::new_err(
                "only fast tokenizers (with a backend_tokenizer) are supported; \
                 use TokenizerInfo.from_tokenizer_json or the raw constructor",
            )
        })?;
        let json: String = backend.call_method0("to_str")?.extract()?;
        let stops: Option<Vec<u32>> = match stop_token_ids {
            Some(ids) => Some(ids_arg(ids)?),
            None => match tokenizer.getattr("eos_token_id") {
                Ok(id) if !id.is_none() => Some(ids_arg(&id)?),
                _ => None,
            },
        };
        Self::from_tokenizer_json(py, &json, vocab_size, stops, None)
    }

    /// The model's vocabulary size: the number of ids a mask covers.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocab.vocab_size()
    }

    /// How the token strings encode bytes.
    #[getter]
    fn vocab_type(&self) -> VocabType {
        self.vocab.kind().into()
    }

    /// The ids that end generation.
    #[getter]
    fn stop_token_ids(&self) -> Vec<u32> {
        self.vocab.stop_token_ids().to_vec()
    }

    /// The ids of the special (control) tokens.
    #[getter]
    fn special_token_ids(&self) -> Vec<u32> {
        self.vocab.special_token_ids().to_vec()
    }

    /// Recorded for XGrammar compatibility; the token bytes already say where spaces are.
    #[getter]
    fn add_prefix_space(&self) -> bool {
        self.add_prefix_space
    }

    /// The bytes of every id (empty for special tokens and padding).
    #[getter]
    fn decoded_vocab<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        (0..self.vocab.vocab_size() as u32).map(|id| PyBytes::new(py, self.vocab.token_bytes(id))).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "TokenizerInfo(vocab_size={}, vocab_type={:?}, stop_token_ids={:?})",
            self.vocab.vocab_size(),
            VocabType::from(self.vocab.kind()),
            self.vocab.stop_token_ids()
        )
    }
}

/// The bytes of one item of an encoded vocabulary, and its string form when it is a `str`.
fn token_bytes(item: &Bound<'_, PyAny>, kind: VocabKind) -> PyResult<(Vec<u8>, Option<String>)> {
    if let Ok(b) = item.cast::<PyBytes>() {
        return Ok((b.as_bytes().to_vec(), None));
    }
    let Ok(s) = item.cast::<PyString>() else {
        return Err(TokenizerError::new_err(format!(
            "encoded_vocab items must be str or bytes, not {}",
            item.get_type().name()?
        )));
    };
    let text = s.to_cow()?.to_string();
    let mut bytes = Vec::new();
    decode::decode_token(kind, &text, &mut bytes);
    Ok((bytes, Some(text)))
}

/// Token ids given as one int or a list of ints.
fn ids_arg(value: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    if let Ok(id) = value.extract::<u32>() {
        return Ok(vec![id]);
    }
    value.extract::<Vec<u32>>().map_err(|_| TokenizerError::new_err("token ids must be an int or a list of ints"))
}
