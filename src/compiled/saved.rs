//! Saved grammars: [`CompiledGrammar::serialize`] and [`CompiledGrammar::deserialize`].
//!
//! A serving engine restarts far more often than its grammars change; a saved grammar skips
//! the front-end and the automaton construction, and brings back the token-mask cache entries
//! built so far.
//!
//! # Format (version 2: rules carry their attributes, the grammar its parser)
//!
//! A 36-byte header, all integers little-endian, then the payload:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `MASKFRG\0` |
//! | 8 | 4 | format version ([`FORMAT_VERSION`]) |
//! | 12 | 8 | vocabulary fingerprint ([`Vocabulary::fingerprint`]) |
//! | 20 | 8 | payload length in bytes |
//! | 28 | 8 | XXH3-64 of bytes 0..28 and the payload |
//! | 36 | … | payload |
//!
//! The payload is the [postcard](https://docs.rs/postcard) encoding of, in order: the grammar
//! IR (rules as post-order node lists, see `grammar::saved`, itself postcard-encoded and
//! nested as a byte string: loading keeps it as bytes and decodes it on the first call of
//! [`CompiledGrammar::grammar`], as matching never needs it), the frozen [`GrammarFsm`] (its
//! CSR tables as they are in memory), the built token-mask cache entries with their memo slots,
//! the JSON Schema coverage report if any, and the parser the grammar runs on ([`Parser`]; a
//! saved `Pda` is checked to be servable, version 2). What is cheap to derive is not stored and is
//! recomputed on load exactly as a compile does: the follow sets and certain contexts of the
//! mask cache, and the structural hashes when a mask pool is attached.
//!
//! Reading checks, in order: the length of the header, the magic, the version, the payload
//! length, the checksum (which covers the header's first 28 bytes too, so a damaged
//! fingerprint or length reads as corruption), the vocabulary, then the structure of what
//! matching uses (every index the parser and the cache follow is in range, see
//! `GrammarFsm::check_structure` and `MaskEntry::check_for`). Each failure is a [`LoadError`];
//! nothing panics, and allocations are bounded by the input (postcard reads lengths from the
//! input and fails when it runs out). The IR is checked when it is decoded (rule references,
//! arities, the depth limit of the IR).
//!
//! Bump [`FORMAT_VERSION`] whenever the payload's types or their meaning change.

use std::io::Write;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use super::{CompiledGrammar, Parser};
use crate::cache::{MaskEntry, MaskPool};
use crate::frontend::json_schema::JsonSchemaReport;
use crate::fsm::GrammarFsm;
use crate::grammar::saved::SavedGrammar;
use crate::grammar::{Expr, Grammar, GrammarBuilder};
use crate::pda::check_servable;
use crate::tokenizer::Vocabulary;

/// The first bytes of every saved grammar.
pub const MAGIC: [u8; 8] = *b"MASKFRG\0";
/// The version of the format written by this build; reading accepts exactly this version.
pub const FORMAT_VERSION: u32 = 2;
/// Bytes before the payload.
pub const HEADER_LEN: usize = 36;

/// Why a saved grammar could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The input ends before the header or the payload does.
    #[error("saved grammar truncated: {len} bytes, {needed} expected")]
    Truncated {
        /// The input's length.
        len: usize,
        /// The length the header announces (or the header's own length).
        needed: usize,
    },
    /// The input does not start with the magic bytes.
    #[error("not a saved maskforge grammar (bad magic bytes)")]
    NotSaved,
    /// The input was written in another format version.
    #[error("saved grammar format version {found}, this build reads version {expected}")]
    Version {
        /// The version in the input.
        found: u32,
        /// [`FORMAT_VERSION`].
        expected: u32,
    },
    /// Bytes follow the payload.
    #[error("saved grammar has {extra} bytes after its payload")]
    TrailingBytes {
        /// How many.
        extra: usize,
    },
    /// The payload's checksum does not match: the input is corrupted.
    #[error("saved grammar corrupted: payload checksum {found:#018x}, header says {expected:#018x}")]
    Checksum {
        /// The checksum in the header.
        expected: u64,
        /// The checksum of the payload read.
        found: u64,
    },
    /// The grammar was compiled for another vocabulary.
    #[error("saved grammar was compiled for vocabulary {saved:#018x}, this one is {current:#018x}")]
    Vocabulary {
        /// The fingerprint in the input.
        saved: u64,
        /// [`Vocabulary::fingerprint`] of the vocabulary given.
        current: u64,
    },
    /// The payload does not decode, or decodes to inconsistent structures.
    #[error("saved grammar malformed: {0}")]
    Malformed(String),
}

