//! A second, independent recognizer for the grammar IR, used to check the Earley parser.
//!
//! It computes, for every rule and start position, the set of end positions, as a least
//! fixpoint (start with nothing, re-evaluate every rule at every position until no set grows).
//! That handles left recursion and nullable rules without any of the Earley machinery. It is
//! exponential in nothing but slow in everything: only for short strings and small grammars.

use std::collections::BTreeSet;

use maskforge::{Expr, Grammar, RuleAttrs};

/// Whether `input` is in the language of `grammar`'s root.
pub fn recognizes(grammar: &Grammar, input: &[u8]) -> bool {
    let n = input.len();
    let rules = grammar.rules().len();
    let mut table: Vec<Vec<BTreeSet<usize>>> = vec![vec![BTreeSet::new(); n + 1]; rules];
    loop {
        let mut changed = false;
        for r in 0..rules {
            for i in 0..=n {
                let rule = &grammar.rules()[r];
                let ends = eval(&rule.body, i, input, &table);
                let ends = committed_ends(ends, &rule.attrs, i, input);
                // A restricted rule's ends can shrink as its body's grow (a shorter match
                // appears), so any change counts; the body's own ends only grow.
                if ends != table[r][i] {
                    table[r][i] = ends;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    table[grammar.root().index()][0].contains(&n)
}

/// The ends of a rule's occurrence from `i`, given `ends`, those of its body: with `lazy`, an
/// end is dropped when a shorter one exists; with `max_chars=N`, when a shorter one exists
/// after which at least `N` characters were read (the rule had to end there).
fn committed_ends(ends: BTreeSet<usize>, attrs: &RuleAttrs, i: usize, input: &[u8]) -> BTreeSet<usize> {
    let chars = |e: usize| input[i..e].iter().filter(|&&b| !(0x80..0xC0).contains(&b)).count();
    let forced = |e: usize| attrs.lazy || attrs.max_chars.is_some_and(|n| chars(e) >= n as usize);
    let first_forced = ends.iter().copied().find(|&e| forced(e));
    ends.into_iter().filter(|&e| first_forced.is_none_or(|f| e <= f)).collect()
}

/// Whether [`recognizes`] can read `grammar`: text only, no token-level elements.
pub fn reads(grammar: &Grammar) -> bool {
    fn text_only(e: &Expr) -> bool {
        match e {
            Expr::Empty | Expr::Bytes(_) | Expr::Class(_) | Expr::Rule(_) => true,
            Expr::Token(_) | Expr::TagDispatch(_) => false,
            Expr::Seq(items) | Expr::Choice(items) => items.iter().all(text_only),
            Expr::Repeat(rep) => text_only(&rep.expr),
        }
    }
    grammar.rules().iter().all(|r| text_only(&r.body))
}

fn eval(e: &Expr, i: usize, input: &[u8], table: &[Vec<BTreeSet<usize>>]) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    match e {
        Expr::Empty => {
            out.insert(i);
        }
        Expr::Bytes(b) => {
            if input[i..].starts_with(b) {
                out.insert(i + b.len());
            }
        }
        Expr::Class(c) => {
            if let Some((cp, len)) = decode_utf8(&input[i..]) {
                if c.resolved_ranges().iter().any(|&(lo, hi)| lo <= cp && cp <= hi) {
                    out.insert(i + len);
                }
            }
        }
        Expr::Rule(r) => out = table[r.index()][i].clone(),
        Expr::Token(_) | Expr::TagDispatch(_) => unimplemented!("the reference recognizer reads text grammars only"),
        Expr::Seq(items) => {
            let mut cur: BTreeSet<usize> = [i].into();
            for item in items {
                let mut next = BTreeSet::new();
                for &p in &cur {
                    next.extend(eval(item, p, input, table));
                }
                cur = next;
            }
            out = cur;
        }
        Expr::Choice(alts) => {
            for a in alts {
                out.extend(eval(a, i, input, table));
            }
        }
        Expr::Repeat(rep) => {
            // Positions after k repetitions, k = 0, 1, ...; stop when no new positions appear
            // and the count exceeds the minimum (positions only grow, so this terminates).
            let mut cur: BTreeSet<usize> = [i].into();
            let mut k = 0u32;
            let mut seen_at_min: BTreeSet<usize> = BTreeSet::new();
            loop {
                if k >= rep.min {
                    let before = seen_at_min.len();
                    seen_at_min.extend(cur.iter().copied());
                    if k > rep.min && seen_at_min.len() == before {
                        break;
                    }
                }
                if rep.max.is_some_and(|m| k >= m) {
                    break;
                }
                let mut next = BTreeSet::new();
                for &p in &cur {
                    next.extend(eval(&rep.expr, p, input, table));
                }
                if next.is_empty() {
                    break;
                }
                cur = next;
                k += 1;
                if k > rep.min + input.len() as u32 + 2 && rep.max.is_none() {
                    // Only empty iterations can go on; the positions are already recorded.
                    break;
                }
            }
            if k >= rep.min {
                seen_at_min.extend(cur.iter().copied());
            }
            out = seen_at_min;
        }
    }
    out
}

fn decode_utf8(b: &[u8]) -> Option<(u32, usize)> {
    let len = match *b.first()? {
        0x00..=0x7F => 1,
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return None,
    };
    let s = std::str::from_utf8(b.get(..len)?).ok()?;
    Some((s.chars().next()? as u32, len))
}
