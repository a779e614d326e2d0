//! The regex front-end: ECMA-262 regular expressions → grammar IR, directly (never through
//! EBNF text).
//!
//! This is the dialect of JSON Schema's `pattern` and of XGrammar's `Regex("...")` macro:
//!
//! * literals and escapes: `\t \n \r \f \v \0`, `\xHH`, `\uHHHH` (surrogate pairs combine),
//!   `\u{H...}`, `\cX`, identity escapes (`\.`, `\/`, ...);
//! * `.` (any code point except the line terminators `\n \r U+2028 U+2029`);
//! * classes `[...]` and `[^...]` with ranges, and the escapes `\d \w \s \D \W \S`
//!   (inside and outside classes), `\p{...}` / `\P{...}` (Unicode general categories and
//!   scripts, tables from `regex-syntax`);
//! * groups: capturing `( )`, non-capturing `(?: )`, named `(?<name> )`;
//! * case-insensitive matching: the `i` flag ([`Regex::parse_with_flags`], XGrammar's
//!   `Regex("...", flags="i")`), the modifier groups `(?i: )` / `(?-i: )` (ECMA-262 2025) and
//!   `(?i)` / `(?-i)` for the rest of the enclosing group (as in PCRE and Python); a
//!   character then matches its simple lower- and uppercase forms;
//! * alternation `|`, quantifiers `* + ? {m} {m,} {m,n}` and their lazy forms (`*?`, ...,
//!   which denote the same language); a `{` that does not start a quantifier is a literal;
//! * `^` and `$` at the start and end of the pattern (or of top-level alternatives).
//!
//! Constructs that a grammar cannot enforce are errors naming the construct and its position:
//! backreferences (`\1`, `\k<name>`), lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`), word
//! boundaries (`\b`, `\B`), and anchors anywhere but at the ends.
//!
//! [`Regex::parse`] produces a small syntax tree ([`Regex`]); [`Regex::to_expr`] lowers it
//! with a caller-chosen mapping from a character class to an expression. The plain mapping
//! ([`Expr::Class`]) gives the regex's language over UTF-8 text ([`regex_to_expr`], used by
//! `compile_regex`); the JSON Schema front-end maps each class to "one JSON string character
//! from this class, raw or escaped", so that a pattern constrains the *decoded* string while
//! the grammar matches its JSON encoding. Matching is either a full match (XGrammar's
//! `Regex`) or a search (JSON Schema's `pattern`, which is not anchored unless it says so).
//!
//! Parsing is linear, without recursion: groups live on an explicit stack, limited to
//! [`MAX_GROUP_NESTING`] levels. Repetition bounds are kept in [`Expr::repeat`], never
//! unrolled.

mod dfa;

pub use dfa::CodePointDfa;

use crate::frontend::{Span, SyntaxError};
use crate::grammar::{CharClass, Expr, MAX_CODE_POINT};

/// The deepest group nesting a pattern may have.
pub const MAX_GROUP_NESTING: usize = 200;

/// The largest repetition bound (`{m,n}`); larger bounds are an error.
pub const MAX_REPEAT_BOUND: u32 = 1_000_000;

/// A parsed regular expression (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regex {
    node: Node,
}

/// A regex syntax tree node.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Empty,
    /// One code point from sorted, disjoint ranges.
    Class(Vec<(u32, u32)>),
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Repeat(Box<Node>, u32, Option<u32>),
    /// `^`, with its position.
    Start(usize),
    /// `$`, with its position.
    End(usize),
}

/// How a pattern must match a whole string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchoring {
    /// The whole string matches the pattern; `^` and `$` at its ends are no-ops (XGrammar's
    /// `Regex`, the `compile_regex` API).
    FullMatch,
    /// Some substring matches the pattern, as in JSON Schema's `pattern` (ECMA-262
    /// `RegExp.prototype.test`): an unanchored end may be preceded or followed by anything.
    Search,
}

/// Why a pattern was rejected: a syntax error, or a construct a grammar cannot enforce.
///
/// Its `Display` is `1:column: message` with the pattern and a caret under the construct.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct RegexError {
    error: SyntaxError,
    unsupported: bool,
}

impl RegexError {
    /// The underlying syntax error (message, span, line and column).
    pub fn syntax(&self) -> &SyntaxError {
        &self.error
    }
    /// Whether the pattern is valid ECMA-262 but uses a construct a grammar cannot enforce
    /// (backreference, lookaround, word boundary, anchor in the middle); such patterns are
    /// relaxed, not rejected, by the JSON Schema front-end.
    pub fn is_unsupported(&self) -> bool {
        self.unsupported
    }
    /// The offending part of the pattern (byte offsets).
    pub fn span(&self) -> Span {
        self.error.span()
    }
}

