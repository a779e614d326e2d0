//! Oracle equality of the token-mask cache, in every cache mode: masks from the cache equal the
//! exact oracle's bit for bit, on random grammars with a small vocabulary (repetitions expanded
//! and counted), near repetition bounds, and on MaskBench schemas with the real Llama 3
//! vocabulary. (Every data case of `tests/data/` is checked the same way by `data_cases`.)

use std::sync::Arc;

use maskforge::cache::BaseEntry;
use maskforge::fsm::{FsmLimits, GrammarFsm, RuleKind, StateId};
use maskforge::{CompiledGrammar, CompilerConfig, Grammar, GrammarCompiler, GrammarMatcher, TokenBitmask, Vocabulary};
use maskforge::{MaskCacheMode, MaskPool, MatcherConfig};
use proptest::prelude::*;

use crate::support::fixtures::{encode, vocab};
use crate::support::gen;
use crate::support::small_vocab::small_vocab;

const MODES: [MaskCacheMode; 3] = [MaskCacheMode::Jit, MaskCacheMode::Aot, MaskCacheMode::Precompute(2)];

fn compile(g: &Grammar, vocab: &Vocabulary, mode: MaskCacheMode, counted: bool) -> CompiledGrammar {
    let mut config = CompilerConfig::default().cache_mode(mode);
    if counted {
        config = config.fsm_limits(FsmLimits { max_expanded_repeat: 0, ..FsmLimits::default() });
    }
    GrammarCompiler::new(vocab.clone(), config).compile(g.clone()).unwrap()
}

