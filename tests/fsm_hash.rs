//! The hierarchical structural hash of rule automata (`maskforge::fsm::hash`), checked against
//! an independent structural comparison:
//!
//! * equal sub-structures of different grammars (renamed rules, reordered definitions) get
//!   equal keys, state by state;
//! * on batches of random grammars, **equal hash ⇒ isomorphic** (by a parallel walk of the two
//!   automata and everything they reference), and **isomorphic ⇒ equal hash** whenever the
//!   hash promises consistency (no ties between equal-looking edges of one state, and the
//!   isomorphism maps cycle members to cycle members and in-cycle edges to in-cycle edges);
//! * which rules get a hash is exactly "no non-simple reference cycle is reachable";
//! * simple cycles hash, and the same cycle entered elsewhere, renamed and reordered, gives the
//!   same hash to corresponding members.

use std::collections::{HashMap, HashSet, VecDeque};

use maskforge::fsm::hash::{hash_rules, FsmHashes, UNREACHABLE};
use maskforge::fsm::{build_grammar_fsm, FsmLimits, FsmRuleId, GrammarFsm, RuleKind, StateId};
use maskforge::{parse_ebnf, Expr, Grammar, GrammarBuilder, RuleId};
use maskforge::{Repeat, JSON_GRAMMAR_EBNF};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

use crate::support::gen;

/// Automata without rule inlining, so that every rule of the test grammars keeps its own
/// automaton (inlined rules have none to hash).
fn no_inline(g: &Grammar) -> Result<GrammarFsm, maskforge::GrammarError> {
    build_grammar_fsm(g, &FsmLimits { max_inline_states: 0, ..FsmLimits::default() })
}

fn fsm_of(text: &str) -> GrammarFsm {
    no_inline(&parse_ebnf(text, "root").unwrap()).unwrap()
}

fn rule(fsm: &GrammarFsm, name: &str) -> FsmRuleId {
    FsmRuleId::new(fsm.rules().iter().position(|r| r.name == name).unwrap_or_else(|| panic!("no rule {name}")))
}

// ---------------------------------------------------------------------------------------------
// The independent structural comparison.

/// A rule of a batch: (automaton index, rule index).
type R = (usize, FsmRuleId);

/// Facts about the reference graph of one automaton, computed without the module under test.
struct RefFacts {
    /// reach[x][y]: a path of one or more references leads from x to y.
    reach: Vec<Vec<bool>>,
    /// Whether each rule can get a hash: no non-simple cyclic component is reachable.
    hashable: Vec<bool>,
    /// A state reachable in the rule has two rule edges, or two byte edges, with labels the
    /// hash cannot tell apart (only ties that exist in the closure matter).
    local_tie: Vec<bool>,
}

fn ref_facts(fsm: &GrammarFsm, h: &FsmHashes) -> RefFacts {
    let n = fsm.rules().len();
    let mut refs = vec![Vec::new(); n];
    let mut local_tie = vec![false; n];
    for (r, rule) in fsm.rules().iter().enumerate() {
        let mut seen = HashSet::from([rule.start]);
        let mut stack = vec![rule.start];
        while let Some(s) = stack.pop() {
            let ranges: Vec<_> = fsm.byte_edges(s).iter().map(|e| (e.lo, e.hi)).collect();
            let labels: Vec<_> = fsm.rule_edges(s).iter().map(|e| h.rule_hash(e.rule).ok_or(e.rule)).collect();
            local_tie[r] |= has_duplicates(&ranges) || has_duplicates(&labels);
            for t in fsm.byte_edges(s).iter().map(|e| e.target).chain(fsm.rule_edges(s).iter().map(|e| e.target)) {
                if seen.insert(t) {
                    stack.push(t);
                }
            }
            for e in fsm.rule_edges(s) {
                if !refs[r].contains(&(e.rule.index())) {
                    refs[r].push(e.rule.index());
                }
            }
        }
    }
    let mut reach = vec![vec![false; n]; n];
    for x in 0..n {
        let mut stack = refs[x].clone();
        while let Some(y) = stack.pop() {
            if !reach[x][y] {
                reach[x][y] = true;
                stack.extend(&refs[y]);
            }
        }
    }
    // A cyclic component is simple when each member references exactly one member.
    let bad_cycle: Vec<bool> = (0..n)
        .map(|x| {
            reach[x][x]
                && (0..n).any(|m| {
                    reach[x][m] && reach[m][x] && refs[m].iter().filter(|&&y| reach[y][x] && reach[x][y]).count() != 1
                })
        })
        .collect();
    let hashable = (0..n).map(|x| !bad_cycle[x] && (0..n).all(|y| !reach[x][y] || !bad_cycle[y])).collect();
    RefFacts { reach, hashable, local_tie }
}

