//! Canonical shape of rule bodies; see the pass order in `passes/mod.rs`.

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
            let mut out: Vec<Expr> = Vec::with_capacity(alts.len());
            for alt in alts {
                match expr(alt, rule)? {
                    Expr::Choice(inner) => inner.into_iter().for_each(|x| push_choice(&mut out, x)),
                    x => push_choice(&mut out, x),
                }
            }
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

fn push_choice(out: &mut Vec<Expr>, x: Expr) {
    if !out.contains(&x) {
        out.push(x);
    }
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
        assert!(matches!(
            expr(Expr::repeat(Expr::literal("x"), 3, Some(2)), "r"),
            Err(GrammarError::InvalidRepeat { .. })
        ));
    }
}
