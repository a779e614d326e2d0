//! Layer 1': the model's vocabulary as bytes and ids. Sibling of `grammar`, which it never
//! imports: the mask computation meets grammars and tokens only in the layers above.
//!
//! A [`Vocabulary`] knows, for every token id of a model, the exact bytes the token stands for
//! (empty for special tokens and padding ids), which tokens are special, which end generation
//! (stop tokens), and the normal tokens sorted by their bytes with the common-prefix lengths
//! the trie walk of the mask computation needs. It is immutable, cheap to clone (`Arc`s inside)
//! and `Send + Sync`.
//!
//! * [`Vocabulary::from_tokenizer_json`] reads a Hugging Face `tokenizer.json` with `serde_json`
//!   (independently of the `tokenizers` crate, for speed and robustness) and detects the
//!   [`VocabKind`]; [`decode`] turns token strings into bytes.
//! * [`VocabularyBuilder`] builds small vocabularies from bytes, for tests and doctests.
//! * [`TextEncoder`] (in `hf.rs`, the only file naming the `tokenizers` crate) encodes text to
//!   ids, including [`TextEncoder::encode_for_matching`], whose ids spell exactly the input.
//! * [`GgufTokenizer`] reads the tokenizer stored in a GGUF model file (`tokenizer.ggml.*`
//!   metadata): vocabulary, encoder, BOS token and chat template; [`Vocabulary::from_gguf_file`]
//!   only the vocabulary.
//! * [`load_tokenizer`] loads a `tokenizer.json` file (or a model folder holding one, with its
//!   `tokenizer_config.json`): the vocabulary and its encoder.
//!
//! ## Stop tokens
//!
//! With a `tokenizer_config.json`, the stop tokens are its `eos_token` (a string, a
//! `{"content": ...}` object or a list of them); nothing else is guessed, because the config is
//! the model author's statement. Chat models often stop on more tokens than `eos_token` names
//! (Llama 3.1 instruct: `<|eot_id|>`, `<|eom_id|>`; gpt-oss: `<|call|>`): those are listed by the
//! model's `generation_config.json`, which [`Vocabulary::with_generation_config`] reads, or set
//! with [`Vocabulary::with_stop_tokens`]. Without a config (or when its `eos_token` is null), the
//! special tokens among [`DEFAULT_STOP_TOKENS`] are the stop tokens.

mod builder;
pub mod decode;
mod error;
mod gguf;
mod hf;
mod load;
mod source;
mod trie;

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

pub use builder::VocabularyBuilder;
pub use error::VocabError;
pub use gguf::GgufTokenizer;
pub use hf::{load_tokenizer, TextEncoder};
pub use source::TokenizerFiles;
pub use trie::TokenTrie;
// The project's test-fixture names: for its own tests, benchmarks and command-line tool.
pub use source::resolve_tokenizer;
#[doc(hidden)]
pub use source::{fixtures_dir, FIXTURES_ENV, FIXTURE_NAMES};

/// The largest vocabulary size accepted (16,777,216 ids), far above any real model (the largest
/// are around 260,000). It bounds the memory a malformed file can make the loader allocate.
pub const MAX_VOCAB_SIZE: usize = 1 << 24;

/// Special tokens that end generation when no `tokenizer_config.json` names an `eos_token`: each
/// one present in the vocabulary *as a special token* is a stop token. `<|end|>` is deliberately
/// absent: gpt-oss's Harmony format uses it between messages of one turn.
pub const DEFAULT_STOP_TOKENS: &[&str] = &[
    "</s>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|im_end|>",
    "<|return|>",
    "<|call|>",
    "<end_of_turn>",
    "<eos>",
];

/// How a vocabulary's token strings encode bytes (see [`decode::decode_token`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum VocabKind {
    /// The string form is the text (UTF-8).
    Raw,
    /// SentencePiece style: `<0xNN>` is the byte `NN`, `▁` is a space (Llama 2, Mistral v1).
    ByteFallback,
    /// GPT-2 byte-level BPE: every byte is one character of a fixed table (Llama 3, Qwen, gpt-oss).
    ByteLevel,
}

/// What an id is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum TokenClass {
    /// No token: an id in a gap of the file or past its last token, up to the vocabulary size.
    Padding,
    /// A token with bytes (possibly none, if its string form is empty).
    Normal,
    /// A special (control) token: no bytes.
    Special,
}

/// The string side of a vocabulary: per id its string form and class. Independent of the kind.
#[derive(Clone)]
pub(crate) struct TextTable {
    /// The string forms, concatenated.
    pub(crate) data: String,
    /// `offsets[id]..offsets[id + 1]` is the string form of `id` (`len = class.len() + 1`).
    pub(crate) offsets: Vec<u32>,
    pub(crate) class: Vec<TokenClass>,
    pub(crate) special_ids: Vec<u32>,
    /// The non-padding ids sorted by (hash of the string form, not added, id): a compact index
    /// for [`Vocabulary::token_id`] that is much faster to build than a sort by string.
    pub(crate) by_hash: Vec<u32>,
}

/// The hash of a string form in [`TextTable::by_hash`].
fn text_hash(text: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(text)
}

impl TextTable {
    /// The id with string form `text`, preferring added tokens, then the smallest id.
    fn find(&self, text: &str) -> Option<u32> {
        let h = text_hash(text);
        let start = self.by_hash.partition_point(|&id| text_hash(self.text(id as usize)) < h);
        self.by_hash[start..]
            .iter()
            .take_while(|&&id| text_hash(self.text(id as usize)) == h)
            .find(|&&id| self.text(id as usize) == text)
            .copied()
    }

    fn text(&self, id: usize) -> &str {
        match (self.offsets.get(id), self.offsets.get(id + 1)) {
            (Some(&start), Some(&end)) => &self.data[start as usize..end as usize],
            _ => "",
        }
    }
}

