//! Jump-forward decoding: the text the grammar forces next, as bytes, as a string, and as the
//! tokens an engine appends without sampling.
//!
//! Appending the forced text token by token from its own encoding would often give a token
//! sequence the tokenizer never produces: the model wrote `{` and the grammar forces
//! `"name": `, but the tokenizer writes `{"` as one token. Such sequences are out of the model's
//! training distribution. [`GrammarMatcher::find_jump_forward_tokens`] therefore re-tokenizes
//! the forced text *together with* the last accepted tokens and says how many of those to roll
//! back, so that the tokens after the jump are the tokenizer's own encoding of the text.

use super::{GrammarMatcher, MatcherError, Step};
use crate::tokenizer::TextEncoder;

/// At most this many accepted tokens are re-tokenized with the forced text. A tokenizer's
/// merges never cross a pre-tokenizer boundary (a word, a run of punctuation or spaces), so
/// the window only has to reach back over the last few tokens.
const RETOKENIZE_WINDOW: usize = 8;

/// What to append after a jump forward: roll back [`rollback`](Self::rollback) accepted tokens,
/// then accept and append [`tokens`](Self::tokens) (in this order) without sampling.
///
/// The bytes of the rolled-back tokens followed by [`forced`](Self::forced) are exactly the
/// bytes of `tokens`, and `tokens` is the encoding of those bytes by
/// [`TextEncoder::encode_for_matching`]. The last token is the tokenizer's choice for the text
/// up to the branch point; text generated after it may tokenize differently across that
/// boundary, as with any prefix given to a model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JumpForwardTokens {
    /// How many of the last accepted tokens to roll back first.
    pub rollback: usize,
    /// How many of the last accepted tokens were re-encoded with the forced text (at least
    /// `rollback`): the last `retokenized - rollback` of them came out the same and are kept.
    pub retokenized: usize,
    /// The token ids to accept and append.
    pub tokens: Vec<u32>,
    /// The forced bytes ([`GrammarMatcher::find_jump_forward_bytes`]).
    pub forced: Vec<u8>,
}

impl JumpForwardTokens {
    /// Whether there is nothing to append (the grammar forces nothing here).
    pub fn is_empty(&self) -> bool {
        self.forced.is_empty()
    }
}

impl GrammarMatcher {
    /// The bytes every continuation must start with (jump-forward decoding), cut at the last
    /// complete UTF-8 character. Empty when the grammar may end here or branches at once. The
    /// walk is bounded by [`super::MatcherConfig::max_step_items`]: where the budget runs out
    /// the forced text is cut (every prefix of it is forced too).
    pub fn find_jump_forward_bytes(&mut self) -> Vec<u8> {
        let mut forced = Vec::new();
        if self.terminated {
            return forced;
        }
        self.begin_step();
        const MAX_FORCED: usize = 1 << 16;
        while forced.len() < MAX_FORCED && !self.parser.is_accepting() {
            let Some(b) = single_byte(&self.parser.next_bytes()) else { break };
            if !self.parser.advance_byte(b) {
                break;
            }
            forced.push(b);
        }
        self.parser.pop_bytes(forced.len());
        let valid = match std::str::from_utf8(&forced) {
            Ok(_) => forced.len(),
            Err(e) => e.valid_up_to(),
        };
        forced.truncate(valid);
        forced
    }

    /// [`GrammarMatcher::find_jump_forward_bytes`] as a string.
    pub fn find_jump_forward_string(&mut self) -> String {
        String::from_utf8(self.find_jump_forward_bytes()).expect("cut at a character boundary")
    }

