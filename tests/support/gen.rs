//! proptest strategies for random grammars over a small alphabet, used by the equivalence
//! properties (Earley vs the reference recognizer; masks vs token-by-token acceptance).

use maskforge::{Expr, Grammar, GrammarBuilder, RuleId};
use proptest::prelude::*;

/// A random expression over `a`, `b`, `c` (plus one non-ASCII letter) referencing rules
/// `0..rules`.
pub fn expr(rules: usize) -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        prop::sample::select(vec!["a", "b", "c", "ab", "ba", "abc", "é", ""]).prop_map(Expr::literal),
        Just(Expr::class([('a' as u32, 'b' as u32)], false)),
        Just(Expr::class([('a' as u32, 'a' as u32)], true)),
        (0..rules).prop_map(|r| Expr::Rule(RuleId::new(r))),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::Seq),
            prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::Choice),
            (inner, 0u32..3, prop::option::of(0u32..4)).prop_map(|(e, min, extra)| Expr::repeat(
                e,
                min,
                extra.map(|x| min + x)
            )),
        ]
    })
}

/// A random well-formed grammar with 1 to 4 rules; rule 0 is the root. Grammars that fail to
/// build (a rule with an empty language) are discarded.
pub fn grammar() -> impl Strategy<Value = Grammar> {
    (1usize..5).prop_flat_map(|n| prop::collection::vec(expr(n), n)).prop_filter_map("grammar must build", |bodies| {
        let mut b = GrammarBuilder::new();
        let ids: Vec<_> = (0..bodies.len()).map(|i| b.rule(&format!("r{i}"))).collect();
        for (id, body) in ids.into_iter().zip(bodies) {
            b.define(id, body, None).ok()?;
        }
        b.build("r0").ok()
    })
}

/// A short random string over the grammar's alphabet.
pub fn input() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "é"]), 0..7).prop_map(|v| v.concat().into_bytes())
}