/// The normal tokens by length, longest first, and per length `n` how many are longer.
/// The normal tokens by length (see [`Vocabulary::tokens_longer_than`]).
#[derive(Clone)]
struct ByLength {
    /// Longest first, equal lengths in sorted order.
    ids: Box<[u32]>,
    /// Per length `n` up to the longest token's, how many tokens are longer than `n`.
    longer: Box<[u32]>,
    /// The bytes of `ids`, in that order: the tokens of one length are read in memory order,
    /// where reading thousands by id jumps around the vocabulary (a cache miss or two each).
    data: Box<[u8]>,
    /// Per length `n`, where the bytes of the tokens of length `n` start in `data`.
    data_start: Box<[usize]>,
}

/// The byte side: per id its bytes under one kind, and the sorted order of normal tokens.
#[derive(Clone)]
pub(crate) struct ByteTable {
    kind: VocabKind,
    data: Vec<u8>,
    offsets: Vec<u32>,
    sorted_ids: Vec<u32>,
    sorted_lcp: Vec<u32>,
    /// id → position in `sorted_ids` (`u32::MAX` for tokens without bytes).
    sorted_pos: Vec<u32>,
    /// The bytes of the tokens again, in sorted order (position `i` is
    /// `sorted_data[sorted_offsets[i]..sorted_offsets[i + 1]]`): the mask walk reads tokens in
    /// this order, and contiguous bytes keep it in cache where `data` would jump around.
    sorted_data: Vec<u8>,
    sorted_offsets: Vec<u32>,
    /// `first_byte_start[b]`: the first sorted position whose token starts with a byte `>= b`
    /// (`first_byte_start[256]` is the number of sorted tokens).
    first_byte_start: Vec<u32>,
    /// The normal tokens as a bitmask in the engine layout.
    normal_mask: Vec<u32>,
    /// Every token (normal or special, not padding) as a bitmask in the engine layout.
    token_mask: Vec<u32>,
    max_token_len: usize,
    /// [`Vocabulary::content_fingerprint`], computed on first use (it reads every token).
    fingerprint: std::sync::OnceLock<u64>,
    /// [`Vocabulary::trie`], built with the table (a few milliseconds at 128k tokens, which a
    /// first use would add to some grammar's mask).
    trie: TokenTrie,
    /// [`Vocabulary::tokens_longer_than`]: the normal tokens by length (longest first), and per
    /// length `n` how many are longer; built with the table, like the trie (a first use in a
    /// word count's step near its bound cost that step 1.7 ms at 128k tokens).
    by_length: ByLength,
}

/// A model's vocabulary: the bytes of every token id, special and stop tokens, and the normal
/// tokens sorted by bytes. Immutable and cheap to clone.
///
/// Ids run from 0 to [`vocab_size`](Self::vocab_size)` - 1`. An id is a *normal* token (it has
/// bytes), a *special* token (no bytes, [`is_special`](Self::is_special)) or a *padding* id (no
/// token at all: a gap in the file's ids, or an id past the last token up to the model's
/// embedding size, [`is_padding`](Self::is_padding)). Grammars never allow special tokens or
/// padding ids; stop tokens are allowed where the grammar may end.
///
/// # Example
/// ```
/// use maskforge::tokenizer::{VocabKind, VocabularyBuilder};
/// let vocab = VocabularyBuilder::new()
///     .tokens(["a", "ab", " b", "</s>"])
///     .special(3)
///     .stop_tokens([3])
///     .vocab_size(8)
///     .build()?;
/// assert_eq!(vocab.vocab_size(), 8);
/// assert_eq!(vocab.token_bytes(2), b" b");
/// assert!(vocab.is_special(3) && vocab.token_bytes(3).is_empty());
/// assert_eq!(vocab.stop_token_ids(), &[3]);
/// assert!(vocab.is_padding(5));
/// assert_eq!(vocab.sorted_token_ids(), &[2, 0, 1]); // " b" < "a" < "ab"
/// assert_eq!(vocab.sorted_lcp(), &[0, 0, 1]);
/// # Ok::<(), maskforge::tokenizer::VocabError>(())
/// ```
#[derive(Clone)]
pub struct Vocabulary {
    texts: Arc<TextTable>,
    bytes: Arc<ByteTable>,
    stop_ids: Arc<[u32]>,
    vocab_size: usize,
}

impl std::fmt::Debug for Vocabulary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vocabulary")
            .field("kind", &self.kind())
            .field("vocab_size", &self.vocab_size)
            .field("tokens", &self.texts.class.len())
            .field("special", &self.texts.special_ids.len())
            .field("stop_token_ids", &self.stop_ids)
            .finish()
    }
}

