//! Canonical shape of rule bodies; see the pass order in `passes/mod.rs`.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use crate::grammar::{Expr, GrammarError, Rule};

pub(super) fn rule(rule: &mut Rule) -> Result<(), GrammarError> {
    in_place(&mut rule.body, &rule.name)?;
    if let Some(la) = rule.lookahead.as_mut() {
        in_place(la, &rule.name)?;
    }
    Ok(())
}

/// Normalizes one expression (depth is bounded by `GrammarLimits::max_depth`).
#[cfg(test)]
fn expr(mut e: Expr, rule: &str) -> Result<Expr, GrammarError> {
    in_place(&mut e, rule)?;
    Ok(e)
}

/// Normalizes `e` where it is: front-ends mostly produce normal shapes already, and rebuilding
/// every sequence and choice (a new vector each) was most of this pass's cost.
fn in_place(e: &mut Expr, rule: &str) -> Result<(), GrammarError> {
    match e {
        Expr::Bytes(b) if b.is_empty() => *e = Expr::Empty,
        Expr::Seq(items) => {
            for x in items.iter_mut() {
                in_place(x, rule)?;
            }
            let irregular = items.len() < 2
                || items.iter().any(|x| matches!(x, Expr::Empty | Expr::Seq(_)))
                || items.windows(2).any(|w| matches!((&w[0], &w[1]), (Expr::Bytes(_), Expr::Bytes(_))));
            if irregular {
                let mut out: Vec<Expr> = Vec::with_capacity(items.len());
                for item in std::mem::take(items) {
                    match item {
                        Expr::Empty => {}
                        Expr::Seq(inner) => inner.into_iter().for_each(|x| push_seq(&mut out, x)),
                        x => push_seq(&mut out, x),
                    }
                }
                *e = match out.len() {
                    0 => Expr::Empty,
                    1 => out.pop().unwrap(),
                    _ => Expr::Seq(out),
                };
            }
        }
        Expr::Choice(alts) => {
            for x in alts.iter_mut() {
                in_place(x, rule)?;
            }
            if alts.iter().any(|x| matches!(x, Expr::Choice(_))) {
                let mut flat: Vec<Expr> = Vec::with_capacity(alts.len());
                for alt in std::mem::take(alts) {
                    match alt {
                        Expr::Choice(inner) => flat.extend(inner),
                        x => flat.push(x),
                    }
                }
                *alts = flat;
            }
            if alts.len() > 1 {
                *alts = dedup(std::mem::take(alts));
            }
            if alts.len() == 1 {
                *e = alts.pop().unwrap();
            }
            // An empty choice matches nothing; `productive` reports it.
        }
        Expr::Repeat(r) => {
            if let Some(max) = r.max {
                if r.min > max {
                    return Err(GrammarError::InvalidRepeat { rule: rule.to_string(), min: r.min, max });
                }
            }
            in_place(&mut r.expr, rule)?;
            match (&r.expr, r.min, r.max) {
                (Expr::Empty, _, _) | (_, _, Some(0)) => *e = Expr::Empty,
                (_, 1, Some(1)) => *e = std::mem::replace(&mut r.expr, Expr::Empty),
                _ => {}
            }
        }
        Expr::TagDispatch(t) => {
            for b in t.bodies.iter_mut() {
                in_place(b, rule)?;
            }
        }
        _ => {}
    }
    Ok(())
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
