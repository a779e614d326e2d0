//! Rejects rules whose language is empty; see `passes/mod.rs`.
//!
//! Productivity is a least fixpoint. Re-evaluating every rule until nothing changes costs
//! one pass per link of the longest dependency chain (quadratic on a chain of rules, which
//! generated grammars often are), so the check propagates instead: every expression node
//! counts the children it still needs (all for a sequence, one for a choice or a
//! repetition with a positive minimum, none for a literal), and a node whose count reaches
//! zero notifies its parent once; a rule body that becomes productive notifies the
//! references to that rule. Each node and reference is visited a bounded number of times,
//! so the check is linear in the grammar's size. Bodies that are productive given the rules
//! settled before them are settled first by a direct check in id order, and only the others
//! are flattened.

use crate::grammar::{Expr, GrammarError, Rule};

/// What a flattened node reports to when it becomes productive.
#[derive(Clone, Copy)]
enum Parent {
    Node(usize),
    Rule(usize),
}

pub(super) fn check(rules: &[Rule]) -> Result<(), GrammarError> {
    let productive = productive_bodies(rules.len(), |i| &rules[i].body);
    match productive.iter().position(|&p| !p) {
        Some(i) => Err(GrammarError::EmptyLanguage { name: rules[i].name.clone() }),
        None => Ok(()),
    }
}