impl Vocabulary {
    /// Loads a vocabulary from the bytes of a Hugging Face `tokenizer.json` and, optionally, of
    /// its `tokenizer_config.json` (which names the stop tokens, see the [module
    /// docs](self#stop-tokens)). The kind is detected from the file:
    ///
    /// * a `ByteLevel` decoder or pre-tokenizer → [`VocabKind::ByteLevel`];
    /// * a metaspace convention (a `Metaspace` decoder or pre-tokenizer, a `Replace("▁", " ")`
    ///   decoder or `Replace(" ", "▁")` normalizer), or byte fallback (`model.byte_fallback` or a
    ///   `ByteFallback` decoder) with `<0xNN>` tokens → [`VocabKind::ByteFallback`];
    /// * otherwise [`VocabKind::Raw`]. Override with [`with_kind`](Self::with_kind).
    ///
    /// `added_tokens` marked `special` are special tokens; the other added tokens are normal
    /// tokens decoded like the model's own (for the four reference tokenizers they are ASCII
    /// text such as Qwen3's `<think>`, so their bytes are their content). An added token wins
    /// over a model token with the same id, as in the Hugging Face decoder. BPE, Unigram and
    /// WordLevel models are supported; WordPiece is not (its `##` pieces are not bytes).
    ///
    /// # Example
    /// ```
    /// use maskforge::tokenizer::{VocabKind, Vocabulary};
    /// let json = br#"{
    ///   "added_tokens": [{"id": 3, "content": "<|endoftext|>", "special": true}],
    ///   "decoder": {"type": "ByteLevel"},
    ///   "model": {"type": "BPE", "vocab": {"a": 0, "\u0120a": 1, "\u010a": 2}, "merges": []}
    /// }"#;
    /// let vocab = Vocabulary::from_tokenizer_json(json, None)?;
    /// assert_eq!(vocab.kind(), VocabKind::ByteLevel);
    /// assert_eq!(vocab.token_bytes(1), b" a");
    /// assert_eq!(vocab.token_bytes(2), b"\n");
    /// assert_eq!(vocab.token_id("<|endoftext|>"), Some(3));
    /// assert_eq!(vocab.stop_token_ids(), &[3]); // no config: DEFAULT_STOP_TOKENS
    /// # Ok::<(), maskforge::tokenizer::VocabError>(())
    /// ```
    pub fn from_tokenizer_json(json: &[u8], config: Option<&[u8]>) -> Result<Vocabulary, VocabError> {
        let parsed = load::parse_tokenizer_json(json)?;
        let texts = build_text_table(parsed.tokens)?;
        let bytes = build_byte_table(&texts, parsed.kind, None)?;
        let vocab_size = texts.class.len();
        let mut vocab =
            Vocabulary { texts: Arc::new(texts), bytes: Arc::new(bytes), stop_ids: Arc::new([]), vocab_size };
        let named = match config {
            Some(config) => load::parse_config_eos(config)?,
            None => Vec::new(),
        };
        let stop_ids = if named.is_empty() {
            vocab.default_stop_ids()
        } else {
            let mut ids = Vec::with_capacity(named.len());
            for name in named {
                ids.push(vocab.token_id(&name).ok_or(VocabError::UnknownStopToken { token: name })?);
            }
            ids
        };
        vocab.stop_ids = sorted_unique(stop_ids).into();
        Ok(vocab)
    }

    /// Loads a vocabulary from a `tokenizer.json` file, plain or gzip-compressed (detected by the
    /// gzip magic bytes, whatever the extension), without a config: the stop tokens come from
    /// [`DEFAULT_STOP_TOKENS`]. A `tokenizer_config.json` next to the file is *not* read; use
    /// [`from_files`](Self::from_files) for that.
    pub fn from_tokenizer_json_file(path: impl AsRef<Path>) -> Result<Vocabulary, VocabError> {
        Self::from_files(path.as_ref(), None)
    }

    /// Loads a vocabulary from a `tokenizer.json` file (plain or gzip) and optionally its
    /// `tokenizer_config.json` (plain or gzip). See [`from_tokenizer_json`](Self::from_tokenizer_json).
    pub fn from_files(tokenizer_path: &Path, config_path: Option<&Path>) -> Result<Vocabulary, VocabError> {
        let json = source::read_maybe_gzip(tokenizer_path)?;
        let config = config_path.map(source::read_maybe_gzip).transpose()?;
        Self::from_tokenizer_json(&json, config.as_deref())
    }

    /// A vocabulary of the given token bytes, ids in order, none special, no stop token. Use
    /// [`VocabularyBuilder`] for special tokens, stop tokens and padding.
    ///
    /// ```
    /// use maskforge::tokenizer::{VocabKind, Vocabulary};
    /// let vocab = Vocabulary::from_raw(vec![b"x".to_vec(), vec![0xE4]], VocabKind::ByteLevel)?;
    /// assert_eq!(vocab.token_bytes(1), &[0xE4]);
    /// assert_eq!(vocab.token_str(1), Some("ä")); // the byte-level string form
    /// # Ok::<(), maskforge::tokenizer::VocabError>(())
    /// ```
    pub fn from_raw(tokens: Vec<Vec<u8>>, kind: VocabKind) -> Result<Vocabulary, VocabError> {
        VocabularyBuilder::new().kind(kind).tokens(tokens).build()
    }

    /// The same vocabulary with its token strings decoded as `kind` (when detection guessed
    /// wrong). Special tokens, stop tokens and the vocabulary size are kept. For a vocabulary
    /// built from bytes, the string forms are those [`decode::encode_token_text`] gave them.
    ///
    /// ```
    /// use maskforge::tokenizer::{VocabKind, VocabularyBuilder};
    /// let vocab = VocabularyBuilder::new().kind(VocabKind::Raw).tokens(["▁a"]).build()?;
    /// assert_eq!(vocab.token_bytes(0), "▁a".as_bytes());
    /// let vocab = vocab.with_kind(VocabKind::ByteFallback)?;
    /// assert_eq!(vocab.token_bytes(0), b" a");
    /// # Ok::<(), maskforge::tokenizer::VocabError>(())
    /// ```
    pub fn with_kind(&self, kind: VocabKind) -> Result<Vocabulary, VocabError> {
        let bytes = build_byte_table(&self.texts, kind, None)?;
        Ok(Vocabulary { bytes: Arc::new(bytes), ..self.clone() })
    }

