//! Canonical shape of rule bodies; see the pass order in `passes/mod.rs`.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use crate::grammar::{Expr, GrammarError, Repeat, Rule};

pub(super) fn rule(rule: &mut Rule) -> Result<(), GrammarError> {
    let body = std::mem::replace(&mut rule.body, Expr::Empty);
    rule.body = expr(body, &rule.name)?;
    if let Some(la) = rule.lookahead.take() {
        rule.lookahead = Some(expr(la, &rule.name)?);
    }
    Ok(())
}

/// Normalizes one expression (depth is bounded by `GrammarLimits::max_depth`).
pub(crate) fn expr(e: Expr, rule: &str) -> Result<Expr, GrammarError> {
    Ok(match e {
        Expr::Bytes(b) if b.is_empty() => Expr::Empty,
        Expr::Seq(items) => {
            let mut out: Vec<Expr> = Vec::with_capacity(items.len());
            for item in items {
                match expr(item, rule)? {
                    Expr::Empty => {}
                    Expr::Seq(inner) => inner.into_iter().for_each(|x| push_seq(&mut out, x)),
                    x => push_seq(&mut out, x),
                }
            }
            match out.len() {
                0 => Expr::Empty,
                1 => out.pop().unwrap(),
                _ => Expr::Seq(out),
            }
        }
        Expr::Choice(alts) => {
            let mut flat: Vec<Expr> = Vec::with_capacity(alts.len());
            for alt in alts {
                match expr(alt, rule)? {
                    Expr::Choice(inner) => flat.extend(inner),
                    x => flat.push(x),
                }
            }
            let mut out = dedup(flat);
            match out.len() {
                0 => Expr::Choice(out), // an empty choice matches nothing; `productive` reports it
                1 => out.pop().unwrap(),
                _ => Expr::Choice(out),
            }
        }
        Expr::Repeat(r) => {
            let Repeat { expr: inner, min, max } = *r;
            if let Some(max) = max {
                if min > max {
                    return Err(GrammarError::InvalidRepeat { rule: rule.to_string(), min, max });
                }
            }
            let inner = expr(inner, rule)?;
            match (inner, min, max) {
                (Expr::Empty, _, _) | (_, _, Some(0)) => Expr::Empty,
                (inner, 1, Some(1)) => inner,
                (inner, min, max) => Expr::repeat(inner, min, max),
            }
        }
        Expr::TagDispatch(mut t) => {
            let bodies = std::mem::take(&mut t.bodies);
            t.bodies = bodies.into_iter().map(|b| expr(b, rule)).collect::<Result<_, _>>()?;
            Expr::TagDispatch(t)
        }
        e => e,
    })
}

fn push_seq(out: &mut Vec<Expr>, x: Expr) {
    if let (Some(Expr::Bytes(prev)), Expr::Bytes(b)) = (out.last_mut(), &x) {
        prev.extend_from_slice(b);
        return;
    }
    out.push(x);
}

/// Drops repeated alternatives, keeping the first of each. Alternatives are bucketed by a
/// keyed hash (std's SipHash with a random key: grammar text is untrusted, so the buckets
/// must resist crafted collisions), which keeps this linear in the size of the choice
/// where comparing every pair would be quadratic in the number of alternatives.
fn dedup(alts: Vec<Expr>) -> Vec<Expr> {
    if alts.len() <= 8 {
        let mut out: Vec<Expr> = Vec::with_capacity(alts.len());
        for x in alts {
            if !out.contains(&x) {
                out.push(x);
            }
        }
        return out;
    }
    let state = RandomState::new();
    let mut buckets: HashMap<u64, Vec<usize>> = HashMap::with_capacity(alts.len());
    let mut out: Vec<Expr> = Vec::with_capacity(alts.len());
    for x in alts {
        let bucket = buckets.entry(state.hash_one(&x)).or_default();
        if bucket.iter().all(|&i| out[i] != x) {
            bucket.push(out.len());
            out.push(x);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattens_and_merges() {
        let e = Expr::Seq(vec![
            Expr::literal("a"),
            Expr::Seq(vec![Expr::literal("b"), Expr::Empty]),
            Expr::repeat(Expr::literal("c"), 1, Some(1)),
        ]);
        assert_eq!(expr(e, "r").unwrap(), Expr::literal("abc"));
        let c = Expr::Choice(vec![Expr::literal("x"), Expr::Choice(vec![Expr::literal("x"), Expr::literal("y")])]);
        assert_eq!(expr(c, "r").unwrap(), Expr::Choice(vec![Expr::literal("x"), Expr::literal("y")]));
        // Many alternatives (the hashed path) keep first occurrences in order.
        let alts: Vec<Expr> = (0..40).map(|i| Expr::literal(format!("{}", i % 13))).collect();
        let want: Vec<Expr> = (0..13).map(|i| Expr::literal(format!("{i}"))).collect();
        assert_eq!(expr(Expr::Choice(alts), "r").unwrap(), Expr::Choice(want));
        assert!(matches!(
            expr(Expr::repeat(Expr::literal("x"), 3, Some(2)), "r"),
            Err(GrammarError::InvalidRepeat { .. })
        ));
    }
}
