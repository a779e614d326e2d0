//! Equivalence properties of the parser on random grammars.

use std::sync::Arc;

use maskforge::earley::Parser;
use maskforge::fsm::{build_grammar_fsm, FsmLimits};
use proptest::prelude::*;

use crate::support::{gen, reference::recognizes};

fn earley_accepts(p: &mut Parser, s: &[u8]) -> bool {
    let n = p.advance_bytes(s);
    let ok = n == s.len() && p.is_accepting();
    p.pop_bytes(n);
    ok
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The Earley parser and the fixpoint recognizer agree, with repetitions expanded into the
    /// automata, with every bounded repetition turned into a counter, without rule inlining,
    /// and without subset construction (the suffix-merged NFAs are kept).
    #[test]
    fn earley_matches_reference(g in gen::grammar(), inputs in prop::collection::vec(gen::input(), 1..12)) {
        let expanded = Arc::new(build_grammar_fsm(&g, &FsmLimits::default()).unwrap());
        let counted = Arc::new(build_grammar_fsm(&g, &FsmLimits { max_expanded_repeat: 0, ..FsmLimits::default() }).unwrap());
        let plain = Arc::new(build_grammar_fsm(&g, &FsmLimits { max_inline_states: 0, ..FsmLimits::default() }).unwrap());
        let nfa = Arc::new(build_grammar_fsm(&g, &FsmLimits { max_dfa_states: 1, max_dfa_work: 0, ..FsmLimits::default() }).unwrap());
        let mut p4 = Parser::new(nfa);
        let mut p1 = Parser::new(expanded);
        let mut p2 = Parser::new(counted);
        let mut p3 = Parser::new(plain);
        for s in &inputs {
            let want = recognizes(&g, s);
            prop_assert_eq!(earley_accepts(&mut p1, s), want, "expanded, input {:?}\n{}", String::from_utf8_lossy(s), g);
            prop_assert_eq!(earley_accepts(&mut p2, s), want, "counted, input {:?}\n{}", String::from_utf8_lossy(s), g);
            prop_assert_eq!(earley_accepts(&mut p3, s), want, "no inlining, input {:?}\n{}", String::from_utf8_lossy(s), g);
            prop_assert_eq!(earley_accepts(&mut p4, s), want, "no determinization, input {:?}\n{}", String::from_utf8_lossy(s), g);
        }
    }
}
