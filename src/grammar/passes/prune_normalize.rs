//! The passes for a front-end that hands over rule bodies together with the productivity of
//! every rule (from [`super::productive_bodies`]), in one walk per rule body.
//!
//! The general order (`passes/mod.rs`) walks every body once per pass: the front-end's pruning
//! of unproductive parts, the size limits, normalization, and the reachability of rules. On
//! the large generated grammars of JSON Schemas (tens of thousands of nodes, cold in cache by
//! the time the passes run) each of those walks cost mostly cache misses, so this pass does
//! them all bottom-up at each node while it is in cache:
//!
//! * **prune**: an unproductive alternative is dropped, an unproductive optional repetition
//!   becomes the empty string, and an unproductive sequence or repetition makes its parent
//!   unproductive (a sequence stops at its first unproductive item, as the separate pruning
//!   did);
//! * **limits**: the depth and node count of the pruned body before normalization, exactly what
//!   [`crate::GrammarBuilder::define`] checks; the walk also refuses to descend deeper than the
//!   depth limit (it is recursive), so a body deeper than the limit *before* pruning is
//!   refused too;
//! * **normalize**: the node steps of `normalize.rs`, applied to each node once its children
//!   are pruned and normal, which gives the same result as normalizing the pruned tree (the
//!   steps only look at a node and its normal children);
//! * **references**: the rules referenced by what is kept, so reachability needs no walk
//!   (references under a dropped part are forgotten with it);
//! * **literal bytes**: every byte of every literal (see [`crate::Grammar::literal_bytes`]).
//!
//! Errors are the ones the separate passes report, in their order: a size limit (first rule in
//! order) before a repetition whose bounds are out of order (first rule, then first such
//! repetition in pre-order of the pruned body).

use super::{dead_rules, normalize};
use crate::grammar::{Expr, Grammar, GrammarError, GrammarLimits, Rule, RuleId, Trigger};
use crate::util::byteset::ByteSet;

/// The body walk went deeper than the depth limit.
struct TooDeep;

/// The size of a kept subtree: node count and depth (a leaf has depth 1).
#[derive(Clone, Copy)]
struct Size {
    nodes: usize,
    depth: usize,
}

impl Size {
    const LEAF: Size = Size { nodes: 1, depth: 1 };
    /// A node above one child of size `below`.
    fn above(below: Size) -> Size {
        Size { nodes: below.nodes + 1, depth: below.depth + 1 }
    }
    /// Adds a child of size `c` below this node.
    fn add_child(&mut self, c: Size) {
        self.nodes += c.nodes;
        self.depth = self.depth.max(c.depth + 1);
    }
}

struct Walk<'a> {
    productive: &'a [bool],
    max_depth: usize,
    /// The rules referenced by kept nodes, in walk order (all rules, see `ref_start`).
    refs: Vec<RuleId>,
    /// Kept repetitions with `min > max`: (pre-order index, min, max).
    invalid: Vec<(u32, u32, u32)>,
    /// Why the first malformed dispatch met is malformed (see `TagDispatch::malformed`).
    malformed_dispatch: Option<String>,
    preorder: u32,
    literals: ByteSet,
}

