//! Removes rules unreachable from the root; see `passes/mod.rs`.

use crate::grammar::{Expr, Rule, RuleId};

pub(super) fn run(rules: Vec<Rule>, root: RuleId) -> (Vec<Rule>, RuleId) {
    let mut reachable = vec![false; rules.len()];
    reachable[root.index()] = true;
    let mut stack = vec![root];
    // One expression stack for the whole walk (a fresh one per rule was a visible cost on
    // grammars of thousands of small rules).
    let mut exprs: Vec<&Expr> = Vec::new();
    while let Some(r) = stack.pop() {
        let rule = &rules[r.index()];
        exprs.push(&rule.body);
        exprs.extend(rule.lookahead.as_ref());
        while let Some(e) = exprs.pop() {
            if let Expr::Rule(t) = e {
                if !reachable[t.index()] {
                    reachable[t.index()] = true;
                    stack.push(*t);
                }
            }
            exprs.extend(e.children());
        }
    }
    keep(rules, root, &reachable, None)
}

/// Which of the `n` rules are reachable from `root`, given each rule's references (`refs(r)`),
/// collected by a walk that already happened.
pub(super) fn reachable_from<'a>(n: usize, root: RuleId, refs: impl Fn(usize) -> &'a [RuleId]) -> Vec<bool> {
    let mut reachable = vec![false; n];
    reachable[root.index()] = true;
    let mut stack = vec![root];
    while let Some(r) = stack.pop() {
        for &t in refs(r.index()) {
            if !reachable[t.index()] {
                reachable[t.index()] = true;
                stack.push(t);
            }
        }
    }
    reachable
}

/// The rules with `reachable[i]`, renumbered in order (references rewritten), and the new root.
/// `refs(i)`, when known, lists the references of rule `i` (without its lookahead's): a rule
/// whose references all keep their id is not walked (rules are dropped near the end of a
/// generated grammar more often than not).
pub(super) fn keep<'a>(
    rules: Vec<Rule>,
    root: RuleId,
    reachable: &[bool],
    refs: Option<&dyn Fn(usize) -> &'a [RuleId]>,
) -> (Vec<Rule>, RuleId) {
    if reachable.iter().all(|&r| r) {
        return (rules, root);
    }
    let mut new_id = vec![None; rules.len()];
    let mut next = 0;
    for (i, &r) in reachable.iter().enumerate() {
        if r {
            new_id[i] = Some(RuleId::new(next));
            next += 1;
        }
    }
    let remap = |e: &mut Expr| remap_refs(e, &new_id);
    let mut out = Vec::with_capacity(next);
    // Ids below the first dropped rule do not change.
    let first_dropped = reachable.iter().position(|&r| !r).unwrap_or(rules.len());
    for (i, mut rule) in rules.into_iter().enumerate() {
        if reachable[i] {
            if refs.is_none_or(|refs| refs(i).iter().any(|r| r.index() >= first_dropped)) {
                remap(&mut rule.body);
            }
            if let Some(la) = rule.lookahead.as_mut() {
                remap(la);
            }
            out.push(rule);
        }
    }
    (out, new_id[root.index()].unwrap())
}

fn remap_refs(e: &mut Expr, new_id: &[Option<RuleId>]) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Rule(r) => *r = new_id[r.index()].expect("reachable rule references a reachable rule"),
            Expr::Seq(v) | Expr::Choice(v) => stack.extend(v.iter_mut()),
            Expr::Repeat(r) => stack.push(&mut r.expr),
            Expr::TagDispatch(t) => stack.extend(t.bodies.iter_mut()),
            _ => {}
        }
    }
}
