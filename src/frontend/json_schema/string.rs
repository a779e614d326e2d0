//! Strings: the content of a JSON string as characters, each written raw or escaped;
//! `minLength`/`maxLength` in code points; `pattern` and `format` through the regex
//! front-end; keys that differ from a set of names.
//!
//! A character class of the decoded string becomes [`json_char`]: the class's characters that
//! may appear raw (not `"`, `\` or a control character), plus the escapes that decode into the
//! class: `\"`, `\\`, `\/`, `\b \f \n \r \t`, and `\uXXXX` (four hex digits in either case,
//! digit-level ranges as for numbers; surrogate pairs for characters beyond the BMP). Printable
//! ASCII other than `"` and `\` is accepted raw only: `\u0041` for `A` is valid JSON that no
//! serializer writes, and excluding it keeps the expressions small.

use super::format;
use super::length::MAX_PATTERN_DFA_STATES;
use super::lower::{choice, Lowerer};
use super::model::{Field, Keywords, Num};
use super::number::fixed_range;
use super::SchemaError;
use crate::frontend::regex::{Anchoring, Regex};
use crate::grammar::{CharClass, Expr, MAX_CODE_POINT};

/// The code points a JSON string holds raw: not `"`, `\` or a control character.
const RAW: [(u32, u32); 3] = [(0x20, 0x21), (0x23, 0x5B), (0x5D, MAX_CODE_POINT)];

fn intersect(a: &[(u32, u32)], b: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for &(alo, ahi) in a {
        for &(blo, bhi) in b {
            let (lo, hi) = (alo.max(blo), ahi.min(bhi));
            if lo <= hi {
                out.push((lo, hi));
            }
        }
    }
    CharClass::new(out, false).ranges().to_vec()
}

fn hex_digit(lo: u8, hi: u8) -> Expr {
    let mut r = Vec::new();
    if lo <= 9 {
        r.push((u32::from(b'0' + lo), u32::from(b'0' + hi.min(9))));
    }
    if hi >= 10 {
        let (a, b) = (lo.max(10) - 10, hi - 10);
        r.push((u32::from(b'a' + a), u32::from(b'a' + b)));
        r.push((u32::from(b'A' + a), u32::from(b'A' + b)));
    }
    Expr::class(r, false)
}

fn hex4(v: u32) -> [u8; 4] {
    [(v >> 12 & 15) as u8, (v >> 8 & 15) as u8, (v >> 4 & 15) as u8, (v & 15) as u8]
}

/// `\u` + four hex digits with a value in `[lo, hi]` (the leading `\` not included).
fn u_range(lo: u32, hi: u32) -> Expr {
    Expr::Seq(vec![Expr::literal("u"), fixed_range(&hex4(lo), &hex4(hi), 15, &hex_digit)])
}

/// Surrogate-pair escapes (`u` + high, `\u` + low) for code points `lo..=hi` above the BMP.
fn astral_range(lo: u32, hi: u32) -> Vec<Expr> {
    let hs = |c: u32| 0xD800 + ((c - 0x10000) >> 10);
    let ls = |c: u32| 0xDC00 + ((c - 0x10000) & 0x3FF);
    let pair =
        |h: (u32, u32), l: (u32, u32)| Expr::Seq(vec![u_range(h.0, h.1), Expr::literal("\\"), u_range(l.0, l.1)]);
    let (hlo, hhi) = (hs(lo), hs(hi));
    if hlo == hhi {
        return vec![pair((hlo, hlo), (ls(lo), ls(hi)))];
    }
    let mut out = vec![pair((hlo, hlo), (ls(lo), 0xDFFF))];
    if hlo + 1 < hhi {
        out.push(pair((hlo + 1, hhi - 1), (0xDC00, 0xDFFF)));
    }
    out.push(pair((hhi, hhi), (0xDC00, ls(hi))));
    out
}

const SHORT_ESCAPES: [(u32, u8); 8] =
    [(0x22, b'"'), (0x5C, b'\\'), (0x2F, b'/'), (0x08, b'b'), (0x0C, b'f'), (0x0A, b'n'), (0x0D, b'r'), (0x09, b't')];

