//! [`GrammarBuilder::import`]: copy a finished [`Grammar`] into a builder under fresh rule
//! names, so front-ends that combine sub-grammars (structural tags embed JSON Schemas, EBNF
//! and regexes) reuse the other front-ends' output instead of re-lowering it.

use super::{Expr, Grammar, GrammarBuilder, GrammarError, RuleId, TagDispatch};

impl GrammarBuilder {
    /// Copies every rule of `grammar` into this builder, naming each `{prefix}_{name}` (made
    /// unique with [`GrammarBuilder::fresh_rule`]), and returns the id of the copied root.
    ///
    /// # Errors
    /// [`GrammarError::TooLarge`] when the builder's limits are exceeded.
    ///
    /// # Example
    /// ```
    /// use maskforge::{parse_ebnf, Expr, GrammarBuilder};
    /// let digits = parse_ebnf("root ::= d+\nd ::= [0-9]", "root")?;
    /// let mut b = GrammarBuilder::new();
    /// let n = b.import(&digits, "num")?;
    /// b.add_rule("root", Expr::Seq(vec![Expr::literal("#"), Expr::Rule(n)]))?;
    /// assert_eq!(b.build("root")?.to_string(), "num_root ::= num_d+\nnum_d ::= [0-9]\nroot ::= \"#\" num_root\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn import(&mut self, grammar: &Grammar, prefix: &str) -> Result<RuleId, GrammarError> {
        let ids: Vec<RuleId> =
            grammar.rules().iter().map(|r| self.fresh_rule(&format!("{prefix}_{}", r.name))).collect();
        for (rule, &id) in grammar.rules().iter().zip(&ids) {
            let body = rename(&rule.body, &ids);
            let lookahead = rule.lookahead.as_ref().map(|l| rename(l, &ids));
            self.define(id, body, lookahead)?;
            self.set_attrs(id, rule.attrs.clone());
        }
        Ok(ids[grammar.root().index()])
    }
}

/// `e` with every rule reference `r` replaced by `ids[r]`. Recursion depth is bounded by the
/// expression depth, which the source grammar's builder already limited.
pub(crate) fn rename(e: &Expr, ids: &[RuleId]) -> Expr {
    let all = |v: &[Expr]| v.iter().map(|x| rename(x, ids)).collect::<Vec<_>>();
    match e {
        Expr::Rule(r) => Expr::Rule(ids[r.index()]),
        Expr::Seq(v) => Expr::Seq(all(v)),
        Expr::Choice(v) => Expr::Choice(all(v)),
        Expr::Repeat(r) => Expr::repeat(rename(&r.expr, ids), r.min, r.max),
        Expr::TagDispatch(t) => Expr::TagDispatch(Box::new(TagDispatch { bodies: all(&t.bodies), ..(**t).clone() })),
        Expr::Empty | Expr::Bytes(_) | Expr::Class(_) | Expr::Token(_) => e.clone(),
    }
}