fn has_duplicates<T: PartialEq>(v: &[T]) -> bool {
    (0..v.len()).any(|i| v[..i].contains(&v[i]))
}

/// Automata of several grammars with their hashes, reference facts and bisimulation classes.
struct Batch {
    fsms: Vec<GrammarFsm>,
    hashes: Vec<FsmHashes>,
    facts: Vec<RefFacts>,
    rule_class: Vec<Vec<u64>>,
}

/// Verdict of the structural comparison of two rules.
enum Iso {
    /// Isomorphic: the automata of the rules, and of every rule pair their edges meet, are
    /// isomorphic. `pairs` holds those rule pairs, `states` the state bijections. `consistent`:
    /// cycle members meet cycle members and in-cycle edges meet in-cycle edges.
    Equal { pairs: Vec<(R, R)>, states: Vec<(R, StateId, R, StateId)>, consistent: bool },
    /// Not isomorphic, with the first difference.
    Different(String),
    /// A state has two edges that only a search could pair (equal ranges, or references to
    /// bisimilar rules).
    Ambiguous,
}

impl Batch {
    fn new(fsms: Vec<GrammarFsm>) -> Batch {
        let hashes: Vec<FsmHashes> = fsms.iter().map(hash_rules).collect();
        let facts = fsms.iter().zip(&hashes).map(|(f, h)| ref_facts(f, h)).collect();
        let rule_class = bisimulation(&fsms);
        Batch { fsms, hashes, facts, rule_class }
    }

    fn rules(&self) -> Vec<R> {
        (0..self.fsms.len()).flat_map(|f| FsmRuleId::range(self.fsms[f].rules().len()).map(move |r| (f, r))).collect()
    }

    fn hash(&self, x: R) -> Option<u64> {
        self.hashes[x.0].rule_hash(x.1)
    }

    fn class(&self, x: R) -> u64 {
        self.rule_class[x.0][x.1]
    }

    fn member(&self, x: R) -> bool {
        self.facts[x.0].reach[x.1][x.1]
    }

    fn same_component(&self, x: R, y: FsmRuleId) -> bool {
        let reach = &self.facts[x.0].reach;
        reach[x.1][y] && reach[y][x.1]
    }

    /// Whether a tie exists in the closure of `x` (where the hash may be inconsistent).
    fn tie_in_closure(&self, x: R) -> bool {
        let facts = &self.facts[x.0];
        let n = facts.local_tie.len();
        facts.local_tie[x.1] || (0..n).any(|y| facts.reach[x.1][y] && facts.local_tie[y])
    }

