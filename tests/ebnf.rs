//! Properties of the EBNF front-end through the public API:
//!
//! * printing a normalized grammar and parsing it back gives an equal grammar (and the
//!   same text), for random grammars built with `GrammarBuilder`;
//! * `parse_ebnf` never panics, whatever the input, and whatever it accepts prints back to
//!   text that parses to the same grammar.

use maskforge::{parse_ebnf, CharClass, Expr, GrammarBuilder, GrammarError, RuleAttrs, TagDispatch, TokenSet, Trigger};
use proptest::prelude::*;

/// Characters that stress the printer's escaping and the lexer's literal syntax.
const SPECIAL: &[char] = &[
    '"',
    '\\',
    '\n',
    '\r',
    '\t',
    '\0',
    '\u{1}',
    '\u{7f}',
    '\u{85}',
    '#',
    '[',
    ']',
    '-',
    '^',
    '(',
    ')',
    '|',
    '*',
    '+',
    '?',
    '{',
    '}',
    '/',
    '\'',
    ' ',
    'x',
    'A',
    '0',
    'é',
    '中',
    '😀',
    '\u{a0}',
    '\u{ad}',
    '\u{200b}',
    '\u{2028}',
    '\u{feff}',
    '\u{e000}',
    '\u{f8ff}',
    '\u{f0000}',
    '\u{10ffff}',
    '\u{ffff}',
    '\u{d7ff}',
];

fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![3 => prop::sample::select(SPECIAL), 1 => any::<char>(), 1 => prop::char::range('a', 'e')]
}

fn literal() -> impl Strategy<Value = Expr> {
    prop::collection::vec(any_char(), 0..5).prop_map(|cs| Expr::literal(cs.into_iter().collect::<String>()))
}

fn class() -> impl Strategy<Value = Expr> {
    let range =
        (any_char(), any_char()).prop_map(|(a, b)| if a <= b { (a as u32, b as u32) } else { (b as u32, a as u32) });
    (prop::collection::vec(range, 0..4), any::<bool>())
        .prop_map(|(ranges, negated)| Expr::Class(CharClass::new(ranges, negated)))
}

/// `Token(...)` or `ExcludeToken(...)` over a few small ids (adjacent ids merge into ranges).
fn token_set() -> impl Strategy<Value = Expr> {
    (prop::collection::vec(0u32..300, 1..4), any::<bool>())
        .prop_map(|(ids, negated)| Expr::Token(TokenSet::new(ids.into_iter().map(|i| (i, i)), negated)))
}

/// A `TagDispatch` with text and token triggers, rule or literal bodies, stop strings, excludes.
fn tag_dispatch(rules: usize) -> impl Strategy<Value = Expr> {
    let text =
        || prop::collection::vec(any_char(), 1..4).prop_map(|cs| cs.into_iter().collect::<String>().into_bytes());
    let trigger = move || prop_oneof![3 => text().prop_map(Trigger::Text), 1 => (0u32..300).prop_map(Trigger::Token)];
    let body =
        prop_oneof![(0..rules).prop_map(|i| Expr::Rule(maskforge::RuleId::new(i))), text().prop_map(Expr::Bytes),];
    (
        prop::collection::vec((trigger(), body), 0..3),
        prop::collection::vec(trigger(), 0..2),
        prop::collection::vec(text(), 0..2),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(tags, excludes, stops, stop_eos, looped)| {
            let mut t = TagDispatch::new(tags);
            // A trigger may be in its own excludes: `build` refuses the grammar then (checked
            // in `build`).
            t.excludes = excludes;
            t.stop_strings = stops;
            t.stop_eos = stop_eos;
            t.loop_after_dispatch = looped;
            Expr::TagDispatch(Box::new(t))
        })
}

/// Random expressions over rules `0..rules`.
fn expr(rules: usize) -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        3 => literal(),
        2 => class(),
        2 => (0..rules).prop_map(|i| Expr::Rule(maskforge::RuleId::new(i))),
        1 => Just(Expr::Empty),
        1 => token_set(),
        1 => tag_dispatch(rules),
    ];
    leaf.prop_recursive(5, 48, 5, |inner| {
        let bound = prop_oneof![4 => 0u32..4, 1 => Just(u32::MAX - 1), 1 => 0u32..1000];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Expr::Seq),
            prop::collection::vec(inner.clone(), 1..4).prop_map(Expr::Choice),
            (inner, bound, prop::option::of(0u32..4))
                .prop_map(|(e, min, extra)| { Expr::repeat(e, min, extra.map(|extra| min.saturating_add(extra))) }),
        ]
    })
}

