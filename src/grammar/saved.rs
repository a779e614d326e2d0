//! The grammar IR as plain data for saved grammars: each rule body is a flat list of nodes in
//! post-order (children first), which serde writes and reads without recursion, so a crafted
//! input cannot exhaust the stack however deep it claims to be. Reading it back rebuilds the
//! trees with an explicit stack, checking arities, rule references and the depth limit of
//! [`GrammarLimits`].

use serde::{Deserialize, Serialize};

use super::{CharClass, Expr, Grammar, GrammarLimits, Repeat, Rule, RuleAttrs, RuleId, TagDispatch, TokenSet, Trigger};

/// A grammar as flat data (see the module docs).
#[derive(Serialize, Deserialize)]
pub(crate) struct SavedGrammar {
    rules: Vec<SavedRule>,
    root: u32,
}

#[derive(Serialize, Deserialize)]
struct SavedRule {
    name: String,
    body: Vec<Node>,
    lookahead: Option<Vec<Node>>,
    attrs: RuleAttrs,
}

/// One expression node; composite nodes take their children from the nodes before them.
#[derive(Serialize, Deserialize)]
enum Node {
    Empty,
    Bytes(Vec<u8>),
    Class {
        ranges: Vec<(u32, u32)>,
        negated: bool,
    },
    Rule(u32),
    /// The last `n` finished expressions, in order.
    Seq(u32),
    /// The last `n` finished expressions, in order.
    Choice(u32),
    /// The last finished expression, repeated.
    Repeat {
        min: u32,
        max: Option<u32>,
    },
    Token {
        ranges: Vec<(u32, u32)>,
        negated: bool,
    },
    /// The last `bodies` finished expressions are the bodies.
    TagDispatch {
        triggers: Vec<SavedTrigger>,
        bodies: u32,
        excludes: Vec<SavedTrigger>,
        stop_eos: bool,
        stop_strings: Vec<Vec<u8>>,
        loop_after_dispatch: bool,
    },
}

#[derive(Serialize, Deserialize)]
enum SavedTrigger {
    Text(Vec<u8>),
    Token(u32),
}

impl SavedGrammar {
    /// The flat form of `grammar`.
    pub(crate) fn new(grammar: &Grammar) -> Self {
        let rules = grammar
            .rules()
            .iter()
            .map(|r| SavedRule {
                name: r.name.clone(),
                body: flatten(&r.body),
                lookahead: r.lookahead.as_ref().map(flatten),
                attrs: r.attrs.clone(),
            })
            .collect();
        SavedGrammar { rules, root: grammar.root().as_u32() }
    }