/// The payload as written: borrowed from the grammar.
#[derive(Serialize)]
struct PayloadRef<'a> {
    /// The postcard encoding of a `SavedGrammar`, nested as bytes so that loading can keep it
    /// undecoded.
    grammar: &'a [u8],
    fsm: &'a GrammarFsm,
    entries: Vec<(u32, &'a MaskEntry)>,
    json_schema_report: Option<&'a JsonSchemaReport>,
    parser: Parser,
}

/// The payload as read (the same fields in the same order as [`PayloadRef`]).
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct Payload<'a> {
    grammar: &'a [u8],
    fsm: GrammarFsm,
    entries: Vec<(u32, MaskEntry)>,
    json_schema_report: Option<JsonSchemaReport>,
    parser: Parser,
}

impl CompiledGrammar {
    /// The grammar in the saved format (see [`CompiledGrammar::deserialize`]): its IR, its
    /// automata, the token-mask cache entries built so far and the vocabulary's fingerprint.
    ///
    /// # Example
    /// ```
    /// use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler, VocabularyBuilder};
    /// let vocab = VocabularyBuilder::new().tokens(["a", "b", "</s>"]).special(2).stop_tokens([2]).build()?;
    /// let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    /// let bytes = compiler.compile_grammar(r#"root ::= "a"+ "b""#)?.serialize();
    /// let loaded = CompiledGrammar::deserialize(&bytes, &vocab)?;
    /// assert_eq!(loaded.grammar().to_string(), "root ::= \"a\"+ \"b\"\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn serialize(&self) -> Vec<u8> {
        let encoded;
        let grammar = match &self.inner.saved_ir {
            Some(ir) => &ir[..],
            None => {
                encoded = postcard::to_stdvec(&SavedGrammar::new(self.grammar())).expect("serializing to memory");
                &encoded[..]
            }
        };
        let payload = PayloadRef {
            grammar,
            fsm: self.fsm(),
            entries: self.mask_cache().built_entries().map(|(slot, e)| (slot as u32, &**e)).collect(),
            json_schema_report: self.json_schema_report(),
            parser: self.parser(),
        };
        // Writing to a `Vec` fails only on allocation failure, which aborts anyway.
        let mut out = postcard::to_extend(&payload, vec![0u8; HEADER_LEN]).expect("serializing to memory");
        write_header(&mut out, self.vocabulary().fingerprint());
        out
    }

    /// Writes [`CompiledGrammar::serialize`]'s bytes to `out`.
    ///
    /// # Errors
    /// The writer's.
    pub fn write_to(&self, mut out: impl Write) -> std::io::Result<()> {
        out.write_all(&self.serialize())
    }

    /// Reads a grammar saved by [`CompiledGrammar::serialize`] for `vocab` (the vocabulary it
    /// was compiled for: same tokens, kind and stop tokens). Masks of the result are those of
    /// the saved grammar, and the cache entries it had built are there.
    ///
    /// # Errors
    /// A [`LoadError`] for an input that is truncated, corrupted, of another format version,
    /// for another vocabulary, or structurally invalid.
    pub fn deserialize(bytes: &[u8], vocab: &Vocabulary) -> Result<CompiledGrammar, LoadError> {
        Self::deserialize_with_pool(bytes, vocab, None)
    }

    /// [`CompiledGrammar::deserialize`] sharing new cache entries through `pool` (a compiler's).
    pub(crate) fn deserialize_with_pool(
        bytes: &[u8],
        vocab: &Vocabulary,
        pool: Option<Arc<MaskPool>>,
    ) -> Result<CompiledGrammar, LoadError> {
        let payload = checked_payload(bytes, vocab)?;
        let Payload { grammar, fsm, entries, json_schema_report, parser } =
            postcard::from_bytes(payload).map_err(|e| LoadError::Malformed(format!("payload does not decode: {e}")))?;
        fsm.check_structure().map_err(|e| LoadError::Malformed(format!("automaton: {e}")))?;
        // The PDA's closure terminates only on the grammars it serves: a crafted file must not
        // make a matcher loop.
        if parser == Parser::Pda {
            check_servable(&fsm).map_err(|e| LoadError::Malformed(e.to_string()))?;
        }
        let mut compiled = CompiledGrammar::assemble(Some(grammar.into()), fsm, vocab.clone(), pool);
        for (slot, entry) in entries {
            entry.check_for(vocab).map_err(LoadError::Malformed)?;
            compiled.mask_cache().restore(slot as usize, entry).map_err(LoadError::Malformed)?;
        }
        if let Some(report) = json_schema_report {
            compiled = compiled.with_json_schema_report(Arc::new(report));
        }
        Ok(compiled.with_parser(parser))
    }
}

