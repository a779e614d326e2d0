//! Macro calls in rule bodies: `Name(arg, ..., key=value, ...)`.
//!
//! XGrammar extends EBNF with built-in "macros" — `TagDispatch(...)`, `Regex("...")`,
//! `Token(...)`, `ExcludeToken(...)`, `TokenTagDispatch(...)` — that denote expressions a
//! plain grammar cannot state compactly. This module owns their surface syntax: the small
//! argument AST ([`MacroValue`], [`MacroArgs`]) and its parser, and the single dispatch
//! point [`Parser::macro_call`] that turns a call into an expression. Supporting a macro
//! means adding one arm there; the syntax below is shared by all of them.
//!
//! A call is a name *immediately* followed by `(` (no space between): `foo (x)` is the
//! rule `foo` followed by a group, `foo(x)` a call. Arguments are strings, integers,
//! `true`/`false`, names, and parenthesized tuples of these (which may nest); a `key=value`
//! argument is named. A trailing comma is allowed in argument lists and tuples.
//!
//! Supported (XGrammar's syntax):
//!
//! * `Regex("pattern", flags="i", json_string=true)`: an ECMA-262 pattern, full match (see
//!   [`crate::frontend::regex`]); `flags="i"` matches case-insensitively; `json_string=true`
//!   matches the pattern against the decoded content of a JSON string body (the text between
//!   the quotes, where `"`, `\` and control characters must be escaped and any character may
//!   be `\u`-escaped), as JSON Schema's `pattern` does;
//! * `Token(id, ...)`: one token whose id is listed; `ExcludeToken(id, ...)`: one token whose
//!   id is not listed (ids below `2^24`; tokens are matched by id, not by text);
//! * `TagDispatch(("trigger", rule), ..., stop_eos=true, stop_str=("...", ...),
//!   loop_after_dispatch=true, excludes=("...", ...))`: see [`crate::grammar::TagDispatch`].
//!   A trigger is a string or a token id; a body is a rule name or a string; `excludes` lists
//!   strings or token ids. The named arguments are optional (defaults as shown, no stop strings,
//!   no excludes);
//! * `TokenTagDispatch((id, rule), ..., ...)`: the same with token triggers;
//! * `Substring("chunk", ...)`: any substring of the concatenated chunks (`substring.rs`).

use std::collections::HashSet;

use super::lexer::{Token, TokenKind};
use super::parser::{Parser, MAX_NESTING};
use crate::frontend::json_schema::json_char;
use crate::frontend::{Span, SyntaxError};
use crate::grammar::{CharClass, Expr, TagDispatch, TokenSet, Trigger};
use crate::util::sentinel::Sentinel;

/// The largest token id a macro accepts: the largest with a sentinel (the byte string the
/// automata read a token id as).
const MAX_TOKEN_ID: i64 = Sentinel::MAX_ID as i64;

/// A macro argument value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum MacroValue<'a> {
    /// A string literal (decoded UTF-8 bytes).
    Str(Vec<u8>, Span),
    /// An integer.
    Int(i64, Span),
    /// `true` or `false`.
    Bool(bool, Span),
    /// A name (a rule reference in most macros).
    Ident(&'a str, Span),
    /// `(a, b, ...)`
    Tuple(Vec<MacroValue<'a>>, Span),
}

/// The arguments of one call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct MacroArgs<'a> {
    /// Positional arguments in order.
    pub(super) positional: Vec<MacroValue<'a>>,
    /// Named arguments in order, each with the span of its name; names are unique.
    pub(super) named: Vec<(&'a str, Span, MacroValue<'a>)>,
    /// The whole parenthesized argument list.
    pub(super) span: Span,
}

/// Macros XGrammar defines; calls to them say "not supported yet" rather than "unknown".
const XGRAMMAR_MACROS: [&str; 6] = ["TagDispatch", "Token", "ExcludeToken", "TokenTagDispatch", "Regex", "Substring"];