/// The code points accepted in `\u` escapes: all but printable ASCII (other than `"`, `\`).
const ESCAPABLE: [(u32, u32); 5] = [(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C), (0x7F, 0xD7FF), (0xE000, MAX_CODE_POINT)];

/// `u` + four hex digits of any code point outside printable ASCII (or `"`, `\`); surrogates
/// are accepted in any combination here, as JSON parsers do.
fn nonplain_u() -> Expr {
    let h = || hex_digit(0, 15);
    Expr::Seq(vec![
        Expr::literal("u"),
        Expr::Choice(vec![
            Expr::Seq(vec![Expr::literal("00"), hex_digit(0, 1), h()]),
            Expr::literal("0022"),
            Expr::Seq(vec![Expr::literal("005"), hex_digit(12, 12)]),
            Expr::Seq(vec![Expr::literal("007"), hex_digit(15, 15)]),
            Expr::Seq(vec![Expr::literal("00"), hex_digit(8, 15), h()]),
            Expr::Seq(vec![Expr::literal("0"), hex_digit(1, 15), h(), h()]),
            Expr::Seq(vec![hex_digit(1, 15), h(), h(), h()]),
        ]),
    ])
}

/// One JSON string character (raw or escaped) whose decoded code point is in `class`.
pub(crate) fn json_char(class: &CharClass) -> Expr {
    let r = class.resolved_ranges();
    if r == [(0, MAX_CODE_POINT)] {
        return any_json_char();
    }
    let raw = intersect(&r, &RAW);
    let mut alts = Vec::new();
    if !raw.is_empty() {
        alts.push(Expr::class(raw, false));
    }
    let mut esc = Vec::new();
    let letters: Vec<(u32, u32)> = SHORT_ESCAPES
        .iter()
        .filter(|(c, _)| r.iter().any(|&(lo, hi)| lo <= *c && *c <= hi))
        .map(|&(_, l)| (u32::from(l), u32::from(l)))
        .collect();
    if !letters.is_empty() {
        esc.push(Expr::class(letters, false));
    }
    let escapable = intersect(&r, &ESCAPABLE);
    if escapable == ESCAPABLE {
        // Every character that may be `\u`-escaped: one compact expression.
        esc.push(nonplain_u());
    }
    for (lo, hi) in if escapable == ESCAPABLE { Vec::new() } else { escapable } {
        if lo <= 0xFFFF {
            esc.push(u_range(lo, hi.min(0xFFFF)));
        }
        if hi >= 0x10000 {
            esc.extend(astral_range(lo.max(0x10000), hi));
        }
    }
    if !esc.is_empty() {
        alts.push(Expr::Seq(vec![Expr::literal("\\"), choice(esc)]));
    }
    choice(alts)
}

/// Any JSON string character; a surrogate pair is one character (as `maxLength` counts).
pub(super) fn any_json_char() -> Expr {
    // A constant, built once: schemas use it at every string or number.
    static EXPR: std::sync::OnceLock<Expr> = std::sync::OnceLock::new();
    EXPR.get_or_init(build_any_json_char).clone()
}

fn build_any_json_char() -> Expr {
    let h = || hex_digit(0, 15);
    // `u` + a BMP code point that is not a surrogate, or a high + low surrogate pair.
    let u = Expr::Seq(vec![
        Expr::literal("u"),
        Expr::Choice(vec![
            Expr::Seq(vec![
                Expr::class(
                    [
                        ('0' as u32, '9' as u32),
                        ('a' as u32, 'c' as u32),
                        ('A' as u32, 'C' as u32),
                        ('e' as u32, 'f' as u32),
                        ('E' as u32, 'F' as u32),
                    ],
                    false,
                ),
                h(),
                h(),
                h(),
            ]),
            Expr::Seq(vec![hex_digit(13, 13), hex_digit(0, 7), h(), h()]),
            Expr::Seq(vec![
                hex_digit(13, 13),
                hex_digit(8, 11),
                h(),
                h(),
                Expr::literal("\\u"),
                hex_digit(13, 13),
                hex_digit(12, 15),
                h(),
                h(),
            ]),
        ]),
    ]);
    Expr::Choice(vec![
        Expr::class([(0x22, 0x22), (0x5C, 0x5C), (0, 0x1F)], true),
        Expr::Seq(vec![
            Expr::literal("\\"),
            Expr::Choice(vec![Expr::class(SHORT_ESCAPES.iter().map(|&(_, l)| (u32::from(l), u32::from(l))), false), u]),
        ]),
    ])
}

