//! Unit tests of the EBNF front-end: every construct and escape checked against the IR it
//! produces, and malformed inputs checked for their exact position and message. The
//! round-trip and never-panics properties live in `tests/ebnf.rs`.

use super::{parse_ebnf, EbnfError};
use crate::grammar::{CharClass, Expr, Grammar, GrammarError, RuleId};

fn parse(text: &str) -> Grammar {
    parse_ebnf(text, "root").unwrap_or_else(|e| panic!("{text:?}:\n{e}"))
}

/// The body of rule `name`.
fn body(g: &Grammar, name: &str) -> Expr {
    g.rule(g.rule_by_name(name).unwrap_or_else(|| panic!("no rule {name}"))).body.clone()
}

/// The body of `root ::= <text>` (with helper rules `x ::= "x"`, `y ::= "y"`), with its
/// references written as `Expr::Rule(RuleId::new(1))` for `x` and `2` for `y`.
fn root_body(text: &str) -> Expr {
    let g = parse(&format!("root ::= {text}\nx ::= \"x\"\ny ::= \"y\"\n"));
    body(&g, "root")
}

fn lit(s: &str) -> Expr {
    Expr::literal(s)
}

fn x() -> Expr {
    Expr::Rule(RuleId::new(1))
}

fn y() -> Expr {
    Expr::Rule(RuleId::new(2))
}

/// `(line, column, message)` of the error for `text` rooted at `root`.
fn err_at(text: &str, root: &str) -> (usize, usize, String) {
    match parse_ebnf(text, root) {
        Ok(g) => panic!("{text:?} parsed:\n{g}"),
        Err(EbnfError::Syntax(e)) => (e.line(), e.column(), e.message().to_string()),
        Err(EbnfError::Grammar { error, line, column, .. }) => (line, column, error.to_string()),
    }
}

fn err(text: &str) -> (usize, usize, String) {
    err_at(text, "root")
}

fn e(line: usize, column: usize, message: &str) -> (usize, usize, String) {
    (line, column, message.to_string())
}

// ---------------------------------------------------------------------------------------
// Well-formed inputs.