impl<'a> Parser<'a> {
    /// Parses the arguments of a call to `name` (the next token is its `(`) and turns the
    /// call into an expression.
    pub(super) fn macro_call(&mut self, name: &'a str, name_span: Span) -> Result<Expr, SyntaxError> {
        let args = self.macro_args()?;
        self.dispatch_macro(name, name_span, args)
    }

    /// The single dispatch point from a macro's name to its meaning.
    fn dispatch_macro(&mut self, name: &str, name_span: Span, args: MacroArgs<'a>) -> Result<Expr, SyntaxError> {
        match name {
            "Regex" => self.regex(args),
            "Substring" => self.substring(args),
            "Token" | "ExcludeToken" => {
                if !args.named.is_empty() {
                    return Err(self.error(args.named[0].1, format!("`{name}` takes no named arguments")));
                }
                if args.positional.is_empty() {
                    return Err(self.error(args.span, format!("`{name}` takes at least one token id: {name}(id, ...)")));
                }
                let ids = args.positional.iter().map(|v| self.token_id(v, name)).collect::<Result<Vec<_>, _>>()?;
                Ok(Expr::Token(TokenSet::new(ids.into_iter().map(|i| (i, i)), name == "ExcludeToken")))
            }
            "TagDispatch" | "TokenTagDispatch" => self.tag_dispatch(name, args),
            name if XGRAMMAR_MACROS.contains(&name) => {
                Err(self.error(name_span, format!("macro `{name}` is not supported yet")))
            }
            _ => Err(self.error(
                name_span,
                format!("unknown macro `{name}` (to use rule `{name}` before a group, put a space before `(`)"),
            )),
        }
    }

    /// `Regex("pattern", flags="i", json_string=true)`: an ECMA-262 pattern, full match;
    /// `flags` may set `i` (case-insensitive); `json_string` matches the pattern against the
    /// decoded content of a JSON string body (without its quotes), each character written raw
    /// or escaped as JSON allows: the JSON Schema front-end's `pattern` mapping
    /// (`json_schema::json_char`), so both read a pattern the same way.
    fn regex(&self, args: MacroArgs<'a>) -> Result<Expr, SyntaxError> {
        let usage = "`Regex` takes a pattern and optional flags and json_string: \
                     Regex(\"pattern\", flags=\"i\", json_string=true)";
        let (pattern, span) = match args.positional.as_slice() {
            [MacroValue::Str(bytes, span)] => match std::str::from_utf8(bytes) {
                Ok(p) => (p, *span),
                Err(_) => return Err(self.error(*span, "the pattern of `Regex` must be UTF-8")),
            },
            _ => return Err(self.error(args.span, usage)),
        };
        let mut ignore_case = false;
        let mut json_string = false;
        for (key, key_span, value) in &args.named {
            match (*key, value) {
                ("json_string", MacroValue::Bool(b, _)) => json_string = *b,
                ("flags", MacroValue::Str(flags, flags_span)) => {
                    for &f in flags {
                        match f {
                            b'i' => ignore_case = true,
                            other => {
                                let msg = format!("flag `{}` of `Regex` is not supported (only `i`)", other as char);
                                return Err(self.error(*flags_span, msg));
                            }
                        }
                    }
                }
                _ => return Err(self.error(*key_span, usage)),
            }
        }
        let mut plain = |c: &CharClass| Expr::Class(c.clone());
        let char_expr: &mut dyn FnMut(&CharClass) -> Expr = if json_string { &mut json_char } else { &mut plain };
        crate::frontend::regex::Regex::parse_with_flags(pattern, ignore_case)
            .and_then(|r| r.to_expr(pattern, crate::frontend::regex::Anchoring::FullMatch, char_expr))
            .map_err(|e| self.error(span, format!("in Regex pattern: {}", e.syntax())))
    }

