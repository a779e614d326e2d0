//! The special-token policy: grammar text that spells a special token's text means that token.
//!
//! A special token (gpt-oss's `<|channel|>`, id 200005) has no text: the model emits it as one
//! id. A grammar written as text (`"<|channel|>commentary"`) must therefore match the token,
//! not the ordinary tokens `<`, `|`, `channel`, ... that spell it. When compiling for a
//! vocabulary, this pass rewrites the grammar:
//!
//! * a literal is split at every occurrence of a special token's text (longest text first
//!   at each position), and each occurrence becomes `Token(id)`;
//! * a `TagDispatch` trigger equal to a special token's text becomes a token trigger; an
//!   exclude equal to one is dropped (special tokens are never free text); a stop string
//!   equal to one becomes "free text, then that token" (the dispatch with `stop_eos` followed
//!   by `Token(id)`, as an alternative to the dispatch with the other stop strings);
//! * a trigger, exclude or stop string that contains a special token's text *and more* is an
//!   error: the automaton cannot watch for a mix of text and token (split it: a token trigger,
//!   and the rest of the text at the start of the body).
//!
//! With [`crate::CompilerConfig::allow_special_token_text`], the text spelled by ordinary
//! tokens is accepted too (each occurrence becomes `Token(id) | "text"`, and text triggers
//! and stop strings are kept next to the token ones). The default is not to: a model that
//! spells `<|call|>` with ordinary tokens has not called anything.

use crate::grammar::{Expr, Grammar, GrammarError, Rule, TagDispatch, TokenSet, Trigger};
use crate::tokenizer::Vocabulary;
use crate::util::byteset::ByteSet;

/// The special tokens' texts, indexed by first byte, longest first.
#[derive(Debug)]
pub(super) struct SpecialTexts {
    by_first: Vec<Vec<(Vec<u8>, u32)>>,
    /// The bytes that start some text (the non-empty lists of `by_first`).
    first_bytes: ByteSet,
}

impl SpecialTexts {
    /// The texts of `vocab`'s special tokens (the first id wins for a repeated text).
    pub(super) fn new(vocab: &Vocabulary) -> Self {
        let mut by_first: Vec<Vec<(Vec<u8>, u32)>> = vec![Vec::new(); 256];
        for &id in vocab.special_token_ids() {
            let Some(text) = vocab.token_str(id).filter(|t| !t.is_empty()) else { continue };
            let list = &mut by_first[text.as_bytes()[0] as usize];
            if !list.iter().any(|(t, _)| t == text.as_bytes()) {
                list.push((text.as_bytes().to_vec(), id));
            }
        }
        let mut first_bytes = ByteSet::EMPTY;
        for (b, list) in by_first.iter_mut().enumerate() {
            list.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
            if !list.is_empty() {
                first_bytes.insert(b as u8);
            }
        }
        SpecialTexts { by_first, first_bytes }
    }

    /// The special token whose text starts `bytes` (the longest).
    fn at(&self, bytes: &[u8]) -> Option<(usize, u32)> {
        let first = *bytes.first()?;
        self.by_first[first as usize].iter().find(|(t, _)| bytes.starts_with(t)).map(|(t, id)| (t.len(), *id))
    }

    /// The special token whose text is exactly `bytes`.
    fn exactly(&self, bytes: &[u8]) -> Option<u32> {
        self.at(bytes).filter(|&(len, _)| len == bytes.len()).map(|(_, id)| id)
    }

    /// Whether `bytes` contains some special token's text.
    fn occurs_in(&self, bytes: &[u8]) -> bool {
        (0..bytes.len()).any(|i| self.at(&bytes[i..]).is_some())
    }
}

/// Applies the policy to every rule of `grammar`; returns it unchanged when no literal spells a
/// special token.
///
/// # Errors
/// [`GrammarError::InvalidTagDispatch`] for a pattern mixing a special token's text with other
/// text.
pub(super) fn apply(grammar: Grammar, texts: &SpecialTexts, allow_text: bool) -> Result<Grammar, GrammarError> {
    // A literal that contains a special token's text contains its first byte. Special texts
    // start with `<` (llama3, qwen3, gpt-oss, llama2), which JSON Schema grammars rarely hold:
    // the grammar's summary of its literal bytes (collected by the passes' walk) then settles
    // it without walking the rules, which was mostly cache misses on a cold tree.
    if !grammar.literal_bytes().intersects(&texts.first_bytes) {
        return Ok(grammar);
    }
    let mut rewritten: Vec<Option<Expr>> = Vec::with_capacity(grammar.rules().len());
    for rule in grammar.rules() {
        rewritten.push(rewrite(&rule.body, texts, allow_text, &rule.name)?);
    }
    // Most grammars spell no special token: keep them as they are, without copying.
    if rewritten.iter().all(Option::is_none) {
        return Ok(grammar);
    }
    let rules: Vec<Rule> = grammar
        .rules()
        .iter()
        .zip(rewritten)
        .map(|(rule, body)| Rule {
            name: rule.name.clone(),
            body: body.unwrap_or_else(|| rule.body.clone()),
            lookahead: rule.lookahead.clone(),
            attrs: rule.attrs.clone(),
        })
        .collect();
    Ok(Grammar::from_parts(rules, grammar.root()))
}