    /// Coinductive parallel walk: pair the starts, then pair edges of paired states by label
    /// (byte ranges; bisimulation class of the referenced rule), requiring a bijection of
    /// states within each rule pair and the same checks for every referenced pair.
    fn iso(&self, a: R, b: R) -> Iso {
        let mut pairs: Vec<(R, R)> = vec![(a, b)];
        let mut known: HashSet<(R, R)> = HashSet::from([(a, b)]);
        let mut states = Vec::new();
        let mut consistent = true;
        let mut i = 0;
        while i < pairs.len() {
            let (x, y) = pairs[i];
            i += 1;
            consistent &= self.member(x) == self.member(y);
            let (fx, fy) = (&self.fsms[x.0], &self.fsms[y.0]);
            let (rx, ry) = (&fx.rules()[x.1], &fy.rules()[y.1]);
            if rx.kind != ry.kind || rx.nullable != ry.nullable {
                return Iso::Different(format!("{x:?} {y:?}: kind or nullable"));
            }
            let mut xy: HashMap<StateId, StateId> = HashMap::new();
            let mut yx: HashMap<StateId, StateId> = HashMap::new();
            let mut queue = VecDeque::new();
            let mut bind = |sx: StateId, sy: StateId, queue: &mut VecDeque<(StateId, StateId)>| -> bool {
                match (xy.get(&sx), yx.get(&sy)) {
                    (None, None) => {
                        xy.insert(sx, sy);
                        yx.insert(sy, sx);
                        queue.push_back((sx, sy));
                        true
                    }
                    (Some(&t), Some(&u)) => t == sy && u == sx,
                    _ => false,
                }
            };
            bind(rx.start, ry.start, &mut queue);
            while let Some((sx, sy)) = queue.pop_front() {
                states.push((x, sx, y, sy));
                if fx.is_final(sx) != fy.is_final(sy) {
                    return Iso::Different(format!("{x:?} {y:?}: finality"));
                }
                let (bx, by) = (fx.byte_edges(sx), fy.byte_edges(sy));
                let ranges = |v: &[maskforge::fsm::ByteEdge]| v.iter().map(|e| (e.lo, e.hi)).collect::<Vec<_>>();
                if has_duplicates(&ranges(bx)) || has_duplicates(&ranges(by)) {
                    return Iso::Ambiguous;
                }
                if ranges(bx) != ranges(by) {
                    return Iso::Different(format!("{x:?} {y:?}: byte edges"));
                }
                for (ex, ey) in bx.iter().zip(by) {
                    if !bind(ex.target, ey.target, &mut queue) {
                        return Iso::Different(format!("{x:?} {y:?}: byte edge targets"));
                    }
                }
                let classes = |f: usize, s: StateId| {
                    let mut v: Vec<_> =
                        self.fsms[f].rule_edges(s).iter().map(|e| (self.rule_class[f][e.rule], *e)).collect();
                    v.sort_by_key(|&(c, _)| c);
                    v
                };
                let (vx, vy) = (classes(x.0, sx), classes(y.0, sy));
                let labels = |v: &[(u64, maskforge::fsm::RuleEdge)]| v.iter().map(|&(c, _)| c).collect::<Vec<_>>();
                if has_duplicates(&labels(&vx)) || has_duplicates(&labels(&vy)) {
                    return Iso::Ambiguous;
                }
                if labels(&vx) != labels(&vy) {
                    return Iso::Different(format!("{x:?} {y:?}: referenced rules"));
                }
                for (&(_, ex), &(_, ey)) in vx.iter().zip(&vy) {
                    if !bind(ex.target, ey.target, &mut queue) {
                        return Iso::Different(format!("{x:?} {y:?}: rule edge targets"));
                    }
                    consistent &= self.same_component(x, ex.rule) == self.same_component(y, ey.rule);
                    let p = ((x.0, ex.rule), (y.0, ey.rule));
                    if known.insert(p) {
                        pairs.push(p);
                    }
                }
            }
        }
        Iso::Equal { pairs, states, consistent }
    }
}