/// Any JSON string (with quotes).
pub(super) fn any_string() -> Expr {
    Expr::Seq(vec![Expr::literal("\""), Expr::star(any_json_char()), Expr::literal("\"")])
}

fn is_plain(c: char) -> bool {
    (' '..='~').contains(&c) && c != '"' && c != '\\'
}

/// The content of the string `s`: plain characters raw, the others raw or escaped.
pub(super) fn literal_content(s: &str) -> Expr {
    let mut items = Vec::new();
    let mut run = String::new();
    for c in s.chars() {
        if is_plain(c) {
            run.push(c);
        } else {
            if !run.is_empty() {
                items.push(Expr::literal(std::mem::take(&mut run)));
            }
            items.push(json_char(&CharClass::new([(c as u32, c as u32)], false)));
        }
    }
    if !run.is_empty() {
        items.push(Expr::literal(run));
    }
    Expr::Seq(items)
}

/// The string `s` with its quotes.
pub(super) fn literal_string(s: &str) -> Expr {
    Expr::Seq(vec![Expr::literal("\""), literal_content(s), Expr::literal("\"")])
}

/// Longest name [`key_not_in`] handles (the expression's depth grows with it).
const MAX_EXCLUDED_KEY_CHARS: usize = 200;

/// The content of any string that is none of `names` (as written by [`literal_content`]):
/// the complement of a trie. `tail` matches any string content, `escape_tail` a backslash
/// escape then any content (both shared rules, so each trie node costs a few nodes). `None`
/// when a name is too long.
pub(super) fn content_not_in(names: &[&str], tail: &Expr, escape_tail: &Expr) -> Option<Expr> {
    if names.iter().any(|n| n.chars().count() > MAX_EXCLUDED_KEY_CHARS) {
        return None;
    }
    let mut words: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
    words.sort_unstable();
    words.dedup();
    Some(not_in(&words, 0, tail, escape_tail))
}

/// Strings that are none of `words` (sorted, distinct, sharing their first `depth`
/// characters). Sorted words group by their next character, shortest first, so each trie
/// node is a split of a slice.
fn not_in(words: &[Vec<char>], depth: usize, tail: &Expr, escape_tail: &Expr) -> Expr {
    let terminal = words.first().is_some_and(|w| w.len() == depth);
    let rest = if terminal { &words[1..] } else { words };
    let mut alts = Vec::new();
    if !terminal {
        alts.push(Expr::Empty);
    }
    let mut next: Vec<char> = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let c = rest[i][depth];
        let j = i + rest[i..].iter().take_while(|w| w[depth] == c).count();
        next.push(c);
        let head = if is_plain(c) {
            Expr::Bytes(c.to_string().into_bytes())
        } else {
            json_char(&CharClass::new([(c as u32, c as u32)], false))
        };
        alts.push(Expr::Seq(vec![head, not_in(&rest[i..j], depth + 1, tail, escape_tail)]));
        i = j;
    }
    if next.iter().all(|&c| is_plain(c) && c != '/') {
        // No escape decodes to a plain character (by policy), so every escape differs.
        let raw = raw_except(&next);
        alts.push(Expr::Seq(vec![Expr::class(raw, false), tail.clone()]));
        alts.push(escape_tail.clone());
    } else {
        let others = CharClass::new(next.iter().map(|&c| (c as u32, c as u32)), true);
        if !others.is_empty() {
            alts.push(Expr::Seq(vec![json_char(&others), tail.clone()]));
        }
    }
    choice(alts)
}

/// The code points of [`RAW`] except `chars` (sorted).
fn raw_except(chars: &[char]) -> Vec<(u32, u32)> {
    let mut out = Vec::with_capacity(RAW.len() + chars.len());
    let mut holes = chars.iter().map(|&c| c as u32).peekable();
    for &(lo, hi) in &RAW {
        let mut from = lo;
        while let Some(&hole) = holes.peek() {
            if hole > hi {
                break;
            }
            if hole >= from {
                if hole > from {
                    out.push((from, hole - 1));
                }
                from = hole + 1;
            }
            holes.next();
        }
        if from <= hi {
            out.push((from, hi));
        }
    }
    out
}