/// Parses `pattern` and lowers it to an expression over UTF-8 text with full-match semantics.
///
/// # Errors
/// [`RegexError`] for malformed patterns and unsupported constructs.
///
/// # Example
/// ```
/// use maskforge::regex_to_expr;
/// let e = regex_to_expr(r"^[a-c]{2,}x?$")?;
/// assert!(regex_to_expr(r"(a)\1").unwrap_err().to_string().contains("backreference"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn regex_to_expr(pattern: &str) -> Result<Expr, RegexError> {
    Regex::parse(pattern)?.to_expr(pattern, Anchoring::FullMatch, &mut |c| Expr::Class(c.clone()))
}

// ---------------------------------------------------------------------------------------
// Parsing

struct Frame {
    alts: Vec<Node>,
    cur: Vec<Node>,
    open: usize,
    /// Whether characters in this group match in either case (the `i` flag, from the
    /// pattern's flags, a `(?i)` before them, or a `(?i:...)` group).
    ignore_case: bool,
}

struct P<'a> {
    text: &'a str,
    chars: Vec<(usize, char)>,
    i: usize,
    /// The `i` flag of the whole pattern.
    ignore_case: bool,
}

const LINE_TERMINATORS: [(u32, u32); 3] = [(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)];
const DIGIT: [(u32, u32); 1] = [(0x30, 0x39)];
const WORD: [(u32, u32); 4] = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)];
const SPACE: [(u32, u32); 10] = [
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
];

fn complement(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    CharClass::new(ranges.iter().copied(), true).resolved_ranges()
}

fn canonical(ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    CharClass::new(ranges, false).ranges().to_vec()
}

/// No code point at or above this has a different upper or lower case (the last cased
/// script, Adlam, ends at U+1E943).
const LAST_CASED: u32 = 0x1E944;

/// `ranges` with every character's simple lower- and uppercase forms added: the characters
/// that match one of `ranges` when case is ignored.
///
/// Walking every code point of a class (up to ~125k for `[^a]`) with `to_lowercase` was the
/// cost of a case-insensitive pattern. ASCII-only classes are folded arithmetically; others
/// look up the characters of each range in [`case_pairs`], the table of every character whose
/// simple case forms differ from it, built once. Both give what the walk gave (a property
/// test checks it against the walk).
fn fold_case(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = ranges.to_vec();
    if ranges.iter().all(|&(_, hi)| hi < 0x80) {
        // In ASCII the only case pairs are the letters, 32 apart.
        for &(lo, hi) in ranges {
            for (from, to, shift) in
                [(u32::from(b'a'), u32::from(b'z'), -32i64), (u32::from(b'A'), u32::from(b'Z'), 32)]
            {
                let (l, h) = (lo.max(from), hi.min(to));
                if l <= h {
                    out.push(((i64::from(l) + shift) as u32, (i64::from(h) + shift) as u32));
                }
            }
        }
        return canonical(out);
    }
    let pairs = case_pairs();
    for &(lo, hi) in ranges {
        let first = pairs.partition_point(|&(c, _)| c < lo);
        out.extend(pairs[first..].iter().take_while(|&&(c, _)| c <= hi).map(|&(_, other)| (other, other)));
    }
    canonical(out)
}

/// Every `(c, other)` where `other` is the single-character lower- or uppercase form of `c`
/// and differs from it, sorted by `c`: about 2,800 pairs below [`LAST_CASED`].
fn case_pairs() -> &'static [(u32, u32)] {
    static PAIRS: std::sync::OnceLock<Vec<(u32, u32)>> = std::sync::OnceLock::new();
    PAIRS.get_or_init(|| {
        let mut pairs = Vec::new();
        for c in (0..=LAST_CASED).filter_map(char::from_u32) {
            for other in [single(c.to_lowercase()), single(c.to_uppercase())].into_iter().flatten() {
                if other != c {
                    pairs.push((c as u32, other as u32));
                }
            }
        }
        pairs
    })
}

/// The only character of a case mapping, when it maps to one (`ß` uppercases to `SS`).
fn single(mut mapping: impl Iterator<Item = char>) -> Option<char> {
    let c = mapping.next()?;
    mapping.next().is_none().then_some(c)
}

/// What a flag group `(?...` sets.
enum Modifiers {
    /// `(?i:...)` / `(?-i:...)`: a group with the flag on or off.
    Group(bool),
    /// `(?i)` / `(?-i)`: the flag for the rest of the enclosing group.
    Rest(bool),
}

