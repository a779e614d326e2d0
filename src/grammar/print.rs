//! The EBNF printer: XGrammar's dialect, written so that the EBNF front-end parses it back to
//! an equal (normalized) grammar.
//!
//! Literals escape `"`, `\`, and every control or non-printing code point (`\n`, `\t`, `\r`,
//! else `\uHHHH` / `\UHHHHHHHH`, which have a fixed number of digits and so cannot swallow a
//! following hex digit). Bytes that are not valid UTF-8 have no EBNF spelling; they print as
//! `\xHH`, which reads back as the code point `U+00HH`. Two more shapes print to text that
//! does not read back identically: a class bound that is a surrogate (printed `\uD800`,
//! which the EBNF parser rejects: surrogates are not characters) and an empty choice
//! (printed as the empty class `[^\u0000-\U0010ffff]`, the same language). Neither is
//! produced by the EBNF parser.

use std::fmt::{self, Write};

use super::{CharClass, Expr, Grammar};

impl fmt::Display for Grammar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for rule in self.rules() {
            if rule.attrs.is_empty() {
                write!(f, "{} ::= ", rule.name)?;
            } else {
                write!(f, "{}[{}] ::= ", rule.name, rule.attrs)?;
            }
            write_expr(f, &rule.body, self)?;
            if let Some(la) = &rule.lookahead {
                f.write_str(" (= ")?;
                write_expr(f, la, self)?;
                f.write_str(")")?;
            }
            f.write_char('\n')?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Prec {
    Choice,
    Seq,
    Postfix,
}

/// Writes one expression in EBNF, naming rules as in `grammar`.
pub fn write_expr(out: &mut impl Write, e: &Expr, grammar: &Grammar) -> fmt::Result {
    write_prec(out, e, grammar, Prec::Choice)
}

fn write_prec(out: &mut impl Write, e: &Expr, g: &Grammar, ctx: Prec) -> fmt::Result {
    let own = match e {
        Expr::Choice(v) if !v.is_empty() => Prec::Choice,
        Expr::Seq(_) => Prec::Seq,
        _ => Prec::Postfix,
    };
    // A repetition of a repetition needs parentheses too: `x*?` is not a nested repetition.
    let parens = own < ctx;
    if parens {
        out.write_char('(')?;
    }
    match e {
        Expr::Empty => out.write_str("\"\"")?,
        Expr::Bytes(b) => {
            out.write_char('"')?;
            out.write_str(&escape_literal(b))?;
            out.write_char('"')?;
        }
        Expr::Class(c) => write_class(out, c)?,
        Expr::Rule(r) => out.write_str(&g.rule(*r).name)?,
        Expr::Seq(v) => {
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.write_char(' ')?;
                }
                write_prec(out, x, g, Prec::Postfix)?;
            }
        }
        Expr::Choice(v) if v.is_empty() => out.write_str("[^\\u0000-\\U0010ffff]")?,
        Expr::Choice(v) => {
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.write_str(" | ")?;
                }
                write_prec(out, x, g, Prec::Seq)?;
            }
        }
        Expr::Token(t) => write_token_set(out, t)?,
        Expr::TagDispatch(t) => write_tag_dispatch(out, t, g)?,
        Expr::Repeat(r) => {
            let inner_is_repeat = matches!(r.expr, Expr::Repeat(_));
            if inner_is_repeat {
                out.write_char('(')?;
            }
            write_prec(out, &r.expr, g, Prec::Postfix)?;
            if inner_is_repeat {
                out.write_char(')')?;
            }
            match (r.min, r.max) {
                (0, None) => out.write_char('*')?,
                (1, None) => out.write_char('+')?,
                (0, Some(1)) => out.write_char('?')?,
                (m, None) => write!(out, "{{{m},}}")?,
                (m, Some(n)) if m == n => write!(out, "{{{m}}}")?,
                (m, Some(n)) => write!(out, "{{{m},{n}}}")?,
            }
        }
    }
    if parens {
        out.write_char(')')?;
    }
    Ok(())
}

/// `Token(1, 2, 3)` or `ExcludeToken(...)`; ranges are written id by id.
fn write_token_set(out: &mut impl Write, t: &crate::grammar::TokenSet) -> fmt::Result {
    out.write_str(if t.is_negated() { "ExcludeToken(" } else { "Token(" })?;
    let ids = t.ranges().iter().flat_map(|&(lo, hi)| lo..=hi);
    for (i, id) in ids.enumerate() {
        if i > 0 {
            out.write_str(", ")?;
        }
        write!(out, "{id}")?;
    }
    out.write_char(')')
}

