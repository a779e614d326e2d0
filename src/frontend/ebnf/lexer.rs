//! The EBNF lexer: source text → [`Token`]s, one at a time, each with its [`Span`].
//!
//! The lexer owns everything below the level of expressions: whitespace and `#` comments,
//! names, numbers, punctuation, and the full syntax of string literals and character
//! classes (escapes, code-point checks, ranges). A literal therefore leaves the lexer
//! already decoded — a string as its UTF-8 bytes, a class as a [`CharClass`] — and every
//! error inside one points at the exact escape or range at fault.
//!
//! Tokens are produced on demand (the parser peeks at most two ahead), so errors come out
//! in source order and the lexer never holds more than one token of state.
//!
//! Escapes follow XGrammar (`cpp/support/encoding.h`): C escapes `\' \" \? \\ \a \b \f \n
//! \r \t \v \0 \e`, plus `\/`, `\xH…` (one or more hex digits, read greedily, as XGrammar
//! does), `\uHHHH` and `\UHHHHHHHH`; every numeric escape denotes a Unicode **code point**,
//! stored as its UTF-8 encoding (so `"\xff"` is the two bytes `C3 BF`). Surrogates and
//! values above `U+10FFFF` are errors. Inside a class, `\]`, `\[`, `\-`, `\^` and the other
//! regex metacharacters XGrammar accepts (`$ . * + ( ) { } |`) may also be escaped.

use crate::frontend::{Span, SyntaxError};
use crate::grammar::{CharClass, MAX_CODE_POINT};

/// One token and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Token<'a> {
    pub(super) kind: TokenKind<'a>,
    pub(super) span: Span,
}

