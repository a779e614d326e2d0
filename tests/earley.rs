//! Byte-level acceptance by the Earley parser beyond the accept/reject cases of grammar shapes
//! (ambiguity, recursion, nullable rules, counted repetition: data in
//! `tests/data/ebnf/grammar_shapes.json`, run by `data_cases` and cross-checked there against
//! the independent recognizer): long and deep inputs, code points split across bytes, the size
//! of counted repetitions, and rollback.

use std::sync::Arc;

use maskforge::earley::Parser;
use maskforge::fsm::GrammarFsm;
use maskforge::parse_ebnf;

fn parser(ebnf: &str) -> Parser {
    let g = parse_ebnf(ebnf, "root").unwrap_or_else(|e| panic!("{e}\n{ebnf}"));
    Parser::new(Arc::new(GrammarFsm::new(&g).unwrap()))
}

fn accepts(p: &mut Parser, s: &[u8]) -> bool {
    let n = p.advance_bytes(s);
    let ok = n == s.len() && p.is_accepting();
    p.pop_bytes(n);
    ok
}

#[test]
fn long_ambiguous_input() {
    // E ::= E + E | a : exponentially many parses, polynomial Earley sets.
    let long = vec!["a"; 200].join("+");
    assert!(accepts(&mut parser(r#"root ::= root "+" root | "a""#), long.as_bytes()));
}

#[test]
fn long_right_recursion() {
    let long = "a".repeat(2000) + "b";
    assert!(accepts(&mut parser(r#"root ::= "a" root | "b""#), long.as_bytes()));
}

#[test]
fn deep_nesting() {
    let mut p = parser(r#"root ::= "[" root "]" | "x""#);
    let deep = "[".repeat(500) + "x" + &"]".repeat(500);
    assert!(accepts(&mut p, deep.as_bytes()));
    let unbalanced = "[".repeat(500) + "x" + &"]".repeat(499);
    assert!(!accepts(&mut p, unbalanced.as_bytes()));
}

#[test]
fn split_code_points() {
    let mut p = parser(r#"root ::= [α-ω]"#);
    let bytes = "λ".as_bytes();
    assert!(p.advance_byte(bytes[0]) && !p.is_accepting());
    assert!(p.advance_byte(bytes[1]) && p.is_accepting());
}

#[test]
fn huge_repetition_bounds_stay_small() {
    let g = parse_ebnf(r#"root ::= [a-z]{0,100000} "!""#, "root").unwrap();
    let fsm = GrammarFsm::new(&g).unwrap();
    assert!(fsm.state_len() < 20, "{} states", fsm.state_len());
    let mut p = Parser::new(Arc::new(fsm));
    assert!(accepts(&mut p, (String::from("abc") + "!").as_bytes()));
}

#[test]
fn rollback_restores_sets() {
    let mut p = parser(r#"root ::= "ab" "c"* | "a" "bd""#);
    assert_eq!(p.advance_bytes(b"ab"), 2);
    let snapshot = p.current_items().to_vec();
    assert!(p.advance_byte(b'c'));
    p.pop_bytes(1);
    assert_eq!(p.current_items(), &snapshot[..]);
    assert!(p.advance_byte(b'd') && p.is_accepting());
}

/// `fsm::lookahead::state_first_bytes` (the cache's estimate of a walk's first-byte tokens) is
/// what an isolated parser at the state can read first, for every state of grammars with
/// nullable rules, recursion through nullable prefixes and a key position that calls the
/// generic string body; with a counted repetition it may hold more (a loop-back the parser's
/// count refuses), never less.
#[test]
fn state_first_bytes_are_what_an_isolated_parser_reads_first() {
    use maskforge::fsm::lookahead::state_first_bytes;
    let grammars = [
        ("root ::= a \"x\" | b\na ::= b? \"y\" a | \"\"\nb ::= a \"z\" | \"w\"", false),
        ("root ::= \"(\" root? \")\" root | \".\"", false),
        ("root ::= \"{\" (\"\\\"\" [0-9]+ \"\\\"\" | \"\\\"\" tail \"\\\"\") \"}\"\ntail ::= [a-z]*", false),
        ("root ::= s{2,40} \"!\"\ns ::= \"a\" | t\nt ::= \"\" | \"b\" s", true),
    ];
    for (ebnf, counted) in grammars {
        let g = parse_ebnf(ebnf, "root").unwrap_or_else(|e| panic!("{e}\n{ebnf}"));
        let fsm = Arc::new(GrammarFsm::new(&g).unwrap());
        let has_counted = fsm.rules().iter().any(|r| r.kind != maskforge::fsm::RuleKind::Plain);
        assert_eq!(has_counted, counted, "{ebnf}");
        for s in fsm.states() {
            let read = Parser::isolated(Arc::clone(&fsm), s, &[]).next_bytes();
            let first = state_first_bytes(&fsm, s).words();
            let covers = read.iter().zip(&first).all(|(r, f)| r & !f == 0);
            assert!(covers, "{ebnf}: state {s} reads {read:x?}, first bytes {first:x?}");
            assert!(counted || read == first, "{ebnf}: state {s} reads {read:x?}, first bytes {first:x?}");
        }
    }
}
