//! Canonical shape of rule bodies; see the pass order in `passes/mod.rs`.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};

use rustc_hash::FxHasher;

use crate::grammar::{Expr, GrammarError, Rule, TagDispatch};
use crate::util::hash::FastSet;

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
        Expr::Seq(items) => {
            for x in items.iter_mut() {
                in_place(x, rule)?;
            }
        }
        Expr::Choice(alts) => {
            for x in alts.iter_mut() {
                in_place(x, rule)?;
            }
        }
        Expr::Repeat(r) => {
            check_bounds(r.min, r.max, rule)?;
            in_place(&mut r.expr, rule)?;
        }
        Expr::TagDispatch(t) => {
            check_dispatch(t, rule)?;
            for b in t.bodies.iter_mut() {
                in_place(b, rule)?;
            }
        }
        _ => {}
    }
    node(e);
    Ok(())
}

/// A dispatch is well formed (see [`TagDispatch::malformed`]).
pub(super) fn check_dispatch(t: &TagDispatch, rule: &str) -> Result<(), GrammarError> {
    match t.malformed() {
        Some(reason) => Err(GrammarError::InvalidTagDispatch { rule: rule.to_string(), reason }),
        None => Ok(()),
    }
}

/// A repetition's bounds are well ordered.
pub(super) fn check_bounds(min: u32, max: Option<u32>, rule: &str) -> Result<(), GrammarError> {
    match max {
        Some(max) if min > max => Err(GrammarError::InvalidRepeat { rule: rule.to_string(), min, max }),
        _ => Ok(()),
    }
}

/// Normalizes the node `e` itself, whose children are normal already (the walks that call it
/// go bottom-up). Repetition bounds are checked by the caller, before the walk descends.
#[inline]
pub(super) fn node(e: &mut Expr) {
    match e {
        Expr::Bytes(b) if b.is_empty() => *e = Expr::Empty,
        Expr::Seq(items) => {
            let irregular = items.len() < 2
                || items.iter().any(|x| matches!(x, Expr::Empty | Expr::Seq(_)))
                || items.windows(2).any(|w| matches!((&w[0], &w[1]), (Expr::Bytes(_), Expr::Bytes(_))));
            if irregular {
                // The flattened length, so that flattening never reallocates.
                let len = items.iter().map(|x| if let Expr::Seq(inner) = x { inner.len() } else { 1 }).sum();
                let mut out: Vec<Expr> = Vec::with_capacity(len);
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
        Expr::Repeat(r) => match (&r.expr, r.min, r.max) {
            (Expr::Empty, _, _) | (_, _, Some(0)) => *e = Expr::Empty,
            (_, 1, Some(1)) => *e = std::mem::replace(&mut r.expr, Expr::Empty),
            _ => {}
        },
        _ => {}
    }
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
///
/// Most large choices have no duplicate, and their alternatives already differ near the top
/// (the keys of an object's members, the characters of a trie): when the [`shallow`]
/// signatures are pairwise distinct, no two alternatives can be equal and nothing below the
/// first level is hashed. Hashing whole alternatives at every level of a nested choice was
/// a tenth of the JSON Schema front-end's time.
fn dedup(alts: Vec<Expr>) -> Vec<Expr> {
    if alts.len() > 8 {
        let mut seen = FastSet::default();
        if alts.iter().all(|x| seen.insert(shallow(x))) {
            return alts;
        }
    }
    if alts.len() <= 8 {
        // Usually nothing repeats: checking first leaves the vector where it is (moving every
        // alternative into a new one was most of this pass's writes).
        if !(1..alts.len()).any(|i| alts[..i].contains(&alts[i])) {
            return alts;
        }
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

/// A hash of `e` and its direct children, each child summarized without descending: equal
/// expressions have equal signatures. A fast unkeyed hash is enough, since a collision only
/// sends the choice to the keyed path of [`dedup`].
fn shallow(e: &Expr) -> u64 {
    fn head(e: &Expr, h: &mut impl Hasher) {
        std::mem::discriminant(e).hash(h);
        match e {
            Expr::Bytes(b) => b.hash(h),
            Expr::Class(c) => c.hash(h),
            Expr::Rule(r) => r.hash(h),
            Expr::Seq(v) | Expr::Choice(v) => v.len().hash(h),
            Expr::Repeat(r) => (r.min, r.max).hash(h),
            Expr::Token(t) => t.hash(h),
            Expr::Empty | Expr::TagDispatch(_) => {}
        }
    }
    let mut h = FxHasher::default();
    head(e, &mut h);
    for c in e.children() {
        head(c, &mut h);
    }
    h.finish()
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