impl<'a> P<'a> {
    fn pos(&self) -> usize {
        self.chars.get(self.i).map_or(self.text.len(), |c| c.0)
    }
    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).map(|c| c.1)
    }
    fn peek_at(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).map(|c| c.1)
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek();
        self.i += 1;
        c
    }
    fn err(&self, start: usize, end: usize, msg: impl Into<String>) -> RegexError {
        RegexError { error: SyntaxError::new(self.text, Span::new(start, end), msg), unsupported: false }
    }
    fn unsupported(&self, start: usize, end: usize, what: &str) -> RegexError {
        let msg = format!("{what} cannot be enforced by a grammar");
        RegexError { error: SyntaxError::new(self.text, Span::new(start, end), msg), unsupported: true }
    }

    fn parse(mut self) -> Result<Node, RegexError> {
        let top = Frame { alts: Vec::new(), cur: Vec::new(), open: 0, ignore_case: self.ignore_case };
        let mut stack: Vec<Frame> = vec![top];
        while let Some(c) = self.peek() {
            let start = self.pos();
            match c {
                '(' => {
                    self.bump();
                    let mut ignore_case = stack.last().unwrap().ignore_case;
                    if self.peek() == Some('?') {
                        match (self.peek_at(1), self.peek_at(2)) {
                            (Some(':'), _) => self.i += 2,
                            (Some('i' | '-'), _) => match self.modifiers(start)? {
                                Modifiers::Group(on) => ignore_case = on,
                                Modifiers::Rest(on) => {
                                    stack.last_mut().unwrap().ignore_case = on;
                                    continue;
                                }
                            },
                            (Some('='), _) | (Some('!'), _) => {
                                return Err(self.unsupported(start, start + 3, "lookahead `(?=`/`(?!`"))
                            }
                            (Some('<'), Some('=')) | (Some('<'), Some('!')) => {
                                return Err(self.unsupported(start, start + 4, "lookbehind `(?<=`/`(?<!`"))
                            }
                            (Some('<'), _) => {
                                self.i += 2;
                                let name_start = self.pos();
                                while let Some(c) = self.peek() {
                                    if c == '>' {
                                        break;
                                    }
                                    if !(c.is_alphanumeric() || c == '_' || c == '$') {
                                        return Err(self.err(
                                            self.pos(),
                                            self.pos() + c.len_utf8(),
                                            "invalid group name",
                                        ));
                                    }
                                    self.bump();
                                }
                                if self.peek() != Some('>') || self.pos() == name_start {
                                    return Err(self.err(start, self.pos(), "unterminated or empty group name"));
                                }
                                self.bump();
                            }
                            _ => {
                                return Err(self.err(
                                    start,
                                    start + 2,
                                    "invalid group: `(?` must start `(?:`, `(?<name>`, `(?i:`, `(?-i:` or `(?i)`",
                                ))
                            }
                        }
                    }
                    if stack.len() > MAX_GROUP_NESTING {
                        return Err(self.err(
                            start,
                            start + 1,
                            format!("groups nested deeper than {MAX_GROUP_NESTING}"),
                        ));
                    }
                    stack.push(Frame { alts: Vec::new(), cur: Vec::new(), open: start, ignore_case });
                }
                ')' => {
                    self.bump();
                    if stack.len() == 1 {
                        return Err(self.err(start, start + 1, "unmatched `)`"));
                    }
                    let frame = stack.pop().unwrap();
                    let node = finish(frame);
                    stack.last_mut().unwrap().cur.push(node);
                    if let Some(q) = self.quantifier()? {
                        apply(stack.last_mut().unwrap(), q);
                    }
                }
                '|' => {
                    self.bump();
                    let top = stack.last_mut().unwrap();
                    let cur = std::mem::take(&mut top.cur);
                    top.alts.push(seq(cur));
                }
                '*' | '+' | '?' => return Err(self.err(start, start + 1, "nothing to repeat")),
                '{' if self.try_bounds().is_some() => return Err(self.err(start, start + 1, "nothing to repeat")),
                '^' => {
                    self.bump();
                    stack.last_mut().unwrap().cur.push(Node::Start(start));
                    if let Some(q) = self.quantifier()? {
                        let _ = q;
                        return Err(self.err(start, self.pos(), "an anchor cannot be repeated"));
                    }
                }
                '$' => {
                    self.bump();
                    stack.last_mut().unwrap().cur.push(Node::End(start));
                    if self.quantifier()?.is_some() {
                        return Err(self.err(start, self.pos(), "an anchor cannot be repeated"));
                    }
                }
                _ => {
                    let atom = self.atom(stack.last().unwrap().ignore_case)?;
                    stack.last_mut().unwrap().cur.push(atom);
                    if let Some(q) = self.quantifier()? {
                        apply(stack.last_mut().unwrap(), q);
                    }
                }
            }
        }
        if stack.len() > 1 {
            let open = stack.last().unwrap().open;
            return Err(self.err(open, open + 1, "unclosed group"));
        }
        Ok(finish(stack.pop().unwrap()))
    }

    /// Reads `{m}`, `{m,}` or `{m,n}` at the current position without consuming it; returns
    /// the bounds and the number of characters.
    fn try_bounds(&self) -> Option<(u32, Option<u32>, usize)> {
        let mut k = self.i;
        if self.chars.get(k)?.1 != '{' {
            return None;
        }
        k += 1;
        let num = |k: &mut usize| -> Option<Option<u64>> {
            let s = *k;
            let mut v: u64 = 0;
            while let Some(&(_, c)) = self.chars.get(*k) {
                let Some(d) = c.to_digit(10) else { break };
                v = (v * 10 + d as u64).min(u64::from(u32::MAX) + 1);
                *k += 1;
            }
            Some((*k > s).then_some(v))
        };
        let min = num(&mut k)??;
        let max = match self.chars.get(k)?.1 {
            '}' => Some(min),
            ',' => {
                k += 1;
                num(&mut k)?
            }
            _ => return None,
        };
        if self.chars.get(k)?.1 != '}' {
            return None;
        }
        let clamp = |v: u64| v.min(u64::from(u32::MAX)) as u32;
        Some((clamp(min), max.map(clamp), k + 1 - self.i))
    }

    fn quantifier(&mut self) -> Result<Option<(u32, Option<u32>)>, RegexError> {
        let start = self.pos();
        let q = match self.peek() {
            Some('*') => {
                self.bump();
                (0, None)
            }
            Some('+') => {
                self.bump();
                (1, None)
            }
            Some('?') => {
                self.bump();
                (0, Some(1))
            }
            Some('{') => match self.try_bounds() {
                Some((min, max, len)) => {
                    self.i += len;
                    if max.is_some_and(|m| m < min) {
                        return Err(self.err(start, self.pos(), "repetition bounds out of order"));
                    }
                    if min > MAX_REPEAT_BOUND || max.is_some_and(|m| m > MAX_REPEAT_BOUND) {
                        return Err(self.err(start, self.pos(), format!("repetition bound above {MAX_REPEAT_BOUND}")));
                    }
                    (min, max)
                }
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        // The lazy form denotes the same language.
        if self.peek() == Some('?') {
            self.bump();
        }
        if matches!(self.peek(), Some('*' | '+' | '?')) || (self.peek() == Some('{') && self.try_bounds().is_some()) {
            return Err(self.err(
                self.pos(),
                self.pos() + 1,
                "nothing to repeat (a quantifier cannot follow a quantifier)",
            ));
        }
        Ok(Some(q))
    }

    fn atom(&mut self, ignore_case: bool) -> Result<Node, RegexError> {
        let start = self.pos();
        let c = self.bump().expect("caller checked");
        let fold = |ranges: Vec<(u32, u32)>| if ignore_case { fold_case(&ranges) } else { ranges };
        Ok(match c {
            '.' => Node::Class(complement(&LINE_TERMINATORS)),
            '[' => Node::Class(self.class(start, ignore_case)?),
            '\\' => match self.escape(start, false)? {
                Esc::Class(r) => Node::Class(fold(r)),
                Esc::Char(c) => Node::Class(fold(vec![(c, c)])),
            },
            c => Node::Class(fold(vec![(c as u32, c as u32)])),
        })
    }

    /// After `(?` and a flag letter or `-`: `i)` / `-i)` (the flag for the rest of the
    /// enclosing group) or `i:` / `-i:` (a group with the flag set or cleared). Only the `i`
    /// flag is supported.
    fn modifiers(&mut self, start: usize) -> Result<Modifiers, RegexError> {
        self.i += 1; // `?`
        let on = self.peek() != Some('-');
        if !on {
            self.bump();
        }
        if self.bump() != Some('i') {
            return Err(self.err(
                start,
                self.pos(),
                "only the `i` flag can be set in a group: `(?i:`, `(?-i:`, `(?i)`",
            ));
        }
        match self.bump() {
            Some(':') => Ok(Modifiers::Group(on)),
            Some(')') => Ok(Modifiers::Rest(on)),
            _ => Err(self.err(start, self.pos(), "a flag group is `(?i:...)`, `(?-i:...)` or `(?i)`")),
        }
    }

    /// After `[`: the class body up to and including `]`. With `ignore_case`, the class is
    /// closed under case before it is negated (ECMA-262: `[^a]` with `i` matches neither `a`
    /// nor `A`).
    fn class(&mut self, open: usize, ignore_case: bool) -> Result<Vec<(u32, u32)>, RegexError> {
        let negated = self.peek() == Some('^');
        if negated {
            self.bump();
        }
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        loop {
            let start = self.pos();
            let Some(c) = self.bump() else { return Err(self.err(open, open + 1, "unclosed character class")) };
            let lo = match c {
                ']' => break,
                '\\' => self.escape(start, true)?,
                c => Esc::Char(c as u32),
            };
            // A range `lo-hi`, unless `-` is last or the bound is a class escape.
            if self.peek() == Some('-') && self.peek_at(1).is_some_and(|c| c != ']') {
                if let Esc::Char(lo) = lo {
                    self.bump();
                    let hi_start = self.pos();
                    let hi = match self.bump().unwrap() {
                        '\\' => self.escape(hi_start, true)?,
                        c => Esc::Char(c as u32),
                    };
                    match hi {
                        Esc::Char(hi) if hi >= lo => ranges.push((lo, hi)),
                        Esc::Char(_) => return Err(self.err(start, self.pos(), "character class range out of order")),
                        Esc::Class(r) => {
                            // `[a-\d]`: Annex B reads `-` as a literal here.
                            ranges.push((lo, lo));
                            ranges.push(('-' as u32, '-' as u32));
                            ranges.extend(r);
                        }
                    }
                    continue;
                }
            }
            match lo {
                Esc::Char(c) => ranges.push((c, c)),
                Esc::Class(r) => ranges.extend(r),
            }
        }
        let ranges = if ignore_case { fold_case(&ranges) } else { canonical(ranges) };
        Ok(if negated { complement(&ranges) } else { ranges })
    }

    fn hex(&mut self, n: usize, start: usize) -> Result<u32, RegexError> {
        let mut v = 0u32;
        for _ in 0..n {
            match self.peek().and_then(|c| c.to_digit(16)) {
                Some(d) => {
                    v = v * 16 + d;
                    self.bump();
                }
                None => return Err(self.err(start, self.pos() + 1, format!("expected {n} hexadecimal digits"))),
            }
        }
        Ok(v)
    }

    /// After `\`: one escape. `in_class` selects the class-only meanings (`\b` = backspace,
    /// `\-`).
    fn escape(&mut self, start: usize, in_class: bool) -> Result<Esc, RegexError> {
        let Some(c) = self.bump() else { return Err(self.err(start, start + 1, "pattern ends with `\\`")) };
        Ok(match c {
            'd' => Esc::Class(DIGIT.to_vec()),
            'D' => Esc::Class(complement(&DIGIT)),
            'w' => Esc::Class(WORD.to_vec()),
            'W' => Esc::Class(complement(&WORD)),
            's' => Esc::Class(SPACE.to_vec()),
            'S' => Esc::Class(complement(&SPACE)),
            'b' if in_class => Esc::Char(8),
            'b' | 'B' => return Err(self.unsupported(start, self.pos(), "word boundary `\\b`/`\\B`")),
            't' => Esc::Char(9),
            'n' => Esc::Char(10),
            'v' => Esc::Char(11),
            'f' => Esc::Char(12),
            'r' => Esc::Char(13),
            '0' if !self.peek().is_some_and(|c| c.is_ascii_digit()) => Esc::Char(0),
            '1'..='9' if !in_class => return Err(self.unsupported(start, self.pos(), "backreference")),
            '0'..='9' => return Err(self.err(start, self.pos(), "octal escapes are not supported")),
            'k' if self.peek() == Some('<') => {
                return Err(self.unsupported(start, self.pos() + 1, "named backreference `\\k<...>`"))
            }
            'c' => match self.peek() {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.bump();
                    Esc::Char(l as u32 % 32)
                }
                _ => Esc::Char('\\' as u32), // Annex B: `\c` not followed by a letter is `\` `c`
            },
            'x' => Esc::Char(self.hex(2, start)?),
            'u' => {
                let cp = if self.peek() == Some('{') {
                    self.bump();
                    let mut v: u32 = 0;
                    let mut n = 0;
                    while let Some(d) = self.peek().and_then(|c| c.to_digit(16)) {
                        v = v.saturating_mul(16).saturating_add(d);
                        n += 1;
                        self.bump();
                    }
                    if n == 0 || self.bump() != Some('}') || v > MAX_CODE_POINT {
                        return Err(self.err(start, self.pos(), "invalid `\\u{...}` escape"));
                    }
                    v
                } else {
                    let hi = self.hex(4, start)?;
                    if (0xD800..0xDC00).contains(&hi) && self.peek() == Some('\\') && self.peek_at(1) == Some('u') {
                        let save = self.i;
                        self.i += 2;
                        match self.hex(4, start) {
                            Ok(lo) if (0xDC00..0xE000).contains(&lo) => 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00),
                            _ => {
                                self.i = save;
                                hi
                            }
                        }
                    } else {
                        hi
                    }
                };
                if (0xD800..0xE000).contains(&cp) {
                    return Err(self.err(start, self.pos(), "a lone surrogate cannot be matched in UTF-8 text"));
                }
                Esc::Char(cp)
            }
            'p' | 'P' => {
                if self.bump() != Some('{') {
                    return Err(self.err(start, self.pos(), "expected `{` after `\\p`"));
                }
                let name_start = self.pos();
                while self.peek().is_some_and(|c| c != '}') {
                    self.bump();
                }
                let name = &self.text[name_start..self.pos()];
                if self.bump() != Some('}') {
                    return Err(self.err(start, self.pos(), "unclosed `\\p{`"));
                }
                let Some(r) = unicode_property(name) else {
                    return Err(self.err(start, self.pos(), format!("unknown Unicode property `{name}`")));
                };
                Esc::Class(if c == 'P' { complement(&r) } else { r })
            }
            c => Esc::Char(c as u32),
        })
    }
}