/// The grammar IR of a saved grammar from its encoding, or `root ::= ""` when it does not
/// decode (see [`CompiledGrammar::grammar`]).
pub(super) fn decode_ir(ir: &[u8]) -> Grammar {
    postcard::from_bytes::<SavedGrammar>(ir).ok().and_then(|g| g.into_grammar().ok()).unwrap_or_else(|| {
        let mut b = GrammarBuilder::new();
        let root = b.rule("root");
        b.define(root, Expr::Empty, None).and_then(|()| b.build("root")).expect("`root ::= \"\"` is well formed")
    })
}

/// Fills the header of `out`, whose first [`HEADER_LEN`] bytes are reserved for it and whose
/// rest is the payload.
fn write_header(out: &mut [u8], vocab_fingerprint: u64) {
    let payload_len = (out.len() - HEADER_LEN) as u64;
    out[0..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out[12..20].copy_from_slice(&vocab_fingerprint.to_le_bytes());
    out[20..28].copy_from_slice(&payload_len.to_le_bytes());
    let sum = checksum(&out[..28], &out[HEADER_LEN..]);
    out[28..36].copy_from_slice(&sum.to_le_bytes());
}

/// The payload of `bytes` once the header checks pass.
fn checked_payload<'a>(bytes: &'a [u8], vocab: &Vocabulary) -> Result<&'a [u8], LoadError> {
    if bytes.len() < HEADER_LEN {
        // A prefix of the magic is a truncated saved grammar; anything else is not one.
        let prefix = bytes.len().min(MAGIC.len());
        if bytes[..prefix] != MAGIC[..prefix] {
            return Err(LoadError::NotSaved);
        }
        return Err(LoadError::Truncated { len: bytes.len(), needed: HEADER_LEN });
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    if bytes[..8] != MAGIC {
        return Err(LoadError::NotSaved);
    }
    let version = u32_at(8);
    if version != FORMAT_VERSION {
        return Err(LoadError::Version { found: version, expected: FORMAT_VERSION });
    }
    let payload = &bytes[HEADER_LEN..];
    let announced = usize::try_from(u64_at(20)).unwrap_or(usize::MAX);
    if payload.len() < announced {
        return Err(LoadError::Truncated { len: bytes.len(), needed: HEADER_LEN.saturating_add(announced) });
    }
    if payload.len() > announced {
        return Err(LoadError::TrailingBytes { extra: payload.len() - announced });
    }
    let (expected, found) = (u64_at(28), checksum(&bytes[..28], payload));
    if expected != found {
        return Err(LoadError::Checksum { expected, found });
    }
    let (saved, current) = (u64_at(12), vocab.fingerprint());
    if saved != current {
        return Err(LoadError::Vocabulary { saved, current });
    }
    Ok(payload)
}