/// Bisimulation classes of all rules of all automata (partition refinement over states: a
/// state's signature is its finality, its rule's kind and whether it is that rule's start, and
/// the set of its (label, target class) pairs, where a rule label is the referenced rule's
/// kind, nullability and start class). Coarser than isomorphism, tie-free: used to pair rule
/// edges and to skip pairs that cannot be isomorphic.
fn bisimulation(fsms: &[GrammarFsm]) -> Vec<Vec<u64>> {
    let kind = |k: RuleKind| match k {
        RuleKind::Plain => [0, 0, 0],
        RuleKind::Counted { min, max } => [1, min as u64, max as u64],
    };
    let mut base = vec![0usize];
    for f in fsms {
        base.push(base.last().unwrap() + f.state_len());
    }
    let mut class = vec![0u64; *base.last().unwrap()];
    let mut count = 1;
    loop {
        let mut ids: HashMap<Vec<u64>, u64> = HashMap::new();
        let mut next = vec![0u64; class.len()];
        for (f, fsm) in fsms.iter().enumerate() {
            for s in fsm.states() {
                let owner = &fsm.rules()[fsm.rule_of(s)];
                let mut edges: Vec<[u64; 7]> = fsm
                    .byte_edges(s)
                    .iter()
                    .map(|e| [0, e.lo as u64, e.hi as u64, 0, 0, 0, class[base[f] + e.target.index()]])
                    .collect();
                for e in fsm.rule_edges(s) {
                    let callee = &fsm.rules()[e.rule];
                    let [k, min, max] = kind(callee.kind);
                    let label = k | ((callee.nullable as u64) << 1);
                    edges.push([
                        1,
                        label,
                        min,
                        max,
                        class[base[f] + callee.start.index()],
                        0,
                        class[base[f] + e.target.index()],
                    ]);
                }
                edges.sort_unstable();
                edges.dedup();
                let mut sig = vec![class[base[f] + s.index()], fsm.is_final(s) as u64, (owner.start == s) as u64];
                sig.extend(kind(owner.kind));
                sig.extend(edges.iter().flatten());
                let n = ids.len() as u64;
                next[base[f] + s.index()] = *ids.entry(sig).or_insert(n);
            }
        }
        let new_count = ids.len();
        class = next;
        if new_count == count {
            break;
        }
        count = new_count;
    }
    let mut ids: HashMap<[u64; 5], u64> = HashMap::new();
    fsms.iter()
        .enumerate()
        .map(|(f, fsm)| {
            fsm.rules()
                .iter()
                .map(|r| {
                    let [k, min, max] = kind(r.kind);
                    let n = ids.len() as u64;
                    *ids.entry([k, min, max, r.nullable as u64, class[base[f] + r.start.index()]]).or_insert(n)
                })
                .collect()
        })
        .collect()
}

/// Counts of what a batch check compared (to keep the properties from being vacuous).
#[derive(Default, Debug)]
struct Coverage {
    equal_hash_pairs: usize,
    equal_hash_cross_grammar: usize,
    equal_hash_cycle_members: usize,
    iso_pairs_checked: usize,
    iso_equal_asserted: usize,
    iso_ambiguous: usize,
    unhashed_rules: usize,
}

/// Both directions over every pair of rules of the batch, and the hashable predicate.
fn check_batch(batch: &Batch) -> Result<Coverage, TestCaseError> {
    let mut cov = Coverage::default();
    let rules = batch.rules();
    for &x in &rules {
        let predicted = batch.facts[x.0].hashable[x.1];
        prop_assert_eq!(batch.hash(x).is_some(), predicted, "hashable {:?}", x);
        cov.unhashed_rules += batch.hash(x).is_none() as usize;
    }
    for (i, &x) in rules.iter().enumerate() {
        for &y in &rules[..i] {
            let (Some(hx), Some(hy)) = (batch.hash(x), batch.hash(y)) else { continue };
            if hx == hy {
                cov.equal_hash_pairs += 1;
                cov.equal_hash_cross_grammar += (x.0 != y.0) as usize;
                cov.equal_hash_cycle_members += batch.member(x) as usize;
                // Equal hash ⇒ equal structure (bisimilar at least; isomorphic when decidable
                // by the walk), and canonical numbers follow the isomorphism.
                prop_assert_eq!(batch.class(x), batch.class(y), "equal hash, not bisimilar: {:?} {:?}", x, y);
                match batch.iso(x, y) {
                    Iso::Equal { states, pairs, .. } => {
                        for (p, q) in pairs {
                            prop_assert_eq!(batch.hash(p), batch.hash(q), "referenced pair {:?} {:?}", p, q);
                        }
                        for (p, sp, q, sq) in states {
                            let (cp, cq) =
                                (batch.hashes[p.0].canonical_state(sp), batch.hashes[q.0].canonical_state(sq));
                            prop_assert_eq!(cp, cq, "canonical numbers of {:?}/{} and {:?}/{}", p, sp, q, sq);
                            prop_assert_ne!(cp, UNREACHABLE);
                        }
                    }
                    Iso::Different(why) => prop_assert!(false, "equal hash, different structure: {}", why),
                    Iso::Ambiguous => {}
                }
            }
            // Equal structure ⇒ equal hash, where the hash promises it.
            if batch.class(x) != batch.class(y) || batch.tie_in_closure(x) || batch.tie_in_closure(y) {
                continue;
            }
            cov.iso_pairs_checked += 1;
            let verdict = batch.iso(x, y);
            cov.iso_ambiguous += matches!(verdict, Iso::Ambiguous) as usize;
            if let Iso::Equal { states, consistent: true, .. } = verdict {
                cov.iso_equal_asserted += 1;
                prop_assert_eq!(hx, hy, "isomorphic rules {:?} {:?} hash differently", x, y);
                for (p, sp, q, sq) in states {
                    prop_assert_eq!(batch.hashes[p.0].state_key(sp), batch.hashes[q.0].state_key(sq));
                }
            }
        }
    }
    Ok(cov)
}