enum Esc {
    Char(u32),
    Class(Vec<(u32, u32)>),
}

/// The code points of a Unicode property (`L`, `Letter`, `Script=Greek`, `sc=Latn`, ...), from
/// `regex-syntax`'s tables.
fn unicode_property(name: &str) -> Option<Vec<(u32, u32)>> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '=') {
        return None;
    }
    let hir = regex_syntax::ParserBuilder::new().build().parse(&format!("\\p{{{name}}}")).ok()?;
    match hir.kind() {
        regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(c)) => {
            Some(c.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect())
        }
        _ => None,
    }
}

fn seq(mut items: Vec<Node>) -> Node {
    match items.len() {
        0 => Node::Empty,
        1 => items.pop().unwrap(),
        _ => Node::Seq(items),
    }
}

fn finish(mut frame: Frame) -> Node {
    if frame.alts.is_empty() {
        return seq(frame.cur);
    }
    frame.alts.push(seq(frame.cur));
    Node::Alt(frame.alts)
}

fn apply(frame: &mut Frame, (min, max): (u32, Option<u32>)) {
    let atom = frame.cur.pop().expect("a quantifier follows an atom");
    frame.cur.push(Node::Repeat(Box::new(atom), min, max));
}

// ---------------------------------------------------------------------------------------
// Lowering

