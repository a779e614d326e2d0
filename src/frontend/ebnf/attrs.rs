//! Rule attributes: the text between the brackets of `name[...] ::=` → [`RuleAttrs`].
//!
//! A comma-separated list, each attribute at most once: `lazy`, `max_chars=N`,
//! `max_tokens=N`, `temperature=T`, `capture`, `capture="name"`, `stop_capture="name"` (the
//! attributes of XGrammar's EBNF that a user writes; what each does is in
//! `grammar/attrs.rs`). XGrammar's `capture_hidden_*` attributes, which only its own printer
//! writes for its Lark front-end, and every other name are errors at the name.

use crate::frontend::{Span, SyntaxError};
use crate::grammar::RuleAttrs;

/// XGrammar's bound on `max_chars` (and ours): a non-negative `i32`.
const MAX_CHARS_LIMIT: u64 = i32::MAX as u64;
/// XGrammar's bound on `max_tokens`.
const MAX_TOKENS_LIMIT: u64 = 1_000_000;

/// Parses the attributes `inner`, which starts at byte `offset` of the grammar `text` (for
/// error positions).
pub(super) fn parse(text: &str, inner: &str, offset: usize) -> Result<RuleAttrs, SyntaxError> {
    let mut attrs = RuleAttrs::default();
    let mut seen: Vec<&str> = Vec::new();
    let mut rest = 0;
    loop {
        let (item, item_start) = next_item(inner, &mut rest);
        let span = |from: usize, len: usize| Span::new(offset + from, offset + from + len.max(1));
        let error = |from: usize, len: usize, msg: String| SyntaxError::new(text, span(from, len), msg);
        let (name, value) = match item.split_once('=') {
            Some((n, v)) => (n.trim_end(), Some((v.trim(), item_start + item.find('=').unwrap_or(0) + 1))),
            None => (item.trim_end(), None),
        };
        if name.is_empty() {
            return Err(error(item_start, 0, "expected a rule attribute".to_string()));
        }
        if seen.contains(&name) {
            return Err(error(item_start, name.len(), format!("rule attribute `{name}` is given twice")));
        }
        seen.push(name);
        let value_at = |v: Option<(&str, usize)>| v.map_or((item_start, name.len()), |(v, at)| (at, v.len()));
        let need = |kind: &str| {
            let (at, len) = value_at(value);
            error(at, len, format!("rule attribute `{name}` needs {kind}"))
        };
        match name {
            "lazy" if value.is_none() => attrs.lazy = true,
            "lazy" => return Err(error(item_start, item.len(), "rule attribute `lazy` takes no value".into())),
            "max_chars" => attrs.max_chars = Some(integer(value, MAX_CHARS_LIMIT).ok_or_else(|| need(&bound(0)))?),
            "max_tokens" => {
                let n = integer(value, MAX_TOKENS_LIMIT).filter(|&n| n >= 1);
                attrs.max_tokens = Some(n.ok_or_else(|| need("an integer from 1 to 1000000"))?);
            }
            "temperature" => {
                let t = value.and_then(|(v, _)| v.parse::<f32>().ok()).filter(|t| t.is_finite() && *t >= 0.0);
                attrs.temperature_bits = Some(t.ok_or_else(|| need("a finite non-negative number"))?.to_bits());
            }
            "capture" | "stop_capture" => {
                let captured = match value {
                    None if name == "capture" => None,
                    None => return Err(need("a name: `stop_capture=\"name\"`")),
                    Some((v, _)) => Some(capture_name(v).ok_or_else(|| need("a non-empty name in quotes"))?),
                };
                if name == "capture" {
                    // `capture` alone names the capture after the rule; kept empty here and
                    // printed back as written.
                    attrs.capture = Some(captured.unwrap_or_default());
                } else {
                    attrs.stop_capture = captured;
                }
            }
            _ if name.starts_with("capture_hidden_") => {
                return Err(error(
                    item_start,
                    name.len(),
                    format!("rule attribute `{name}` is internal to XGrammar's Lark front-end and not supported"),
                ))
            }
            _ => {
                let known = "lazy, max_chars, max_tokens, temperature, capture, stop_capture";
                return Err(error(item_start, name.len(), format!("unknown rule attribute `{name}` (known: {known})")));
            }
        }
        if rest >= inner.len() {
            return Ok(attrs);
        }
    }
}

/// The next comma-separated item from `inner[*rest..]`, trimmed, with its start; advances
/// `rest` past the comma. Commas inside quotes do not separate.
fn next_item<'s>(inner: &'s str, rest: &mut usize) -> (&'s str, usize) {
    let from = *rest;
    let mut quoted = false;
    let mut end = inner.len();
    for (i, b) in inner.bytes().enumerate().skip(from) {
        match b {
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    *rest = end + 1;
    let raw = &inner[from..end];
    let lead = raw.len() - raw.trim_start().len();
    (raw.trim(), from + lead)
}

fn bound(min: u64) -> String {
    format!("an integer from {min} to {MAX_CHARS_LIMIT}")
}

/// A decimal integer value no larger than `limit`.
fn integer(value: Option<(&str, usize)>, limit: u64) -> Option<u32> {
    let (v, _) = value?;
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) || v.len() > 10 {
        return None;
    }
    v.parse::<u64>().ok().filter(|&n| n <= limit).and_then(|n| u32::try_from(n).ok())
}

/// The name in `"name"`: letters, digits, `_`, `-` and `.` (XGrammar's capture names).
fn capture_name(v: &str) -> Option<String> {
    let name = v.strip_prefix('"')?.strip_suffix('"')?;
    let ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    ok.then(|| name.to_string())
}