/// A backslash escape (any), without what follows.
pub(super) fn any_escape() -> Expr {
    // A constant, built once: schemas use it at every string or number.
    static EXPR: std::sync::OnceLock<Expr> = std::sync::OnceLock::new();
    EXPR.get_or_init(build_any_escape).clone()
}

fn build_any_escape() -> Expr {
    Expr::Seq(vec![
        Expr::literal("\\"),
        Expr::Choice(vec![
            Expr::class(SHORT_ESCAPES.iter().map(|&(_, l)| (u32::from(l), u32::from(l))), false),
            Expr::Seq(vec![Expr::literal("u"), Expr::repeat(hex_digit(0, 15), 4, Some(4))]),
        ]),
    ])
}

/// A pattern (or format) as string content: the expression, its parse and anchoring (for the
/// product with a length bound), and the length bounds of its matches.
type PatternContent = (Expr, Regex, Anchoring, (u32, Option<u32>));

impl Lowerer<'_> {
    /// A `string` schema.
    pub(super) fn string(&mut self, k: &Keywords<'_>, ptr: &str) -> Result<Expr, SchemaError> {
        let bound = |name: &str, v: &Option<Num<'_>>| {
            Ok::<_, SchemaError>(Lowerer::count(ptr, name, v, u64::from(u32::MAX))?.map(|n| n as u32))
        };
        let min = bound("minLength", &k.min_length)?.unwrap_or(0);
        let max = bound("maxLength", &k.max_length)?;
        if max.is_some_and(|x| x < min) {
            return Ok(super::lower::never());
        }
        let mut content: Option<PatternContent> = None;
        if let Some(p) = &k.pattern {
            let Field::Ok(p) = *p else { return Err(Lowerer::invalid(ptr, "`pattern` must be a string")) };
            match Regex::parse(p).and_then(|re| {
                let e = re.to_expr(p, Anchoring::Search, &mut json_char)?;
                Ok((e, re))
            }) {
                Ok((e, re)) => {
                    let (lmin, lmax) = re.length_bounds();
                    // A search admits any text around an unanchored match.
                    let anchored = p.starts_with('^') && p.ends_with('$') && !p.ends_with("\\$");
                    let bounds = if anchored { (lmin, lmax) } else { (lmin, None) };
                    content = Some((e, re, Anchoring::Search, bounds));
                }
                Err(err) => self.relax("pattern", ptr, format!("pattern not enforced: {}", err.syntax().message()))?,
            }
        }
        if let Some(Field::Ok(f)) = k.format {
            if self.opts.enforce_format {
                if let Some(fp) = format::pattern(f) {
                    if content.is_some() {
                        self.relax(
                            "format",
                            ptr,
                            format!("format `{f}` together with pattern: only the pattern is enforced"),
                        )?;
                    } else {
                        let re = Regex::parse(fp).expect("format patterns are valid");
                        let e =
                            re.to_expr(fp, Anchoring::FullMatch, &mut json_char).expect("format patterns are anchored");
                        let bounds = re.length_bounds();
                        content = Some((e, re, Anchoring::FullMatch, bounds));
                    }
                }
            }
        }
        let content = match content {
            None => Expr::repeat(any_json_char(), min, max),
            Some((e, re, anchoring, (lmin, lmax))) => {
                let min_binds = lmin < min;
                let max_binds = max.is_some_and(|max| lmax.is_none_or(|l| l > max));
                if !min_binds && !max_binds {
                    e
                } else {
                    let bounded = match re.to_dfa(anchoring, MAX_PATTERN_DFA_STATES) {
                        Some(dfa) => self.length_bounded(&dfa, min, max)?,
                        None => None,
                    };
                    match bounded {
                        Some(b) => b,
                        None => {
                            let why = "the pattern's automaton with the length counter is too large";
                            if min_binds {
                                self.relax(
                                    "minLength",
                                    ptr,
                                    format!("minLength together with pattern/format is not enforced: {why}"),
                                )?;
                            }
                            if max_binds {
                                self.relax(
                                    "maxLength",
                                    ptr,
                                    format!("maxLength together with pattern/format is not enforced: {why}"),
                                )?;
                            }
                            e
                        }
                    }
                }
            }
        };
        Ok(Expr::Seq(vec![Expr::literal("\""), content, Expr::literal("\"")]))
    }
}