// ---------------------------------------------------------------------------------------------
// Grammar transformations.

fn remap(e: &Expr, to: &[RuleId]) -> Expr {
    match e {
        Expr::Rule(r) => Expr::Rule(to[r.index()]),
        Expr::Seq(v) => Expr::Seq(v.iter().map(|x| remap(x, to)).collect()),
        Expr::Choice(v) => Expr::Choice(v.iter().map(|x| remap(x, to)).collect()),
        Expr::Repeat(r) => Expr::Repeat(Box::new(Repeat { expr: remap(&r.expr, to), min: r.min, max: r.max })),
        other => other.clone(),
    }
}

/// The same grammar with rules renamed `renamed{i}` and defined in the order `order`
/// (a permutation of the rule indices).
fn permuted(g: &Grammar, order: &[usize]) -> Grammar {
    let mut b = GrammarBuilder::new();
    let mut to = vec![RuleId::new(0); g.rules().len()];
    for &old in order {
        to[old] = b.rule(&format!("renamed{old}"));
    }
    for &old in order {
        let rule = &g.rules()[old];
        b.define(to[old], remap(&rule.body, &to), rule.lookahead.as_ref().map(|e| remap(e, &to))).unwrap();
    }
    b.build(&format!("renamed{}", g.root().index())).unwrap()
}

fn order_from_keys(n: usize, keys: &[u64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (keys[i % keys.len()], i));
    order
}

fn both_limits(g: &Grammar) -> [GrammarFsm; 2] {
    let counted = FsmLimits { max_expanded_repeat: 0, max_inline_states: 0, ..FsmLimits::default() };
    [no_inline(g).unwrap(), build_grammar_fsm(g, &counted).unwrap()]
}

/// A batch strategy: random grammars, each followed by a renamed and reordered copy.
fn batch_grammars() -> impl Strategy<Value = Vec<Grammar>> {
    prop::collection::vec((gen::grammar(), prop::collection::vec(any::<u64>(), 5)), 2..6).prop_map(|gs| {
        gs.into_iter()
            .flat_map(|(g, keys)| {
                let copy = permuted(&g, &order_from_keys(g.rules().len(), &keys));
                [g, copy]
            })
            .collect()
    })
}

/// Every grammar built with repetitions expanded and with repetitions counted.
fn batch_of(grammars: &[Grammar]) -> Batch {
    Batch::new(grammars.iter().flat_map(both_limits).collect())
}

// ---------------------------------------------------------------------------------------------
// Fixed grammars.