/// A random rule name matching `[a-zA-Z_][a-zA-Z0-9_.-]*`; the `_{i}` suffix makes names
/// unique.
fn name(i: usize) -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9_.-]{0,6}".prop_map(move |prefix| format!("{prefix}_{i}"))
}

/// `(names, bodies, lookaheads, attributes, root index)` of a random grammar.
type Spec = (Vec<String>, Vec<(Expr, Expr)>, Vec<Option<Expr>>, Vec<RuleAttrs>, usize);

/// Rule attributes, mostly none (printing and parsing them back, not enforcing them).
fn attrs() -> impl Strategy<Value = RuleAttrs> {
    let capture = prop::option::of(prop::sample::select(vec!["", "x", "a.b-c_1"]));
    let temperature = prop::option::of(prop::sample::select(vec![0.0f32, 0.7, 1.0, 1e-3, 2.5]));
    let some = (any::<bool>(), prop::option::of(0u32..3000), prop::option::of(1u32..100), temperature, capture)
        .prop_map(|(lazy, max_chars, max_tokens, temperature, capture)| RuleAttrs {
            lazy,
            max_chars,
            max_tokens,
            temperature_bits: temperature.map(f32::to_bits),
            stop_capture: capture.filter(|c| !c.is_empty()).map(str::to_string),
            capture: capture.map(str::to_string),
        });
    prop::option::weighted(0.3, some).prop_map(Option::unwrap_or_default)
}

fn grammar_spec() -> impl Strategy<Value = Spec> {
    (1usize..6).prop_flat_map(|n| {
        let names: Vec<_> = (0..n).map(name).collect();
        (
            names,
            prop::collection::vec((literal(), expr(n)), n),
            prop::collection::vec(prop::option::weighted(0.2, expr(n)), n),
            prop::collection::vec(attrs(), n),
            0..n,
        )
    })
}

/// Whether `e` holds a dispatch with a trigger in its own excludes.
fn has_malformed_dispatch(e: &Expr) -> bool {
    match e {
        Expr::TagDispatch(t) => t.malformed().is_some() || t.bodies.iter().any(has_malformed_dispatch),
        Expr::Seq(v) | Expr::Choice(v) => v.iter().any(has_malformed_dispatch),
        Expr::Repeat(r) => has_malformed_dispatch(&r.expr),
        _ => false,
    }
}

/// Builds the grammar of a spec; returns it and its root's name, or `None` when a dispatch
/// lists a trigger in its own excludes, after checking that the builder refused it (issue 18:
/// the IR refuses it, whatever the front-end).
fn build((names, bodies, lookaheads, attrs, root): Spec) -> Option<(maskforge::Grammar, String)> {
    let malformed = bodies.iter().any(|(_, body)| has_malformed_dispatch(body))
        || lookaheads.iter().flatten().any(has_malformed_dispatch);
    let mut b = GrammarBuilder::new();
    let ids: Vec<_> = names.iter().map(|n| b.rule(n)).collect();
    for (i, ((id, (lit, body)), la)) in ids.iter().zip(bodies).zip(lookaheads).enumerate() {
        // The literal alternative keeps every rule productive; the reference to the next
        // rule keeps every rule reachable from the root.
        let next = Expr::Rule(ids[(i + 1) % ids.len()]);
        b.define(*id, Expr::Choice(vec![lit, body, next]), la).unwrap();
        b.set_attrs(*id, attrs[i].clone());
    }
    match b.build(&names[root]) {
        Err(GrammarError::InvalidTagDispatch { reason, .. }) if malformed => {
            assert!(reason.ends_with("is also in its excludes"), "{reason}");
            None
        }
        Ok(g) if !malformed => Some((g, names[root].clone())),
        other => panic!("malformed dispatch: {malformed}, built: {other:?}"),
    }
}