/// Which of the `n` rule bodies (`body(i)`) match at least one string, in linear time.
pub(crate) fn productive_bodies<'a>(n: usize, body: impl Fn(usize) -> &'a Expr) -> Vec<bool> {
    let rules: Vec<&Expr> = (0..n).map(body).collect();
    // Most bodies are productive given the rules before them (generated grammars define a
    // rule's parts before the rule: an object's members before the object): a direct check in
    // id order, which stops at the first productive alternative and trusts only the rules it
    // settled already, settles them without flattening their nodes. Only the others go
    // through the propagation.
    let mut productive = vec![false; rules.len()];
    for (i, rule) in rules.iter().enumerate() {
        productive[i] = rule.is_productive(&productive);
    }
    // Flattened nodes: their parent and how many children they still need.
    let mut parent: Vec<Parent> = Vec::new();
    let mut need: Vec<usize> = Vec::new();
    // For every rule, the nodes that reference it.
    let mut refs_to: Vec<Vec<usize>> = vec![Vec::new(); rules.len()];
    // Nodes that are productive but have not notified their parent yet.
    let mut ready: Vec<usize> = Vec::new();
    let mut stack: Vec<(&Expr, Parent)> = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        if productive[i] {
            continue;
        }
        stack.push((rule, Parent::Rule(i)));
        while let Some((e, up)) = stack.pop() {
            let id = parent.len();
            parent.push(up);
            // `usize::MAX`: can never be satisfied (an empty choice or class).
            let n = match e {
                Expr::Empty | Expr::Bytes(_) => 0,
                Expr::Class(c) => usize::from(c.is_empty()) * usize::MAX,
                Expr::Rule(r) if productive[r.index()] => 0,
                Expr::Rule(r) => {
                    refs_to[r.index()].push(id);
                    1
                }
                Expr::Seq(v) => v.len(),
                Expr::Choice(v) if v.is_empty() => usize::MAX,
                Expr::Choice(_) => 1,
                Expr::Repeat(r) if r.min == 0 => 0,
                Expr::Repeat(_) => 1,
                Expr::Token(t) => usize::from(!t.is_negated() && t.ranges().is_empty()) * usize::MAX,
                // Ends by itself, or after one dispatched body when it does not loop.
                Expr::TagDispatch(t) if t.can_end() => 0,
                Expr::TagDispatch(t) if !t.loop_after_dispatch && !t.bodies.is_empty() => 1,
                Expr::TagDispatch(_) => usize::MAX,
            };
            need.push(n);
            if n == 0 {
                ready.push(id);
            }
            if !matches!(e, Expr::Repeat(r) if r.min == 0) {
                stack.extend(e.children().iter().map(|c| (c, Parent::Node(id))));
            }
        }
    }
    while let Some(id) = ready.pop() {
        match parent[id] {
            Parent::Node(p) => {
                // A choice needs one productive child; later ones find `need` at zero.
                if need[p] > 0 && need[p] != usize::MAX {
                    need[p] -= 1;
                    if need[p] == 0 {
                        ready.push(p);
                    }
                }
            }
            Parent::Rule(r) => {
                productive[r] = true;
                for &node in &refs_to[r] {
                    need[node] = 0;
                    ready.push(node);
                }
            }
        }
    }
    productive
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::RuleId;
    use proptest::strategy::Strategy;

    fn rule(name: &str, body: Expr) -> Rule {
        Rule { name: name.to_string(), body, lookahead: None, attrs: Default::default() }
    }

    /// The fixpoint by repeated evaluation, as a reference.
    fn reference(rules: &[Rule]) -> Vec<bool> {
        let mut productive = vec![false; rules.len()];
        loop {
            let mut changed = false;
            for (i, r) in rules.iter().enumerate() {
                if !productive[i] && r.body.is_productive(&productive) {
                    productive[i] = true;
                    changed = true;
                }
            }
            if !changed {
                return productive;
            }
        }
    }

    #[test]
    fn agrees_with_the_fixpoint() {
        let r = |i: usize| Expr::Rule(RuleId::new(i));
        let cases = vec![
            vec![rule("a", Expr::Seq(vec![Expr::literal("x"), r(1)])), rule("b", Expr::literal("y"))],
            vec![rule("a", Expr::Seq(vec![Expr::literal("x"), r(0)]))],
            vec![rule("a", Expr::Choice(vec![r(1), Expr::literal("x")])), rule("b", Expr::Seq(vec![r(0), r(0)]))],
            vec![rule("a", Expr::plus(r(1))), rule("b", Expr::class([], false))],
            vec![rule("a", Expr::star(r(1))), rule("b", Expr::Choice(vec![]))],
            vec![rule("a", Expr::Seq(vec![r(1), r(1), r(2)])), rule("b", r(2)), rule("c", Expr::Empty)],
            vec![rule("a", Expr::Choice(vec![r(0), r(0)])), rule("b", Expr::class([], true))],
        ];
        for rules in cases {
            let want = reference(&rules);
            let got = check(&rules);
            match want.iter().position(|&p| !p) {
                Some(i) => assert_eq!(got, Err(GrammarError::EmptyLanguage { name: rules[i].name.clone() })),
                None => assert_eq!(got, Ok(())),
            }
        }
    }

    fn arb_expr(rules: usize) -> impl proptest::strategy::Strategy<Value = Expr> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Expr::literal("x")),
            Just(Expr::class([], false)),
            (0..rules).prop_map(|i| Expr::Rule(RuleId::new(i))),
        ];
        leaf.prop_recursive(3, 16, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Expr::Seq),
                prop::collection::vec(inner.clone(), 0..3).prop_map(Expr::Choice),
                (inner, 0u32..2).prop_map(|(e, min)| Expr::repeat(e, min, None)),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_the_fixpoint_on_random_rules(
            bodies in (1usize..5).prop_flat_map(|n| proptest::collection::vec(arb_expr(n), n))
        ) {
            let rules: Vec<Rule> = bodies.into_iter().enumerate().map(|(i, b)| rule(&format!("r{i}"), b)).collect();
            let want = reference(&rules).iter().position(|&p| !p);
            let want = want.map(|i| GrammarError::EmptyLanguage { name: rules[i].name.clone() });
            proptest::prop_assert_eq!(check(&rules).err(), want);
        }
    }

    #[test]
    fn long_chain_is_fast() {
        let n = 200_000;
        let rules: Vec<Rule> = (0..n)
            .map(|i| {
                let body = if i + 1 < n {
                    Expr::Seq(vec![Expr::literal("x"), Expr::Rule(RuleId::new(i + 1))])
                } else {
                    Expr::literal("end")
                };
                rule(&format!("r{i}"), body)
            })
            .collect();
        assert_eq!(check(&rules), Ok(()));
    }
}