#[test]
fn same_sub_object_in_two_grammars() {
    let a = fsm_of(
        r#"root ::= "{" obj "}"
obj ::= "a" [0-9]+
"#,
    );
    let b = fsm_of(
        r#"x ::= "q"
thing ::= "a" [0-9]+
root ::= "[" thing "]" | x
"#,
    );
    let (ha, hb) = (hash_rules(&a), hash_rules(&b));
    let (obj, thing) = (rule(&a, "obj"), rule(&b, "thing"));
    assert!(ha.rule_hash(obj).is_some());
    assert_eq!(ha.rule_hash(obj), hb.rule_hash(thing));
    assert_ne!(ha.rule_hash(rule(&a, "root")), hb.rule_hash(rule(&b, "root")));
    // Every state of `obj` has a counterpart with the same key, found by walking bytes.
    let batch = Batch::new(vec![a, b]);
    match batch.iso((0, obj), (1, thing)) {
        Iso::Equal { states, .. } => {
            assert!(states.len() >= 3);
            for (p, sp, q, sq) in states {
                let key = batch.hashes[p.0].state_key(sp);
                assert!(key.is_some());
                assert_eq!(key, batch.hashes[q.0].state_key(sq));
            }
        }
        _ => panic!("obj and thing are isomorphic"),
    }
}

#[test]
fn tool_arguments_shared_between_requests() {
    // The same parameter object under two different tool sets, names and rule orders.
    let first = fsm_of(
        r#"root ::= "{\"name\":" ("\"get_weather\"" "," "\"arguments\":" weather | "\"search\"" "," "\"arguments\":" query) "}"
weather ::= "{\"city\":" str (",\"units\":" ("\"c\"" | "\"f\""))? "}"
query ::= "{\"q\":" str "}"
str ::= "\"" [^"\\]* "\""
"#,
    );
    let second = fsm_of(
        r#"s ::= "\"" [^"\\]* "\""
args_weather ::= "{\"city\":" s (",\"units\":" ("\"c\"" | "\"f\""))? "}"
root ::= "{\"name\":" ("\"get_weather\"" "," "\"arguments\":" args_weather | "\"book\"" "," "\"arguments\":" s) "}"
"#,
    );
    let (h1, h2) = (hash_rules(&first), hash_rules(&second));
    assert_eq!(h1.rule_hash(rule(&first, "weather")), h2.rule_hash(rule(&second, "args_weather")));
    assert_eq!(h1.rule_hash(rule(&first, "str")), h2.rule_hash(rule(&second, "s")));
    assert_ne!(h1.rule_hash(rule(&first, "query")), h2.rule_hash(rule(&second, "args_weather")));
    let mut keys1: Vec<_> = first.states().filter_map(|s| h1.state_key(s)).collect();
    let keys2: HashSet<_> = second.states().filter_map(|s| h2.state_key(s)).collect();
    keys1.retain(|k| keys2.contains(k));
    let weather = &first.rules()[rule(&first, "weather")];
    let weather_states = first.states().filter(|&s| first.rule_of(s) == rule(&first, "weather")).count();
    assert!(weather_states > 10 && h1.canonical_state(weather.start) == 0);
    // Every state of `weather` and `str` is shared (those rules have no unreachable states).
    let str_states = first.states().filter(|&s| first.rule_of(s) == rule(&first, "str")).count();
    assert_eq!(keys1.len(), weather_states + str_states);
}

#[test]
fn simple_cycles_rotated_renamed_reordered() {
    let g1 = fsm_of(
        r#"root ::= "<" a ">"
a ::= "x" b | "y"
b ::= "z" a
"#,
    );
    // The cycle entered at b, with other names, in another order.
    let g2 = fsm_of(
        r#"q ::= "z" p
root ::= "(" q ")"
p ::= "x" q | "y"
"#,
    );
    let (h1, h2) = (hash_rules(&g1), hash_rules(&g2));
    let (a, b, p, q) = (rule(&g1, "a"), rule(&g1, "b"), rule(&g2, "p"), rule(&g2, "q"));
    assert!(h1.rule_hash(a).is_some());
    assert_ne!(h1.rule_hash(a), h1.rule_hash(b));
    assert_eq!(h1.rule_hash(a), h2.rule_hash(p));
    assert_eq!(h1.rule_hash(b), h2.rule_hash(q));
    for (f, h, r) in [(&g1, &h1, a), (&g2, &h2, p), (&g1, &h1, b), (&g2, &h2, q)] {
        let start = f.rules()[r].start;
        assert_eq!(h.state_key(start), Some((h.rule_hash(r).unwrap(), 0)));
    }
    assert!(h1.rule_hash(rule(&g1, "root")).is_some());
    assert_ne!(h1.rule_hash(rule(&g1, "root")), h2.rule_hash(rule(&g2, "root")));
}

#[test]
fn non_simple_cycles_are_not_hashed_and_do_not_panic() {
    let json = no_inline(&parse_ebnf(JSON_GRAMMAR_EBNF, "root").unwrap()).unwrap();
    let h = hash_rules(&json);
    for name in ["root", "value", "object", "member", "array"] {
        assert_eq!(h.rule_hash(rule(&json, name)), None, "{name}");
    }
    // Leaves still hash: strings and numbers are shared with every other JSON grammar.
    assert!(h.rule_hash(rule(&json, "string")).is_some());
    assert!(h.rule_hash(rule(&json, "number")).is_some());
    // Every reachable state still gets a canonical number; keys only for hashed rules.
    for s in json.states() {
        let c = h.canonical_state(s);
        assert_eq!(h.state_key(s).is_some(), c != UNREACHABLE && h.rule_hash(json.rule_of(s)).is_some());
    }
}

// ---------------------------------------------------------------------------------------------
// Properties.

/// Leaf expressions without rule references.
fn leaf() -> impl Strategy<Value = Expr> {
    let atom = prop_oneof![
        prop::sample::select(vec!["a", "b", "ab", "ba", "é"]).prop_map(Expr::literal),
        Just(Expr::class([('a' as u32, 'b' as u32)], false)),
    ];
    atom.prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..3).prop_map(Expr::Seq),
            prop::collection::vec(inner.clone(), 2..3).prop_map(Expr::Choice),
            (inner, 0u32..2, 1u32..3).prop_map(|(e, min, extra)| Expr::repeat(e, min, Some(min + extra))),
        ]
    })
}

