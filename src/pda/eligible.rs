//! Which grammars the PDA serves exactly: decided once per grammar, on its frozen automata.
//!
//! The PDA keeps a state and a stack of return states per thread, nothing else, so it serves a
//! grammar whose automata need nothing else:
//!
//! * no counted repetition (`RuleKind::Counted`): its iteration count would have to live in
//!   the stack frame, and its cache entries rely on the Earley item's count (invariant 5.4);
//! * no token-level element (a state reading the sentinel lead byte, invariant 5.2) and no
//!   `TagDispatch` free text: both are read through the Earley matcher's id and dispatch paths;
//! * no left recursion (a rule that can call itself before reading a byte, directly or through
//!   nullable prefixes): the closure would push forever.
//!
//! Ambiguity is not decided here (it is undecidable in general): the PDA bounds its threads at
//! run time and hands over to the Earley parser beyond the bound (see the module docs).

use crate::fsm::{FsmRuleId, GrammarFsm, RuleKind};
use crate::util::scc::strongly_connected_components;

/// Why the PDA cannot serve a grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PdaError {
    /// A counted repetition `R{m,n}` too large to expand (its count needs the Earley item).
    #[error("the PDA cannot serve rule `{rule}`: a counted repetition (only the Earley parser keeps counts)")]
    CountedRepetition {
        /// The automaton rule's name.
        rule: String,
    },
    /// A token-level element (`Token`, `ExcludeToken`, a special-token literal, a token trigger).
    #[error("the PDA cannot serve rule `{rule}`: it reads tokens by id")]
    TokenElement {
        /// The automaton rule's name.
        rule: String,
    },
    /// Free text of a `TagDispatch`.
    #[error("the PDA cannot serve rule `{rule}`: TagDispatch free text")]
    TagDispatch {
        /// The automaton rule's name.
        rule: String,
    },
    /// A rule that calls itself before reading a byte.
    #[error("the PDA cannot serve rule `{rule}`: left recursion")]
    LeftRecursion {
        /// The automaton rule's name (one of the cycle).
        rule: String,
    },
}

/// Checks that the PDA serves `fsm` exactly (see the module documentation).
///
/// # Errors
/// The first [`PdaError`] found, rules in order.
pub fn check_servable(fsm: &GrammarFsm) -> Result<(), PdaError> {
    if let Some(rule) = fsm.rules().iter().find(|r| matches!(r.kind, RuleKind::Counted { .. })) {
        return Err(PdaError::CountedRepetition { rule: rule.name.clone() });
    }
    for s in fsm.states() {
        let rule = || fsm.rule(fsm.rule_of(s)).name.clone();
        if fsm.is_free_text(s) {
            return Err(PdaError::TagDispatch { rule: rule() });
        }
        if fsm.reads_token(s) {
            return Err(PdaError::TokenElement { rule: rule() });
        }
    }
    match left_recursive_rule(fsm) {
        Some(r) => Err(PdaError::LeftRecursion { rule: fsm.rule(r).name.clone() }),
        None => Ok(()),
    }
}

/// A rule on a cycle of the left-call graph (A → B when A's automaton reaches a rule edge to B
/// from its start without reading a byte, through nullable rules only), if any.
fn left_recursive_rule(fsm: &GrammarFsm) -> Option<FsmRuleId> {
    let calls: Vec<Vec<usize>> = (0..fsm.rules().len()).map(|r| left_calls(fsm, FsmRuleId::new(r))).collect();
    let comp = strongly_connected_components(calls.len(), |r| calls[r].iter().copied());
    let mut size = vec![0u32; calls.len()];
    for &c in &comp {
        size[c as usize] += 1;
    }
    (0..calls.len()).find(|&r| size[comp[r] as usize] > 1 || calls[r].contains(&r)).map(FsmRuleId::new)
}

/// The rules `r` can call before reading a byte.
fn left_calls(fsm: &GrammarFsm, r: FsmRuleId) -> Vec<usize> {
    let mut seen = vec![fsm.rule(r).start];
    let mut stack = vec![fsm.rule(r).start];
    let mut calls = Vec::new();
    while let Some(s) = stack.pop() {
        for e in fsm.rule_edges(s) {
            if !calls.contains(&e.rule.index()) {
                calls.push(e.rule.index());
            }
            if fsm.rule(e.rule).nullable && !seen.contains(&e.target) {
                seen.push(e.target);
                stack.push(e.target);
            }
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(ebnf: &str) -> Result<(), PdaError> {
        let g = crate::parse_ebnf(ebnf, "root").unwrap();
        check_servable(&GrammarFsm::new(&g).unwrap())
    }

    #[test]
    fn left_recursion_direct_and_through_nullable_prefixes() {
        assert!(matches!(check(r#"root ::= root "a" | "b""#), Err(PdaError::LeftRecursion { .. })));
        let through_nullable = r#"root ::= e x "a" | "b"
            x ::= e root | "c"
            e ::= "" | "e""#;
        assert!(
            matches!(check(through_nullable), Err(PdaError::LeftRecursion { .. })),
            "{:?}",
            check(through_nullable)
        );
        assert_eq!(check(r#"root ::= "a" root | "b""#), Ok(()));
    }

    #[test]
    fn counted_repetitions_and_tokens_are_refused() {
        assert!(matches!(check(r#"root ::= [a-z]{0,300}"#), Err(PdaError::CountedRepetition { .. })));
        assert!(matches!(check(r#"root ::= "a" Token(5)"#), Err(PdaError::TokenElement { .. })));
    }
}