/// The checksum of a saved grammar: XXH3-64 over the header before it and the payload, so
/// that a damaged fingerprint or length is reported as corruption too.
fn checksum(header: &[u8], payload: &[u8]) -> u64 {
    let mut h = Xxh3::new();
    h.update(header);
    h.update(payload);
    h.digest()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::StateId;
    use crate::{CompilerConfig, GrammarCompiler, GrammarMatcher, VocabularyBuilder};

    /// A saved grammar whose payload `edit` changed, framed and signed as a valid file.
    fn crafted(edit: impl FnOnce(&mut Payload)) -> (Vocabulary, Result<CompiledGrammar, LoadError>) {
        let vocab =
            VocabularyBuilder::new().tokens(["a", "b", "ab", "</s>"]).special(3).stop_tokens([3]).build().unwrap();
        let g = GrammarCompiler::new(vocab.clone(), CompilerConfig::default())
            .compile_grammar(r#"root ::= x "b"  x ::= "a"+"#)
            .unwrap();
        GrammarMatcher::new(&g).fill_next_token_bitmask(&mut [0u32; 1]);
        let bytes = g.serialize();
        let mut payload: Payload = postcard::from_bytes(&bytes[HEADER_LEN..]).unwrap();
        edit(&mut payload);
        let mut out = postcard::to_extend(&payload, vec![0u8; HEADER_LEN]).unwrap();
        write_header(&mut out, vocab.fingerprint());
        let loaded = CompiledGrammar::deserialize(&out, &vocab);
        (vocab, loaded)
    }

    fn malformed(edit: impl FnOnce(&mut Payload)) -> String {
        match crafted(edit).1 {
            Err(LoadError::Malformed(why)) => why,
            other => panic!("expected a malformed payload: {other:?}"),
        }
    }

    #[test]
    fn an_unchanged_payload_loads() {
        assert!(crafted(|_| {}).1.is_ok());
    }

    #[test]
    fn an_ir_that_does_not_decode_reads_as_an_empty_root() {
        let (_, loaded) = crafted(|p| p.grammar = &[0xFF, 0xFF]);
        assert_eq!(loaded.unwrap().grammar().to_string(), "root ::= \"\"\n");
    }

    #[test]
    fn automaton_indices_out_of_range_are_malformed() {
        let why = malformed(|p| p.fsm.byte_edges[0].target = StateId::from_u32(1 << 20));
        assert!(why.starts_with("automaton: state 0: a byte edge"), "{why}");
        let why = malformed(|p| {
            p.fsm.byte_offsets.pop();
        });
        assert!(why.contains("byte edge offsets"), "{why}");
        let why = malformed(|p| p.fsm.rules[0].start = StateId::from_u32(u32::MAX));
        assert!(why.contains("rule 0 starts at state"), "{why}");
        let why = malformed(|p| p.fsm.root = crate::fsm::FsmRuleId::from_u32(9));
        assert_eq!(why, "automaton: root rule 9 out of range (2 rules)");
    }

    #[test]
    fn cache_entries_that_do_not_fit_are_malformed() {
        let why = malformed(|p| p.entries[0].0 = u32::MAX);
        assert_eq!(why, format!("cache entry slot {} out of range", u32::MAX));
        let why = malformed(|p| {
            let first = p.entries[0].clone();
            p.entries.push(first);
        });
        assert!(why.ends_with("given twice"), "{why}");
        let why = malformed(|p| p.entries[0].1.uncertain = vec![7].into());
        assert!(why.contains("uncertain tokens are out of range"), "{why}");
        let why = malformed(|p| p.entries[0].1.accepted = crate::cache::AdaptiveTokenMask::Bitset(vec![0; 2].into()));
        assert!(why.contains("do not fit a vocabulary of 4 ids"), "{why}");
    }
}