/// Asserts that the cached mask equals the oracle's at the matcher's current state.
fn assert_oracle_equal(m: &mut GrammarMatcher, what: &str) -> Result<TokenBitmask, TestCaseError> {
    let n = m.grammar().vocabulary().vocab_size();
    let (mut cached, mut exact) = (TokenBitmask::new(n), TokenBitmask::new(n));
    m.fill_next_token_bitmask(cached.as_words_mut());
    m.fill_next_token_bitmask_exact(exact.as_words_mut()).unwrap();
    prop_assert_eq!(&cached, &exact, "{}", what);
    Ok(cached)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn cache_equals_oracle_on_random_grammars(
        g in gen::grammar(),
        counted in any::<bool>(),
        mode in 0usize..3,
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let grammar = compile(&g, &small_vocab(), MODES[mode], counted);
        let mut m = GrammarMatcher::new(&grammar);
        let what = format!("mode {:?}, counted {counted}\n{g}", MODES[mode]);
        for pick in &picks {
            let mask = assert_oracle_equal(&mut m, &what)?;
            let allowed: Vec<usize> = mask.allowed_ids().collect();
            if allowed.is_empty() || m.is_terminated() {
                break;
            }
            prop_assert!(m.accept_token(allowed[pick.index(allowed.len())] as u32));
        }
        assert_oracle_equal(&mut m, &what)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// The warm path: a second fill at the same state merges the accepted sets from the bitsets
    /// the first one memoized (copying the first), and a second matcher starts warm; both equal
    /// the oracle, and the returned flag says exactly whether every token is allowed.
    #[test]
    fn warm_refills_equal_oracle(
        g in gen::grammar(),
        counted in any::<bool>(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let grammar = compile(&g, &small_vocab(), MaskCacheMode::Jit, counted);
        let n = grammar.vocabulary().vocab_size();
        let what = format!("counted {counted}\n{g}");
        for round in 0..2 {
            let mut m = GrammarMatcher::new(&grammar);
            for pick in picks.iter().map(Some).chain([None]) {
                let exact = assert_oracle_equal(&mut m, &what)?;
                let mut warm = TokenBitmask::new(n);
                let all = m.fill_next_token_bitmask(warm.as_words_mut());
                prop_assert_eq!(&warm, &exact, "round {} warm refill\n{}", round, what);
                prop_assert_eq!(all, exact.count_allowed() == n, "round {} all-allowed flag\n{}", round, what);
                let allowed: Vec<usize> = exact.allowed_ids().collect();
                let Some(pick) = pick else { break };
                if allowed.is_empty() || m.is_terminated() {
                    break;
                }
                prop_assert!(m.accept_token(allowed[pick.index(allowed.len())] as u32));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Fills repeated in one configuration take their uncertain tokens' verdicts from the
    /// matcher's memo (`matcher/verdicts.rs`), and rollbacks may make the popped stack frames
    /// again under the same ids with other contents: every fill, the first and the repeated one,
    /// equals the oracle through random accepts and rollbacks.
    #[test]
    fn refills_through_rollbacks_equal_oracle(
        g in gen::grammar(),
        walks in prop::collection::vec(prop::collection::vec((any::<prop::sample::Index>(), 0usize..4), 0..16), 2),
    ) {
        let grammar = compile(&g, &small_vocab(), MaskCacheMode::Jit, false);
        let what = format!("{g}");
        // Two matchers one after the other: the second finds the first's verdicts in the
        // grammar's shared memo (`cache/verdicts.rs`), by configuration content.
        for ops in walks {
            refill_through_rollbacks(&grammar, None, ops, &what)?;
        }
    }

    /// The same with the Earley parser, whose verdicts are kept by its current set with the
    /// chart positions its origins name: rollbacks pop positions that later steps make again
    /// with other items, and compaction (a rollback limit of 0 to 2 tokens) renumbers them.
    #[test]
    fn earley_refills_through_rollbacks_and_compaction_equal_oracle(
        g in gen::grammar(),
        ops in prop::collection::vec((any::<prop::sample::Index>(), 0usize..4), 0..24),
        limit in prop::option::of(0usize..3),
    ) {
        let config = CompilerConfig::default().parser(maskforge::Parser::Earley);
        let grammar = GrammarCompiler::new(small_vocab(), config).compile(g.clone()).unwrap();
        refill_through_rollbacks(&grammar, limit, ops, &format!("{g}"))?;
    }
}

/// One matcher of [`refills_through_rollbacks_equal_oracle`] (with a rollback limit of `limit`
/// tokens, if any): accepts and rolls back as `ops` say, filling twice at every step.
fn refill_through_rollbacks(
    grammar: &CompiledGrammar,
    limit: Option<usize>,
    ops: Vec<(prop::sample::Index, usize)>,
    what: &str,
) -> Result<(), TestCaseError> {
    let config = limit.map_or_else(MatcherConfig::default, |n| MatcherConfig::default().max_rollback_tokens(n));
    let mut m = GrammarMatcher::with_config(grammar, config);
    let mut accepted = 0usize;
    for (pick, back) in ops {
        let exact = assert_oracle_equal(&mut m, what)?;
        assert_oracle_equal(&mut m, what)?;
        // One op in four rolls back (one or two tokens, within the limit), the others accept.
        let can_roll_back = accepted.min(limit.unwrap_or(usize::MAX)).min(2);
        if back == 0 && can_roll_back > 0 {
            let n = 1 + pick.index(can_roll_back);
            m.rollback(n).unwrap();
            accepted -= n;
            continue;
        }
        let allowed: Vec<usize> = exact.allowed_ids().collect();
        if allowed.is_empty() || m.is_terminated() {
            break;
        }
        prop_assert!(m.accept_token(allowed[pick.index(allowed.len())] as u32));
        accepted += 1;
    }
    assert_oracle_equal(&mut m, what)?;
    Ok(())
}

/// The verdict memo after a rollback: a string rule called from two places (`"1` closes it in
/// one, `"2` in the other) is entered in both with its frame under the same id, the first one
/// popped by the rollback. The fill after it must check the closing tokens again.
#[test]
fn a_rollback_forgets_the_verdicts_of_the_popped_frames() {
    let g = maskforge::parse_ebnf(
        r#"root ::= "a" x | "b" y
        x ::= s "1"
        y ::= s "2"
        s ::= "\"" [c]* "\"""#,
        "root",
    )
    .unwrap();
    let vocab = maskforge::VocabularyBuilder::new().tokens(["a", "b", "\"", "c", "\"1", "\"2"]).build().unwrap();
    // `s` kept as a rule: its entries have no certain context, so `"1` and `"2` are checked.
    let limits = FsmLimits { max_inline_states: 0, ..FsmLimits::default() };
    let grammar = GrammarCompiler::new(vocab, CompilerConfig::default().fsm_limits(limits)).compile(g).unwrap();
    let mut m = GrammarMatcher::new(&grammar);
    assert!(m.runs_pda());
    let id = |t: &str| ["a", "b", "\"", "c", "\"1", "\"2"].iter().position(|&x| x == t).unwrap() as u32;
    for t in ["a", "\"", "c"] {
        assert!(m.accept_token(id(t)));
    }
    let first = assert_oracle_equal(&mut m, "after a\"c").unwrap();
    assert!(first.get(id("\"1") as usize) && !first.get(id("\"2") as usize));
    m.rollback(3).unwrap();
    for t in ["b", "\"", "c"] {
        assert!(m.accept_token(id(t)));
    }
    let second = assert_oracle_equal(&mut m, "after b\"c").unwrap();
    assert!(second.get(id("\"2") as usize) && !second.get(id("\"1") as usize));
}

/// The Earley parser's verdict memo after a compaction: the chart's positions are renumbered,
/// so a string entered in another context, at a position that now has the number the first
/// string's origin had, has the same items by number. The fill there must check the closing
/// tokens again.
#[test]
fn a_compaction_forgets_the_earley_verdicts() {
    let g = maskforge::parse_ebnf(
        r#"root ::= item+
        item ::= "a" s "1" | "b" s "2" | "z"
        s ::= "\"" [c]* "\"""#,
        "root",
    )
    .unwrap();
    let tokens = ["a", "b", "z", "\"", "c", "\"1", "\"2"];
    let vocab = maskforge::VocabularyBuilder::new().tokens(tokens).build().unwrap();
    let id = |t: &str| tokens.iter().position(|&x| x == t).unwrap() as u32;
    let limits = FsmLimits { max_inline_states: 0, ..FsmLimits::default() };
    let config = CompilerConfig::default().fsm_limits(limits).parser(maskforge::Parser::Earley);
    let grammar = GrammarCompiler::new(vocab, config).compile(g).unwrap();
    let mut m = GrammarMatcher::with_config(&grammar, MatcherConfig::default().max_rollback_tokens(0));
    assert!(!m.runs_pda());
    // `s` predicted at position 3.
    for t in ["z", "z", "a", "\"", "c"] {
        assert!(m.accept_token(id(t)));
    }
    let first = assert_oracle_equal(&mut m, "after zza\"c").unwrap();
    assert!(first.get(id("\"1") as usize) && !first.get(id("\"2") as usize));
    // 5 + 13,106 × 5 bytes, then `"1` reaches 65,536 bytes (`COMPACTION_SLACK`): compaction
    // after it keeps three positions, the current one becoming 2, so that `s` is predicted at
    // position 3 again.
    for _ in 0..13_106 {
        for t in ["\"1", "a", "\"", "c"] {
            assert!(m.accept_token(id(t)));
        }
    }
    assert!(m.accept_token(id("\"1")));
    for t in ["b", "\"", "c"] {
        assert!(m.accept_token(id(t)));
    }
    let second = assert_oracle_equal(&mut m, "after b\"c").unwrap();
    assert!(second.get(id("\"2") as usize) && !second.get(id("\"1") as usize));
}

/// The grammar's shared verdicts (`cache/verdicts.rs`): a string closed by `"!` and as many
/// `)` as there are open parentheses. Inside one, two or three parentheses the checks of
/// `"!))` read every frame (so each depth has its own verdicts: `"!))` is refused inside one,
/// allowed inside two); inside four they read four frames of five, and inside five a new
/// matcher finds those verdicts, as it does in a depth met before.
#[test]
fn matchers_share_verdicts_by_the_frames_their_checks_read() {
    let g = maskforge::parse_ebnf(
        r#"root ::= "(" root ")" | s "!"
        s ::= "\"" [c]* "\"""#,
        "root",
    )
    .unwrap();
    let tokens = ["(", ")", "\"", "c", "\"!", "\")", "\"!)", "\"!))"];
    let vocab = maskforge::VocabularyBuilder::new().tokens(tokens).build().unwrap();
    let limits = FsmLimits { max_inline_states: 0, ..FsmLimits::default() };
    let grammar = GrammarCompiler::new(vocab, CompilerConfig::default().fsm_limits(limits)).compile(g).unwrap();
    let id = |t: &str| tokens.iter().position(|&x| x == t).unwrap() as u32;
    let hits = || grammar.mask_cache_stats().shared_verdict_hits;
    let fill_at_depth = |depth: usize| {
        let mut m = GrammarMatcher::new(&grammar);
        assert!(m.runs_pda());
        for t in std::iter::repeat_n("(", depth).chain(["\"", "c"]) {
            assert!(m.accept_token(id(t)));
        }
        let before = hits();
        let mask = assert_oracle_equal(&mut m, &format!("depth {depth}")).unwrap();
        (mask.get(id("\"!))") as usize), hits() - before)
    };
    assert_eq!(fill_at_depth(1), (false, 0));
    assert_eq!(fill_at_depth(2), (true, 0), "the stack ends one frame deeper than at depth 1");
    assert_eq!(fill_at_depth(3), (true, 0));
    assert_eq!(fill_at_depth(4), (true, 0));
    assert_eq!(fill_at_depth(5), (true, 1), "the four frames read at depth 4 are on top here");
    assert_eq!(fill_at_depth(1), (false, 1), "depth 1 again");
}

/// Repetitions with bounds near the token lengths: the budget check must hold at every count,
/// whether the loop-backs are forced (a table of every token's count at the start of an
/// iteration, a walk of the automaton inside one: after a byte-fallback token that ends in the
/// middle of `é`) or not (`[a-z]{2}` iterations of varying length: the parser decides).
#[test]
fn counted_repetitions_near_their_bounds() {
    let sources = [
        r#"root ::= [a-c]{3,40} "!""#,
        r#"root ::= ("ab" | "c"){20,25}"#,
        r#"root ::= ([a-z] | " "){0,30} [.]"#,
        r#"root ::= "\"" ("é" | [a-z ] | "\\" "n"){0,24} "\"""#,
        r#"root ::= ([a-z] | [a-z]{2}){0,20} "!""#,
    ];
    for tokenizer in ["llama2", "llama3"] {
        let vocab = vocab(tokenizer).clone();
        for src in sources {
            let g = maskforge::parse_ebnf(src, "root").unwrap();
            for mode in MODES {
                let grammar = compile(&g, &vocab, mode, false);
                walk_shortest_and_longest(&grammar, &format!("{tokenizer} {src}"));
            }
        }
    }
}

/// Walks `grammar` with the shortest allowed token each time, then with the longest (which
/// reaches a repetition's bound in a few steps), comparing every mask with the oracle.
fn walk_shortest_and_longest(grammar: &CompiledGrammar, what: &str) {
    for longest in [false, true] {
        let mut m = GrammarMatcher::new(grammar);
        for step in 0..60 {
            let what = format!("{what} step {step} longest {longest}");
            let mask = assert_oracle_equal(&mut m, &what).unwrap();
            let len = |id: usize| grammar.vocabulary().token_bytes(id as u32).len();
            let allowed = mask.allowed_ids().filter(|&id| len(id) > 0);
            let pick =
                if longest { allowed.max_by_key(|&id| (len(id), id)) } else { allowed.min_by_key(|&id| (len(id), id)) };
            let Some(id) = pick else { break };
            assert!(m.accept_token(id as u32));
        }
    }
}

/// A repetition read at most once whose body is too large to inline becomes a plain rule of its
/// own (`$once…`), not a counted one: an item of a counted rule at its last iteration trusts no
/// cached token, so every token went to the parser (fills of 18 ms on MaskBench schemas whose
/// large optional member was such a rule). Masks stay equal to the oracle, optional or not.
#[test]
fn bodies_read_at_most_once_are_plain_rules() {
    let vocab = vocab("llama3").clone();
    // (With nothing expanded, `+` would be a counted rule too: `*` is a plain loop.)
    let sources =
        [r#"root ::= "<" ("ab" [a-z]* | "c"){0,1} ">" ("x" [0-9]*){1,1} ".""#, r#"root ::= ([a-z] [a-z]* " "){0,1}"#];
    for src in sources {
        let g = maskforge::parse_ebnf(src, "root").unwrap();
        for mode in MODES {
            let grammar = compile(&g, &vocab, mode, true);
            let rules = grammar.fsm().rules();
            assert!(rules.iter().any(|r| r.name.starts_with("$once")), "{src}: no plain rule for the body");
            assert!(rules.iter().all(|r| !matches!(r.kind, RuleKind::Counted { .. })), "{src}: a counted rule is left");
            walk_shortest_and_longest(&grammar, src);
        }
    }
}

/// JSON Schemas from MaskBench with Llama 3: the cache equals the oracle along valid instances
/// (compact layout), at every third token and at the end.
#[test]
fn llama3_maskbench_schemas_cache_equals_oracle() {
    use crate::support::fixtures::maskbench_files;
    use maskforge::JsonSchemaOptions;
    let v = vocab("llama3").clone();
    let options: JsonSchemaOptions = serde_json::from_value(serde_json::json!({"strict_mode": false})).unwrap();
    let mut checked = 0;
    // Every 50th file: a spread over all categories, deterministic.
    for (name, file) in maskbench_files().iter().step_by(50) {
        let Some(test) = file["tests"].as_array().and_then(|t| t.iter().find(|t| t["valid"] == true)) else { continue };
        let mode = if checked % 2 == 0 { MaskCacheMode::Jit } else { MaskCacheMode::Aot };
        let compiler = GrammarCompiler::new(v.clone(), CompilerConfig::default().cache_mode(mode));
        let Ok(grammar) = compiler.compile_json_schema(&file["schema"], &options) else { continue };
        let ids = encode("llama3", &test["data"].to_string());
        if ids.len() > 80 {
            continue;
        }
        let mut m = GrammarMatcher::new(&grammar);
        for (i, &id) in ids.iter().enumerate() {
            if i % 3 == 0 {
                assert_oracle_equal(&mut m, &format!("{name} token {i}")).unwrap();
            }
            if !m.accept_token(id) {
                break; // a front-end policy rejection: not what this test checks
            }
        }
        assert_oracle_equal(&mut m, &format!("{name} end")).unwrap();
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} schemas checked");
}

/// A fast path of the cache (`fast`, `None` where it does not apply) against the vocabulary walk
/// (`build_base`): for every reachable scannable state, in its certain context and without.
/// Returns how many states were compared.
fn fast_path_equals_walks(
    grammar: &CompiledGrammar,
    fast: impl Fn(&Arc<GrammarFsm>, &[StateId], &Vocabulary, StateId) -> Option<BaseEntry>,
) -> Result<usize, TestCaseError> {
    use maskforge::cache::{build_base, reachable_scannable_states};
    let (fsm, vocab) = (grammar.fsm(), grammar.vocabulary());
    let mut compared = 0;
    for (state, _) in reachable_scannable_states(fsm, vocab) {
        let context = grammar.mask_cache().certain_context(fsm, state);
        for context in [context, &[][..]] {
            if let Some(fast) = fast(fsm, context, vocab, state) {
                prop_assert_eq!(fast, build_base(fsm, context, vocab, state), "state {}", state);
                compared += 1;
            }
        }
    }
    Ok(compared)
}

/// The lexical-loop fast path against the vocabulary walk, for every state on a loop: with the
/// loop's leaving tokens walked by the parser (`build_base_from_loop`) and along byte paths
/// (`PathWalks::loop_base`, as the cache walks them where byte paths apply).
fn loop_slices_equal_walks(grammar: &CompiledGrammar) -> Result<usize, TestCaseError> {
    let by_parser = fast_path_equals_walks(grammar, maskforge::cache::build_base_from_loop)?;
    let walks = maskforge::cache::PathWalks::new(grammar.fsm(), grammar.vocabulary());
    let by_paths =
        fast_path_equals_walks(grammar, |fsm, context, vocab, state| walks.loop_base(fsm, context, vocab, state))?;
    Ok(by_parser + by_paths)
}

/// The same with every loop's slice built from its core without edges on `delimiter` (see
/// `lexical_loop::core_of`; the engine's delimiter, the quote, is not in the small vocabulary).
fn core_slices_equal_walks(grammar: &CompiledGrammar, delimiter: u8) -> Result<usize, TestCaseError> {
    fast_path_equals_walks(grammar, |fsm, context, vocab, state| {
        maskforge::cache::build_base_from_loop_core(fsm, context, vocab, state, delimiter)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn loop_slices_equal_walks_on_random_grammars(g in gen::grammar(), counted in any::<bool>()) {
        let grammar = compile(&g, &small_vocab(), MaskCacheMode::Jit, counted);
        loop_slices_equal_walks(&grammar)?;
        for delimiter in [b'a', b'b'] {
            core_slices_equal_walks(&grammar, delimiter)?;
        }
    }
}

/// The same with real vocabularies on grammars with string bodies, digit and whitespace runs,
/// escapes and multi-byte characters (Llama 3: byte-level; Llama 2: byte fallback, `0xFF`
/// tokens), and on MaskBench schemas with Llama 3.
#[test]
fn loop_slices_equal_walks_with_real_vocabularies() {
    use crate::support::fixtures::maskbench_files;
    use maskforge::JsonSchemaOptions;
    let sources = [
        r#"root ::= "{" [ \t\n]* "\"a\"" [ \t\n]* ":" [ \t\n]* "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt])* "\"" [ \t\n]* "}""#,
        r#"root ::= [0-9]+ ("." [0-9]+)? | "x" [a-z]* "!" | [^\n]* "\n""#,
        r#"root ::= ("é" | [α-ω] | "ab")* "." root | "" "#,
        r#"root ::= "\"" ([^"\\] | esc)* "\"" [ ]* "," root | "."  esc ::= "\\" (["n] | "u" [0-9a-f]{4})"#,
        // Arrays of strings: the loop of the array holds the string body, its core.
        r#"root ::= "[" [ ]* "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt])+ "\"" ([ ]* "," [ ]* "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt])+ "\"")* [ ]* "]""#,
        r#"root ::= ("\"" [a-z"]* "\"" [0-9]* ",")+"#,
    ];
    let mut compared = 0;
    for tokenizer in ["llama3", "llama2"] {
        let v = vocab(tokenizer).clone();
        for src in sources {
            let g = maskforge::parse_ebnf(src, "root").unwrap();
            compared += loop_slices_equal_walks(&compile(&g, &v, MaskCacheMode::Jit, false)).unwrap();
        }
    }
    // Subset construction given up on every rule: loops whose byte edges overlap, so that a walk
    // holds sets of several states (the slice's set automaton).
    let nfa_limits = FsmLimits { max_dfa_states: 1, ..FsmLimits::default() };
    for src in sources {
        let g = maskforge::parse_ebnf(src, "root").unwrap();
        let config = CompilerConfig::default().fsm_limits(nfa_limits.clone());
        let grammar = GrammarCompiler::new(vocab("llama3").clone(), config).compile(g).unwrap();
        compared += loop_slices_equal_walks(&grammar).unwrap();
    }
    let v = vocab("llama3").clone();
    let compiler = GrammarCompiler::new(v, CompilerConfig::default());
    // Both option sets: strict (string bodies inline) and spec-compliant (keys of additional
    // properties reach escapes through rule edges: leave bytes).
    for (i, (_, file)) in maskbench_files().iter().step_by(150).enumerate() {
        let options = if i % 2 == 0 { JsonSchemaOptions::default() } else { JsonSchemaOptions::spec_compliant() };
        if let Ok(grammar) = compiler.compile_json_schema(&file["schema"], &options) {
            compared += loop_slices_equal_walks(&grammar).unwrap();
        }
    }
    assert!(compared >= 20, "only {compared} loop states compared");
}

/// The byte-path fast path against the vocabulary walk, for every state outside a dispatch: the
/// entries of a grammar built one after another, so that later ones reuse the first-byte walks
/// of earlier ones of the same rule (`maskforge::cache::PathWalks`), or, with `pool`, the
/// first-byte walks of every grammar walked before through that pool.
fn byte_paths_equal_walks(grammar: &CompiledGrammar, pool: Option<&Arc<MaskPool>>) -> Result<usize, TestCaseError> {
    use maskforge::cache::PathWalks;
    let (fsm, vocab) = (grammar.fsm(), grammar.vocabulary());
    let walks = match pool {
        Some(pool) => PathWalks::with_pool(fsm, vocab, Arc::clone(pool)),
        None => PathWalks::new(fsm, vocab),
    };
    fast_path_equals_walks(grammar, |fsm, context, vocab, state| walks.base(fsm, context, vocab, state))
}

/// One pool for every random grammar over the small vocabulary: walks keyed by structure are
/// reused by later grammars that share it, as a server's pool is.
fn small_vocab_pool() -> &'static Arc<MaskPool> {
    static POOL: std::sync::OnceLock<Arc<MaskPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| Arc::new(MaskPool::new(&small_vocab(), 64 << 20)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn byte_paths_equal_walks_on_random_grammars(g in gen::grammar(), counted in any::<bool>()) {
        let grammar = compile(&g, &small_vocab(), MaskCacheMode::Jit, counted);
        byte_paths_equal_walks(&grammar, None)?;
        byte_paths_equal_walks(&grammar, Some(small_vocab_pool()))?;
    }
}

/// Left recursion behind nullable calls: a state whose predictions lead back to it after an
/// empty `ws` (or an empty optional in its own rule) may read its own bytes again through an
/// item a set cannot tell apart from its own, where first-byte walks must not be shared
/// (`byte_paths::LazyDfa::predicted_first`). The grammars share one pool and are compiled
/// twice, so pooled walks are reused across them.
#[test]
fn byte_paths_equal_walks_under_left_recursion_behind_nullable_calls() {
    let sources = [
        r#"root ::= list  list ::= ws list "," item | item  item ::= [a-b]+  ws ::= [ ]*"#,
        r#"root ::= "[" list "]"  list ::= ws? list [a-b] | [a-b]  ws ::= " ""#,
        r#"root ::= expr  expr ::= pre expr "+" atom | atom  pre ::= "-"?  atom ::= [a-b] [a-b]*"#,
        r#"root ::= expr ";"  expr ::= (ws | "") expr [ab] | "(" expr ")" | [ab]  ws ::= [ ]+"#,
    ];
    let pool = Arc::new(MaskPool::new(&small_vocab(), 64 << 20));
    let mut compared = 0;
    for _ in 0..2 {
        for source in sources {
            let g = maskforge::parse_ebnf(source, "root").unwrap();
            let grammar = compile(&g, &small_vocab(), MaskCacheMode::Jit, false);
            compared += byte_paths_equal_walks(&grammar, None).unwrap();
            compared += byte_paths_equal_walks(&grammar, Some(&pool)).unwrap();
        }
    }
    assert!(compared >= 20, "only {compared} states compared");
}

/// Random grammars sharing the pool do reuse each other's first-byte walks (else the pooled
/// half of the test above would compare nothing shared).
#[test]
fn random_grammars_share_first_byte_walks_through_the_pool() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let pool = Arc::new(MaskPool::new(&small_vocab(), 64 << 20));
    for _ in 0..64 {
        let g = gen::grammar().new_tree(&mut runner).unwrap().current();
        byte_paths_equal_walks(&compile(&g, &small_vocab(), MaskCacheMode::Jit, false), Some(&pool)).unwrap();
    }
    let stats = pool.stats();
    assert!(stats.path_walk_hits > 0 && stats.path_walk_misses > 0, "{stats:?}");
}

/// The same with Llama 3 and Llama 2 on grammars where a state enters a nullable rule (a key
/// position before `strtail`), final states with whitespace loops, a pattern with length bounds
/// (rules per character), a string with length bounds (a counted character), and MaskBench schemas under the spec-compliant options (keys of
/// additional properties) and the defaults.
#[test]
fn byte_paths_equal_walks_with_real_vocabularies() {
    use crate::support::fixtures::maskbench_files;
    use maskforge::JsonSchemaOptions;
    let sources = [
        r#"root ::= "{" [ ]* "\"" ("a" ("b" | [^"\\b] tail) | [^"\\a] tail | "\\" ["n] tail) "\"" [ ]* ":" [ ]* [0-9]+ [ ]* "}" [ \n]*
           tail ::= ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt])*"#,
        r#"root ::= item ("," [ ]* item)* [ ]*  item ::= [a-z]* | "(" root ")""#,
    ];
    let mut compared = 0;
    for tokenizer in ["llama3", "llama2"] {
        let v = vocab(tokenizer).clone();
        for src in sources {
            let g = maskforge::parse_ebnf(src, "root").unwrap();
            compared += byte_paths_equal_walks(&compile(&g, &v, MaskCacheMode::Jit, false), None).unwrap();
        }
    }
    let v = vocab("llama3").clone();
    let compiler = GrammarCompiler::new(v, CompilerConfig::default());
    // A pattern with length bounds: a right-recursive chain of nullable rules, one per character
    // (the walk follows their completions without nesting frames), and a shared escape rule.
    // A string with length bounds and no pattern: a counted repetition of one character, whose
    // body is a region (an iteration's end loops back to its start). Without a minimum and with
    // a maximum no token reaches, the walks of the entries before it follow it (`note`, and
    // `tag` after its pattern's match). A word count of at most 99 words is followed too: a
    // word and its space read two bytes or more, which no token repeats 99 times; one of 29 is
    // not.
    let product = serde_json::json!({"type": "object", "properties": {
        "id": {"type": "string", "pattern": "[a-z0-9_.-]+", "minLength": 2, "maxLength": 24},
        "name": {"type": "string", "minLength": 1, "maxLength": 256},
        "note": {"type": "string", "maxLength": 2000},
        "tag": {"type": "string", "pattern": "^[a-z]", "maxLength": 3000},
        "summary": {"type": "string", "pattern": "^(?:\\S+\\s+){0,99}\\S+$"},
        "title": {"type": "string", "pattern": "^(?:\\S+\\s+){0,29}\\S+$"}},
        "required": ["id", "name", "note", "tag", "summary", "title"]});
    let grammar = compiler.compile_json_schema(&product, &JsonSchemaOptions::spec_compliant()).unwrap();
    compared += byte_paths_equal_walks(&grammar, None).unwrap();
    // The MaskBench grammars share one pool, as a server's do: key positions of later objects
    // take the walks of the generic key body from earlier ones.
    let pool = Arc::new(MaskPool::new(grammar.vocabulary(), 256 << 20));
    for (i, (_, file)) in maskbench_files().iter().step_by(450).enumerate() {
        let options = if i % 2 == 0 { JsonSchemaOptions::spec_compliant() } else { JsonSchemaOptions::default() };
        if let Ok(grammar) = compiler.compile_json_schema(&file["schema"], &options) {
            compared += byte_paths_equal_walks(&grammar, Some(&pool)).unwrap();
        }
    }
    assert!(compared >= 40, "only {compared} states compared");
    assert!(pool.stats().path_walk_hits > 0, "no first-byte walk shared: {:?}", pool.stats());
}

/// Every string over `letters` of 1 to 4 bytes, as a vocabulary (no stop token).
fn strings_over(letters: &[u8]) -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = vec![Vec::new()];
    let mut all = Vec::new();
    for _ in 0..4 {
        tokens = tokens.iter().flat_map(|t| letters.iter().map(move |&c| [t.as_slice(), &[c]].concat())).collect();
        all.extend(tokens.iter().cloned());
    }
    maskforge::VocabularyBuilder::new().tokens(all).build().unwrap()
}

/// Repetitions whose loop-backs are bounded but not forced (see `cache/counted.rs`) trust the
/// tokens within the budget by their bound and leave the rest to the parser: a word count,
/// where an iteration may end on a space and what follows begins like an iteration (bounded
/// by a walk of the body), and items of a list with a bound (the body calls a rule: bounded by
/// the bytes that begin an iteration). Every token is at most 4 bytes and every budget
/// smaller, so every step near the bound takes that path; along random token sequences every
/// mask equals the oracle's.
#[test]
fn bounded_repetitions_equal_the_oracle_near_their_bound() {
    // A word count's leaving readings are read on in its caller: to the caller's end (`!`),
    // into a rule the caller calls after it (`e`), or past the end of a caller that is not
    // inlined (`q` in `r`), where the parser decides.
    let cases = [
        ("r ::= ([ab]+ \" \"+){0,3} [ab]+ \"!\"", &b"ab !"[..], true),
        ("r ::= ([ab]+ \" \"+){0,3} [ab]+ e\ne ::= \"!\" | \"!?\"", &b"ab !?"[..], false),
        ("r ::= q \"!\" q \"?\"\nq ::= ([ab]+ \" \"+){0,3} [ab]+", &b"ab !?"[..], false),
        ("r ::= \"[\" w (\",\" \" \"? w){0,3} \"]\"\nw ::= [ab]+", &b"ab[], "[..], true),
        ("r ::= \"[\" w (\";\" \",\" w){0,3} \"]\"\nw ::= [ab] [ab]?", &b"ab[],;"[..], true),
    ];
    for (ebnf, letters, inline) in cases {
        let g = maskforge::parse_ebnf(ebnf, "r").unwrap();
        // `{0,3}` counted, `+` and `?` expanded.
        let max_inline_states = if inline { FsmLimits::default().max_inline_states } else { 0 };
        let limits = FsmLimits { max_expanded_repeat: 2, max_inline_states, ..FsmLimits::default() };
        let config = CompilerConfig::default().cache_mode(MaskCacheMode::Jit).fsm_limits(limits);
        let grammar = GrammarCompiler::new(strings_over(letters), config).compile(g).unwrap();
        let counted = grammar.fsm().rules().iter().filter(|r| matches!(r.kind, RuleKind::Counted { .. })).count();
        assert_eq!(counted, 1, "{ebnf}");
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..150 {
            let mut m = GrammarMatcher::new(&grammar);
            for step in 0..16 {
                let mask = assert_oracle_equal(&mut m, &format!("{ebnf}, step {step}")).unwrap();
                let allowed: Vec<usize> = mask.allowed_ids().collect();
                if allowed.is_empty() || m.is_terminated() {
                    break;
                }
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                assert!(m.accept_token(allowed[seed as usize % allowed.len()] as u32));
            }
        }
    }
}

/// Items of one state with different counts near a repetition's bound (the same `[a-b]` read
/// as the first or a later iteration): a token within the budget of some items only is decided
/// by the parser, not rejected by the tightest budget. Every mask along every token sequence of
/// three tokens equals the oracle's.
#[test]
fn near_bound_items_with_different_counts() {
    let g = maskforge::parse_ebnf("r0 ::= (r1 | \"a\")*\nr1 ::= [a-b]{1,4} \"\u{e9}\"+", "r0").unwrap();
    let grammar = compile(&g, &small_vocab(), MaskCacheMode::Jit, true);
    fn walk(m: &mut GrammarMatcher, path: &mut Vec<u32>, depth: usize) {
        let what = format!("after {path:?}");
        let exact = assert_oracle_equal(m, &what).unwrap();
        if depth == 0 {
            return;
        }
        for id in exact.allowed_ids() {
            if m.accept_token(id as u32) {
                path.push(id as u32);
                walk(m, path, depth - 1);
                path.pop();
                m.rollback(1).unwrap();
            }
        }
    }
    walk(&mut GrammarMatcher::new(&grammar), &mut Vec::new(), 3);
}

/// Strings with a `maxLength` (a counted repetition) in an object of many optional members the
/// Earley parser serves: the checks of the tokens that close a string are kept by count class
/// (`earley::Parser::configuration`), so fills early in a string share them, and near the
/// maximum each count is its own key. Filled early and near the maximum, each fill equals the
/// oracle (keys that ignored the maximum, or how far the checked tokens reach, fail here).
#[test]
fn earley_fills_in_a_max_length_string_equal_oracle() {
    use crate::support::fixtures::vocab;
    // Many optional members: the tokens closing a string may go on to any of them, so they
    // are uncertain and checked at every fill.
    let properties: serde_json::Map<String, serde_json::Value> = (0..40)
        .map(|i| (format!("p{i}"), serde_json::json!({ "type": ["string", "null"], "maxLength": 64 })))
        .collect();
    let schema = serde_json::json!({ "type": "object", "properties": properties, "additionalProperties": false });
    let v = vocab("llama3").clone();
    let config = CompilerConfig::default().parser(maskforge::Parser::Earley);
    let compiler = GrammarCompiler::new(v.clone(), config);
    let grammar = compiler.compile_json_schema(&schema, &maskforge::JsonSchemaOptions::spec_compliant()).unwrap();
    let x = (0..v.vocab_size() as u32).find(|&i| v.token_bytes(i) == b"x").expect("Llama 3 has a token `x`");
    let mut m = GrammarMatcher::new(&grammar);
    assert!(m.accept_string(r#"{"p0": ""#));
    for count in 0..64 {
        // Early counts (one class, kept verdicts) and the last ones (each its own key).
        if !(4..56).contains(&count) {
            assert_oracle_equal(&mut m, "maxLength 64").unwrap();
        }
        assert!(m.accept_token(x));
    }
    let full = assert_oracle_equal(&mut m, "maxLength 64").unwrap();
    assert!(!full.allowed_ids().any(|id| id == x as usize), "a 65th character is refused");
}