/// What a token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TokenKind<'a> {
    /// A name: `[a-zA-Z_][a-zA-Z0-9_.-]*`.
    Ident(&'a str),
    /// A decoded string literal (UTF-8 bytes).
    Str(Vec<u8>),
    /// A decoded character class.
    Class(CharClass),
    /// An integer as written: an optional `-` and ASCII digits.
    Int(&'a str),
    /// `::=`
    Assign,
    /// `[...]` right after a rule name and before `::=`: the rule's attributes, the text
    /// between the brackets (parsed by `attrs.rs`).
    Attributes(&'a str),
    /// `(`
    LParen,
    /// `(=`, the start of a lookahead assertion.
    LookaheadParen,
    /// `)`
    RParen,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `,`
    Comma,
    /// `|`
    Pipe,
    /// `*`
    Star,
    /// `+`
    Plus,
    /// `?`
    Question,
    /// `=` (named macro arguments)
    Equal,
    /// The end of the input.
    Eof,
}

impl TokenKind<'_> {
    /// How the token is named in "found ..." messages.
    pub(super) fn describe(&self) -> String {
        match self {
            TokenKind::Ident(name) => format!("`{name}`"),
            TokenKind::Str(_) => "a string literal".to_string(),
            TokenKind::Class(_) => "a character class".to_string(),
            TokenKind::Int(n) => format!("`{n}`"),
            TokenKind::Eof => "end of input".to_string(),
            TokenKind::Assign => "`::=`".to_string(),
            TokenKind::Attributes(_) => "rule attributes `[...]`".to_string(),
            TokenKind::LParen => "`(`".to_string(),
            TokenKind::LookaheadParen => "`(=`".to_string(),
            TokenKind::RParen => "`)`".to_string(),
            TokenKind::LBrace => "`{`".to_string(),
            TokenKind::RBrace => "`}`".to_string(),
            TokenKind::Comma => "`,`".to_string(),
            TokenKind::Pipe => "`|`".to_string(),
            TokenKind::Star => "`*`".to_string(),
            TokenKind::Plus => "`+`".to_string(),
            TokenKind::Question => "`?`".to_string(),
            TokenKind::Equal => "`=`".to_string(),
        }
    }
}

/// Whether `b` may continue a name (XGrammar allows `-` and `.` in names).
pub(super) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

/// The lexer over one source text.
#[derive(Debug)]
pub(super) struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

/// One element of a character class body before ranges are resolved.
#[derive(Clone, Copy)]
enum ClassItem {
    /// A code point, written literally or escaped (an escaped `\-` is a `Char`).
    Char(u32),
    /// An unescaped `-`: a range operator between two items, else a literal `-`.
    Dash,
}

impl ClassItem {
    fn code_point(self) -> u32 {
        match self {
            ClassItem::Char(c) => c,
            ClassItem::Dash => '-' as u32,
        }
    }
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `text`.
    pub(super) fn new(text: &'a str) -> Self {
        Lexer { text, pos: 0 }
    }

    /// The source text.
    pub(super) fn text(&self) -> &'a str {
        self.text
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek_byte(&self, delta: usize) -> Option<u8> {
        self.bytes().get(self.pos + delta).copied()
    }

    fn error(&self, span: Span, message: impl Into<String>) -> SyntaxError {
        SyntaxError::new(self.text, span, message)
    }

    /// Skips whitespace (space, tab, `\n`, `\r`) and `#` comments.
    fn skip_trivia(&mut self) {
        while let Some(b) = self.peek_byte(0) {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => self.pos += 1,
                b'#' => {
                    let rest = &self.text[self.pos..];
                    self.pos += rest.find(['\n', '\r']).unwrap_or(rest.len());
                }
                _ => break,
            }
        }
    }

    /// The next token; [`TokenKind::Eof`] (repeatedly) at the end.
    pub(super) fn next_token(&mut self) -> Result<Token<'a>, SyntaxError> {
        self.skip_trivia();
        let start = self.pos;
        let Some(b) = self.peek_byte(0) else {
            return Ok(Token { kind: TokenKind::Eof, span: Span::new(start, start) });
        };
        let (kind, len) = match b {
            b'(' if self.peek_byte(1) == Some(b'=') => (TokenKind::LookaheadParen, 2),
            b'(' => (TokenKind::LParen, 1),
            b')' => (TokenKind::RParen, 1),
            b'{' => (TokenKind::LBrace, 1),
            b'}' => (TokenKind::RBrace, 1),
            b',' => (TokenKind::Comma, 1),
            b'|' => (TokenKind::Pipe, 1),
            b'*' => (TokenKind::Star, 1),
            b'+' => (TokenKind::Plus, 1),
            b'?' => (TokenKind::Question, 1),
            b'=' => (TokenKind::Equal, 1),
            b':' if self.text[start..].starts_with("::=") => (TokenKind::Assign, 3),
            b':' => {
                let span = Span::new(start, start + 1);
                return Err(SyntaxError::expecting(self.text, span, "`::=`", Some("`:`")));
            }
            b'"' => return self.string(),
            b'[' => match self.attribute_block(start) {
                Some(len) => (TokenKind::Attributes(&self.text[start + 1..start + len - 1]), len),
                None => return self.class(),
            },
            b if is_name_start(b) => {
                let len = self.bytes()[start..].iter().take_while(|&&b| is_name_byte(b)).count();
                (TokenKind::Ident(&self.text[start..start + len]), len)
            }
            b'0'..=b'9' => return self.number(0),
            b'-' if self.peek_byte(1).is_some_and(|b| b.is_ascii_digit()) => return self.number(1),
            _ => {
                let c = self.text[start..].chars().next().unwrap_or('\u{FFFD}');
                let span = Span::new(start, start + c.len_utf8());
                return Err(self.error(span, format!("unexpected character `{}`", c.escape_debug())));
            }
        };
        self.pos += len;
        Ok(Token { kind, span: Span::new(start, self.pos) })
    }

    /// The length of the attribute block `[...]` at `start`, when there is one: `[` right
    /// after a name (no space between, as in `name[lazy] ::=`), `]` on the same line (outside
    /// quoted values), then only spaces or tabs before `::=`. Anything else is a character
    /// class, as in XGrammar, which reads a bracket as attributes only when `::=` follows.
    fn attribute_block(&self, start: usize) -> Option<usize> {
        let bytes = self.bytes();
        if start == 0 || !is_name_byte(bytes[start - 1]) {
            return None;
        }
        let mut i = start + 1;
        let mut quoted = false;
        loop {
            match *bytes.get(i)? {
                b'\n' | b'\r' => return None,
                b'"' => quoted = !quoted,
                b']' if !quoted => break,
                _ => {}
            }
            i += 1;
        }
        let end = i + 1;
        let after = bytes[end..].iter().take_while(|&&b| b == b' ' || b == b'\t').count();
        bytes[end + after..].starts_with(b"::=").then_some(end - start)
    }

    /// An integer, `sign` bytes of `-` already seen at `self.pos`.
    fn number(&mut self, sign: usize) -> Result<Token<'a>, SyntaxError> {
        let start = self.pos;
        let digits = self.bytes()[start + sign..].iter().take_while(|b| b.is_ascii_digit()).count();
        let end = start + sign + digits;
        if self.bytes().get(end).is_some_and(|&b| is_name_start(b)) {
            // `1abc`: most likely a rule name starting with a digit.
            let len = self.bytes()[end..].iter().take_while(|&&b| is_name_byte(b)).count();
            let span = Span::new(start, end + len);
            let word = &self.text[span.start..span.end];
            return Err(self.error(span, format!("invalid name `{word}`: names must start with a letter or `_`")));
        }
        self.pos = end;
        Ok(Token { kind: TokenKind::Int(&self.text[start..end]), span: Span::new(start, end) })
    }

    /// A string literal starting at the `"` under `self.pos`.
    fn string(&mut self) -> Result<Token<'a>, SyntaxError> {
        let start = self.pos;
        self.pos += 1;
        let mut value = Vec::new();
        loop {
            match self.peek_byte(0) {
                None | Some(b'\n' | b'\r') => {
                    let span = Span::new(start, start + 1);
                    return Err(SyntaxError::expecting(
                        self.text,
                        span,
                        "a closing `\"` before the end of the line",
                        Some("an unterminated string literal"),
                    ));
                }
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Token { kind: TokenKind::Str(value), span: Span::new(start, self.pos) });
                }
                Some(b'\\') => {
                    let c = self.escape(start, false)?;
                    push_utf8(&mut value, c);
                }
                Some(_) => {
                    let c = self.text[self.pos..].chars().next().unwrap_or('\u{FFFD}');
                    self.pos += c.len_utf8();
                    push_utf8(&mut value, c as u32);
                }
            }
        }
    }

    /// A character class starting at the `[` under `self.pos`.
    fn class(&mut self) -> Result<Token<'a>, SyntaxError> {
        let start = self.pos;
        self.pos += 1;
        let negated = self.peek_byte(0) == Some(b'^');
        if negated {
            self.pos += 1;
        }
        let mut items: Vec<(ClassItem, Span)> = Vec::new();
        loop {
            let at = self.pos;
            match self.peek_byte(0) {
                None | Some(b'\n' | b'\r') => {
                    let span = Span::new(start, start + 1);
                    return Err(SyntaxError::expecting(
                        self.text,
                        span,
                        "a closing `]` before the end of the line",
                        Some("an unterminated character class"),
                    ));
                }
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                Some(b'-') => {
                    self.pos += 1;
                    items.push((ClassItem::Dash, Span::new(at, self.pos)));
                }
                Some(b'\\') => {
                    let c = self.escape(start, true)?;
                    items.push((ClassItem::Char(c), Span::new(at, self.pos)));
                }
                Some(_) => {
                    let c = self.text[self.pos..].chars().next().unwrap_or('\u{FFFD}');
                    self.pos += c.len_utf8();
                    items.push((ClassItem::Char(c as u32), Span::new(at, self.pos)));
                }
            }
        }
        // Resolve ranges as XGrammar does: `x-y` where `-` is unescaped and both ends are
        // items; a `-` that cannot be a range operator (first, last, right after a range)
        // is a literal.
        let mut ranges = Vec::with_capacity(items.len());
        let mut i = 0;
        while i < items.len() {
            let (lo_item, lo_span) = items[i];
            let lo = lo_item.code_point();
            match (items.get(i + 1), items.get(i + 2)) {
                (Some((ClassItem::Dash, _)), Some(&(hi_item, hi_span))) => {
                    let hi = hi_item.code_point();
                    if lo > hi {
                        let span = Span::new(lo_span.start, hi_span.end);
                        let written = &self.text[span.start..span.end];
                        return Err(self.error(
                            span,
                            format!("invalid range `{written}` in character class: U+{lo:04X} is above U+{hi:04X}"),
                        ));
                    }
                    ranges.push((lo, hi));
                    i += 3;
                }
                _ => {
                    ranges.push((lo, lo));
                    i += 1;
                }
            }
        }
        let class = CharClass::new(ranges, negated);
        Ok(Token { kind: TokenKind::Class(class), span: Span::new(start, self.pos) })
    }

    /// An escape sequence at the `\` under `self.pos`, inside the literal starting at
    /// `literal_start`; returns the code point.
    fn escape(&mut self, literal_start: usize, in_class: bool) -> Result<u32, SyntaxError> {
        let start = self.pos;
        let Some(c) = self.text[start + 1..].chars().next().filter(|&c| c != '\n' && c != '\r') else {
            // A `\` at the end of the line: the literal never closes.
            let span = Span::new(literal_start, literal_start + 1);
            let (close, what) = if in_class { ("]", "character class") } else { ("\"", "string literal") };
            return Err(SyntaxError::expecting(
                self.text,
                span,
                format!("a closing `{close}` before the end of the line"),
                Some(&format!("an unterminated {what}")),
            ));
        };
        self.pos = start + 1 + c.len_utf8();
        let simple = match c {
            '"' | '\\' | '/' | '\'' | '?' => Some(c as u32),
            'n' => Some(0x0A),
            'r' => Some(0x0D),
            't' => Some(0x09),
            'b' => Some(0x08),
            'f' => Some(0x0C),
            'a' => Some(0x07),
            'v' => Some(0x0B),
            '0' => Some(0x00),
            'e' => Some(0x1B),
            ']' | '[' | '-' | '^' | '$' | '.' | '*' | '+' | '(' | ')' | '{' | '}' | '|' if in_class => Some(c as u32),
            _ => None,
        };
        if let Some(v) = simple {
            return Ok(v);
        }
        let value = match c {
            'x' => {
                let digits = self.hex_digits(usize::MAX);
                if digits == 0 {
                    let span = Span::new(start, self.pos);
                    return Err(SyntaxError::expecting(self.text, span, "at least one hex digit after `\\x`", None));
                }
                self.hex_value(start + 2)
            }
            'u' | 'U' => {
                let want = if c == 'u' { 4 } else { 8 };
                let digits = self.hex_digits(want);
                if digits < want {
                    let span = Span::new(start, self.pos);
                    let written = &self.text[span.start..span.end];
                    return Err(SyntaxError::expecting(
                        self.text,
                        span,
                        format!("{want} hex digits after `\\{c}`"),
                        Some(&format!("`{written}`")),
                    ));
                }
                self.hex_value(start + 2)
            }
            'd' | 'D' | 's' | 'S' | 'w' | 'W' if in_class => {
                let span = Span::new(start, self.pos);
                return Err(
                    self.error(span, format!("class escape `\\{c}` is not supported in EBNF; write the ranges"))
                );
            }
            _ => {
                let span = Span::new(start, self.pos);
                return Err(self.error(span, format!("invalid escape sequence `\\{}`", c.escape_debug())));
            }
        };
        let span = Span::new(start, self.pos);
        if (0xD800..=0xDFFF).contains(&value) {
            return Err(self.error(span, format!("invalid code point U+{value:04X}: surrogates are not characters")));
        }
        if value > MAX_CODE_POINT {
            let written = &self.text[span.start..span.end];
            return Err(self.error(span, format!("invalid code point `{written}`: above U+10FFFF")));
        }
        Ok(value)
    }

    /// Consumes up to `max` hex digits; returns how many.
    fn hex_digits(&mut self, max: usize) -> usize {
        let n = self.bytes()[self.pos..].iter().take(max).take_while(|b| b.is_ascii_hexdigit()).count();
        self.pos += n;
        n
    }

    /// The value of the hex digits in `from..self.pos`, saturating just above the largest
    /// code point (so a long `\x000...` run stays exact and overflow cannot happen).
    fn hex_value(&self, from: usize) -> u32 {
        self.bytes()[from..self.pos].iter().fold(0u32, |acc, &b| {
            let digit = (b as char).to_digit(16).unwrap_or(0);
            acc.saturating_mul(16).saturating_add(digit).min(MAX_CODE_POINT + 1)
        })
    }
}

