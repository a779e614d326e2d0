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

mod dead_rules;
mod normalize;
mod productive;

use super::{Grammar, GrammarError, Rule, RuleId};

pub(crate) use productive::productive_bodies;

/// Whether [`run`] checks productivity (pass 4), or trusts a front-end that already removed
/// every unproductive part with [`productive_bodies`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Productivity {
    Check,
    Trusted,
}

pub(crate) fn run(
    mut rules: Vec<Rule>,
    root: RuleId,
    undefined: &[usize],
    productivity: Productivity,
) -> Result<Grammar, GrammarError> {
    if let Some(&i) = undefined.first() {
        return Err(GrammarError::UndefinedRule { name: rules[i].name.clone() });
    }
    for rule in rules.iter_mut() {
        normalize::rule(rule)?;
    }
    let (rules, root) = dead_rules::run(rules, root);
    if productivity == Productivity::Check {
        productive::check(&rules)?;
    } else {
        debug_assert!(productive::check(&rules).is_ok(), "a trusted front-end left an unproductive rule");
    }
    Ok(Grammar::from_parts(rules, root))
}
