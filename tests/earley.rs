//! Byte-level acceptance by the Earley parser on grammar shapes that break simpler parsers:
//! ambiguity, left and right recursion, nullable rules, deep nesting, counted repetition.
//! Every verdict is cross-checked against the independent fixpoint recognizer.

use std::sync::Arc;

use maskforge::earley::Parser;
use maskforge::fsm::GrammarFsm;
use maskforge::parse_ebnf;

use crate::support::reference::recognizes;

fn parser(ebnf: &str) -> (maskforge::Grammar, Parser) {
    let g = parse_ebnf(ebnf, "root").unwrap_or_else(|e| panic!("{e}\n{ebnf}"));
    let fsm = Arc::new(GrammarFsm::new(&g).unwrap());
    (g, Parser::new(fsm))
}

fn accepts(p: &mut Parser, s: &[u8]) -> bool {
    let n = p.advance_bytes(s);
    let ok = n == s.len() && p.is_accepting();
    p.pop_bytes(n);
    ok
}

fn check(ebnf: &str, accept: &[&str], reject: &[&str]) {
    let (g, mut p) = parser(ebnf);
    for s in accept {
        assert!(accepts(&mut p, s.as_bytes()), "should accept {s:?}\n{ebnf}");
        assert!(recognizes(&g, s.as_bytes()), "reference disagrees on {s:?}");
    }
    for s in reject {
        assert!(!accepts(&mut p, s.as_bytes()), "should reject {s:?}\n{ebnf}");
        assert!(!recognizes(&g, s.as_bytes()), "reference disagrees on {s:?}");
    }
}

#[test]
fn ambiguous_grammar() {
    // E ::= E + E | a : exponentially many parses, polynomial Earley sets.
    check(r#"root ::= root "+" root | "a""#, &["a", "a+a", "a+a+a+a+a+a+a+a"], &["", "+", "a+", "aa", "a++a"]);
    let long = vec!["a"; 200].join("+");
    let (_, mut p) = parser(r#"root ::= root "+" root | "a""#);
    assert!(accepts(&mut p, long.as_bytes()));
}

#[test]
fn left_recursion() {
    check(r#"root ::= root "b" | "a""#, &["a", "ab", "abbbb"], &["", "b", "ba", "aab"]);
    check(
        r#"root ::= list
list ::= list "," item | item
item ::= [0-9]+"#,
        &["1", "1,22,333"],
        &["", ",", "1,", ",1", "1,,2"],
    );
}

#[test]
fn right_recursion() {
    check(r#"root ::= "a" root | "b""#, &["b", "ab", "aaaab"], &["", "a", "ba", "abb"]);
    let long = "a".repeat(2000) + "b";
    let (_, mut p) = parser(r#"root ::= "a" root | "b""#);
    assert!(accepts(&mut p, long.as_bytes()));
}

#[test]
fn nullable_rules() {
    check(
        r#"root ::= a b a "x" a
a ::= "" | "y"
b ::= a a"#,
        &["x", "yx", "yyyx", "yyyyxy", "xy"],
        &["", "yyyyyx", "xyy", "y"],
    );
    // A nullable rule under a star and a nullable left recursion.
    check(
        r#"root ::= (e)* "z"
e ::= "" | "q""#,
        &["z", "qz", "qqqz"],
        &["", "q", "zq"],
    );
    check(r#"root ::= root "a" | """#, &["", "a", "aaa"], &["b", "ab"]);
}

#[test]
fn deep_nesting() {
    let g = r#"root ::= "[" root "]" | "x""#;
    let (_, mut p) = parser(g);
    let deep = "[".repeat(500) + "x" + &"]".repeat(500);
    assert!(accepts(&mut p, deep.as_bytes()));
    let unbalanced = "[".repeat(500) + "x" + &"]".repeat(499);
    assert!(!accepts(&mut p, unbalanced.as_bytes()));
    check(g, &["x", "[x]", "[[[x]]]"], &["[x", "x]", "[[x]", "[]"]);
}

#[test]
fn unicode_classes_and_split_code_points() {
    check(r#"root ::= [^a-z]+"#, &["A", "é", "日本", "🎉x".trim_end_matches('x')], &["a", "Aa", ""]);
    let (_, mut p) = parser(r#"root ::= [α-ω]"#);
    let bytes = "λ".as_bytes();
    assert!(p.advance_byte(bytes[0]) && !p.is_accepting());
    assert!(p.advance_byte(bytes[1]) && p.is_accepting());
}

#[test]
fn counted_repetitions_are_exact() {
    // Bounds past the expansion threshold become counters in the Earley items.
    check(r#"root ::= "a"{20,25}"#, &[&"a".repeat(20), &"a".repeat(25)], &[&"a".repeat(19), &"a".repeat(26)]);
    check(r#"root ::= ("ab" | "c"){17,}"#, &[&"c".repeat(17), &"ab".repeat(30)], &[&"c".repeat(16), "abc"]);
    check(
        r#"root ::= (x){0,40} "."
x ::= "" | "k""#,
        &[".", &("k".repeat(40) + ".")],
        &[&("k".repeat(41) + ".")],
    );
    // Huge bounds compile to a constant-size automaton.
    let g = parse_ebnf(r#"root ::= [a-z]{0,100000} "!""#, "root").unwrap();
    let fsm = GrammarFsm::new(&g).unwrap();
    assert!(fsm.state_len() < 20, "{} states", fsm.state_len());
    let mut p = Parser::new(Arc::new(fsm));
    assert!(accepts(&mut p, (String::from("abc") + "!").as_bytes()));
}

#[test]
fn rollback_restores_sets() {
    let (_, mut p) = parser(r#"root ::= "ab" "c"* | "a" "bd""#);
    assert_eq!(p.advance_bytes(b"ab"), 2);
    let snapshot = p.current_items().to_vec();
    assert!(p.advance_byte(b'c'));
    p.pop_bytes(1);
    assert_eq!(p.current_items(), &snapshot[..]);
    assert!(p.advance_byte(b'd') && p.is_accepting());
}