/// Prunes, checks, normalizes `rules` (names and bodies, ids in order; `productive[i]` for rule
/// `i`), drops the rules unreachable from `root`, and builds the grammar.
pub(crate) fn run(
    rules: Vec<(String, Expr)>,
    productive: &[bool],
    root: RuleId,
    limits: &GrammarLimits,
) -> Result<Grammar, GrammarError> {
    if rules.len() > limits.max_rules {
        return Err(GrammarError::TooLarge { what: "rule count", actual: rules.len(), limit: limits.max_rules });
    }
    let mut walk = Walk {
        productive,
        max_depth: limits.max_depth,
        refs: Vec::new(),
        invalid: Vec::new(),
        malformed_dispatch: None,
        preorder: 0,
        literals: ByteSet::EMPTY,
    };
    let mut out: Vec<Rule> = Vec::with_capacity(rules.len());
    // `refs[ref_start[i]..ref_start[i + 1]]` are rule `i`'s references.
    let mut ref_start: Vec<usize> = Vec::with_capacity(rules.len() + 1);
    let mut nodes = 0usize;
    let mut first_invalid: Option<GrammarError> = None;
    for (i, (name, mut body)) in rules.into_iter().enumerate() {
        ref_start.push(walk.refs.len());
        let size = if productive[i] {
            walk.preorder = 0;
            walk.invalid.clear();
            match walk.expr(&mut body, 1, true) {
                Ok(Some(size)) => size,
                // A productive rule's body is productive: the caller's analysis disagrees.
                Ok(None) => return Err(GrammarError::EmptyLanguage { name }),
                Err(TooDeep) => {
                    let actual = body.depth();
                    return Err(GrammarError::TooLarge { what: "expression depth", actual, limit: limits.max_depth });
                }
            }
        } else {
            // Unreachable once the references to it are pruned; dropped below as a dead rule.
            body = Expr::Empty;
            Size::LEAF
        };
        if size.depth > limits.max_depth {
            let actual = size.depth;
            return Err(GrammarError::TooLarge { what: "expression depth", actual, limit: limits.max_depth });
        }
        nodes += size.nodes;
        // The IR is one of a compile's growth points (`util::cancel`, the byte budget).
        crate::util::cancel::charge_bytes(size.nodes * std::mem::size_of::<Expr>(), "grammar construction")?;
        if nodes > limits.max_nodes {
            return Err(GrammarError::TooLarge {
                what: "expression node count",
                actual: nodes,
                limit: limits.max_nodes,
            });
        }
        if let Some(reason) = walk.malformed_dispatch.take() {
            return Err(GrammarError::InvalidTagDispatch { rule: name, reason });
        }
        if first_invalid.is_none() {
            if let Some(&(_, min, max)) = walk.invalid.iter().min_by_key(|x| x.0) {
                first_invalid = Some(GrammarError::InvalidRepeat { rule: name.clone(), min, max });
            }
        }
        out.push(Rule { name, body, lookahead: None, attrs: Default::default() });
    }
    ref_start.push(walk.refs.len());
    if let Some(e) = first_invalid {
        return Err(e);
    }
    if !productive[root.index()] {
        return Err(GrammarError::EmptyLanguage { name: out[root.index()].name.clone() });
    }
    let refs = |r: usize| &walk.refs[ref_start[r]..ref_start[r + 1]];
    let reachable = dead_rules::reachable_from(out.len(), root, refs);
    let (out, root) = dead_rules::keep(out, root, &reachable, Some(&refs));
    debug_assert!(super::productive::check(&out).is_ok(), "a pruned grammar has an unproductive rule");
    Ok(Grammar::from_parts_with_literals(out, root, walk.literals))
}