impl Regex {
    /// Parses an ECMA-262 pattern.
    ///
    /// # Errors
    /// [`RegexError`]: malformed syntax, or a construct that cannot be enforced
    /// ([`RegexError::is_unsupported`]).
    pub fn parse(pattern: &str) -> Result<Regex, RegexError> {
        Regex::parse_with_flags(pattern, false)
    }

    /// Parses an ECMA-262 pattern with the `i` flag (case-insensitive matching) on or off.
    ///
    /// # Errors
    /// As [`Regex::parse`].
    pub fn parse_with_flags(pattern: &str, ignore_case: bool) -> Result<Regex, RegexError> {
        let p = P { text: pattern, chars: pattern.char_indices().collect(), i: 0, ignore_case };
        Ok(Regex { node: p.parse()? })
    }

    /// Lowers the pattern: `class` maps each character class (never empty; sorted ranges) to
    /// the expression matching one character of it. `pattern` is the source text, used for
    /// error positions.
    ///
    /// # Errors
    /// A [`RegexError`] (unsupported) for an anchor that is not at an end of the pattern.
    pub fn to_expr(
        &self,
        pattern: &str,
        anchoring: Anchoring,
        class: &mut dyn FnMut(&CharClass) -> Expr,
    ) -> Result<Expr, RegexError> {
        let alts: Vec<&Node> = match &self.node {
            Node::Alt(alts) => alts.iter().collect(),
            n => vec![n],
        };
        let search = anchoring == Anchoring::Search;
        // A search puts "any text" before an alternative not anchored at its start, and after
        // one not anchored at its end. Alternatives alike in that share one such loop: a
        // loop per alternative would make every position of the text start as many parser
        // threads as there are alternatives (and defeat subset construction).
        let mut groups: Vec<((bool, bool), Vec<Expr>)> = Vec::new();
        for alt in alts {
            let items: &[Node] = match alt {
                Node::Seq(items) => items,
                n => std::slice::from_ref(n),
            };
            let mut lo = 0;
            let mut hi = items.len();
            while lo < hi && matches!(items[lo], Node::Start(_)) {
                lo += 1;
            }
            while hi > lo && matches!(items[hi - 1], Node::End(_)) {
                hi -= 1;
            }
            let parts = items[lo..hi].iter().map(|item| lower(item, pattern, class)).collect::<Result<Vec<_>, _>>()?;
            let anchors = if search { (lo > 0, hi < items.len()) } else { (true, true) };
            match groups.iter_mut().find(|(a, _)| *a == anchors) {
                Some((_, bodies)) => bodies.push(Expr::Seq(parts)),
                None => groups.push((anchors, vec![Expr::Seq(parts)])),
            }
        }
        let mut out = Vec::with_capacity(groups.len());
        for ((start_anchored, end_anchored), mut bodies) in groups {
            if start_anchored && end_anchored {
                out.append(&mut bodies);
                continue;
            }
            let mut any = || Expr::star(class(&CharClass::new([(0, MAX_CODE_POINT)], false)));
            let mut parts = Vec::with_capacity(3);
            if !start_anchored {
                parts.push(any());
            }
            parts.push(if bodies.len() == 1 { bodies.pop().unwrap() } else { Expr::Choice(bodies) });
            if !end_anchored {
                parts.push(any());
            }
            out.push(Expr::Seq(parts));
        }
        Ok(if out.len() == 1 { out.pop().unwrap() } else { Expr::Choice(out) })
    }