proptest! {
    // 512 cases unless `PROPTEST_CASES` says otherwise (for long fuzzing runs).
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512)
    ))]

    #[test]
    fn print_then_parse_is_identity(spec in grammar_spec()) {
        let Some((g, root)) = build(spec) else { return Ok(()) };
        let printed = g.to_string();
        let parsed = parse_ebnf(&printed, &root)
            .unwrap_or_else(|e| panic!("printed grammar does not parse:\n{printed}\n{e}"));
        prop_assert_eq!(&parsed, &g, "printed:\n{}", printed);
        prop_assert_eq!(parsed.to_string(), printed);
    }

    #[test]
    fn never_panics_on_arbitrary_text(text in any::<String>()) {
        check_any_input(&text)?;
    }

    #[test]
    fn never_panics_on_near_valid_text(text in near_valid_text()) {
        check_any_input(&text)?;
    }

    #[test]
    fn never_panics_on_token_soup(parts in prop::collection::vec(prop::sample::select(SOUP), 0..40)) {
        check_any_input(&parts.concat())?;
    }
}

/// A rule body in EBNF text, built from valid pieces (it may still be ill-formed: e.g. a
/// repetition operator applied twice).
fn body_text() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(
        &["\"x\"", "\"\"", "\"\\u00e9\\n\\x41B\"", "[a-z]", "[^]", "[^\\]\\-]", "a", "root", "()", "[]"][..],
    )
    .prop_map(str::to_string);
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| v.join(" ")),
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| v.join(" | ")),
            inner.clone().prop_map(|x| format!("({x})")),
            (inner, prop::sample::select(&["*", "+", "?", "{2}", "{1,}", "{0,3}", "{2,-1}"][..]))
                .prop_map(|(x, op)| format!("{x}{op}")),
        ]
    })
}

/// Grammar texts that are mostly valid, with an occasional stray fragment spliced in.
fn near_valid_text() -> impl Strategy<Value = String> {
    (
        body_text(),
        body_text(),
        prop::option::of(body_text()),
        prop::option::weighted(0.3, (any::<prop::sample::Index>(), prop::sample::select(SOUP))),
    )
        .prop_map(|(root, a, la, splice)| {
            let la = la.map(|la| format!(" (= {la})")).unwrap_or_default();
            let mut text = format!("root ::= {root}{la}\n  # comment\na ::= {a} | \"\"\n");
            if let Some((at, piece)) = splice {
                let mut i = at.index(text.len() + 1);
                while !text.is_char_boundary(i) {
                    i -= 1;
                }
                text.insert_str(i, piece);
            }
            text
        })
}

/// Fragments of EBNF, so that random inputs get deep into the parser.
const SOUP: &[&str] = &[
    "root",
    "[lazy]",
    "[max_chars=3, lazy]",
    "[temperature=",
    "[capture=\"",
    "[capture_hidden_stop_bytes=1]",
    "a",
    "b.c-d",
    " ::= ",
    "::=",
    ":",
    "\"x\"",
    "\"",
    "\"\\",
    "[",
    "]",
    "[^",
    "[a-z]",
    "-",
    "\\",
    "\\x41",
    "\\u00",
    "\\U0001F600",
    "\\ud800",
    "(",
    ")",
    "(=",
    "|",
    "*",
    "+",
    "?",
    "{",
    "}",
    "{2,3}",
    "{3,2}",
    "{1,-1}",
    ",",
    "\n",
    "\r\n",
    "#",
    " ",
    "\t",
    "=",
    "Foo(",
    "Regex(",
    "true",
    "1",
    "-1",
    "99999999999",
    "é",
    "\r",
    "()",
    "\"\"",
];

/// Parsing `text` does not panic, the error (if any) renders, and an accepted grammar
/// prints to text that parses back to it.
fn check_any_input(text: &str) -> Result<(), TestCaseError> {
    for root in ["root", "a"] {
        match parse_ebnf(text, root) {
            Ok(g) => {
                let printed = g.to_string();
                let again = parse_ebnf(&printed, root)
                    .unwrap_or_else(|e| panic!("{text:?} parsed, but its printing does not:\n{printed}\n{e}"));
                prop_assert_eq!(again, g);
            }
            Err(e) => {
                let prefix = format!("{}:{}: ", e.position().line, e.position().column);
                prop_assert!(e.to_string().starts_with(&prefix));
            }
        }
    }
    Ok(())
}
