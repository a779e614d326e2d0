//! Rejects rules whose language is empty; see `passes/mod.rs`.

use crate::grammar::{Expr, GrammarError, Rule};

pub(super) fn check(rules: &[Rule]) -> Result<(), GrammarError> {
    let mut productive = vec![false; rules.len()];
    loop {
        let mut changed = false;
        for (i, rule) in rules.iter().enumerate() {
            if !productive[i] && is_productive(&rule.body, &productive) {
                productive[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    match productive.iter().position(|&p| !p) {
        Some(i) => Err(GrammarError::EmptyLanguage { name: rules[i].name.clone() }),
        None => Ok(()),
    }
}

pub(crate) fn is_productive(e: &Expr, productive: &[bool]) -> bool {
    match e {
        Expr::Empty | Expr::Bytes(_) => true,
        Expr::Class(c) => !c.is_empty(),
        Expr::Rule(r) => productive[r.index()],
        Expr::Seq(v) => v.iter().all(|x| is_productive(x, productive)),
        Expr::Choice(v) => v.iter().any(|x| is_productive(x, productive)),
        Expr::Repeat(r) => r.min == 0 || is_productive(&r.expr, productive),
    }
}