    /// The least and largest number of characters a full match has (`None`: unbounded).
    pub fn length_bounds(&self) -> (u32, Option<u32>) {
        bounds(&self.node)
    }
}

impl Regex {
    /// Whether `text` matches with `anchoring` (a reference matcher for the validator that
    /// filters `enum` values; polynomial: sets of positions, no backtracking).
    pub fn is_match(&self, text: &str, anchoring: Anchoring) -> bool {
        let chars: Vec<u32> = text.chars().map(|c| c as u32).collect();
        let n = chars.len();
        let mut start = vec![false; n + 1];
        match anchoring {
            Anchoring::FullMatch => start[0] = true,
            Anchoring::Search => start.iter_mut().for_each(|s| *s = true),
        }
        let full = anchoring == Anchoring::FullMatch;
        let end = positions(&self.node, &chars, start, full);
        if full {
            end[n]
        } else {
            end.iter().any(|&e| e)
        }
    }
}

/// The end positions of matches of `n` starting at the positions in `from`. In full-match
/// mode `^`/`$` at the ends are no-ops, as in [`Regex::to_expr`].
fn positions(n: &Node, s: &[u32], from: Vec<bool>, full: bool) -> Vec<bool> {
    let len = s.len();
    match n {
        Node::Empty => from,
        Node::Start(_) => {
            let mut out = vec![false; len + 1];
            out[0] = from[0];
            if full {
                return from;
            }
            out
        }
        Node::End(_) => {
            let mut out = vec![false; len + 1];
            out[len] = from[len];
            if full {
                return from;
            }
            out
        }
        Node::Class(r) => {
            let mut out = vec![false; len + 1];
            for i in 0..len {
                if from[i] && r.iter().any(|&(lo, hi)| lo <= s[i] && s[i] <= hi) {
                    out[i + 1] = true;
                }
            }
            out
        }
        Node::Seq(items) => items.iter().fold(from, |cur, x| positions(x, s, cur, full)),
        Node::Alt(alts) => {
            let mut out = vec![false; len + 1];
            for a in alts {
                for (o, x) in out.iter_mut().zip(positions(a, s, from.clone(), full)) {
                    *o |= x;
                }
            }
            out
        }
        Node::Repeat(inner, min, max) => {
            let mut cur = from;
            let mut k = 0;
            while k < *min {
                cur = positions(inner, s, cur, full);
                k += 1;
                if !cur.iter().any(|&x| x) {
                    return cur;
                }
            }
            let mut acc = cur.clone();
            while !max.is_some_and(|m| k >= m) {
                let next = positions(inner, s, cur, full);
                let mut grew = false;
                for (a, &x) in acc.iter_mut().zip(&next) {
                    if x && !*a {
                        *a = true;
                        grew = true;
                    }
                }
                if !grew {
                    break;
                }
                cur = next;
                k += 1;
            }
            acc
        }
    }
}