#[cfg(test)]
mod tests {
    use super::super::lower::expr_matches;
    use super::*;

    fn quoted(e: &Expr) -> Expr {
        Expr::Seq(vec![Expr::literal("\""), e.clone(), Expr::literal("\"")])
    }

    #[test]
    fn raw_except_is_the_raw_characters_outside_the_set() {
        for chars in [&[][..], &['a'], &[' ', '!', '#'], &['A', 'Z', '[', ']', 'a', '~'], &['!', '#', '[', ']']] {
            let set = CharClass::new(chars.iter().map(|&c| (c as u32, c as u32)), true);
            assert_eq!(raw_except(chars), intersect(&set.resolved_ranges(), &RAW), "{chars:?}");
        }
    }

    #[test]
    fn json_char_accepts_raw_and_escaped_forms() {
        let c = json_char(&CharClass::new(
            [('a' as u32, 'z' as u32), ('é' as u32, 'é' as u32), (0x1F600, 0x1F600), (10, 10)],
            false,
        ));
        let one = quoted(&c);
        for ok in
            ["\"q\"", "\"é\"", "\"\\u00e9\"", "\"\\u00E9\"", "\"\\n\"", "\"\\u000a\"", "\"😀\"", "\"\\ud83d\\ude00\""]
        {
            assert!(expr_matches(&one, ok.as_bytes()), "{ok}");
        }
        for bad in ["\"Q\"", "\"\\u00e8\"", "\"\\t\"", "\"\n\"", "\"\\ud83d\\ude01\"", "\"\\\"\""] {
            assert!(!expr_matches(&one, bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn keys_outside_a_set() {
        let tail = Expr::star(any_json_char());
        let esc = Expr::Seq(vec![any_escape(), tail.clone()]);
        let e = quoted(&content_not_in(&["ab", "a", "b\u{e9}"], &tail, &esc).unwrap());
        for ok in ["\"\"", "\"abc\"", "\"ba\"", "\"x\"", "\"b\"", "\"b\\u00e8\""] {
            assert!(expr_matches(&e, ok.as_bytes()), "{ok}");
        }
        for bad in ["\"a\"", "\"ab\"", "\"bé\"", "\"b\\u00e9\""] {
            assert!(!expr_matches(&e, bad.as_bytes()), "{bad}");
        }
    }

    /// The unbounded repetitions in `e` (the "any text" loops a search adds, among others).
    fn unbounded_loops(e: &Expr) -> usize {
        match e {
            Expr::Seq(v) | Expr::Choice(v) => v.iter().map(unbounded_loops).sum(),
            Expr::Repeat(r) => usize::from(r.max.is_none()) + unbounded_loops(&r.expr),
            _ => 0,
        }
    }

    #[test]
    fn searches_share_their_any_text_loops_across_alternatives() {
        // Alternatives anchored alike share one loop before and one after them; the lowered
        // search still matches exactly the strings the reference matcher finds a match in.
        for (p, loops) in
            [("ab|cd|xa", 2), ("(ab|cd|xa)", 2), ("^ab|cd$|^x$|c|^a", 4), ("^(ab|ca)$|b", 2), ("a|^bc|x$|ca", 4)]
        {
            let re = Regex::parse(p).unwrap();
            let e = re.to_expr(p, Anchoring::Search, &mut json_char).unwrap();
            assert_eq!(unbounded_loops(&e), loops, "{p}");
            let mut texts = vec![String::new()];
            for len in 1..=4 {
                let mut longer: Vec<String> = texts.iter().filter(|t| t.len() == len - 1).cloned().collect();
                longer = longer.iter().flat_map(|t| "abcx".chars().map(move |c| format!("{t}{c}"))).collect();
                texts.extend(longer);
            }
            for t in &texts {
                let expected = re.is_match(t, Anchoring::Search);
                assert_eq!(expr_matches(&quoted(&e), format!("\"{t}\"").as_bytes()), expected, "{p} on {t:?}");
            }
        }
    }
}