    /// A token id argument of macro `name`.
    fn token_id(&self, v: &MacroValue<'_>, name: &str) -> Result<u32, SyntaxError> {
        match v {
            MacroValue::Int(i, _) if (0..=MAX_TOKEN_ID).contains(i) => Ok(*i as u32),
            MacroValue::Int(i, span) => {
                Err(self.error(*span, format!("token id {i} in `{name}` is out of range (0 to {MAX_TOKEN_ID})")))
            }
            other => Err(self.error(span_of(other), format!("`{name}` expects token ids (integers) here"))),
        }
    }

    /// A trigger or exclude of macro `name`: a string, or a token id.
    fn trigger(&self, v: &MacroValue<'_>, name: &str, what: &str) -> Result<Trigger, SyntaxError> {
        match v {
            MacroValue::Str(b, span) if b.is_empty() => Err(self.error(*span, format!("an empty {what} in `{name}`"))),
            MacroValue::Str(b, _) => Ok(Trigger::Text(b.clone())),
            MacroValue::Int(..) => Ok(Trigger::Token(self.token_id(v, name)?)),
            other => Err(self.error(span_of(other), format!("a {what} of `{name}` is a string or a token id"))),
        }
    }

    /// `TagDispatch((trigger, body), ..., key=value, ...)` and `TokenTagDispatch`.
    fn tag_dispatch(&mut self, name: &str, args: MacroArgs<'a>) -> Result<Expr, SyntaxError> {
        let mut tags = Vec::new();
        for v in &args.positional {
            let pair = match v {
                MacroValue::Tuple(items, _) if items.len() == 2 => items,
                other => {
                    let example = if name == "TagDispatch" { "(\"trigger\", rule)" } else { "(token_id, rule)" };
                    return Err(self.error(span_of(other), format!("a tag of `{name}` is a pair {example}")));
                }
            };
            let trigger = self.trigger(&pair[0], name, "trigger")?;
            if name == "TokenTagDispatch" && !matches!(trigger, Trigger::Token(_)) {
                return Err(self.error(span_of(&pair[0]), "a trigger of `TokenTagDispatch` is a token id"));
            }
            let body = match &pair[1] {
                MacroValue::Ident(rule, span) => self.reference(rule, *span)?,
                MacroValue::Str(b, _) => Expr::literal(b),
                other => {
                    return Err(self.error(span_of(other), format!("the body of a tag of `{name}` is a rule name")))
                }
            };
            tags.push((trigger, body));
        }
        let mut t = TagDispatch::new(tags);
        for (key, key_span, value) in &args.named {
            match (*key, value) {
                ("stop_eos", MacroValue::Bool(b, _)) => t.stop_eos = *b,
                ("loop_after_dispatch", MacroValue::Bool(b, _)) => t.loop_after_dispatch = *b,
                ("stop_str", MacroValue::Tuple(items, _)) => {
                    for item in items {
                        match item {
                            MacroValue::Str(b, span) if b.is_empty() => {
                                return Err(self.error(*span, format!("an empty stop string in `{name}`")))
                            }
                            MacroValue::Str(b, _) => t.stop_strings.push(b.clone()),
                            other => {
                                return Err(self.error(span_of(other), format!("a stop string of `{name}` is a string")))
                            }
                        }
                    }
                }
                ("excludes", MacroValue::Tuple(items, _)) => {
                    for item in items {
                        t.excludes.push(self.trigger(item, name, "exclude")?);
                    }
                }
                ("stop_eos" | "loop_after_dispatch", other) => {
                    return Err(self.error(span_of(other), format!("`{key}` of `{name}` is `true` or `false`")))
                }
                ("stop_str" | "excludes", other) => {
                    return Err(self.error(span_of(other), format!("`{key}` of `{name}` is a tuple: {key}=(...)")))
                }
                _ => {
                    return Err(self.error(
                        *key_span,
                        format!(
                            "unknown argument `{key}` of `{name}` (expected stop_eos, stop_str, \
                             loop_after_dispatch or excludes)"
                        ),
                    ))
                }
            }
        }
        // The IR's normalization refuses it too; here the error points at the macro.
        if let Some(reason) = t.malformed() {
            return Err(self.error(args.span, format!("`{name}`: {reason}")));
        }
        Ok(Expr::TagDispatch(Box::new(t)))
    }