    /// The same vocabulary with exactly these stop tokens (duplicates removed). Each id must be
    /// a token (normal or special), not a padding id.
    ///
    /// ```
    /// use maskforge::tokenizer::VocabularyBuilder;
    /// let vocab = VocabularyBuilder::new().tokens(["a", "b"]).vocab_size(4).build()?;
    /// assert_eq!(vocab.with_stop_tokens([1, 1])?.stop_token_ids(), &[1]);
    /// assert!(vocab.with_stop_tokens([3]).is_err()); // a padding id
    /// # Ok::<(), maskforge::tokenizer::VocabError>(())
    /// ```
    pub fn with_stop_tokens(&self, ids: impl IntoIterator<Item = u32>) -> Result<Vocabulary, VocabError> {
        let ids: Vec<u32> = ids.into_iter().collect();
        for &id in &ids {
            self.check_token(id, "stop token")?;
        }
        Ok(Vocabulary { stop_ids: sorted_unique(ids).into(), ..self.clone() })
    }

    /// The same vocabulary with the stop tokens of a `generation_config.json` (its
    /// `eos_token_id`, an id or a list of ids), which is how Hugging Face `generate` decides
    /// when to stop. If the file has no `eos_token_id`, the stop tokens are unchanged.
    ///
    /// ```
    /// use maskforge::tokenizer::VocabularyBuilder;
    /// let vocab = VocabularyBuilder::new().tokens(["a", "<|eot_id|>", "<|end_of_text|>"]).special(1).special(2).build()?;
    /// let vocab = vocab.with_generation_config(br#"{"eos_token_id": [2, 1]}"#)?;
    /// assert_eq!(vocab.stop_token_ids(), &[1, 2]);
    /// # Ok::<(), maskforge::tokenizer::VocabError>(())
    /// ```
    pub fn with_generation_config(&self, json: &[u8]) -> Result<Vocabulary, VocabError> {
        match load::parse_generation_eos(json)? {
            Some(ids) => self.with_stop_tokens(ids),
            None => Ok(self.clone()),
        }
    }

    /// Sets the vocabulary size (the model's embedding size) to `max(vocab_size, ids defined by
    /// the tokenizer)`. Ids past the last token are padding ids: no bytes, not special, never
    /// allowed by a grammar.
    ///
    /// ```
    /// use maskforge::tokenizer::VocabularyBuilder;
    /// let mut vocab = VocabularyBuilder::new().tokens(["a", "b"]).build()?;
    /// vocab.set_vocab_size(64)?;
    /// assert_eq!(vocab.vocab_size(), 64);
    /// vocab.set_vocab_size(1)?; // never below the tokenizer's own ids
    /// assert_eq!(vocab.vocab_size(), 2);
    /// # Ok::<(), maskforge::tokenizer::VocabError>(())
    /// ```
    pub fn set_vocab_size(&mut self, vocab_size: usize) -> Result<(), VocabError> {
        if vocab_size > MAX_VOCAB_SIZE {
            return Err(VocabError::too_large("the vocabulary size", vocab_size, MAX_VOCAB_SIZE));
        }
        self.vocab_size = vocab_size.max(self.texts.class.len());
        Ok(())
    }

    /// How the token strings of the file encode bytes.
    #[inline]
    pub fn kind(&self) -> VocabKind {
        self.bytes.kind
    }