#[test]
fn sequence_choice_group() {
    assert_eq!(root_body(r#""a" x"#), Expr::Seq(vec![lit("a"), x()]));
    assert_eq!(root_body(r#""a" | x y"#), Expr::Choice(vec![lit("a"), Expr::Seq(vec![x(), y()])]));
    assert_eq!(root_body(r#""a" ("b" | x) y"#), Expr::Seq(vec![lit("a"), Expr::Choice(vec![lit("b"), x()]), y()]));
    // Adjacent strings merge (normalization), groups of one element vanish.
    assert_eq!(root_body(r#""a" ("b") (("c"))"#), lit("abc"));
    assert_eq!(root_body(r#"x ("" | y)"#), Expr::Seq(vec![x(), Expr::Choice(vec![Expr::Empty, y()])]));
    assert_eq!(root_body(r#""""#), Expr::Empty);
    assert_eq!(root_body("()"), Expr::Empty);
    assert_eq!(root_body("x () y"), Expr::Seq(vec![x(), y()]));
}

#[test]
fn repetitions() {
    assert_eq!(root_body("x*"), Expr::star(x()));
    assert_eq!(root_body("x+"), Expr::plus(x()));
    assert_eq!(root_body("x?"), Expr::opt(x()));
    assert_eq!(root_body("x{3}"), Expr::repeat(x(), 3, Some(3)));
    assert_eq!(root_body("x{3,}"), Expr::repeat(x(), 3, None));
    assert_eq!(root_body("x{2,5}"), Expr::repeat(x(), 2, Some(5)));
    assert_eq!(root_body("x{ 2 , 5 }"), Expr::repeat(x(), 2, Some(5)));
    assert_eq!(root_body("x{0,1}"), Expr::opt(x()));
    assert_eq!(root_body("x{4294967295}"), Expr::repeat(x(), u32::MAX, Some(u32::MAX)));
    // XGrammar's printer writes `{m, -1}` for an unbounded repetition.
    assert_eq!(root_body("x{2, -1}"), Expr::repeat(x(), 2, None));
    // Trivial repetitions are normalized away.
    assert_eq!(root_body("x{1}"), x());
    assert_eq!(root_body("x y{0}"), x());
    // Postfix binds to the preceding atom only.
    assert_eq!(root_body(r#""ab"*"#), Expr::star(lit("ab")));
    assert_eq!(root_body(r#""a" x*"#), Expr::Seq(vec![lit("a"), Expr::star(x())]));
    assert_eq!(root_body(r#"("a" x)+"#), Expr::plus(Expr::Seq(vec![lit("a"), x()])));
    assert_eq!(root_body("(x*)?"), Expr::opt(Expr::star(x())));
    assert_eq!(root_body("[a-c]*"), Expr::star(Expr::class([(0x61, 0x63)], false)));
}

#[test]
fn string_escapes() {
    let cases: [(&str, &[u8]); 12] = [
        (r#""\"\\\/\'\?""#, b"\"\\/'?"),
        (r#""\n\r\t""#, b"\n\r\t"),
        (r#""\b\f\a\v\0\e""#, b"\x08\x0c\x07\x0b\x00\x1b"),
        (r#""\x41\x7e""#, b"A~"),
        (r#""\xff""#, b"\xc3\xbf"),
        (r#""\x41B""#, "\u{41b}".as_bytes()),
        (r#""\x1F600""#, "😀".as_bytes()),
        (r#""\u00e9\u4e2d""#, "é中".as_bytes()),
        (r#""\U0001F600\U00000041""#, "😀A".as_bytes()),
        (r#""\u00411""#, b"A1"),
        ("\"é中😀 #[]()|*\"", "é中😀 #[]()|*".as_bytes()),
        ("\"tab\there\"", b"tab\there"),
    ];
    for (text, bytes) in cases {
        assert_eq!(root_body(text), Expr::literal(bytes), "{text}");
    }
}

#[test]
fn classes() {
    let class = |ranges: &[(char, char)], negated| {
        Expr::Class(CharClass::new(ranges.iter().map(|&(a, b)| (a as u32, b as u32)), negated))
    };
    assert_eq!(root_body("[a-z]"), class(&[('a', 'z')], false));
    assert_eq!(root_body("[^a-zA-Z_]"), class(&[('a', 'z'), ('A', 'Z'), ('_', '_')], true));
    assert_eq!(root_body("[^]"), class(&[], true));
    assert_eq!(root_body("[-+]"), class(&[('-', '-'), ('+', '+')], false));
    assert_eq!(root_body("[+-]"), class(&[('-', '-'), ('+', '+')], false));
    assert_eq!(root_body("[a-c-e]"), class(&[('a', 'c'), ('-', '-'), ('e', 'e')], false));
    assert_eq!(
        root_body(r"[\]\[\-\^\\]"),
        class(&[(']', ']'), ('[', '['), ('-', '-'), ('^', '^'), ('\\', '\\')], false)
    );
    assert_eq!(root_body(r#"[^"\\\n]"#), class(&[('"', '"'), ('\\', '\\'), ('\n', '\n')], true));
    assert_eq!(root_body(r"[\x00-\x1f\u00e9\U0001F600]"), class(&[('\0', '\u{1f}'), ('é', 'é'), ('😀', '😀')], false));
    assert_eq!(root_body("[é-ü中]"), class(&[('é', 'ü'), ('中', '中')], false));
    assert_eq!(root_body("[a^]"), class(&[('a', 'a'), ('^', '^')], false));
    assert_eq!(root_body("[ #]"), class(&[(' ', ' '), ('#', '#')], false));
    assert_eq!(root_body("[a-a]"), class(&[('a', 'a')], false));
    // An empty class matches nothing; allowed where the rule stays productive.
    assert_eq!(root_body("[]?"), Expr::opt(class(&[], false)));
}

#[test]
fn rules_order_root_comments_and_layout() {
    let text = "# leading comment\n\
                b ::= \"b\" # trailing comment with ::= and \"quotes\n\
                root ::=\n    b\n    | c # continued\n    | \"#\"\n\
                c.d-e ::= [#]\r\n\
                c ::= c.d-e\r";
    let g = parse(text);
    let names: Vec<&str> = g.rules().iter().map(|r| r.name.as_str()).collect();
    // Ids follow the order of definition.
    assert_eq!(names, ["b", "root", "c.d-e", "c"]);
    assert_eq!(g.root(), RuleId::new(1));
    assert_eq!(body(&g, "root"), Expr::Choice(vec![Expr::Rule(RuleId::new(0)), Expr::Rule(RuleId::new(3)), lit("#")]));
    assert_eq!(body(&g, "c"), Expr::Rule(RuleId::new(2)));
    // Another root; rules it cannot reach are dropped.
    let g = parse_ebnf(text, "c").unwrap();
    let names: Vec<&str> = g.rules().iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["c.d-e", "c"]);
    // Several rules on one line (XGrammar requires a line break; we do not).
    let g = parse(r#"root ::= a a ::= "x""#);
    assert_eq!(g.rules().len(), 2);
    // A name followed by `(` after a space is a reference and a group.
    assert_eq!(root_body(r#"x ("a")"#), Expr::Seq(vec![x(), lit("a")]));
    // `true` and `Token` are ordinary rule names outside macro calls.
    let g = parse("root ::= true Token\ntrue ::= \"t\"\nToken ::= \"k\"");
    assert_eq!(body(&g, "root"), Expr::Seq(vec![Expr::Rule(RuleId::new(1)), Expr::Rule(RuleId::new(2))]));
}

#[test]
fn lookahead() {
    let g = parse("root ::= x (= \"a\" | y)\nx ::= \"x\"\ny ::= \"y\"");
    let rule = g.rule(g.root());
    assert_eq!(rule.body, Expr::Rule(RuleId::new(1)));
    assert_eq!(rule.lookahead, Some(Expr::Choice(vec![lit("a"), Expr::Rule(RuleId::new(2))])));
    // The lookahead belongs to the whole body, after every alternative.
    let g = parse("root ::= \"a\" | \"b\" (= [c])");
    assert_eq!(g.rule(g.root()).body, Expr::Choice(vec![lit("a"), lit("b")]));
    assert_eq!(g.rule(g.root()).lookahead, Some(Expr::class([(0x63, 0x63)], false)));
    // A lookahead may itself contain groups, and be followed by the next rule.
    let g = parse("root ::= x(= (\"a\")* )\nx ::= \"x\"");
    assert_eq!(g.rule(g.root()).lookahead, Some(Expr::star(lit("a"))));
}

#[test]
fn nesting_limit_is_inclusive() {
    let deep = format!("root ::= {}\"a\"{}", "(".repeat(500), ")".repeat(500));
    assert_eq!(body(&parse(&deep), "root"), lit("a"));
}

#[test]
fn large_inputs_stay_linear() {
    // Quadratic behaviour anywhere (lexer, parser, lowering, builder passes) would make
    // these take minutes; linear, they take milliseconds.
    let n = 50_000;
    let chain: String = (0..n).map(|i| format!("r{i} ::= \"x\" r{}\n", i + 1)).collect();
    let g = parse(&format!("root ::= r0\n{chain}r{n} ::= \"end\"\n"));
    assert_eq!(g.rules().len(), n + 2);
    let alts: String = (0..n).map(|i| format!("\"a{}\" | ", i % (n / 2))).collect();
    let g = parse(&format!("root ::= {alts}\"z\""));
    let Expr::Choice(alts) = &g.rule(g.root()).body else { panic!("not a choice") };
    assert_eq!(alts.len(), n / 2 + 1);
}

#[test]
fn printed_grammar_parses_back() {
    let text = r#"root ::= (item ("," item)*)? (= "\n")
item ::= "k\"ey\\" [^"\\\x00-\x1f] | num{2,} | [\]\-^é-ü]+ "é\u0001"
num ::= [0-9] ([0-9]{1,3})? | ""
"#;
    let g = parse(text);
    let printed = g.to_string();
    assert_eq!(parse(&printed), g);
    assert_eq!(parse(&printed).to_string(), printed);
}

#[test]
fn xgrammar_style_json_grammar() {
    // The shape XGrammar's JSON-schema converter emits: parenthesized choices, `""`
    // alternatives, escapes in classes, a lookahead glued to a group.
    let text = r#"root ::= ((obj) | (arr))
esc ::= (([\"\\/bfnrt]) | ("u" [A-Fa-f0-9]{4}))
str_tail ::= (("\"") | ([^\0-\x1f\"\\\r\n] str_tail) | ("\\" esc str_tail)) (=([ \n\t]* [,}\]:]))
str ::= (("\"" str_tail))
num ::= ((num_1 ("0" | [1-9] [0-9]*)))
num_1 ::= ("" | ("-"))
value ::= ((str) | (num) | ("true") | ("false") | ("null") | (obj) | (arr))
obj ::= (("{" [ \n\t]* str [ \n\t]* ":" [ \n\t]* value ([ \n\t]* "," [ \n\t]* str [ \n\t]* ":" [ \n\t]* value)* [ \n\t]* "}") | ("{" [ \n\t]* "}"))
arr ::= (("[" [ \n\t]* value ([ \n\t]* "," [ \n\t]* value)* [ \n\t]* "]") | ("[" [ \n\t]* "]"))
"#;
    let g = parse(text);
    assert_eq!(g.rules().len(), 9);
    let tail = g.rule(g.rule_by_name("str_tail").unwrap());
    let ws = Expr::star(Expr::class([(0x20, 0x20), (0x0A, 0x0A), (0x09, 0x09)], false));
    let follow = Expr::class([(0x2C, 0x2C), (0x7D, 0x7D), (0x5D, 0x5D), (0x3A, 0x3A)], false);
    assert_eq!(tail.lookahead, Some(Expr::Seq(vec![ws, follow])));
    let Expr::Choice(alts) = &tail.body else { panic!("{}", tail.body.node_count()) };
    let Expr::Seq(items) = &alts[1] else { panic!() };
    assert_eq!(items[0], Expr::class([(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)], true));
    let printed = g.to_string();
    assert_eq!(parse(&printed), g);
}

// ---------------------------------------------------------------------------------------
// Malformed inputs: exact position and message.

#[test]
fn error_missing_assign() {
    assert_eq!(err("root \"x\""), e(1, 6, "expected `::=` after rule name `root`, found a string literal"));
    assert_eq!(err("root ::= \"a\"\nfoo = \"x\""), e(2, 5, "expected `::=` after rule name `foo`, found `=`"));
    assert_eq!(err("root : \"x\""), e(1, 6, "expected `::=`, found `:`"));
    assert_eq!(err("\"x\" ::= root"), e(1, 1, "expected a rule name, found a string literal"));
}

#[test]
fn error_unterminated_literals() {
    let unterminated = "expected a closing `\"` before the end of the line, found an unterminated string literal";
    assert_eq!(err("root ::= \"abc"), e(1, 10, unterminated));
    assert_eq!(err("root ::=\n  \"ab\n\""), e(2, 3, unterminated));
    assert_eq!(
        err("root ::= [a-z\n]"),
        e(1, 10, "expected a closing `]` before the end of the line, found an unterminated character class")
    );
}

#[test]
fn error_escapes() {
    assert_eq!(err(r#"root ::= "a\qb""#), e(1, 12, "invalid escape sequence `\\q`"));
    assert_eq!(err(r#"root ::= "\u123""#), e(1, 11, "expected 4 hex digits after `\\u`, found `\\u123`"));
    assert_eq!(err(r#"root ::= "\U1234567""#), e(1, 11, "expected 8 hex digits after `\\U`, found `\\U1234567`"));
    assert_eq!(err(r#"root ::= "\x""#), e(1, 11, "expected at least one hex digit after `\\x`"));
    assert_eq!(err(r#"root ::= "é\ud800""#), e(1, 12, "invalid code point U+D800: surrogates are not characters"));
    assert_eq!(err(r#"root ::= [\xDFFF]"#), e(1, 11, "invalid code point U+DFFF: surrogates are not characters"));
    assert_eq!(err(r#"root ::= "\U00110000""#), e(1, 11, "invalid code point `\\U00110000`: above U+10FFFF"));
    assert_eq!(err(r"root ::= [\w]"), e(1, 11, "class escape `\\w` is not supported in EBNF; write the ranges"));
}

#[test]
fn error_reversed_range() {
    assert_eq!(err("root ::= [a-cz-a]"), e(1, 14, "invalid range `z-a` in character class: U+007A is above U+0061"));
}

#[test]
fn error_repetition_bounds() {
    assert_eq!(
        err("root ::= \"a\"{3,2}"),
        e(1, 13, "invalid repetition bounds `{3,2}`: the lower bound 3 exceeds the upper bound 2")
    );
    assert_eq!(
        err("root ::= \"a\"{4294967296}"),
        e(1, 14, "repetition bound `4294967296` is too large: the limit is 4294967295")
    );
    assert_eq!(
        err("root ::= \"a\"{1,99999999999999999999}"),
        e(1, 16, "repetition bound `99999999999999999999` is too large: the limit is 4294967295")
    );
    assert_eq!(err("root ::= \"a\"{-2}"), e(1, 14, "repetition bound `-2` is negative"));
    assert_eq!(err("root ::= \"a\"{x}"), e(1, 14, "expected a number in repetition bounds, found `x`"));
    assert_eq!(err("root ::= \"a\"{2 3}"), e(1, 16, "expected `,` or `}` in repetition bounds, found `3`"));
    assert_eq!(err("root ::= \"a\"{2,3"), e(1, 17, "expected `}` after the repetition bounds, found end of input"));
}

#[test]
fn error_parentheses() {
    assert_eq!(
        err("root ::= (\"a\" (\"b\")\nx ::= \"x\""),
        e(1, 10, "expected a matching `)` for this `(` before the end of the rule")
    );
    assert_eq!(err("root ::= \"a\")"), e(1, 13, "unmatched `)`"));
    assert_eq!(err("root ::= \"a\" | )"), e(1, 16, "unmatched `)`"));
    assert_eq!(err("root ::= (\"a\" | )"), e(1, 17, "expected an element after `|`, found `)`"));
}

#[test]
fn error_lookahead_placement() {
    let msg = "lookahead assertion is only allowed at the end of a rule";
    assert_eq!(err("root ::= \"a\" (= \"b\") \"c\""), e(1, 14, msg));
    assert_eq!(err("root ::= (\"a\" (= \"b\"))"), e(1, 15, msg));
    assert_eq!(err("root ::= \"a\" (= \"b\") | \"c\""), e(1, 14, msg));
    assert_eq!(err("root ::= \"a\" (= \"b\")*"), e(1, 14, msg));
    assert_eq!(err("root ::= \"a\" (= (= \"b\"))"), e(1, 17, msg));
    assert_eq!(err("root ::= (= \"b\")"), e(1, 10, "expected a rule body after `::=`, found `(=`"));
    assert_eq!(err("root ::= \"a\" | (= \"b\")"), e(1, 16, "expected an element after `|`, found `(=`"));
    assert_eq!(err("root ::= \"a\" (=)"), e(1, 16, "expected an element in the lookahead assertion, found `)`"));
    assert_eq!(
        err("root ::= \"a\" (= \"b\""),
        e(1, 14, "expected a matching `)` for this `(=` before the end of the rule")
    );
}

#[test]
fn error_rule_names() {
    assert_eq!(err("root ::= a \"x\" b\nb ::= a\n"), e(1, 10, "rule `a` is referenced but never defined"));
    // Undefined references are errors even where the root cannot reach them.
    assert_eq!(err("root ::= \"x\"\nz ::= \"a\" missing"), e(2, 11, "rule `missing` is referenced but never defined"));
    assert_eq!(err("root ::= \"x\"\na ::= \"y\"\n  a ::= \"z\""), e(3, 3, "rule `a` is defined more than once"));
    assert_eq!(err_at("# c\na ::= \"x\"", "root"), e(2, 1, "the root rule `root` is not defined"));
    assert_eq!(err("1abc ::= \"x\""), e(1, 1, "invalid name `1abc`: names must start with a letter or `_`"));
    assert_eq!(err("root ::= 2x"), e(1, 10, "invalid name `2x`: names must start with a letter or `_`"));
}

#[test]
fn error_empty_input_and_bodies() {
    assert_eq!(err(""), e(1, 1, "expected a rule `name ::= ...`, found end of input"));
    assert_eq!(err("  # just a comment\n\n"), e(3, 1, "expected a rule `name ::= ...`, found end of input"));
    assert_eq!(err("root ::="), e(1, 9, "expected a rule body after `::=`, found end of input"));
    assert_eq!(err("root ::=\nx ::= \"x\""), e(2, 1, "expected a rule body after `::=`, found `x`"));
    assert_eq!(err("root ::= \"x\" |"), e(1, 15, "expected an element after `|`, found end of input"));
    assert_eq!(err("root ::= | \"x\""), e(1, 10, "expected a rule body after `::=`, found `|`"));
    assert_eq!(
        err("root ::= \"x\" , \"y\""),
        e(1, 14, "expected an element (string, character class, rule name or group), found `,`")
    );
    assert_eq!(
        err("root ::= \"x\" \"y\" ::= \"z\""),
        e(1, 18, "expected an element (string, character class, rule name or group), found `::=`")
    );
}

#[test]
fn error_postfix() {
    assert_eq!(
        err("root ::= \"a\"*?"),
        e(1, 14, "`?` cannot follow another repetition operator; use parentheses, as in `(x*)?`")
    );
    assert_eq!(
        err("root ::= \"a\"{2}+"),
        e(1, 16, "`+` cannot follow another repetition operator; use parentheses, as in `(x*)?`")
    );
    assert_eq!(err("root ::= * \"a\""), e(1, 10, "expected an element before `*`"));
    assert_eq!(err("root ::= \"a\" | {2}"), e(1, 16, "expected an element before `{`"));
}

#[test]
fn error_macros() {
    assert_eq!(
        err("root ::= \"a\"\n  Foo(\"x\", 1, true, (a, (\"b\",)), key=x)"),
        e(2, 3, "unknown macro `Foo` (to use rule `Foo` before a group, put a space before `(`)")
    );
    assert_eq!(
        err("root ::= TagDispatch((\"<a>\", a), loop_after=false)\na ::= \"x\""),
        e(1, 34, "unknown argument `loop_after` of `TagDispatch` (expected stop_eos, stop_str, loop_after_dispatch or excludes)")
    );
    assert_eq!(
        err("root ::= TagDispatch((\"<a>\", a), stop_eos=1)\na ::= \"x\""),
        e(1, 43, "`stop_eos` of `TagDispatch` is `true` or `false`")
    );
    assert_eq!(
        err("root ::= TagDispatch((\"<a>\", [a]))"),
        e(1, 30, "expected a string, integer, boolean, name or tuple as macro argument, found a character class")
    );
    assert_eq!(err("root ::= ExcludeToken(1, \"a\")"), e(1, 26, "`ExcludeToken` expects token ids (integers) here"));
    // `Regex` is supported: a pattern error is reported at the argument.
    assert!(parse_ebnf("root ::= Regex(\"[a-z]+\")* \"!\"", "root").is_ok());
    let (line, column, msg) = err("root ::= Regex(\"(a)\\\\1\")");
    assert_eq!((line, column), (1, 16));
    assert!(msg.starts_with("in Regex pattern: 1:4: backreference cannot be enforced"), "{msg}");
    assert_eq!(
        err("root ::= Regex(\"a\", 1)"),
        e(
            1,
            15,
            "`Regex` takes a pattern and optional flags and json_string: \
             Regex(\"pattern\", flags=\"i\", json_string=true)"
        )
    );
    assert_eq!(err("root ::= Token()"), e(1, 15, "`Token` takes at least one token id: Token(id, ...)"));
    // Argument syntax is checked before the macro is looked up.
    assert_eq!(
        err("root ::= Regex(\"a\" \"b\")"),
        e(1, 20, "expected `,` or `)` in macro arguments, found a string literal")
    );
    assert_eq!(err("root ::= Regex(k=1, k=2)"), e(1, 21, "argument `k` is given more than once"));
    assert_eq!(
        err("root ::= Regex([a])"),
        e(1, 16, "expected a string, integer, boolean, name or tuple as macro argument, found a character class")
    );
    assert_eq!(err("root ::= Regex((1 2))"), e(1, 19, "expected `,` or `)` in a tuple, found `2`"));
    assert_eq!(
        err("root ::= Token(99999999999999999999)"),
        e(1, 16, "integer `99999999999999999999` does not fit in 64 bits")
    );
}

#[test]
fn error_nesting_too_deep() {
    let msg = "parentheses nested too deeply: the limit is 500 levels";
    let deep = format!("root ::= {}\"a\"{}", "(".repeat(501), ")".repeat(501));
    assert_eq!(err(&deep), e(1, 510, msg));
    // Far deeper input fails the same way, without exhausting the stack.
    let deeper = format!("root ::= {}", "(".repeat(1_000_000));
    assert_eq!(err(&deeper), e(1, 510, msg));
    let tuples = format!("root ::= Regex({}", "(".repeat(100_000));
    assert_eq!(err(&tuples), e(1, 515, msg));
}

#[test]
fn error_grammar_level() {
    // An empty class as a whole rule body: the rule matches nothing.
    assert_eq!(err("root ::= \"a\" | x\nx ::= []"), e(2, 1, "rule `x` matches no string (its language is empty)"));
    assert!(matches!(
        parse_ebnf("root ::= \"b\" | x\nx ::= \"a\" x", "root"),
        Err(EbnfError::Grammar { error: GrammarError::EmptyLanguage { .. }, line: 2, column: 1, .. })
    ));
}

#[test]
fn error_display_has_caret() {
    let e = parse_ebnf("root ::= \"a\"\n  x ::= [z-a]\n", "root").unwrap_err();
    assert_eq!(
        e.to_string(),
        "2:10: invalid range `z-a` in character class: U+007A is above U+0061\n    x ::= [z-a]\n           ^^^"
    );
    let e = parse_ebnf("root ::= nope", "root").unwrap_err();
    assert_eq!(e.to_string(), "1:10: rule `nope` is referenced but never defined");
    assert_eq!(e.span(), crate::frontend::Span::new(9, 13));
    let e: crate::Error = e.into();
    assert!(matches!(e, crate::Error::Ebnf(_)));
}
