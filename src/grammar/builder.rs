//! [`GrammarBuilder`]: declare rules by name, define their bodies, then `build` a checked,
//! normalized [`Grammar`].
//!
//! Rules get ids in order of declaration, so a front-end that declares every rule before
//! lowering bodies (as the EBNF parser does, in order of definition) produces ids that match
//! the source order, which keeps `print → parse` an identity.

use super::{passes, Expr, Grammar, GrammarError, Rule, RuleAttrs, RuleId};
use std::collections::HashMap;

/// Size limits for untrusted grammars. Exceeding one is a [`GrammarError::TooLarge`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrammarLimits {
    /// The most rules a grammar may have. Default 1,000,000.
    pub max_rules: usize,
    /// The most expression nodes over all rules. Default 10,000,000 (about 1 GB of IR).
    pub max_nodes: usize,
    /// The deepest expression nesting in one rule body. Default 1,000; deep nesting in
    /// generated grammars goes through rule references instead, which have no depth.
    pub max_depth: usize,
}

impl Default for GrammarLimits {
    fn default() -> Self {
        GrammarLimits { max_rules: 1_000_000, max_nodes: 10_000_000, max_depth: 1_000 }
    }
}

/// Builds a [`Grammar`]; see the example on [`Grammar`].
#[derive(Debug, Default, Clone)]
pub struct GrammarBuilder {
    names: Vec<String>,
    bodies: Vec<Option<(Expr, Option<Expr>)>>,
    /// Per declared rule, its attributes (see [`GrammarBuilder::set_attrs`]).
    attrs: Vec<RuleAttrs>,
    // std's SipHash, not the fast hasher: rule names come from untrusted grammar text.
    by_name: HashMap<String, RuleId>,
    nodes: usize,
    limits: GrammarLimits,
}

impl GrammarBuilder {
    /// An empty builder with default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty builder with the given limits.
    pub fn with_limits(limits: GrammarLimits) -> Self {
        GrammarBuilder { limits, ..Self::default() }
    }

    /// The id of the rule named `name`, declaring it if it is new.
    pub fn rule(&mut self, name: &str) -> RuleId {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let id = RuleId::new(self.names.len());
        self.names.push(name.to_string());
        self.bodies.push(None);
        self.attrs.push(RuleAttrs::default());
        self.by_name.insert(name.to_string(), id);
        id
    }

    /// Declares a rule with a fresh name starting with `prefix` (`prefix`, `prefix_1`, ...).
    pub fn fresh_rule(&mut self, prefix: &str) -> RuleId {
        let mut name = prefix.to_string();
        let mut k = 1;
        while self.by_name.contains_key(&name) {
            name = format!("{prefix}_{k}");
            k += 1;
        }
        self.rule(&name)
    }

    /// Whether a rule of this name has been declared.
    pub fn is_declared(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Whether rule `id` already has a body.
    pub fn is_defined(&self, id: RuleId) -> bool {
        self.bodies[id.index()].is_some()
    }

    /// The name of rule `id`.
    pub fn name(&self, id: RuleId) -> &str {
        &self.names[id.index()]
    }

    /// Gives rule `id` its body and optional lookahead assertion.
    ///
    /// # Errors
    /// [`GrammarError::DuplicateRule`] when the rule already has a body;
    /// [`GrammarError::TooLarge`] when a limit is exceeded.
    pub fn define(&mut self, id: RuleId, body: Expr, lookahead: Option<Expr>) -> Result<(), GrammarError> {
        if self.bodies[id.index()].is_some() {
            return Err(GrammarError::DuplicateRule { name: self.names[id.index()].clone() });
        }
        for e in std::iter::once(&body).chain(lookahead.as_ref()) {
            count_within_limits(e, &self.limits, &mut self.nodes)?;
        }
        self.bodies[id.index()] = Some((body, lookahead));
        Ok(())
    }

    /// Gives rule `id` its attributes (`name[lazy] ::= ...`), replacing any set before.
    pub fn set_attrs(&mut self, id: RuleId, attrs: RuleAttrs) {
        self.attrs[id.index()] = attrs;
    }

    /// Declares and defines a rule in one step, returning its id.
    ///
    /// # Errors
    /// As [`GrammarBuilder::define`].
    pub fn add_rule(&mut self, name: &str, body: Expr) -> Result<RuleId, GrammarError> {
        let id = self.rule(name);
        self.define(id, body, None)?;
        Ok(id)
    }

    /// Checks and normalizes the rules and returns the grammar rooted at `root`.
    ///
    /// # Errors
    /// [`GrammarError::MissingRoot`], [`GrammarError::UndefinedRule`] (the first undefined
    /// rule reachable from the root), [`GrammarError::InvalidRepeat`],
    /// [`GrammarError::EmptyLanguage`] and [`GrammarError::TooLarge`].
    pub fn build(self, root: &str) -> Result<Grammar, GrammarError> {
        if self.names.len() > self.limits.max_rules {
            return Err(GrammarError::TooLarge {
                what: "rule count",
                actual: self.names.len(),
                limit: self.limits.max_rules,
            });
        }
        let root_id = match self.by_name.get(root) {
            Some(&id) if self.bodies[id.index()].is_some() => id,
            _ => return Err(GrammarError::MissingRoot { name: root.to_string() }),
        };
        let mut rules = Vec::with_capacity(self.names.len());
        let mut undefined = Vec::new();
        let named = self.names.into_iter().zip(self.attrs);
        for (i, ((name, attrs), body)) in named.zip(self.bodies).enumerate() {
            match body {
                Some((body, lookahead)) => rules.push(Rule { name, body, lookahead, attrs }),
                None => {
                    undefined.push(i);
                    rules.push(Rule { name, body: Expr::Empty, lookahead: None, attrs })
                }
            }
        }
        passes::run(rules, root_id, &undefined)
    }

    /// A grammar of `rules` (names, bodies; ids in order) rooted at `root`, for a front-end
    /// whose names are distinct by construction and that computed which rules are productive
    /// (`productive[i]` for rule `i`, with `passes::productive_bodies`): no name table is
    /// built, the unproductive parts are pruned (unproductive alternatives dropped,
    /// unproductive optional parts made empty; unproductive rules are then unreachable and
    /// dropped), and the passes run in one walk per body (`passes/prune_normalize.rs`). The
    /// size limits are checked on the pruned bodies as by [`GrammarBuilder::define`].
    pub(crate) fn build_pruning(
        rules: Vec<(String, Expr)>,
        productive: &[bool],
        root: RuleId,
        limits: &GrammarLimits,
    ) -> Result<Grammar, GrammarError> {
        passes::run_pruning(rules, productive, root, limits)
    }
}

/// Adds `e`'s nodes to `nodes`; an error when `e` is deeper, or the total larger, than `limits`
/// allow.
fn count_within_limits(e: &Expr, limits: &GrammarLimits, nodes: &mut usize) -> Result<(), GrammarError> {
    let (depth, n) = e.depth_and_node_count();
    crate::util::cancel::charge_bytes(n * std::mem::size_of::<Expr>(), "grammar construction")?;
    if depth > limits.max_depth {
        return Err(GrammarError::TooLarge { what: "expression depth", actual: depth, limit: limits.max_depth });
    }
    *nodes += n;
    if *nodes > limits.max_nodes {
        return Err(GrammarError::TooLarge { what: "expression node count", actual: *nodes, limit: limits.max_nodes });
    }
    Ok(())
}
