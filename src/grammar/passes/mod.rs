//! Grammar passes, run by [`crate::GrammarBuilder::build`] in the order fixed here:
//!
//! 1. **undefined references**: a rule that was declared (referenced) but never defined is an
//!    error, reported by name.
//! 2. [`normalize`]: flatten nested sequences and choices, merge adjacent byte strings, drop
//!    empty strings from sequences, fold trivial repetitions, check repetition bounds. Later
//!    stages and the printer rely on this canonical shape (`print → parse` is an identity on
//!    normalized grammars).
//! 3. [`dead_rules`]: drop rules unreachable from the root and renumber the rest, keeping
//!    their relative order.
//! 4. [`productive`]: every remaining rule must match at least one string.
//!
//! A front-end that computed which rules are productive (with [`productive_bodies`]) hands its
//! rules to [`run_pruning`] instead ([`prune_normalize`]): one walk per body prunes the
//! unproductive parts, checks the size limits, normalizes and collects the references for
//! pass 3.

mod dead_rules;
mod normalize;
mod productive;
mod prune_normalize;

use super::{Grammar, GrammarError, Rule, RuleId};

pub(crate) use productive::productive_bodies;
pub(crate) use prune_normalize::run as run_pruning;

pub(crate) fn run(mut rules: Vec<Rule>, root: RuleId, undefined: &[usize]) -> Result<Grammar, GrammarError> {
    if let Some(&i) = undefined.first() {
        return Err(GrammarError::UndefinedRule { name: rules[i].name.clone() });
    }
    for rule in rules.iter_mut() {
        normalize::rule(rule)?;
    }
    let (rules, root) = dead_rules::run(rules, root);
    productive::check(&rules)?;
    Ok(Grammar::from_parts(rules, root))
}
