//! `maskforge check`: tokenizes a text and accepts it token by token, streaming.
//!
//! The text is read and tokenized in chunks of about a megabyte, so memory stays flat in the
//! input size (a 50 MB file used to be tokenized at once, gigabytes of encoder state). The last
//! [`TAIL`] bytes of a chunk are not accepted yet: their tokens are re-tokenized with the next
//! chunk, so a chunk boundary does not cut a word in two (the tokenizer's pre-tokenizer splits
//! words; a token never spans more than one). Only a run of more than [`TAIL`] bytes with no
//! word boundary can tokenize differently than in one piece, and then only into other tokens
//! spelling the same bytes, which the byte-level grammar judges the same. The check stops at the
//! first rejected token.
//!
//! Special-token texts in the input (`<|channel|>`) are the special tokens, as in a model's
//! output, unless `--special-tokens-as-text` asks to spell them with ordinary tokens.
//!
//! A token the matcher cannot take within its bounds (`--max-step-items`, `--max-state-bytes`:
//! an ambiguous grammar, nesting too deep) is an error, exit code 2, not a rejection: the text
//! was not judged.

use std::io::Read;
use std::process::ExitCode;

use aho_corasick::{AhoCorasick, MatchKind};
use maskforge::{GrammarMatcher, MatcherConfig, Vocabulary};

use crate::output::{outln, Failure};
use crate::source::Loaded;

/// Bytes read per chunk.
const CHUNK: usize = 1 << 20;
/// Bytes at the end of a chunk whose tokens wait for the next chunk.
const TAIL: usize = 1024;
/// Bytes of accepted text quoted before a rejected token.
const CONTEXT: usize = 80;

/// How the input's text becomes token ids.
pub struct Encoding<'a> {
    loaded: &'a Loaded,
    /// The special tokens' texts (leftmost-longest), when they stand for the special tokens.
    specials: Option<(AhoCorasick, Vec<u32>)>,
}

impl<'a> Encoding<'a> {
    pub fn new(loaded: &'a Loaded, special_tokens_as_text: bool) -> Result<Self, String> {
        let vocab = loaded.grammar.vocabulary();
        let specials = if special_tokens_as_text { None } else { special_texts(vocab)? };
        Ok(Encoding { loaded, specials })
    }

    /// The ids of `text` with the number of input bytes each stands for (a special token has no
    /// bytes in the vocabulary but stands for its text).
    pub fn encode(&self, text: &str) -> Result<Vec<(u32, usize)>, String> {
        let vocab = self.loaded.grammar.vocabulary();
        let mut out = Vec::new();
        let plain = |piece: &str, out: &mut Vec<(u32, usize)>| -> Result<(), String> {
            if !piece.is_empty() {
                out.extend(self.loaded.encode(piece)?.into_iter().map(|id| (id, vocab.token_bytes(id).len())));
            }
            Ok(())
        };
        let Some((matcher, ids)) = &self.specials else {
            plain(text, &mut out)?;
            return Ok(out);
        };
        let mut at = 0;
        for m in matcher.find_iter(text) {
            plain(&text[at..m.start()], &mut out)?;
            out.push((ids[m.pattern().as_usize()], m.len()));
            at = m.end();
        }
        plain(&text[at..], &mut out)?;
        Ok(out)
    }
}

/// A searcher for the texts of the vocabulary's special tokens, or `None` if it has none.
fn special_texts(vocab: &Vocabulary) -> Result<Option<(AhoCorasick, Vec<u32>)>, String> {
    let (mut texts, mut ids) = (Vec::new(), Vec::new());
    for &id in vocab.special_token_ids() {
        if let Some(text) = vocab.token_str(id).filter(|t| !t.is_empty()) {
            texts.push(text.to_string());
            ids.push(id);
        }
    }
    if texts.is_empty() {
        return Ok(None);
    }
    let searcher = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(&texts)
        .map_err(|e| format!("cannot search the special tokens' texts: {e}"))?;
    Ok(Some((searcher, ids)))
}

/// Checks the text of `input` (`what` names it in messages) with a matcher of `config`. Exit 0
/// when accepted and complete, 1 when rejected or incomplete.
pub fn check(
    loaded: &Loaded,
    mut input: impl Read,
    what: &str,
    special_tokens_as_text: bool,
    config: MatcherConfig,
) -> Result<ExitCode, Failure> {
    let encoding = Encoding::new(loaded, special_tokens_as_text)?;
    let vocab = loaded.grammar.vocabulary();
    // Nothing is rolled back: no history is kept, so memory does not grow with the input.
    let mut matcher = GrammarMatcher::with_config(&loaded.grammar, config.max_rollback_tokens(0));
    let (mut buf, mut done_bytes, mut done_tokens, mut eof) = (Vec::new(), 0usize, 0usize, false);
    let mut recent = Vec::new();
    loop {
        while !eof && buf.len() < CHUNK + TAIL {
            let start = buf.len();
            buf.resize(start + CHUNK, 0);
            let n = input.read(&mut buf[start..]).map_err(|e| format!("cannot read {what}: {e}"))?;
            buf.truncate(start + n);
            eof = n == 0;
        }
        let text = utf8_prefix(&buf, done_bytes, what)?;
        let ready = if eof { text.len() } else { text.len().saturating_sub(TAIL) };
        let mut consumed = 0;
        for (id, len) in encoding.encode(text)? {
            if !eof && consumed + len > ready {
                break;
            }
            let accepted = matcher.try_accept_token(id).map_err(|e| {
                let at = format!("token {done_tokens} (id {id}) at byte {}", done_bytes + consumed);
                crate::source::step_failure(e, &at)
            })?;
            if !accepted {
                let before = String::from_utf8_lossy(&recent);
                outln!(
                    "rejected at token {done_tokens} (id {id}, {:?}) at byte {}, after {before:?}",
                    vocab.token_text_lossy(id),
                    done_bytes + consumed
                );
                return Ok(ExitCode::from(1));
            }
            remember(&mut recent, &buf[consumed..consumed + len]);
            consumed += len;
            done_tokens += 1;
        }
        done_bytes += consumed;
        buf.drain(..consumed);
        if eof {
            if !buf.is_empty() {
                return Err(format!("{what} is not UTF-8 at byte {done_bytes}").into());
            }
            break;
        }
    }
    if matcher.is_terminated() || matcher.can_terminate() {
        outln!("accepted: {done_tokens} tokens, can terminate");
        Ok(ExitCode::SUCCESS)
    } else {
        outln!("incomplete: {done_tokens} tokens accepted, but the grammar cannot end here");
        Ok(ExitCode::from(1))
    }
}

/// The longest prefix of `buf` that is UTF-8 (an incomplete character at the end waits for the
/// next read); an invalid byte is an error naming its offset.
fn utf8_prefix<'b>(buf: &'b [u8], offset: usize, what: &str) -> Result<&'b str, String> {
    match std::str::from_utf8(buf) {
        Ok(text) => Ok(text),
        Err(e) if e.error_len().is_none() => Ok(std::str::from_utf8(&buf[..e.valid_up_to()]).expect("valid prefix")),
        Err(e) => Err(format!("{what} is not UTF-8 at byte {}", offset + e.valid_up_to())),
    }
}

/// Keeps the last [`CONTEXT`] bytes of accepted text, for the rejection message.
fn remember(recent: &mut Vec<u8>, bytes: &[u8]) {
    recent.extend_from_slice(bytes);
    if recent.len() > 2 * CONTEXT {
        recent.drain(..recent.len() - CONTEXT);
    }
}
