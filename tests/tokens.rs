//! Token-level elements (`Token`, `ExcludeToken`, token triggers), stop tokens as terminals and
//! `TagDispatch`: the exact masks and matcher states of token sequences, and masks equal to the
//! oracle's (random dispatches with overlapping triggers, excludes and stop strings, tokens
//! spanning a trigger boundary). Accept/reject cases of dispatches over text and the EBNF
//! errors are data: `tests/data/ebnf/tag_dispatch.json`, run by `data_cases`.

use maskforge::{
    CompiledGrammar, CompilerConfig, Expr, GrammarBuilder, GrammarCompiler, GrammarError, GrammarMatcher, TagDispatch,
    TokenBitmask, Trigger, Vocabulary,
};
use proptest::prelude::*;

use crate::support::oracle_check::{checked_mask, checked_random_walk};
use crate::support::small_vocab::{id, token_vocab, BYTE_FF, FAKE_SENTINEL, SPECIAL_A, SPECIAL_B, STOP};

fn compile(ebnf: &str, vocab: &Vocabulary) -> CompiledGrammar {
    GrammarCompiler::new(vocab.clone(), CompilerConfig::default()).compile_grammar(ebnf).unwrap()
}

/// The id of a string over {a, b, c} of length 1 to 3, or `<t>`, in [`token_vocab`].
fn allowed(m: &mut GrammarMatcher) -> Vec<u32> {
    checked_mask(m).unwrap().allowed_ids().map(|i| i as u32).collect()
}

#[test]
fn token_by_id_between_text() {
    let v = token_vocab();
    let g = compile(&format!("root ::= \"a\" Token({SPECIAL_A}, {SPECIAL_B}) \"b\""), &v);
    let mut m = GrammarMatcher::new(&g);
    assert_eq!(allowed(&mut m), vec![id(&v, "a")]);
    assert!(m.accept_token(id(&v, "a")));
    assert_eq!(allowed(&mut m), vec![SPECIAL_A, SPECIAL_B]);
    assert!(m.accept_token(SPECIAL_B));
    assert_eq!(allowed(&mut m), vec![id(&v, "b")]);
    assert!(m.accept_token(id(&v, "b")));
    assert_eq!(allowed(&mut m), vec![STOP]);
    // A normal token can be named by id too; its text path also exists elsewhere.
    let g = compile(&format!("root ::= Token({}) \"c\" | \"ab\" \"a\"", id(&v, "ab")), &v);
    let mut m = GrammarMatcher::new(&g);
    assert!(m.accept_token(id(&v, "ab")));
    // The id reading wins when both readings are possible.
    assert_eq!(allowed(&mut m), vec![id(&v, "c")]);
}

#[test]
fn exclude_token_allows_every_other_token() {
    let v = token_vocab();
    let g = compile(&format!("root ::= ExcludeToken({SPECIAL_A}, {STOP})*"), &v);
    let mut m = GrammarMatcher::new(&g);
    let got = allowed(&mut m);
    // Every real token except SPECIAL_A (STOP is allowed as the end of generation), no padding.
    let want: Vec<u32> = (0..v.vocab_size() as u32).filter(|&t| v.is_token(t) && t != SPECIAL_A).collect();
    assert_eq!(got, want);
    assert!(m.accept_token(SPECIAL_B) && m.accept_token(FAKE_SENTINEL) && m.accept_token(BYTE_FF));
    assert!(!m.accept_token(SPECIAL_A));
    assert!(m.accept_token(STOP) && m.is_terminated());
}

#[test]
fn bytes_ff_are_never_text() {
    let v = token_vocab();
    // FAKE_SENTINEL's bytes spell the sentinel of token 1: it must not pass for token 1.
    let g = compile("root ::= Token(1) | [a-c]*", &v);
    let mut m = GrammarMatcher::new(&g);
    let got = allowed(&mut m);
    assert!(got.contains(&1) && !got.contains(&FAKE_SENTINEL) && !got.contains(&BYTE_FF));
    assert!(!m.accept_token(FAKE_SENTINEL) && !m.accept_string([0xFF, 0x80, 0x80, 0x80, 0x81]));
    // A literal byte 0xFF is rejected when building the automata.
    let mut b = GrammarBuilder::new();
    b.add_rule("root", Expr::Bytes(vec![b'a', 0xFF])).unwrap();
    let err = GrammarCompiler::new(v, CompilerConfig::default()).compile(b.build("root").unwrap()).unwrap_err();
    assert!(err.to_string().contains("0xFF"), "{err}");
}