    /// The grammar again.
    ///
    /// # Errors
    /// A node without its children, a rule reference or root out of range, a tree deeper than
    /// the IR allows.
    pub(crate) fn into_grammar(self) -> Result<Grammar, String> {
        let count = self.rules.len();
        if self.root as usize >= count {
            return Err(format!("root rule {} out of range ({count} rules)", self.root));
        }
        let rules = self
            .rules
            .into_iter()
            .map(|r| {
                let body = rebuild(r.body, count).map_err(|e| format!("rule `{}`: {e}", r.name))?;
                let lookahead = r.lookahead.map(|l| rebuild(l, count)).transpose();
                let lookahead = lookahead.map_err(|e| format!("lookahead of rule `{}`: {e}", r.name))?;
                Ok(Rule { name: r.name, body, lookahead, attrs: r.attrs })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Grammar::from_parts(rules, RuleId::from_u32(self.root)))
    }
}

/// `expr` in post-order.
fn flatten(expr: &Expr) -> Vec<Node> {
    let mut out = Vec::new();
    // (node, whether its children are already out)
    let mut stack = vec![(expr, false)];
    while let Some((e, children_done)) = stack.pop() {
        if !children_done && !e.children().is_empty() {
            stack.push((e, true));
            stack.extend(e.children().iter().rev().map(|c| (c, false)));
            continue;
        }
        let n = e.children().len() as u32;
        out.push(match e {
            Expr::Empty => Node::Empty,
            Expr::Bytes(b) => Node::Bytes(b.clone()),
            Expr::Class(c) => Node::Class { ranges: c.ranges().to_vec(), negated: c.is_negated() },
            Expr::Rule(r) => Node::Rule(r.as_u32()),
            Expr::Seq(_) => Node::Seq(n),
            Expr::Choice(_) => Node::Choice(n),
            Expr::Repeat(r) => Node::Repeat { min: r.min, max: r.max },
            Expr::Token(t) => Node::Token { ranges: t.ranges().to_vec(), negated: t.is_negated() },
            Expr::TagDispatch(t) => Node::TagDispatch {
                triggers: t.triggers.iter().map(SavedTrigger::new).collect(),
                bodies: n,
                excludes: t.excludes.iter().map(SavedTrigger::new).collect(),
                stop_eos: t.stop_eos,
                stop_strings: t.stop_strings.clone(),
                loop_after_dispatch: t.loop_after_dispatch,
            },
        });
    }
    out
}

/// The tree of a post-order node list (exactly one root).
fn rebuild(nodes: Vec<Node>, rule_count: usize) -> Result<Expr, String> {
    let max_depth = GrammarLimits::default().max_depth;
    // Finished expressions with their depths.
    let mut done: Vec<(Expr, usize)> = Vec::new();
    for node in nodes {
        let start = done.len().checked_sub(node.arity()).ok_or("a node has fewer children than it says")?;
        let depth = 1 + done[start..].iter().map(|c| c.1).max().unwrap_or(0);
        if depth > max_depth {
            return Err(format!("expression deeper than {max_depth}"));
        }
        let children: Vec<Expr> = done.drain(start..).map(|c| c.0).collect();
        let mut children = children.into_iter();
        let expr = match node {
            Node::Empty => Expr::Empty,
            Node::Bytes(b) => Expr::Bytes(b),
            Node::Class { ranges, negated } => Expr::Class(CharClass::new(ranges, negated)),
            Node::Rule(r) if r as usize >= rule_count => return Err(format!("reference to rule {r} of {rule_count}")),
            Node::Rule(r) => Expr::Rule(RuleId::from_u32(r)),
            Node::Seq(_) => Expr::Seq(children.collect()),
            Node::Choice(_) => Expr::Choice(children.collect()),
            Node::Repeat { min, max } => {
                let expr = children.next().ok_or("a repetition without its expression")?;
                Expr::Repeat(Box::new(Repeat { expr, min, max }))
            }
            Node::Token { ranges, negated } => Expr::Token(TokenSet::new(ranges, negated)),
            Node::TagDispatch { triggers, bodies: _, excludes, stop_eos, stop_strings, loop_after_dispatch } => {
                Expr::TagDispatch(Box::new(TagDispatch {
                    triggers: triggers.into_iter().map(SavedTrigger::into_trigger).collect(),
                    bodies: children.collect(),
                    excludes: excludes.into_iter().map(SavedTrigger::into_trigger).collect(),
                    stop_eos,
                    stop_strings,
                    loop_after_dispatch,
                }))
            }
        };
        done.push((expr, depth));
    }
    match <[_; 1]>::try_from(done) {
        Ok([(expr, _)]) => Ok(expr),
        Err(rest) => Err(format!("{} expressions where one body was expected", rest.len())),
    }
}

impl Node {
    /// How many finished expressions the node takes as children.
    fn arity(&self) -> usize {
        match self {
            Node::Seq(n) | Node::Choice(n) | Node::TagDispatch { bodies: n, .. } => *n as usize,
            Node::Repeat { .. } => 1,
            _ => 0,
        }
    }
}

impl SavedTrigger {
    fn new(t: &Trigger) -> Self {
        match t {
            Trigger::Text(b) => SavedTrigger::Text(b.clone()),
            Trigger::Token(id) => SavedTrigger::Token(*id),
        }
    }
    fn into_trigger(self) -> Trigger {
        match self {
            SavedTrigger::Text(b) => Trigger::Text(b),
            SavedTrigger::Token(id) => Trigger::Token(id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_round_trip_and_bad_lists_are_errors() {
        let expr = Expr::Seq(vec![
            Expr::literal("a"),
            Expr::star(Expr::Choice(vec![Expr::Rule(RuleId::new(0)), Expr::Empty])),
        ]);
        assert_eq!(rebuild(flatten(&expr), 1).unwrap(), expr);
        assert_eq!(rebuild(flatten(&expr), 0).unwrap_err(), "reference to rule 0 of 0");
        assert_eq!(rebuild(vec![Node::Seq(2), Node::Empty], 1).unwrap_err(), "a node has fewer children than it says");
        assert_eq!(
            rebuild(vec![Node::Empty, Node::Empty], 1).unwrap_err(),
            "2 expressions where one body was expected"
        );
        assert_eq!(rebuild(vec![], 1).unwrap_err(), "0 expressions where one body was expected");
    }

    #[test]
    fn a_tree_deeper_than_the_ir_allows_is_an_error() {
        let max = GrammarLimits::default().max_depth;
        let chain = |depth: usize| {
            let mut nodes = vec![Node::Empty];
            nodes.extend((1..depth).map(|_| Node::Repeat { min: 0, max: None }));
            nodes
        };
        assert!(rebuild(chain(max), 1).is_ok());
        assert_eq!(rebuild(chain(max + 1), 1).unwrap_err(), format!("expression deeper than {max}"));
    }
}
