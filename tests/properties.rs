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

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// A parser compacted at random points (keeping the last `keep` bytes poppable) reads the
    /// same bytes, accepts at the same points and offers the same next bytes as one that keeps
    /// its whole chart, through random pops within the kept bytes.
    #[test]
    fn a_compacted_parser_behaves_as_the_whole_chart(
        g in gen::grammar(),
        inputs in prop::collection::vec(gen::input(), 1..12),
        plan in prop::collection::vec((0usize..4, 0usize..4, any::<bool>()), 64),
    ) {
        let fsm = Arc::new(build_grammar_fsm(&g, &FsmLimits::default()).unwrap());
        let (mut whole, mut compacted) = (Parser::new(fsm.clone()), Parser::new(fsm));
        let mut poppable = 0usize;
        let bytes: Vec<u8> = inputs.concat();
        for (i, &b) in bytes.iter().enumerate() {
            let (keep, pop, compact) = plan[i % plan.len()];
            let read = whole.advance_byte(b);
            prop_assert_eq!(compacted.advance_byte(b), read, "byte {} of {:?}\n{}", i, String::from_utf8_lossy(&bytes), g);
            if !read {
                continue;
            }
            poppable += 1;
            prop_assert_eq!(compacted.is_accepting(), whole.is_accepting());
            prop_assert_eq!(compacted.next_bytes(), whole.next_bytes());
            if compact {
                let keep = keep.min(poppable);
                compacted.compact(keep);
                poppable = keep;
            }
            let pop = pop.min(poppable).min(1);
            whole.pop_bytes(pop);
            compacted.pop_bytes(pop);
            poppable -= pop;
            prop_assert_eq!(compacted.is_accepting(), whole.is_accepting());
            prop_assert_eq!(compacted.next_bytes(), whole.next_bytes());
        }
    }
}