/// The rewritten `e`, or `None` when nothing changes.
fn rewrite(e: &Expr, texts: &SpecialTexts, allow_text: bool, rule: &str) -> Result<Option<Expr>, GrammarError> {
    Ok(match e {
        Expr::Bytes(b) => split_literal(b, texts, allow_text),
        Expr::Seq(v) | Expr::Choice(v) => {
            let mut out: Option<Vec<Expr>> = None;
            for (i, x) in v.iter().enumerate() {
                if let Some(y) = rewrite(x, texts, allow_text, rule)? {
                    out.get_or_insert_with(|| v.clone())[i] = y;
                }
            }
            out.map(|items| if matches!(e, Expr::Seq(_)) { Expr::Seq(items) } else { Expr::Choice(items) })
        }
        Expr::Repeat(r) => rewrite(&r.expr, texts, allow_text, rule)?.map(|inner| Expr::repeat(inner, r.min, r.max)),
        Expr::TagDispatch(t) => dispatch(t, texts, allow_text, rule)?,
        Expr::Empty | Expr::Class(_) | Expr::Rule(_) | Expr::Token(_) => None,
    })
}

fn split_literal(b: &[u8], texts: &SpecialTexts, allow_text: bool) -> Option<Expr> {
    let mut parts: Vec<Expr> = Vec::new();
    let (mut i, mut start) = (0, 0);
    while i < b.len() {
        match texts.at(&b[i..]) {
            Some((len, id)) => {
                if start < i {
                    parts.push(Expr::Bytes(b[start..i].to_vec()));
                }
                parts.push(token_or_text(id, &b[i..i + len], allow_text));
                i += len;
                start = i;
            }
            None => i += 1,
        }
    }
    if start == 0 {
        return None;
    }
    if start < b.len() {
        parts.push(Expr::Bytes(b[start..].to_vec()));
    }
    Some(if parts.len() == 1 { parts.pop().unwrap() } else { Expr::Seq(parts) })
}

fn token_or_text(id: u32, text: &[u8], allow_text: bool) -> Expr {
    let token = Expr::Token(TokenSet::of([id]));
    if allow_text {
        Expr::Choice(vec![token, Expr::Bytes(text.to_vec())])
    } else {
        token
    }
}

fn dispatch(t: &TagDispatch, texts: &SpecialTexts, allow_text: bool, rule: &str) -> Result<Option<Expr>, GrammarError> {
    let mixed = |what: &str, b: &[u8]| GrammarError::InvalidTagDispatch {
        rule: rule.to_string(),
        reason: format!(
            "the {what} {:?} mixes a special token's text with other text; use a token for the special token",
            String::from_utf8_lossy(b)
        ),
    };
    let mut out = t.clone();
    let mut changed = false;
    out.triggers.clear();
    out.bodies.clear();
    for (trigger, body) in t.triggers.iter().zip(&t.bodies) {
        let body = match rewrite(body, texts, allow_text, rule)? {
            Some(b) => {
                changed = true;
                b
            }
            None => body.clone(),
        };
        if let Trigger::Text(b) = trigger {
            if let Some(id) = texts.exactly(b) {
                changed = true;
                out.triggers.push(Trigger::Token(id));
                out.bodies.push(body.clone());
                if !allow_text {
                    continue;
                }
            } else if texts.occurs_in(b) && !allow_text {
                return Err(mixed("trigger", b));
            }
        }
        out.triggers.push(trigger.clone());
        out.bodies.push(body);
    }
    let before = out.excludes.len();
    out.excludes.retain(|x| !matches!(x, Trigger::Text(b) if !allow_text && texts.occurs_in(b)));
    changed |= out.excludes.len() != before;
    let mut stop_tokens = Vec::new();
    let mut stops = Vec::new();
    for s in &t.stop_strings {
        match texts.exactly(s) {
            Some(id) => {
                stop_tokens.push(id);
                if allow_text {
                    stops.push(s.clone());
                }
            }
            None if texts.occurs_in(s) && !allow_text => return Err(mixed("stop string", s)),
            None => stops.push(s.clone()),
        }
    }
    out.stop_strings = stops;
    if stop_tokens.is_empty() {
        return Ok(changed.then(|| Expr::TagDispatch(Box::new(out))));
    }
    // Free text up to a stop token: the dispatch ends anywhere, then the token follows. Without
    // a loop, a dispatched body ends the dispatch, so the free text before the token may hold no
    // trigger at all: the triggers become excludes.
    let mut before_token = out.clone();
    before_token.stop_eos = true;
    before_token.stop_strings.clear();
    if !before_token.loop_after_dispatch {
        before_token.excludes.extend(before_token.triggers.drain(..).filter(|x| matches!(x, Trigger::Text(_))));
        before_token.bodies.clear();
    }
    let with_token = Expr::Seq(vec![Expr::TagDispatch(Box::new(before_token)), Expr::Token(TokenSet::of(stop_tokens))]);
    Ok(Some(if out.can_end() || !out.loop_after_dispatch {
        Expr::Choice(vec![Expr::TagDispatch(Box::new(out)), with_token])
    } else {
        with_token
    }))
}