#[test]
fn stop_token_as_terminal_ends_generation_and_rolls_back() {
    let v = token_vocab();
    let g = compile(&format!("root ::= \"a\" (Token({STOP}) | \"b\" Token({STOP}) \"c\")"), &v);
    let mut m = GrammarMatcher::new(&g);
    assert!(m.accept_token(id(&v, "a")));
    // The root cannot end after "a", but STOP read as a terminal ends it.
    assert!(!m.can_terminate());
    assert!(allowed(&mut m).contains(&STOP));
    assert!(m.accept_token(STOP) && m.is_terminated());
    assert!(m.is_completed());
    m.rollback(1).unwrap();
    assert!(!m.is_terminated() && !m.is_completed());
    // After "ab", STOP is a terminal but "c" must follow: not allowed.
    assert!(m.accept_token(id(&v, "b")));
    assert!(!allowed(&mut m).contains(&STOP) && !m.accept_token(STOP));
    assert!(!m.accept_token(id(&v, "c")));
}

#[test]
fn stop_token_when_root_can_end_without_it() {
    let v = token_vocab();
    // After "a" the root can end (plain stop), and STOP is also a terminal that does not end it.
    let g = compile(&format!("root ::= \"a\" (Token({STOP}) \"b\")?"), &v);
    let mut m = GrammarMatcher::new(&g);
    assert!(m.accept_token(id(&v, "a")));
    assert!(allowed(&mut m).contains(&STOP));
    assert!(m.accept_token(STOP) && m.is_terminated());
    m.rollback(1).unwrap();
    assert_eq!(allowed(&mut m), vec![STOP]);
}

/// A malformed dispatch built without the EBNF parser is refused by the compiler (the EBNF
/// errors are data: `tests/data/ebnf/tag_dispatch.json`).
#[test]
fn tag_dispatch_built_with_an_empty_trigger_is_an_error() {
    let c = GrammarCompiler::new(token_vocab(), CompilerConfig::default());
    let mut t = TagDispatch::new([(Trigger::Text(vec![]), Expr::literal("x"))]);
    t.stop_eos = true;
    let mut b = GrammarBuilder::new();
    b.add_rule("root", Expr::TagDispatch(Box::new(t))).unwrap();
    let err = c.compile(b.build("root").unwrap()).unwrap_err();
    assert!(matches!(err, maskforge::Error::Grammar(GrammarError::InvalidTagDispatch { .. })), "{err:?}");
}

#[test]
fn token_triggers() {
    let v = token_vocab();
    let g = compile(
        &format!("root ::= TokenTagDispatch(({SPECIAL_A}, a), ({SPECIAL_B}, b))\na ::= \"a\"\nb ::= \"bb\""),
        &v,
    );
    let mut m = GrammarMatcher::new(&g);
    let got = allowed(&mut m);
    assert!(got.contains(&SPECIAL_A) && got.contains(&SPECIAL_B) && got.contains(&STOP) && got.contains(&0));
    assert!(m.accept_token(id(&v, "cc")) && m.accept_token(SPECIAL_B));
    // The body "bb", then free text again: "bba" is "bb" and the free text "a".
    let want: Vec<u32> = ["b", "bb", "bba", "bbb", "bbc"].iter().map(|t| id(&v, t)).collect();
    assert_eq!(allowed(&mut m), want);
    assert!(m.accept_token(id(&v, "bb")) && m.accept_token(SPECIAL_A) && m.accept_token(id(&v, "a")));
    assert!(m.accept_token(STOP));
}