    /// The model's vocabulary size: the number of ids a token mask covers, including padding ids.
    #[inline]
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The exact bytes of token `id`: empty for special tokens, padding ids and ids at or past
    /// the vocabulary size. A byte-level or byte-fallback token may hold part of a UTF-8 character.
    #[inline]
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        let t = &*self.bytes;
        let i = id as usize;
        match (t.offsets.get(i), t.offsets.get(i + 1)) {
            (Some(&start), Some(&end)) => &t.data[start as usize..end as usize],
            _ => &[],
        }
    }

    /// The bytes of a sequence of tokens, concatenated.
    ///
    /// ```
    /// use maskforge::tokenizer::VocabularyBuilder;
    /// let vocab = VocabularyBuilder::new().tokens(["he", "llo", "<eos>"]).special(2).build()?;
    /// assert_eq!(vocab.concat_bytes(&[0, 1, 2]), b"hello");
    /// # Ok::<(), maskforge::tokenizer::VocabError>(())
    /// ```
    pub fn concat_bytes(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            out.extend_from_slice(self.token_bytes(id));
        }
        out
    }

    /// Token `id` for printing: a special token's string form (`<|im_end|>`), otherwise its
    /// bytes with invalid UTF-8 replaced by U+FFFD; empty for padding ids.
    ///
    /// ```
    /// use maskforge::tokenizer::VocabularyBuilder;
    /// let vocab = VocabularyBuilder::new().tokens([b"ok".as_slice(), &[0xE4], b"<s>"]).special(2).build()?;
    /// assert_eq!(vocab.token_text_lossy(0), "ok");
    /// assert_eq!(vocab.token_text_lossy(1), "\u{FFFD}");
    /// assert_eq!(vocab.token_text_lossy(2), "<s>");
    /// # Ok::<(), maskforge::tokenizer::VocabError>(())
    /// ```
    pub fn token_text_lossy(&self, id: u32) -> Cow<'_, str> {
        if self.is_special(id) {
            Cow::Borrowed(self.texts.text(id as usize))
        } else {
            String::from_utf8_lossy(self.token_bytes(id))
        }
    }

    /// The string form of token `id` in the vocabulary file (`Ġthe`, `▁the`, `<0x0A>`,
    /// `<|eot_id|>`), or `None` for padding ids and ids at or past the vocabulary size.
    pub fn token_str(&self, id: u32) -> Option<&str> {
        match self.texts.class.get(id as usize) {
            Some(TokenClass::Normal | TokenClass::Special) => Some(self.texts.text(id as usize)),
            _ => None,
        }
    }

    /// The id of the token whose string form in the vocabulary is `text` (special or normal:
    /// `"<|eot_id|>"`, `"Ġthe"`, `"▁the"`). If an added token and a model token share a string
    /// form, the added token's id, as in Hugging Face `token_to_id`.
    ///
    /// ```
    /// use maskforge::tokenizer::{VocabKind, VocabularyBuilder};
    /// let vocab = VocabularyBuilder::new().kind(VocabKind::ByteLevel).tokens([" the", "<eos>"]).special(1).build()?;
    /// assert_eq!(vocab.token_id("Ġthe"), Some(0));
    /// assert_eq!(vocab.token_id("<eos>"), Some(1));
    /// assert_eq!(vocab.token_id(" the"), None);
    /// # Ok::<(), maskforge::tokenizer::VocabError>(())
    /// ```
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.texts.find(text)
    }

    /// Whether `id` is a special token (no bytes; never produced by grammar text).
    #[inline]
    pub fn is_special(&self, id: u32) -> bool {
        self.texts.class.get(id as usize) == Some(&TokenClass::Special)
    }

    /// Whether `id` is a padding id: below the vocabulary size but not a token of the tokenizer.
    #[inline]
    pub fn is_padding(&self, id: u32) -> bool {
        (id as usize) < self.vocab_size
            && !matches!(self.texts.class.get(id as usize), Some(TokenClass::Normal | TokenClass::Special))
    }

    /// The ids of the special tokens, ascending.
    pub fn special_token_ids(&self) -> &[u32] {
        &self.texts.special_ids
    }

    /// The ids of the stop tokens (end of generation), ascending. See the [module
    /// docs](self#stop-tokens) for where they come from.
    pub fn stop_token_ids(&self) -> &[u32] {
        &self.stop_ids
    }

    /// A stable hash of everything about the token ids a mask depends on: the size, the bytes
    /// of every normal token by id, and which ids are special or padding. Computed once per
    /// vocabulary (it reads every token) and shared by its clones; the cross-grammar mask pool
    /// keys its entries with it.
    pub fn content_fingerprint(&self) -> u64 {
        *self.bytes.fingerprint.get_or_init(|| {
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            h.update(b"maskforge-vocab-v1");
            h.update(&(self.vocab_size as u64).to_le_bytes());
            for id in 0..self.vocab_size as u32 {
                let bytes = self.token_bytes(id);
                let class: u8 = if self.is_special(id) {
                    1
                } else if self.is_padding(id) {
                    2
                } else {
                    0
                };
                h.update(&[class]);
                h.update(&(bytes.len() as u32).to_le_bytes());
                h.update(bytes);
            }
            h.digest()
        })
    }

    /// A stable hash identifying the vocabulary for saved grammars: the
    /// [content fingerprint](Self::content_fingerprint), the [kind](Self::kind) and the stop
    /// token ids. Two vocabularies with the same fingerprint give the same masks for any grammar.
    pub fn fingerprint(&self) -> u64 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(b"maskforge-vocab-fingerprint-v1");
        h.update(&self.content_fingerprint().to_le_bytes());
        h.update(&[self.kind() as u8]);
        h.update(&(self.stop_ids.len() as u64).to_le_bytes());
        for id in self.stop_ids.iter() {
            h.update(&id.to_le_bytes());
        }
        h.digest()
    }

    /// Whether `id` is a stop token.
    pub fn is_stop_token(&self, id: u32) -> bool {
        self.stop_ids.binary_search(&id).is_ok()
    }

    /// The ids of all normal tokens with at least one byte, sorted by their bytes
    /// (lexicographically; equal bytes by id). Computed once at construction: the mask
    /// computation walks tokens in this order, sharing common prefixes.
    #[inline]
    pub fn sorted_token_ids(&self) -> &[u32] {
        &self.bytes.sorted_ids
    }

    /// For each position `i` of [`sorted_token_ids`](Self::sorted_token_ids), the length of the
    /// common prefix of the bytes of token `i` and token `i - 1` (0 for `i = 0`).
    #[inline]
    pub fn sorted_lcp(&self) -> &[u32] {
        &self.bytes.sorted_lcp
    }

    /// The bytes of the token at position `pos` of [`sorted_token_ids`](Self::sorted_token_ids)
    /// (the same as `token_bytes(sorted_token_ids()[pos])`, read from a copy laid out in sorted
    /// order). Empty past the end.
    #[inline]
    pub fn sorted_token_bytes(&self, pos: usize) -> &[u8] {
        let t = &*self.bytes;
        match (t.sorted_offsets.get(pos), t.sorted_offsets.get(pos + 1)) {
            (Some(&start), Some(&end)) => &t.sorted_data[start as usize..end as usize],
            _ => &[],
        }
    }

    /// The token trie over [`sorted_token_ids`](Self::sorted_token_ids): a whole subtree of
    /// tokens sharing a prefix is one run of sorted positions.
    pub fn trie(&self) -> &TokenTrie {
        &self.bytes.trie
    }

    /// The normal tokens longer than `len` bytes, longest first (equal lengths in sorted order):
    /// what a step near a repetition's bound cannot trust by length alone.
    pub fn tokens_longer_than(&self, len: usize) -> &[u32] {
        let ByLength { ids, longer, .. } = &self.bytes.by_length;
        let n = longer.get(len).map_or(0, |&n| n as usize);
        &ids[..n]
    }

    /// The normal tokens whose length in bytes is in `lengths`, with their bytes, longest first
    /// (equal lengths in sorted order), read in memory order.
    pub fn tokens_of_lengths(&self, lengths: std::ops::RangeInclusive<usize>) -> impl Iterator<Item = (u32, &[u8])> {
        let ByLength { ids, longer, data, data_start } = &self.bytes.by_length;
        let (lo, hi) = ((*lengths.start()).max(1), (*lengths.end()).min(self.max_token_len()));
        (lo..=hi).rev().flat_map(move |n| {
            let first = longer[n] as usize;
            let end = longer[n - 1] as usize;
            let bytes = &data[data_start[n]..data_start[n] + (end - first) * n];
            ids[first..end].iter().copied().zip(bytes.chunks_exact(n))
        })
    }

    /// The positions of [`sorted_token_ids`](Self::sorted_token_ids) whose tokens start with a
    /// byte in `lo..=hi`.
    #[inline]
    pub fn sorted_first_byte_range(&self, lo: u8, hi: u8) -> std::ops::Range<usize> {
        let starts = &self.bytes.first_byte_start;
        starts[lo as usize] as usize..starts[hi as usize + 1] as usize
    }

    /// How many normal tokens start with a byte of `first`.
    pub fn count_starting_with(&self, first: &crate::util::byteset::ByteSet) -> usize {
        (0..=255u8).filter(|&b| first.contains(b)).map(|b| self.sorted_first_byte_range(b, b).len()).sum()
    }

    /// The position of token `id` in [`sorted_token_ids`](Self::sorted_token_ids), or `None`
    /// for special tokens, padding ids and ids past the table.
    #[inline]
    pub fn sorted_position(&self, id: u32) -> Option<u32> {
        self.bytes.sorted_pos.get(id as usize).copied().filter(|&p| p != u32::MAX)
    }

    /// The normal tokens (those with bytes) as a bitmask over the token table, in the engine
    /// layout; it may be shorter than a mask over [`vocab_size`](Self::vocab_size) (padding ids).
    #[inline]
    pub fn normal_token_mask(&self) -> &[u32] {
        &self.bytes.normal_mask
    }

    /// Every token id that is a token (normal or special, not padding) as a bitmask over the
    /// token table, in the engine layout; it may be shorter than a mask over
    /// [`vocab_size`](Self::vocab_size).
    #[inline]
    pub fn token_mask(&self) -> &[u32] {
        &self.bytes.token_mask
    }

    /// Whether `id` is a token (normal or special): below the table size and not padding.
    #[inline]
    pub fn is_token(&self, id: u32) -> bool {
        crate::util::bitset::is_allowed(&self.bytes.token_mask, id)
    }

    /// The length in bytes of the longest token.
    #[inline]
    pub fn max_token_len(&self) -> usize {
        self.bytes.max_token_len
    }

    /// The heap bytes this vocabulary holds (tables shared with clones are counted in full).
    pub fn memory_usage(&self) -> usize {
        let t = &*self.texts;
        let b = &*self.bytes;
        t.data.capacity()
            + t.offsets.capacity() * 4
            + t.class.capacity() * std::mem::size_of::<TokenClass>()
            + t.special_ids.capacity() * 4
            + t.by_hash.capacity() * 4
            + b.data.capacity()
            + b.offsets.capacity() * 4
            + b.sorted_ids.capacity() * 4
            + b.sorted_lcp.capacity() * 4
            + b.sorted_pos.capacity() * 4
            + b.sorted_data.capacity()
            + b.sorted_offsets.capacity() * 4
            + b.first_byte_start.capacity() * 4
            + b.normal_mask.capacity() * 4
            + b.token_mask.capacity() * 4
            + b.trie.memory_usage()
            + (b.by_length.ids.len() + b.by_length.longer.len()) * 4
            + b.by_length.data.len()
            + b.by_length.data_start.len() * std::mem::size_of::<usize>()
            + self.stop_ids.len() * 4
    }

    /// Checks that `id` is a token (normal or special), for the error message of role `role`.
    fn check_token(&self, id: u32, role: &'static str) -> Result<(), VocabError> {
        match self.texts.class.get(id as usize) {
            Some(TokenClass::Normal | TokenClass::Special) => Ok(()),
            _ => Err(VocabError::NotAToken { role, id, vocab_size: self.vocab_size }),
        }
    }

    /// The special tokens among [`DEFAULT_STOP_TOKENS`].
    fn default_stop_ids(&self) -> Vec<u32> {
        DEFAULT_STOP_TOKENS.iter().filter_map(|name| self.token_id(name)).filter(|&id| self.is_special(id)).collect()
    }
}