fn write_trigger(out: &mut impl Write, t: &crate::grammar::Trigger) -> fmt::Result {
    match t {
        crate::grammar::Trigger::Text(b) => write!(out, "\"{}\"", escape_literal(b)),
        crate::grammar::Trigger::Token(id) => write!(out, "{id}"),
    }
}

/// `TagDispatch(("trigger", body), ..., stop_eos=..., stop_str=(...), loop_after_dispatch=...,
/// excludes=(...))`; token triggers are written as integers.
fn write_tag_dispatch(out: &mut impl Write, t: &crate::grammar::TagDispatch, g: &Grammar) -> fmt::Result {
    out.write_str("TagDispatch(")?;
    for (trigger, body) in t.triggers.iter().zip(&t.bodies) {
        out.write_char('(')?;
        write_trigger(out, trigger)?;
        out.write_str(", ")?;
        write_prec(out, body, g, Prec::Choice)?;
        out.write_str("), ")?;
    }
    write!(out, "stop_eos={}, stop_str=(", t.stop_eos)?;
    for (i, s) in t.stop_strings.iter().enumerate() {
        if i > 0 {
            out.write_str(", ")?;
        }
        write!(out, "\"{}\"", escape_literal(s))?;
    }
    write!(out, "), loop_after_dispatch={}, excludes=(", t.loop_after_dispatch)?;
    for (i, x) in t.excludes.iter().enumerate() {
        if i > 0 {
            out.write_str(", ")?;
        }
        write_trigger(out, x)?;
    }
    out.write_str("))")
}

/// Escapes a literal's bytes for use between double quotes in EBNF.
pub fn escape_literal(bytes: &[u8]) -> String {
    let mut s = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => s.push_str("\\\""),
                '\\' => s.push_str("\\\\"),
                c => push_char(&mut s, c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    s
}

fn push_char(s: &mut String, c: char) {
    match c {
        '\n' => s.push_str("\\n"),
        '\r' => s.push_str("\\r"),
        '\t' => s.push_str("\\t"),
        c if c.is_control() || is_invisible(c) => {
            let v = c as u32;
            if v <= 0xFFFF {
                let _ = write!(s, "\\u{v:04x}");
            } else {
                let _ = write!(s, "\\U{v:08x}");
            }
        }
        c => s.push(c),
    }
}

/// Code points printed escaped although not control characters: separators and format
/// characters would be invisible or confusing in printed grammars.
fn is_invisible(c: char) -> bool {
    matches!(c as u32, 0xA0 | 0xAD | 0x2000..=0x200F | 0x2028..=0x202F | 0x205F..=0x206F | 0xFEFF | 0xD800..=0xDFFF)
        || (c as u32) >= 0xE000 && (c as u32) <= 0xF8FF
        || (c as u32) >= 0xF0000
}

fn write_class(out: &mut impl Write, c: &CharClass) -> fmt::Result {
    out.write_char('[')?;
    if c.is_negated() {
        out.write_char('^')?;
    }
    let mut s = String::new();
    for &(lo, hi) in c.ranges() {
        push_class_char(&mut s, lo);
        if hi > lo {
            s.push('-');
            push_class_char(&mut s, hi);
        }
    }
    out.write_str(&s)?;
    out.write_char(']')
}

fn push_class_char(s: &mut String, v: u32) {
    match char::from_u32(v) {
        Some(c @ (']' | '[' | '\\' | '-' | '^')) => {
            s.push('\\');
            s.push(c);
        }
        Some(c) => push_char(s, c),
        // Surrogate code points: only reachable through the builder; printed by value.
        None => {
            let _ = write!(s, "\\u{v:04x}");
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::grammar::{Expr, GrammarBuilder};

    #[test]
    fn prints_precedence_and_escapes() {
        let mut b = GrammarBuilder::new();
        let root = b.rule("root");
        let body = Expr::Seq(vec![
            Expr::literal("a\"\\\n\u{1}"),
            Expr::Choice(vec![Expr::literal("x"), Expr::Seq(vec![Expr::literal("y"), Expr::Rule(root)])]),
            Expr::star(Expr::Seq(vec![Expr::literal("p"), Expr::class([(0x5D, 0x5D), (0x61, 0x7A)], true)])),
            Expr::repeat(Expr::opt(Expr::literal("q")), 2, Some(5)),
        ]);
        b.define(root, Expr::Choice(vec![body, Expr::Empty]), None).unwrap();
        let g = b.build("root").unwrap();
        assert_eq!(
            g.to_string(),
            "root ::= \"a\\\"\\\\\\n\\u0001\" (\"x\" | \"y\" root) (\"p\" [^\\]a-z])* (\"q\"?){2,5} | \"\"\n"
        );
    }
}