impl Walk<'_> {
    /// Prunes (when `prune`), checks and normalizes `e` at nesting `depth`; `None` when `e` is
    /// unproductive (the caller drops it, and the references and repetitions met below it).
    fn expr(&mut self, e: &mut Expr, depth: usize, prune: bool) -> Result<Option<Size>, TooDeep> {
        if depth > self.max_depth {
            return Err(TooDeep);
        }
        let pre = self.preorder;
        self.preorder += 1;
        let size = match e {
            Expr::Empty => Size::LEAF,
            Expr::Bytes(b) => {
                b.iter().for_each(|&x| self.literals.insert(x));
                Size::LEAF
            }
            Expr::Class(_) | Expr::Token(_) if prune && !e.is_productive(self.productive) => return Ok(None),
            Expr::Class(_) | Expr::Token(_) => Size::LEAF,
            Expr::Rule(r) => {
                if prune && !self.productive[r.index()] {
                    return Ok(None);
                }
                self.refs.push(*r);
                Size::LEAF
            }
            Expr::Seq(items) => {
                let mut size = Size::LEAF;
                for x in items.iter_mut() {
                    match self.expr(x, depth + 1, prune)? {
                        Some(s) => size.add_child(s),
                        None => return Ok(None),
                    }
                }
                size
            }
            Expr::Choice(alts) => {
                let mut size = Size::LEAF;
                let mut deep = false;
                alts.retain_mut(|x| {
                    if deep {
                        return true;
                    }
                    let marks = (self.refs.len(), self.invalid.len());
                    match self.expr(x, depth + 1, prune) {
                        Ok(Some(s)) => {
                            size.add_child(s);
                            true
                        }
                        Ok(None) => {
                            self.refs.truncate(marks.0);
                            self.invalid.truncate(marks.1);
                            false
                        }
                        Err(TooDeep) => {
                            deep = true;
                            true
                        }
                    }
                });
                if deep {
                    return Err(TooDeep);
                }
                if prune && alts.is_empty() {
                    return Ok(None);
                }
                size
            }
            Expr::Repeat(r) => {
                let marks = (self.refs.len(), self.invalid.len());
                match self.expr(&mut r.expr, depth + 1, prune)? {
                    Some(s) => {
                        if r.max.is_some_and(|max| r.min > max) {
                            self.invalid.push((pre, r.min, r.max.unwrap_or_default()));
                        }
                        if r.max == Some(0) {
                            // Normalization drops the body, and with it the references.
                            self.refs.truncate(marks.0);
                        }
                        Size::above(s)
                    }
                    None if r.min == 0 => {
                        self.refs.truncate(marks.0);
                        self.invalid.truncate(marks.1);
                        *e = Expr::Empty;
                        return Ok(Some(Size::LEAF));
                    }
                    None => return Ok(None),
                }
            }
            Expr::TagDispatch(t) => {
                if self.malformed_dispatch.is_none() {
                    self.malformed_dispatch = t.malformed();
                }
                // Kept or dropped whole (a dispatch's bodies are not pruned), normalized inside.
                let productive = t.can_end()
                    || (!t.loop_after_dispatch && t.bodies.iter().any(|b| b.is_productive(self.productive)));
                if prune && !productive {
                    return Ok(None);
                }
                for x in t.triggers.iter().chain(&t.excludes) {
                    if let Trigger::Text(b) = x {
                        b.iter().for_each(|&x| self.literals.insert(x));
                    }
                }
                t.stop_strings.iter().flatten().for_each(|&x| self.literals.insert(x));
                let mut size = Size::LEAF;
                for b in t.bodies.iter_mut() {
                    let s = self.expr(b, depth + 1, false)?.expect("an unpruned walk keeps everything");
                    size.add_child(s);
                }
                size
            }
        };
        normalize::node(e);
        Ok(Some(size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::passes::productive_bodies;
    use crate::GrammarBuilder;
    use proptest::prelude::*;

    /// The separate pruning the JSON Schema front-end did before this pass existed.
    fn prune(e: &mut Expr, productive: &[bool]) -> bool {
        match e {
            Expr::Seq(items) => items.iter_mut().all(|x| prune(x, productive)),
            Expr::Choice(alts) => {
                alts.retain_mut(|x| prune(x, productive));
                !alts.is_empty()
            }
            Expr::Repeat(r) => {
                let body = prune(&mut r.expr, productive);
                if !body && r.min == 0 {
                    *e = Expr::Empty;
                    return true;
                }
                body
            }
            other => other.is_productive(productive),
        }
    }

    /// Prune, then the builder's separate passes (limits at `define`, then normalize, dead
    /// rules, productivity).
    fn reference(
        rules: &[(String, Expr)],
        productive: &[bool],
        limits: &GrammarLimits,
    ) -> Result<Grammar, GrammarError> {
        let mut b = GrammarBuilder::with_limits(limits.clone());
        let ids: Vec<RuleId> = rules.iter().map(|(name, _)| b.rule(name)).collect();
        for ((_, body), (&id, &p)) in rules.iter().zip(ids.iter().zip(productive)) {
            let mut body = body.clone();
            if p {
                assert!(prune(&mut body, productive));
            } else {
                body = Expr::Empty;
            }
            b.define(id, body, None)?;
        }
        b.build(&rules[0].0)
    }

    fn arb_expr(rules: usize) -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            Just(Expr::literal("x")),
            Just(Expr::literal("yz")),
            Just(Expr::Bytes(Vec::new())),
            Just(Expr::Empty),
            Just(Expr::class([], false)),
            Just(Expr::class([(97, 99)], false)),
            (0..rules).prop_map(|i| Expr::Rule(RuleId::new(i))),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Expr::Seq),
                prop::collection::vec(inner.clone(), 0..4).prop_map(Expr::Choice),
                (inner, 0u32..3, prop::option::of(0u32..3)).prop_map(|(e, min, max)| Expr::repeat(e, min, max)),
            ]
        })
    }

    proptest! {
        /// One walk gives the grammar (or the error) of pruning, then the separate passes; the
        /// only difference allowed: a body deeper than the depth limit before pruning is refused.
        #[test]
        fn agrees_with_prune_then_the_separate_passes(
            bodies in (1usize..6).prop_flat_map(|n| prop::collection::vec(arb_expr(n), n)),
            max_depth in 2usize..8,
            max_nodes in 5usize..60,
        ) {
            let mut rules: Vec<(String, Expr)> = bodies.into_iter().enumerate().map(|(i, b)| (format!("r{i}"), b)).collect();
            let mut productive = productive_bodies(rules.len(), |i| &rules[i].1);
            if !productive[0] {
                // The front-end refuses an unproductive root before this pass.
                let body = std::mem::replace(&mut rules[0].1, Expr::Empty);
                rules[0].1 = Expr::Choice(vec![body, Expr::literal("r")]);
                productive = productive_bodies(rules.len(), |i| &rules[i].1);
            }
            let limits = GrammarLimits { max_depth, max_nodes, ..GrammarLimits::default() };
            let want = reference(&rules, &productive, &limits);
            let got = run(rules.clone(), &productive, RuleId::new(0), &limits);
            let deep_before_pruning = rules.iter().zip(&productive).any(|((_, b), &p)| p && b.depth() > max_depth);
            match (&want, &got) {
                (Ok(w), Ok(g)) => {
                    prop_assert_eq!(w.to_string(), g.to_string());
                    prop_assert_eq!(w, g);
                    // A superset (literals of dropped parts are counted), never fewer.
                    prop_assert!(!g.literal_bytes().union_with(&w.literal_bytes()));
                }
                (_, Err(GrammarError::TooLarge { what: "expression depth", .. })) if deep_before_pruning => {}
                _ => prop_assert_eq!(want, got),
            }
        }
    }
}