/// The length of the common prefix of `a` and `b`.
///
/// ```
/// assert_eq!(maskforge::tokenizer::common_prefix_len(b"abc", b"abd"), 2);
/// ```
#[inline]
pub fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn sorted_unique(mut ids: Vec<u32>) -> Vec<u32> {
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// One token of a tokenizer file (or of a builder), by id.
pub(crate) struct RawToken {
    pub(crate) text: String,
    pub(crate) special: bool,
    /// An added token: wins over a model token with the same string form in [`Vocabulary::token_id`].
    pub(crate) added: bool,
}

/// Builds the string side from tokens by id (`None` = padding).
pub(crate) fn build_text_table(tokens: Vec<Option<RawToken>>) -> Result<TextTable, VocabError> {
    if tokens.iter().all(Option::is_none) {
        return Err(VocabError::EmptyVocabulary);
    }
    if tokens.len() > MAX_VOCAB_SIZE {
        return Err(VocabError::too_large("the number of token ids", tokens.len(), MAX_VOCAB_SIZE));
    }
    let total: usize = tokens.iter().flatten().map(|t| t.text.len()).sum();
    if total > u32::MAX as usize {
        return Err(VocabError::too_large("the total length of the token strings", total, u32::MAX));
    }
    let mut table = TextTable {
        data: String::with_capacity(total),
        offsets: Vec::with_capacity(tokens.len() + 1),
        class: Vec::with_capacity(tokens.len()),
        special_ids: Vec::new(),
        by_hash: Vec::new(),
    };
    table.offsets.push(0);
    let mut added = Vec::new();
    for (id, token) in tokens.into_iter().enumerate() {
        let class = match token {
            None => TokenClass::Padding,
            Some(t) => {
                table.data.push_str(&t.text);
                if t.added {
                    added.push(id as u32);
                }
                if t.special {
                    table.special_ids.push(id as u32);
                    TokenClass::Special
                } else {
                    TokenClass::Normal
                }
            }
        };
        table.class.push(class);
        table.offsets.push(table.data.len() as u32);
    }
    let mut keyed: Vec<(u64, bool, u32)> = (0..table.class.len() as u32)
        .filter(|&id| table.class[id as usize] != TokenClass::Padding)
        .map(|id| (text_hash(table.text(id as usize)), added.binary_search(&id).is_err(), id))
        .collect();
    keyed.sort_unstable();
    table.by_hash = keyed.into_iter().map(|k| k.2).collect();
    Ok(table)
}

/// Builds the byte side for `kind`, decoding the string forms, or taking `given` bytes per id
/// (builder vocabularies). Special tokens and padding ids get no bytes.
pub(crate) fn build_byte_table(
    texts: &TextTable,
    kind: VocabKind,
    given: Option<&[Vec<u8>]>,
) -> Result<ByteTable, VocabError> {
    let n = texts.class.len();
    let mut data = Vec::with_capacity(texts.data.len());
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0u32);
    for id in 0..n {
        if texts.class[id] == TokenClass::Normal {
            match given.and_then(|g| g.get(id)) {
                Some(bytes) => data.extend_from_slice(bytes),
                None => decode::decode_token(kind, texts.text(id), &mut data),
            }
        }
        if data.len() > u32::MAX as usize {
            return Err(VocabError::too_large("the total length of the token bytes", data.len(), u32::MAX));
        }
        offsets.push(data.len() as u32);
    }
    data.shrink_to_fit();
    let bytes_of = |id: u32| &data[offsets[id as usize] as usize..offsets[id as usize + 1] as usize];
    // Sort on the first 8 bytes (big endian, zero padded: an order coarser than the
    // lexicographic one) and compare whole slices only on ties.
    let prefix_key = |bytes: &[u8]| {
        let mut key = [0u8; 8];
        let len = bytes.len().min(8);
        key[..len].copy_from_slice(&bytes[..len]);
        u64::from_be_bytes(key)
    };
    let mut keyed: Vec<(u64, u32)> =
        (0..n as u32).filter(|&id| !bytes_of(id).is_empty()).map(|id| (prefix_key(bytes_of(id)), id)).collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| bytes_of(a.1).cmp(bytes_of(b.1))).then(a.1.cmp(&b.1)));
    let sorted_ids: Vec<u32> = keyed.into_iter().map(|k| k.1).collect();
    let mut sorted_lcp = Vec::with_capacity(sorted_ids.len());
    let mut prev: &[u8] = &[];
    for &id in &sorted_ids {
        let cur = bytes_of(id);
        sorted_lcp.push(common_prefix_len(prev, cur) as u32);
        prev = cur;
    }
    let mut sorted_data = Vec::with_capacity(data.len());
    let mut sorted_offsets = Vec::with_capacity(sorted_ids.len() + 1);
    sorted_offsets.push(0u32);
    let mut first_byte_start = vec![sorted_ids.len() as u32; 257];
    for (pos, &id) in sorted_ids.iter().enumerate().rev() {
        first_byte_start[bytes_of(id)[0] as usize] = pos as u32;
    }
    for b in (0..256).rev() {
        first_byte_start[b] = first_byte_start[b].min(first_byte_start[b + 1]);
    }
    for &id in &sorted_ids {
        sorted_data.extend_from_slice(bytes_of(id));
        sorted_offsets.push(sorted_data.len() as u32);
    }
    let mut sorted_pos = vec![u32::MAX; n];
    for (pos, &id) in sorted_ids.iter().enumerate() {
        sorted_pos[id as usize] = pos as u32;
    }
    let max_token_len = sorted_ids.iter().map(|&id| bytes_of(id).len()).max().unwrap_or(0);
    let by_length = by_length(&sorted_ids, bytes_of, max_token_len);
    let mut normal_mask = vec![0u32; n.div_ceil(32)];
    for &id in &sorted_ids {
        normal_mask[id as usize / 32] |= 1 << (id % 32);
    }
    let mut token_mask = normal_mask.clone();
    for &id in &texts.special_ids {
        token_mask[id as usize / 32] |= 1 << (id % 32);
    }
    let trie =
        TokenTrie::new(&sorted_lcp, |i| &sorted_data[sorted_offsets[i] as usize..sorted_offsets[i + 1] as usize]);
    Ok(ByteTable {
        kind,
        data,
        offsets,
        sorted_ids,
        sorted_lcp,
        sorted_pos,
        sorted_data,
        sorted_offsets,
        first_byte_start,
        normal_mask,
        token_mask,
        max_token_len,
        fingerprint: std::sync::OnceLock::new(),
        trie,
        by_length,
    })
}