/// A simple cycle of `k` members: member `i` is `pre_i succ post_i | stop_i`.
fn cycle() -> impl Strategy<Value = Vec<(Expr, Expr, Expr)>> {
    prop::collection::vec((leaf(), leaf(), leaf()), 1..5)
}

/// The grammar of a cycle with members listed from `first` and named `{prefix}{i}`, plus a root
/// entering the cycle at member `entry`.
fn cycle_grammar(
    members: &[(Expr, Expr, Expr)],
    first: usize,
    entry: usize,
    prefix: &str,
    root_first: bool,
) -> Grammar {
    let k = members.len();
    let mut b = GrammarBuilder::new();
    let root = if root_first { Some(b.rule("root")) } else { None };
    let mut ids = vec![RuleId::new(0); k];
    for j in 0..k {
        let i = (first + j) % k;
        ids[i] = b.rule(&format!("{prefix}{i}"));
    }
    let root = root.unwrap_or_else(|| b.rule("root"));
    for (i, (pre, post, stop)) in members.iter().enumerate() {
        let body =
            Expr::Choice(vec![Expr::Seq(vec![pre.clone(), Expr::Rule(ids[(i + 1) % k]), post.clone()]), stop.clone()]);
        b.define(ids[i], body, None).unwrap();
    }
    b.define(root, Expr::Seq(vec![Expr::literal("<"), Expr::Rule(ids[entry]), Expr::literal(">")]), None).unwrap();
    b.build("root").unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Equal hash ⇒ isomorphic; isomorphic (with consistency) ⇒ equal hash; hashable exactly
    /// when no non-simple cycle is reachable. Over every pair of rules of a batch.
    #[test]
    fn hash_equality_is_structural_equality(grammars in batch_grammars()) {
        check_batch(&batch_of(&grammars))?;
    }

    /// Renaming and reordering the rules of a grammar gives the same multiset of rule hashes,
    /// the same hash for each renamed rule, and the same key for corresponding states.
    #[test]
    fn renaming_and_reordering_keep_hashes(g in gen::grammar(), keys in prop::collection::vec(any::<u64>(), 5), counted in any::<bool>()) {
        let copy = permuted(&g, &order_from_keys(g.rules().len(), &keys));
        let pick = |g: &Grammar| both_limits(g).into_iter().nth(counted as usize).unwrap();
        let batch = Batch::new(vec![pick(&g), pick(&copy)]);
        prop_assume!(!FsmRuleId::range(batch.fsms[0].rules().len()).any(|r| batch.tie_in_closure((0, r))));
        let multiset = |f: usize| {
            let mut v: Vec<Option<u64>> = FsmRuleId::range(batch.fsms[f].rules().len()).map(|r| batch.hash((f, r))).collect();
            v.sort_unstable();
            v
        };
        prop_assert_eq!(multiset(0), multiset(1));
        for (i, r) in g.rules().iter().enumerate() {
            let (x, y) = ((0, rule(&batch.fsms[0], &r.name)), (1, rule(&batch.fsms[1], &format!("renamed{i}"))));
            prop_assert_eq!(batch.hash(x), batch.hash(y), "rule {}", r.name);
            match batch.iso(x, y) {
                Iso::Equal { states, .. } => {
                    for (p, sp, q, sq) in states {
                        let (hp, hq) = (&batch.hashes[p.0], &batch.hashes[q.0]);
                        prop_assert_eq!(hp.state_key(sp), hq.state_key(sq));
                        if hp.rule_hash(p.1).is_some() {
                            prop_assert_eq!(hp.canonical_state(sp), hq.canonical_state(sq));
                        }
                    }
                }
                Iso::Different(why) => prop_assert!(false, "a renamed copy differs: {}", why),
                Iso::Ambiguous => {}
            }
        }
        check_batch(&batch)?;
    }

    /// A random simple cycle hashes, and a rotation of it (listed from another member, entered
    /// elsewhere, renamed, root defined first or last) gives corresponding members equal hashes.
    #[test]
    fn rotated_simple_cycles_match(members in cycle(), first in 0usize..4, entry in 0usize..4, root_first in any::<bool>()) {
        let k = members.len();
        let g1 = no_inline(&cycle_grammar(&members, 0, 0, "m", true)).unwrap();
        let g2 = no_inline(&cycle_grammar(&members, first % k, entry % k, "other", root_first)).unwrap();
        let (h1, h2) = (hash_rules(&g1), hash_rules(&g2));
        for i in 0..k {
            let (a, b) = (rule(&g1, &format!("m{i}")), rule(&g2, &format!("other{i}")));
            prop_assert!(h1.rule_hash(a).is_some());
            prop_assert_eq!(h1.rule_hash(a), h2.rule_hash(b), "member {}", i);
        }
        prop_assert_eq!(h1.rule_hash(rule(&g1, "root")).is_some(), true);
        check_batch(&Batch::new(vec![g1, g2]))?;
    }
}