/// A random dispatch over {a, b, c}: up to 3 text triggers, an optional token trigger, excludes
/// and stop strings of 1 to 3 letters, and its flags, followed by `"c"` or not.
fn dispatch() -> impl Strategy<Value = String> {
    let word = || "[abc]{1,3}";
    (
        prop::collection::vec(word(), 1..4),
        any::<bool>(),
        prop::collection::vec(word(), 0..2),
        prop::collection::vec(word(), 0..2),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_filter_map("the dispatch can end", |(triggers, token, excludes, stops, eos, looped, tail)| {
            if !eos && stops.is_empty() && looped {
                return None;
            }
            let mut tags: Vec<String> =
                triggers.iter().enumerate().map(|(i, t)| format!("(\"{t}\", b{})", i % 2)).collect();
            if token {
                tags.push(format!("({SPECIAL_A}, b1)"));
            }
            // A trigger in its own excludes is an error (XGrammar's; the IR refuses it, issue
            // 18), and this property compares masks of grammars that compile.
            let excludes: Vec<String> = excludes.into_iter().filter(|e| !triggers.contains(e)).collect();
            let q = |v: &[String]| v.iter().map(|s| format!("\"{s}\", ")).collect::<String>();
            Some(format!(
                "root ::= TagDispatch({}, stop_eos={eos}, stop_str=({}), loop_after_dispatch={looped}, \
                 excludes=({})){}\nb0 ::= \"ab\" | \"c\"\nb1 ::= \"b\"+ Token({SPECIAL_B})",
                tags.join(", "),
                q(&stops),
                q(&excludes),
                if tail { " \"c\"" } else { "" },
            ))
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random walks through random dispatches: at every step the cached mask equals the
    /// oracle's and accept_token agrees with it.
    #[test]
    fn dispatch_masks_equal_the_oracle(
        ebnf in dispatch(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        let v = token_vocab();
        let g = compile(&ebnf, &v);
        checked_random_walk(&g, &picks)?;
    }

    /// The printer's output parses back to an equal grammar.
    #[test]
    fn dispatch_prints_and_parses_back(ebnf in dispatch()) {
        let g = maskforge::parse_ebnf(&ebnf, "root").unwrap();
        let again = maskforge::parse_ebnf(&g.to_string(), "root").unwrap();
        prop_assert_eq!(g.to_string(), again.to_string());
        prop_assert_eq!(g, again);
    }
}

mod real_tokenizers {
    use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, MatcherConfig, TokenBitmask};

    use crate::support::fixtures::{encode, vocab};

    const CHANNEL: u32 = 200_005;
    const START: u32 = 200_006;
    const END: u32 = 200_007;
    const MESSAGE: u32 = 200_008;
    const CONSTRAIN: u32 = 200_003;
    const RETURN: u32 = 200_002;
    const CALL: u32 = 200_012;

    const HARMONY: &str = r#"root ::= analysis? call
analysis ::= "<|channel|>analysis<|message|>" [^<]* "<|end|><|start|>assistant"
call ::= "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" args "<|call|>"
args ::= "{\"city\":\"" [A-Za-z ]+ "\"}"
"#;

    fn matcher(ebnf: &str, allow_text: bool) -> GrammarMatcher {
        let config = CompilerConfig::default().allow_special_token_text(allow_text);
        let g = GrammarCompiler::new(vocab("gptoss").clone(), config).compile_grammar(ebnf).unwrap();
        GrammarMatcher::with_config(&g, MatcherConfig::default().stop_tokens([RETURN, CALL]))
    }

    fn assert_oracle(m: &mut GrammarMatcher) -> TokenBitmask {
        let n = m.grammar().vocabulary().vocab_size();
        let (mut cached, mut exact) = (TokenBitmask::new(n), TokenBitmask::new(n));
        m.fill_next_token_bitmask(cached.as_words_mut());
        m.fill_next_token_bitmask_exact(exact.as_words_mut()).unwrap();
        assert_eq!(cached, exact, "after {} tokens", m.num_accepted_tokens());
        cached
    }

    /// The Harmony tokens of a reasoning message and a tool call.
    fn harmony_tokens() -> Vec<u32> {
        let mut ids = vec![CHANNEL];
        ids.extend(encode("gptoss", "analysis"));
        ids.push(MESSAGE);
        ids.extend(encode("gptoss", "Need weather for Paris."));
        ids.extend([END, START]);
        ids.extend(encode("gptoss", "assistant"));
        ids.push(CHANNEL);
        ids.extend(encode("gptoss", "commentary to=functions.get_weather "));
        ids.push(CONSTRAIN);
        ids.extend(encode("gptoss", "json"));
        ids.push(MESSAGE);
        ids.extend(encode("gptoss", "{\"city\":\"Paris\"}"));
        ids
    }

    #[test]
    fn harmony_special_tokens_are_matched_by_id_and_call_ends_generation() {
        let mut m = matcher(HARMONY, false);
        let mask = assert_oracle(&mut m);
        assert_eq!(mask.allowed_ids().collect::<Vec<_>>(), vec![CHANNEL as usize]);
        let ids = harmony_tokens();
        for (k, &t) in ids.iter().enumerate() {
            if k % 5 == 0 {
                let mask = assert_oracle(&mut m);
                assert!(mask.get(t as usize), "token {k} ({t}) not in the mask");
            }
            assert!(m.accept_token(t), "token {k} ({t}) rejected");
        }
        // `<|call|>` is a stop token and the grammar's last terminal: allowed, and it ends the
        // generation although the root could not end before it.
        assert!(!m.can_terminate());
        let mask = assert_oracle(&mut m);
        assert_eq!(mask.allowed_ids().collect::<Vec<_>>(), vec![CALL as usize]);
        assert!(!m.accept_token(RETURN));
        assert!(m.accept_token(CALL) && m.is_terminated());
        m.rollback(1).unwrap();
        assert!(!m.is_terminated() && !m.can_terminate());
        assert!(m.accept_token(CALL) && m.is_terminated());
    }

    #[test]
    fn special_token_text_spelled_by_ordinary_tokens_needs_the_option() {
        let spelled = encode("gptoss", "<|channel|>");
        assert!(spelled.len() > 1 && !spelled.contains(&CHANNEL));
        let grammar = "root ::= \"<|channel|>final\"";
        for allow in [false, true] {
            let mut m = matcher(grammar, allow);
            let mask = assert_oracle(&mut m);
            assert!(mask.get(CHANNEL as usize));
            assert_eq!(mask.get(spelled[0] as usize), allow);
            let ok = spelled.iter().all(|&t| m.accept_token(t));
            assert_eq!(ok, allow);
        }
    }

    /// JSON Schema grammars come from the pruning passes, whose summary of literal bytes lets
    /// the special-token rewrite skip grammars without `<`: one with a special token's text
    /// must still be rewritten (the token, not the text, is allowed).
    #[test]
    fn special_token_text_in_a_json_schema_literal_is_the_token() {
        use maskforge::{json_schema_to_grammar, JsonSchemaOptions};
        let compiler = GrammarCompiler::new(vocab("gptoss").clone(), CompilerConfig::default());
        let spelled = encode("gptoss", "<|channel|>");
        for schema in [
            serde_json::json!({"const": "<|channel|>x"}),
            serde_json::json!({"type": "object", "properties": {"a": {"enum": [1, "a<|channel|>"]}}, "required": ["a"]}),
        ] {
            let (lowered, _) = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
            assert!(lowered.literal_bytes().contains(b'<'));
            let g = compiler.compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
            let mut m = GrammarMatcher::new(&g);
            let prefix = if schema.get("const").is_some() { "\"" } else { "{\"a\":\"a" };
            for t in encode("gptoss", prefix) {
                assert!(m.accept_token(t), "{schema}: prefix token {t} rejected");
            }
            let mask = assert_oracle(&mut m);
            assert_eq!(mask.allowed_ids().collect::<Vec<_>>(), vec![CHANNEL as usize], "{schema}");
            assert!(!m.accept_token(spelled[0]));
        }
        let (lowered, _) =
            json_schema_to_grammar(&serde_json::json!({"const": "x"}), &JsonSchemaOptions::default()).unwrap();
        assert!(!lowered.literal_bytes().contains(b'<'));
    }

    #[test]
    fn dispatch_on_a_special_token_trigger_and_stop_string() {
        // Free text until `<|end|>`; `<|channel|>` dispatches to a channel name.
        let ebnf = r#"root ::= TagDispatch(("<|channel|>", chan), stop_eos=false, stop_str=("<|end|>",))
chan ::= ("analysis" | "final") "<|message|>""#;
        let mut m = matcher(ebnf, false);
        assert_oracle(&mut m);
        for t in encode("gptoss", "Some free text ") {
            assert!(m.accept_token(t));
        }
        assert!(!m.can_terminate());
        assert!(m.accept_token(CHANNEL));
        let mask = assert_oracle(&mut m);
        assert!(!mask.get(END as usize) && !mask.get(CHANNEL as usize));
        for t in encode("gptoss", "final") {
            assert!(m.accept_token(t));
        }
        assert!(m.accept_token(MESSAGE));
        for t in encode("gptoss", "done.") {
            assert!(m.accept_token(t));
        }
        let mask = assert_oracle(&mut m);
        assert!(mask.get(END as usize) && !mask.get(MESSAGE as usize));
        assert!(m.accept_token(END) && m.can_terminate());
        assert_eq!(assert_oracle(&mut m).allowed_ids().collect::<Vec<_>>(), vec![RETURN as usize, CALL as usize]);
    }
}

/// A dispatch with 50 long triggers on Llama 3: the free-text fast path of the cache (entries
/// from the automaton, most tokens never walked) equals the oracle along an output with free
/// text, two calls and tokens spanning the trigger boundaries.
#[test]
fn llama3_dispatch_with_50_triggers_equals_the_oracle() {
    use crate::support::fixtures::{encode, vocab};
    let names: Vec<String> = (0..50).map(|i| format!("get_weather_forecast_{i:02}")).collect();
    let mut ebnf = String::from("root ::= TagDispatch(");
    for (i, n) in names.iter().enumerate() {
        ebnf += &format!("(\"<function={n}>\", args{}), ", i % 2);
    }
    ebnf += "excludes=(\"<|\",))\nargs0 ::= \"{\\\"city\\\": \\\"\" [A-Za-z ]+ \"\\\"}</function>\"\nargs1 ::= \"{}</function>\"\n";
    let v = vocab("llama3");
    let g = GrammarCompiler::new(v.clone(), CompilerConfig::default()).compile_grammar(&ebnf).unwrap();
    let output = format!(
        "Let me check. <function={}>{{\"city\": \"Paris\"}}</function> then <function={}>{{}}</function> ok<function",
        names[10], names[33]
    );
    let mut m = GrammarMatcher::new(&g);
    let n = v.vocab_size();
    for (k, t) in encode("llama3", &output).into_iter().enumerate() {
        let (mut cached, mut exact) = (TokenBitmask::new(n), TokenBitmask::new(n));
        m.fill_next_token_bitmask(cached.as_words_mut());
        m.fill_next_token_bitmask_exact(exact.as_words_mut()).unwrap();
        assert_eq!(cached, exact, "step {k}");
        assert!(cached.get(t as usize), "step {k}: token {t} not allowed");
        assert!(m.accept_token(t));
    }
    assert!(m.can_terminate());
    // The exclude: free text may not contain "<|".
    assert!(!m.accept_string("<|"));
}

/// Dispatch automata are hashed like any rule: renamed and reordered rules hash equal, a
/// different trigger or flag does not, and reachable states get canonical numbers.
#[test]
fn dispatch_automata_have_structural_hashes() {
    use maskforge::fsm::hash::{hash_rules, UNREACHABLE};
    use maskforge::fsm::{GrammarFsm, StateId};
    let root_hash = |ebnf: &str| {
        let fsm = GrammarFsm::new(&maskforge::parse_ebnf(ebnf, "root").unwrap()).unwrap();
        let h = hash_rules(&fsm);
        let start = fsm.rules()[fsm.root()].start;
        assert_eq!(h.canonical_state(start), 0);
        // Every state reached by some text or token gets a canonical number.
        let reached =
            (start.index()..start.index() + 8).filter(|&s| h.canonical_state(StateId::new(s)) != UNREACHABLE).count();
        assert!(reached > 4);
        h.rule_hash(fsm.root()).expect("a dispatch over acyclic bodies is hashed")
    };
    let a = root_hash("root ::= TagDispatch((\"<a>\", x), (\"<b>\", y), excludes=(\"!\",))\nx ::= \"1\"\ny ::= \"2\"");
    let renamed =
        root_hash("y0 ::= \"2\"\nroot ::= TagDispatch((\"<a>\", x0), (\"<b>\", y0), excludes=(\"!\",))\nx0 ::= \"1\"");
    assert_eq!(a, renamed);
    for other in [
        "root ::= TagDispatch((\"<a>\", x), (\"<c>\", y), excludes=(\"!\",))\nx ::= \"1\"\ny ::= \"2\"",
        "root ::= TagDispatch((\"<a>\", x), (\"<b>\", y), excludes=(\"?\",))\nx ::= \"1\"\ny ::= \"2\"",
        "root ::= TagDispatch((\"<a>\", x), (\"<b>\", y), excludes=(\"!\",), stop_eos=false, stop_str=(\"e\",))\nx ::= \"1\"\ny ::= \"2\"",
        "root ::= TagDispatch((\"<a>\", y), (\"<b>\", x), excludes=(\"!\",))\nx ::= \"1\"\ny ::= \"2\"",
        "root ::= TagDispatch((\"<a>\", x), (7, y), excludes=(\"!\",))\nx ::= \"1\"\ny ::= \"2\"",
    ] {
        assert_ne!(a, root_hash(other), "{other}");
    }
}