/// The normal tokens (`sorted_ids`) by length, longest first and equal lengths in sorted order,
/// and per length `n` up to `max` how many are longer than `n`: a counting sort.
fn by_length<'b>(sorted_ids: &[u32], bytes_of: impl Fn(u32) -> &'b [u8], max: usize) -> ByLength {
    let len_of = |id: u32| bytes_of(id).len();
    let mut of_length = vec![0u32; max + 1];
    for &id in sorted_ids {
        of_length[len_of(id)] += 1;
    }
    let mut longer = vec![0u32; max + 1];
    let mut so_far = 0;
    for n in (0..=max).rev() {
        longer[n] = so_far;
        so_far += of_length[n];
    }
    // The tokens of length `n` go after every longer one.
    let mut next = longer.clone();
    let mut ids = vec![0u32; sorted_ids.len()];
    for &id in sorted_ids {
        let slot = &mut next[len_of(id)];
        ids[*slot as usize] = id;
        *slot += 1;
    }
    let data: Vec<u8> = ids.iter().flat_map(|&id| bytes_of(id).iter().copied()).collect();
    // The tokens longer than `n` come first: their bytes, then those of length `n`.
    let mut data_start = vec![0usize; max + 1];
    let mut so_far = 0;
    for n in (1..=max).rev() {
        data_start[n] = so_far;
        so_far += n * (longer[n - 1] - longer[n]) as usize;
    }
    ByLength {
        ids: ids.into_boxed_slice(),
        longer: longer.into_boxed_slice(),
        data: data.into(),
        data_start: data_start.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + Clone>() {}

    #[test]
    fn vocabulary_is_send_sync_clone() {
        assert_send_sync::<Vocabulary>();
    }

    #[test]
    fn sorted_order_and_lcp() {
        let vocab = VocabularyBuilder::new()
            .tokens([b"b".as_slice(), b"ab", b"", b"abc", b"a", b"ab", b"\xff", b"<s>"])
            .special(7)
            .build()
            .unwrap();
        // Empty and special tokens are left out; equal bytes sort by id.
        assert_eq!(vocab.sorted_token_ids(), &[4, 1, 5, 3, 0, 6]);
        assert_eq!(vocab.sorted_lcp(), &[0, 1, 2, 2, 0, 0]);
        for w in vocab.sorted_token_ids().windows(2) {
            assert!(vocab.token_bytes(w[0]) <= vocab.token_bytes(w[1]));
        }
    }

    #[test]
    fn tokens_longer_than_lists_them_longest_first_in_sorted_order() {
        let vocab = VocabularyBuilder::new()
            .tokens([b"bb".as_slice(), b"abc", b"a", b"", b"ab", b"c", b"abcd", b"<s>", b"b"])
            .special(7)
            .build()
            .unwrap();
        assert_eq!(vocab.tokens_longer_than(0), &[6, 1, 4, 0, 2, 8, 5]);
        assert_eq!(vocab.tokens_longer_than(1), &[6, 1, 4, 0]);
        assert_eq!(vocab.tokens_longer_than(3), &[6]);
        assert!(vocab.tokens_longer_than(4).is_empty());
        assert!(vocab.tokens_longer_than(100).is_empty());
    }

    #[test]
    fn out_of_range_ids_are_empty_not_panics() {
        let mut vocab = VocabularyBuilder::new().tokens(["a"]).build().unwrap();
        vocab.set_vocab_size(3).unwrap();
        for id in [1, 2, 3, u32::MAX] {
            assert_eq!(vocab.token_bytes(id), b"");
            assert!(!vocab.is_special(id));
            assert_eq!(vocab.token_str(id), None);
            assert_eq!(vocab.token_text_lossy(id), "");
        }
        assert!(vocab.is_padding(1) && vocab.is_padding(2) && !vocab.is_padding(3) && !vocab.is_padding(0));
        assert!(matches!(vocab.set_vocab_size(MAX_VOCAB_SIZE + 1), Err(VocabError::TooLarge { .. })));
    }

    #[test]
    fn token_id_prefers_added_tokens() {
        let tokens = vec![
            Some(RawToken { text: "x".into(), special: false, added: false }),
            Some(RawToken { text: "<t>".into(), special: false, added: false }),
            None,
            Some(RawToken { text: "<t>".into(), special: true, added: true }),
        ];
        let table = build_text_table(tokens).unwrap();
        assert_eq!(table.by_hash.len(), 3);
        let bytes = build_byte_table(&table, VocabKind::Raw, None).unwrap();
        let vocab =
            Vocabulary { texts: Arc::new(table), bytes: Arc::new(bytes), stop_ids: Arc::new([]), vocab_size: 4 };
        assert_eq!(vocab.token_id("<t>"), Some(3));
        assert_eq!(vocab.token_id("x"), Some(0));
        assert!(vocab.is_padding(2));
        assert_eq!(vocab.special_token_ids(), &[3]);
    }

    #[test]
    fn empty_vocabulary_is_an_error() {
        assert!(matches!(build_text_table(vec![None, None]), Err(VocabError::EmptyVocabulary)));
        assert!(matches!(VocabularyBuilder::new().build(), Err(VocabError::EmptyVocabulary)));
    }

    /// The tokens of some lengths, read by length, are each token of those lengths with its
    /// own bytes, longest first.
    #[test]
    fn tokens_of_lengths_hold_each_tokens_bytes() {
        let texts = ["a", "bb", "ab", "ccc", "b", "abcd", "dcb", "zz", "y"];
        let vocab = VocabularyBuilder::new().tokens(texts).build().unwrap();
        for lo in 0..6 {
            for hi in lo..6 {
                let got: Vec<(u32, Vec<u8>)> =
                    vocab.tokens_of_lengths(lo..=hi).map(|(id, bytes)| (id, bytes.to_vec())).collect();
                let mut expected: Vec<(u32, Vec<u8>)> = (0..texts.len() as u32)
                    .filter(|&id| (lo..=hi).contains(&vocab.token_bytes(id).len()))
                    .map(|id| (id, vocab.token_bytes(id).to_vec()))
                    .collect();
                expected.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.1.cmp(&b.1)));
                assert_eq!(got, expected, "lengths {lo}..={hi}");
            }
        }
    }

    #[test]
    fn memory_usage_counts_the_tables() {
        let vocab = VocabularyBuilder::new().tokens((0..1000).map(|i| format!("tok{i}"))).build().unwrap();
        assert!(vocab.memory_usage() > 1000 * (6 + 6 + 4 * 4));
    }
}