    /// `( [arg ("," arg)* ","?] )` where `arg` is `value` or `name = value`.
    fn macro_args(&mut self) -> Result<MacroArgs<'a>, SyntaxError> {
        let open = self.bump()?;
        let mut args = MacroArgs::default();
        // Keys seen so far (a set, so that many named arguments stay linear).
        let mut keys = HashSet::new();
        loop {
            if self.peek()?.kind == TokenKind::RParen {
                break;
            }
            if let Some((key, key_span)) = self.named_key()? {
                let value = self.macro_value(1)?;
                if !keys.insert(key) {
                    return Err(self.error(key_span, format!("argument `{key}` is given more than once")));
                }
                args.named.push((key, key_span, value));
            } else {
                let value = self.macro_value(1)?;
                args.positional.push(value);
            }
            if self.end_of_list("`,` or `)` in macro arguments")? {
                break;
            }
        }
        let close = self.bump()?;
        args.span = Span::new(open.span.start, close.span.end);
        Ok(args)
    }

    /// After a list element: consumes a `,` and returns `false`, or sees the closing `)` and
    /// returns `true`; anything else is an error expecting `what`.
    fn end_of_list(&mut self, what: &str) -> Result<bool, SyntaxError> {
        let sep = self.peek()?;
        match sep.kind {
            TokenKind::Comma => {
                self.bump()?;
                Ok(false)
            }
            TokenKind::RParen => Ok(true),
            _ => {
                let sep = sep.clone();
                Err(self.expected(&sep, what))
            }
        }
    }

    /// Consumes `name =` and returns the name, if that is what comes next.
    fn named_key(&mut self) -> Result<Option<(&'a str, Span)>, SyntaxError> {
        let (key, span) = match self.peek()? {
            Token { kind: TokenKind::Ident(key), span } => (*key, *span),
            _ => return Ok(None),
        };
        if self.peek2()?.kind != TokenKind::Equal {
            return Ok(None);
        }
        self.bump()?;
        self.bump()?;
        Ok(Some((key, span)))
    }

    /// One argument value; `depth` counts the enclosing parentheses.
    fn macro_value(&mut self, depth: usize) -> Result<MacroValue<'a>, SyntaxError> {
        let tok = self.bump()?;
        let span = tok.span;
        Ok(match tok.kind {
            TokenKind::Str(s) => MacroValue::Str(s, span),
            TokenKind::Int(digits) => match digits.parse::<i64>() {
                Ok(v) => MacroValue::Int(v, span),
                Err(_) => return Err(self.error(span, format!("integer `{digits}` does not fit in 64 bits"))),
            },
            TokenKind::Ident("true") => MacroValue::Bool(true, span),
            TokenKind::Ident("false") => MacroValue::Bool(false, span),
            TokenKind::Ident(name) => MacroValue::Ident(name, span),
            TokenKind::LParen => {
                if depth >= MAX_NESTING {
                    return Err(
                        self.error(span, format!("parentheses nested too deeply: the limit is {MAX_NESTING} levels"))
                    );
                }
                let mut items = Vec::new();
                loop {
                    if self.peek()?.kind == TokenKind::RParen {
                        break;
                    }
                    items.push(self.macro_value(depth + 1)?);
                    if self.end_of_list("`,` or `)` in a tuple")? {
                        break;
                    }
                }
                let close = self.bump()?;
                MacroValue::Tuple(items, Span::new(span.start, close.span.end))
            }
            _ => return Err(self.expected(&tok, "a string, integer, boolean, name or tuple as macro argument")),
        })
    }
}

/// The source span of an argument value.
pub(super) fn span_of(v: &MacroValue<'_>) -> Span {
    match v {
        MacroValue::Str(_, s) | MacroValue::Int(_, s) | MacroValue::Bool(_, s) | MacroValue::Ident(_, s) => *s,
        MacroValue::Tuple(_, s) => *s,
    }
}