/// Appends the UTF-8 encoding of a valid code point.
fn push_utf8(out: &mut Vec<u8>, c: u32) {
    let c = char::from_u32(c).unwrap_or('\u{FFFD}');
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(text: &str) -> Vec<TokenKind<'_>> {
        let mut lexer = Lexer::new(text);
        let mut out = Vec::new();
        loop {
            let t = lexer.next_token().unwrap_or_else(|e| panic!("{text:?}: {e}"));
            if t.kind == TokenKind::Eof {
                return out;
            }
            out.push(t.kind);
        }
    }

    fn lex_err(text: &str) -> (usize, usize, String) {
        let mut lexer = Lexer::new(text);
        loop {
            match lexer.next_token() {
                Ok(t) if t.kind == TokenKind::Eof => panic!("{text:?} lexed without error"),
                Ok(_) => {}
                Err(e) => return (e.line(), e.column(), e.message().to_string()),
            }
        }
    }

    fn string(text: &str) -> Vec<u8> {
        match lex(text).as_slice() {
            [TokenKind::Str(s)] => s.clone(),
            other => panic!("{text:?}: {other:?}"),
        }
    }

    fn class(text: &str) -> CharClass {
        match lex(text).as_slice() {
            [TokenKind::Class(c)] => c.clone(),
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn punctuation_names_numbers_comments() {
        use TokenKind::*;
        let toks = lex("a-b.c_1 ::= ( (= ) { } , | * + ? = 12 -1 # comment ::=\r\n_x");
        assert_eq!(
            toks,
            vec![
                Ident("a-b.c_1"),
                Assign,
                LParen,
                LookaheadParen,
                RParen,
                LBrace,
                RBrace,
                Comma,
                Pipe,
                Star,
                Plus,
                Question,
                Equal,
                Int("12"),
                Int("-1"),
                Ident("_x"),
            ]
        );
        assert_eq!(lex("a::=b"), vec![Ident("a"), Assign, Ident("b")]);
        assert_eq!(lex("# only a comment"), vec![]);
    }

    #[test]
    fn string_escapes() {
        assert_eq!(string(r#""a\"\\\/\'\?""#), b"a\"\\/'?");
        assert_eq!(string(r#""\n\r\t\b\f\a\v\0\e""#), b"\n\r\t\x08\x0c\x07\x0b\x00\x1b");
        // `\x` reads hex digits greedily and denotes a code point.
        assert_eq!(string(r#""\xff""#), "\u{ff}".as_bytes());
        assert_eq!(string(r#""\x41""#), b"A");
        assert_eq!(string(r#""\x41B""#), "\u{41B}".as_bytes());
        assert_eq!(string(r#""\x0000041g""#), b"Ag");
        assert_eq!(string(r#""\u00e9\U0001F600x""#), "é😀x".as_bytes());
        assert_eq!(string(r#""\u00411""#), b"A1");
        assert_eq!(string("\"é # not a comment\t\""), "é # not a comment\t".as_bytes());
        assert_eq!(string(r#""""#), b"");
    }

    #[test]
    fn classes() {
        assert_eq!(class("[a-z]"), CharClass::new([(0x61, 0x7A)], false));
        assert_eq!(class("[^]"), CharClass::new([], true));
        assert_eq!(class("[]"), CharClass::new([], false));
        assert_eq!(class("[-a]"), CharClass::new([(0x2D, 0x2D), (0x61, 0x61)], false));
        assert_eq!(class("[a-]"), CharClass::new([(0x2D, 0x2D), (0x61, 0x61)], false));
        assert_eq!(class("[^-]"), CharClass::new([(0x2D, 0x2D)], true));
        // After a range, a `-` is literal.
        assert_eq!(class("[a-c-e]"), CharClass::new([(0x61, 0x63), (0x2D, 0x2D), (0x65, 0x65)], false));
        assert_eq!(class("[+--]"), CharClass::new([(0x2B, 0x2D)], false));
        assert_eq!(
            class(r"[\]\[\-\^\\]"),
            CharClass::new([(0x5D, 0x5D), (0x5B, 0x5B), (0x2D, 0x2D), (0x5E, 0x5E), (0x5C, 0x5C)], false)
        );
        assert_eq!(class(r"[\x00-\u00ff\n]"), CharClass::new([(0, 0xFF)], false));
        assert_eq!(class("[é-ü^[]"), CharClass::new([(0xE9, 0xFC), (0x5E, 0x5E), (0x5B, 0x5B)], false));
        let meta = "$.*+(){}|";
        assert_eq!(class(r"[\$\.\*\+\(\)\{\}\|]"), CharClass::new(meta.chars().map(|c| (c as u32, c as u32)), false));
        assert_eq!(class("[\\U0010FFFF]"), CharClass::new([(0x10FFFF, 0x10FFFF)], false));
    }

    #[test]
    fn errors() {
        assert_eq!(
            lex_err("a ::= \"abc\n\""),
            (1, 7, "expected a closing `\"` before the end of the line, found an unterminated string literal".into())
        );
        assert_eq!(
            lex_err("\"\\"),
            (1, 1, "expected a closing `\"` before the end of the line, found an unterminated string literal".into())
        );
        assert_eq!(
            lex_err("[a-z"),
            (1, 1, "expected a closing `]` before the end of the line, found an unterminated character class".into())
        );
        assert_eq!(lex_err("\"\\q\""), (1, 2, "invalid escape sequence `\\q`".into()));
        assert_eq!(lex_err("\"\\x\""), (1, 2, "expected at least one hex digit after `\\x`".into()));
        assert_eq!(lex_err("\"\\u12g\""), (1, 2, "expected 4 hex digits after `\\u`, found `\\u12`".into()));
        assert_eq!(lex_err("\"\\U0001F6\""), (1, 2, "expected 8 hex digits after `\\U`, found `\\U0001F6`".into()));
        assert_eq!(lex_err("\"\\ud800\""), (1, 2, "invalid code point U+D800: surrogates are not characters".into()));
        assert_eq!(lex_err("\"\\x110000\""), (1, 2, "invalid code point `\\x110000`: above U+10FFFF".into()));
        assert_eq!(
            lex_err("\"\\xfffffffffffffffff\""),
            (1, 2, "invalid code point `\\xfffffffffffffffff`: above U+10FFFF".into())
        );
        assert_eq!(lex_err("[z-a]"), (1, 2, "invalid range `z-a` in character class: U+007A is above U+0061".into()));
        assert_eq!(lex_err("[\\d]"), (1, 2, "class escape `\\d` is not supported in EBNF; write the ranges".into()));
        assert_eq!(lex_err("\"\\]\""), (1, 2, "invalid escape sequence `\\]`".into()));
        assert_eq!(lex_err("1abc ::= x"), (1, 1, "invalid name `1abc`: names must start with a letter or `_`".into()));
        assert_eq!(lex_err("a ~"), (1, 3, "unexpected character `~`".into()));
        assert_eq!(lex_err("a :: b"), (1, 3, "expected `::=`, found `:`".into()));
        assert_eq!(lex_err("é"), (1, 1, "unexpected character `é`".into()));
    }
}