    /// The tokens to append for the forced text, re-tokenized with up to the last 8 accepted
    /// tokens (see [`JumpForwardTokens`]). The matcher is unchanged: the caller applies the
    /// result with [`rollback`](Self::rollback) and [`accept_token`](Self::accept_token)
    /// (which accept every returned token), and appends the same to its sequence.
    ///
    /// Only tokens read by their text take part (not special tokens, tokens named by id or
    /// strings from [`accept_string`](Self::accept_string)), and never more than
    /// [`super::MatcherConfig::max_rollback_tokens`].
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions};
    /// let (vocab, encoder) = maskforge::load_tokenizer("llama3")?; // a test fixture
    /// let compiler = GrammarCompiler::new(vocab.clone(), CompilerConfig::default());
    /// let schema = r#"{"type": "object", "properties": {"temperature": {"type": "number"}},
    ///                  "required": ["temperature"], "additionalProperties": false}"#;
    /// let options = JsonSchemaOptions { any_whitespace: false, ..Default::default() };
    /// let grammar = compiler.compile_json_schema_str(schema, &options)?;
    /// let mut matcher = GrammarMatcher::new(&grammar);
    /// assert!(matcher.accept_token(vocab.token_id("{").unwrap()));
    ///
    /// let jump = matcher.find_jump_forward_tokens(&encoder)?;
    /// assert_eq!(jump.forced, br#""temperature": "#);
    /// // Llama 3 writes `{"` as one token: `{` is rolled back and respelled.
    /// assert_eq!(jump.rollback, 1);
    /// assert_eq!(vocab.concat_bytes(&jump.tokens), br#"{"temperature": "#);
    /// matcher.rollback(jump.rollback)?;
    /// assert_eq!(matcher.accept_tokens(&jump.tokens), jump.tokens.len());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`MatcherError::Retokenize`] when `encoder` cannot spell the text byte for byte, or is
    /// not the encoder of this matcher's vocabulary.
    pub fn find_jump_forward_tokens(&mut self, encoder: &TextEncoder) -> Result<JumpForwardTokens, MatcherError> {
        let forced = self.find_jump_forward_bytes();
        if forced.is_empty() {
            return Ok(JumpForwardTokens::default());
        }
        let window = self.retokenizable_tail();
        // The window must start at a character boundary for the text to be a string: a
        // byte-level token may end inside a character. Take the longest window that does.
        let vocab = self.grammar.vocabulary();
        let (recent, text) = (0..=window.len())
            .rev()
            .find_map(|skip| {
                let recent = &window[window.len() - skip..];
                let mut bytes = vocab.concat_bytes(recent);
                bytes.extend_from_slice(&forced);
                String::from_utf8(bytes).ok().map(|text| (recent, text))
            })
            .expect("the forced bytes alone are UTF-8");
        let new =
            encoder.encode_for_matching(&text).map_err(|e| MatcherError::Retokenize { message: e.to_string() })?;
        if vocab.concat_bytes(&new) != text.as_bytes() {
            return Err(MatcherError::Retokenize {
                message: "the encoder's token ids spell other bytes in the matcher's vocabulary: \
                          it belongs to another tokenizer"
                    .into(),
            });
        }
        let kept = recent.iter().zip(&new).take_while(|(a, b)| a == b).count();
        Ok(JumpForwardTokens {
            rollback: recent.len() - kept,
            retokenized: recent.len(),
            tokens: new[kept..].to_vec(),
            forced,
        })
    }

    /// The ids of the last accepted tokens that may be re-tokenized: read by their text, at
    /// most [`RETOKENIZE_WINDOW`], and within the rollback limit; oldest first.
    fn retokenizable_tail(&self) -> Vec<u32> {
        let limit = RETOKENIZE_WINDOW.min(self.config.max_rollback_tokens.unwrap_or(usize::MAX));
        let mut ids: Vec<u32> = self
            .steps
            .iter()
            .rev()
            .take(limit)
            .map_while(|step| match *step {
                Step::Text { id, .. } => Some(id.as_u32()),
                Step::Bytes(_) | Step::Stop(_) => None,
            })
            .collect();
        ids.reverse();
        ids
    }
}

/// The only byte set in a 256-bit byte set, if exactly one is.
fn single_byte(set: &[u64; 4]) -> Option<u8> {
    if set.iter().map(|w| w.count_ones()).sum::<u32>() != 1 {
        return None;
    }
    let (word, bits) = set.iter().enumerate().find(|(_, w)| **w != 0)?;
    Some(word as u8 * 64 + bits.trailing_zeros() as u8)
}