fn bounds(n: &Node) -> (u32, Option<u32>) {
    match n {
        Node::Empty | Node::Start(_) | Node::End(_) => (0, Some(0)),
        Node::Class(_) => (1, Some(1)),
        Node::Seq(items) => items
            .iter()
            .map(bounds)
            .fold((0, Some(0)), |(a, b), (c, d)| (a.saturating_add(c), b.zip(d).and_then(|(b, d)| b.checked_add(d)))),
        Node::Alt(alts) => {
            let v: Vec<_> = alts.iter().map(bounds).collect();
            let min = v.iter().map(|x| x.0).min().unwrap_or(0);
            let max = v.iter().try_fold(0u32, |m, x| x.1.map(|x| m.max(x)));
            (min, max)
        }
        Node::Repeat(inner, min, max) => {
            let (a, b) = bounds(inner);
            let hi = match (b, max) {
                (Some(0), _) => Some(0),
                (Some(b), Some(m)) => b.checked_mul(*m),
                _ => None,
            };
            (a.saturating_mul(*min), hi)
        }
    }
}

fn lower(n: &Node, pattern: &str, class: &mut dyn FnMut(&CharClass) -> Expr) -> Result<Expr, RegexError> {
    Ok(match n {
        Node::Empty => Expr::Empty,
        Node::Class(r) if r.is_empty() => Expr::Choice(Vec::new()),
        Node::Class(r) => class(&CharClass::new(r.iter().copied(), false)),
        Node::Seq(items) => Expr::Seq(items.iter().map(|x| lower(x, pattern, class)).collect::<Result<_, _>>()?),
        Node::Alt(alts) => Expr::Choice(alts.iter().map(|x| lower(x, pattern, class)).collect::<Result<_, _>>()?),
        Node::Repeat(inner, min, max) => Expr::repeat(lower(inner, pattern, class)?, *min, *max),
        Node::Start(at) | Node::End(at) => {
            let what = if matches!(n, Node::Start(_)) {
                "`^` not at the start of the pattern"
            } else {
                "`$` not at the end of the pattern"
            };
            let msg = format!("{what} cannot be enforced by a grammar");
            return Err(RegexError {
                error: SyntaxError::new(pattern, Span::new(*at, *at + 1), msg),
                unsupported: true,
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fold_case` as it was written first: every code point of every range, one at a time.
    fn fold_case_by_walking(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
        let mut out = ranges.to_vec();
        for &(lo, hi) in ranges {
            for c in (lo..=hi.min(LAST_CASED)).filter_map(char::from_u32) {
                for other in [single(c.to_lowercase()), single(c.to_uppercase())].into_iter().flatten() {
                    if other != c {
                        out.push((other as u32, other as u32));
                    }
                }
            }
        }
        canonical(out)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn fold_case_equals_the_walk(
            raw in proptest::collection::vec((0u32..0x80, 0u32..0x80), 1..4),
            wide in proptest::collection::vec((0u32..0x2000, 0u32..0x300), 0..3),
            far in proptest::option::of((0u32..0x11_0000, 0u32..0x2_0000)),
        ) {
            // ASCII-only sets (the arithmetic path) and sets reaching further (the table).
            let ascii: Vec<(u32, u32)> = raw.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
            let mut mixed = ascii.clone();
            mixed.extend(wide.iter().map(|&(lo, len)| (lo, lo + len)));
            mixed.extend(far.map(|(lo, len)| (lo, (lo + len).min(MAX_CODE_POINT))));
            for ranges in [canonical(ascii), canonical(mixed)] {
                proptest::prop_assert_eq!(fold_case(&ranges), fold_case_by_walking(&ranges), "{:?}", ranges);
            }
        }
    }

    #[test]
    fn fold_case_of_every_code_point_equals_the_walk() {
        let all = [(0, MAX_CODE_POINT)];
        assert_eq!(fold_case(&all), fold_case_by_walking(&all));
        let not_a = canonical(vec![(0, 0x60), (0x62, MAX_CODE_POINT)]);
        assert_eq!(fold_case(&not_a), fold_case_by_walking(&not_a));
    }

    fn cls(lo: char, hi: char) -> Expr {
        Expr::class([(lo as u32, hi as u32)], false)
    }

    #[test]
    fn parses_basic_constructs() {
        assert_eq!(regex_to_expr("ab").unwrap(), Expr::Seq(vec![cls('a', 'a'), cls('b', 'b')]));
        let e = regex_to_expr("^a{2,5}?$").unwrap();
        assert_eq!(e, Expr::Seq(vec![Expr::repeat(cls('a', 'a'), 2, Some(5))]));
        assert!(regex_to_expr("(?:a|b)*(?<n>c)").is_ok());
        assert!(regex_to_expr("a{,5}").is_ok(), "`{{` that is not a quantifier is a literal");
        assert!(regex_to_expr(r"[\d\-x-z]\u{1F600}\uD83D\uDE00\x41\cJ\p{L}").is_ok());
    }

    #[test]
    fn rejects_unenforceable_constructs_with_positions() {
        for (p, what, col) in [
            (r"(a)\1", "backreference", 4),
            (r"a(?=b)", "lookahead", 2),
            (r"(?<!x)a", "lookbehind", 1),
            (r"\bword", "word boundary", 1),
            (r"a^b", "`^` not at the start", 2),
        ] {
            let e = regex_to_expr(p).unwrap_err();
            assert!(e.is_unsupported(), "{p}");
            assert!(e.to_string().contains(what), "{p}: {e}");
            assert_eq!(e.syntax().column(), col, "{p}: {e}");
        }
        for p in ["(a", "a)", "*a", "a**", "[a", "[z-a]", r"\u12", "a{3,2}", r"\p{Nope}"] {
            let e = regex_to_expr(p).unwrap_err();
            assert!(!e.is_unsupported(), "{p}: {e}");
        }
    }

    #[test]
    fn reference_matcher() {
        let r = Regex::parse("^[a-z]+@[a-z]+\\.com$").unwrap();
        assert!(r.is_match("ab@cd.com", Anchoring::Search));
        assert!(!r.is_match("ab@cd.co", Anchoring::Search));
        let r = Regex::parse("b{2}").unwrap();
        assert!(r.is_match("abba", Anchoring::Search) && !r.is_match("abba", Anchoring::FullMatch));
        assert!(Regex::parse("(a|ab)(c|bcd)d*").unwrap().is_match("abcd", Anchoring::FullMatch));
    }

    #[test]
    fn length_bounds() {
        assert_eq!(Regex::parse("^[0-9]{3}-[0-9]{2,4}$").unwrap().length_bounds(), (6, Some(8)));
        assert_eq!(Regex::parse("a+|b").unwrap().length_bounds(), (1, None));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let p = "(".repeat(10_000) + &")".repeat(10_000);
        assert!(regex_to_expr(&p).unwrap_err().to_string().contains("nested"));
    }
}