/// The batch property on a fixed sample, with coverage floors: the random batches do exercise
/// equal hashes across grammars, cycle members, unhashable rules and structural comparisons.
#[test]
fn batch_property_is_not_vacuous() {
    let mut runner = TestRunner::deterministic();
    let mut total = Coverage::default();
    for _ in 0..24 {
        let batch = batch_of(&batch_grammars().new_tree(&mut runner).unwrap().current());
        let cov = check_batch(&batch).unwrap_or_else(|e| panic!("{e}"));
        total.equal_hash_pairs += cov.equal_hash_pairs;
        total.equal_hash_cross_grammar += cov.equal_hash_cross_grammar;
        total.equal_hash_cycle_members += cov.equal_hash_cycle_members;
        total.iso_pairs_checked += cov.iso_pairs_checked;
        total.iso_equal_asserted += cov.iso_equal_asserted;
        total.iso_ambiguous += cov.iso_ambiguous;
        total.unhashed_rules += cov.unhashed_rules;
    }
    eprintln!("{total:?}");
    assert!(total.equal_hash_cross_grammar >= 100, "{total:?}");
    assert!(total.equal_hash_cycle_members >= 10, "{total:?}");
    assert!(total.iso_equal_asserted >= 100, "{total:?}");
    assert!(total.unhashed_rules >= 10, "{total:?}");
}
