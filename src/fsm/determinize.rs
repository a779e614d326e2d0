//! Epsilon removal and subset construction for rule automata, and the pipeline of passes that
//! turns a rule's Thompson automaton into its final form ([`optimize`]).
//!
//! Rule references are treated as ordinary symbols (one symbol per referenced rule), so the
//! determinized automaton has at most one target per byte and per rule. Subset construction can
//! blow up; it is abandoned past a state budget and the epsilon-free NFA is kept (the Earley
//! parser handles nondeterminism, only less efficiently).
//!
//! The passes work on [`FlatFsm`] and intern subsets in a [`SliceInterner`]: no allocation per
//! state or per subset (see `docs/design-notes.md`, "Automaton construction speed").

use super::flat::FlatFsm;
use super::minimize::minimize;
use super::nfa::Nfa;
use super::simulation::Simulation;
use super::suffixes::merge_equal_suffixes;
use super::Label;
use crate::util::cancel::{self, Interrupted};
use crate::util::interner::SliceInterner;
use std::cell::RefCell;

/// A rule's Thompson automaton → epsilon-free, suffix-merged, and when subset construction
/// stays within `max_dfa_states` states (or the NFA's own number of states, when larger) and
/// `max_dfa_work` (+16 per NFA edge) edges read,
/// deterministic and minimal; else the epsilon-free, suffix-merged NFA. When plain subset
/// construction gives up, subsets pruned by the simulation preorder are tried
/// ([`determinize_pruned`]); a `union` of lexical rules (see `build.rs::union_rule`) tries
/// those first.
///
/// # Errors
/// [`Interrupted`] when the compile's watch (`util::cancel`) trips during a pass. The passes
/// after epsilon removal then give up early and return their input (an equivalent automaton,
/// only not reduced), so this check at the end is what keeps such an automaton out of the
/// rule-automaton cache.
pub(crate) fn optimize(
    nfa: &Nfa,
    max_dfa_states: usize,
    max_dfa_work: usize,
    union: bool,
) -> Result<FlatFsm, Interrupted> {
    // Merging equal suffixes first shrinks the copies inlining made before the two
    // superlinear steps run.
    let nfa = merge_equal_suffixes(remove_epsilons(nfa)?);
    let work = max_dfa_work.saturating_add(nfa.edge_len().saturating_mul(16));
    // A DFA no larger than the NFA it replaces is no blow-up: a large enum's automaton (a
    // trie of thousands of names) is deterministic with fewer states than its NFA, which
    // would otherwise keep one Earley item per name alive after the opening quote
    // (`JsonSchemaStore---cryproj.dev`: 2,461 items, each a cache entry, 22 ms in one step).
    let states = max_dfa_states.max(nfa.state_len());
    // A blow-up may come from subsets that differ only in states whose words another member
    // reads already; pruned by simulation, those subsets are one.
    let pruned = |nfa: FlatFsm| {
        if is_deterministic(&nfa) {
            return Ok(nfa);
        }
        match Simulation::of(&nfa, work.saturating_mul(SIMULATION_WORK)) {
            Some(sim) => determinize_pruned(nfa, &sim, states, work),
            None => Err(nfa),
        }
    };
    let dfa = match union {
        // A union of patterns is where such subsets are known to come (see `simulation.rs`):
        // plain subset construction would spend its whole budget before giving up.
        true => pruned(nfa).or_else(|nfa| determinize(nfa, states, work)),
        false => determinize(nfa, states, work).or_else(pruned),
    };
    let mut out = match dfa {
        // Minimization is O(E log n) and finds the unique minimal DFA, so merging suffixes of
        // the DFA first (as the quadratic Moore refinement needed) would only repeat its work.
        Ok(dfa) => minimize(dfa),
        Err(nfa) => nfa,
    };
    cancel::check_now("automaton construction")?;
    out.shrink_to_fit();
    Ok(out)
}

/// The work budget of the simulation preorder, in multiples of subset construction's (a
/// union of seven patterns needs 3× that). It is computed only for a union rule or a rule
/// whose plain subset construction gave up, so the grammars that determinize are not slowed.
const SIMULATION_WORK: usize = 8;

/// Returns an equivalent automaton without epsilon edges, restricted to reachable states,
/// with edges sorted and duplicates removed. States are numbered in breadth-first order.
///
/// # Errors
/// [`Interrupted`] when the compile's watch trips (polled every [`cancel::POLL_EVERY`] states).
pub(crate) fn remove_epsilons(nfa: &Nfa) -> Result<FlatFsm, Interrupted> {
    with_scratch(|scratch| remove_epsilons_with(nfa, scratch))
}

thread_local! {
    /// Buffers reused by every call on this thread: a grammar's rule automata are built by the
    /// thousands, most of them small, and per-call allocations were a fifth of these passes'
    /// time.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The working memory of [`remove_epsilons`] and [`determinize`] (contents are meaningless
/// between calls).
///
/// # Why it is per thread
/// One value lives in a `thread_local!` (`SCRATCH`) rather than being passed down by the
/// caller: these passes run once per rule automaton, thousands of times per grammar, on
/// whichever thread compiles (several at once in a server), and an explicit value would have
/// to travel through every construction function for no other use. It holds only buffers that
/// every call clears before use, so results never depend on earlier calls. Bound:
/// [`with_scratch`] drops the buffers after a call that grew them past 2^17 edges or marks, or
/// 2^14 subsets, so a thread keeps at most a few megabytes.
#[derive(Default)]
struct Scratch {
    offsets: Vec<u32>,
    adjacent: Vec<(Label, u32)>,
    mark: Vec<u32>,
    closure: Vec<u32>,
    new_id: Vec<u32>,
    queue: Vec<u32>,
    subsets: SliceInterner<u32>,
    subset: Vec<u32>,
    points: Vec<u16>,
    byte_edges: Vec<(u8, u8, u32)>,
    rule_edges: Vec<(u32, u32)>,
    group: Vec<u32>,
    interval_targets: Vec<Vec<u32>>,
}

fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with_borrow_mut(|scratch| {
        let r = f(scratch);
        // Drop buffers grown by an unusually large automaton, so that a thread does not keep
        // megabytes for the rest of its life.
        if scratch.adjacent.capacity() > 1 << 17 || scratch.subsets.len() > 1 << 14 || scratch.mark.capacity() > 1 << 17
        {
            *scratch = Scratch::default();
        }
        r
    })
}

fn remove_epsilons_with(nfa: &Nfa, scratch: &mut Scratch) -> Result<FlatFsm, Interrupted> {
    let n = nfa.state_len();
    let Scratch { offsets, adjacent, mark, closure, new_id, queue, .. } = scratch;
    nfa.by_source(offsets, adjacent)?;
    // The compile's byte budget (`util::cancel`): the bucketed copy of the edges now, the
    // output as it grows (closures can copy an edge to many states).
    let edge_size = std::mem::size_of::<(Label, u32)>();
    cancel::charge_bytes(adjacent.len() * edge_size + offsets.len() * 4, "epsilon removal")?;
    let mut charged = 0;
    let edges = |s: u32| &adjacent[offsets[s as usize] as usize..offsets[s as usize + 1] as usize];
    // Only the start and the targets of non-epsilon edges become states, so only their epsilon
    // closures are computed, each when the state is first dequeued.
    mark.clear();
    mark.resize(n, u32::MAX);
    closure.clear();
    let mut out = FlatFsm::with_capacity(n, adjacent.len());
    new_id.clear();
    new_id.resize(n, u32::MAX);
    queue.clear();
    queue.push(nfa.start);
    new_id[nfa.start as usize] = out.add_state(false);
    out.start = 0;
    let mut qi = 0;
    while qi < queue.len() {
        cancel::check_at(qi, "epsilon removal")?;
        if qi % cancel::POLL_EVERY == 0 {
            cancel::charge_bytes((out.edge_len() - charged) * edge_size, "epsilon removal")?;
            charged = out.edge_len();
        }
        let s = queue[qi];
        qi += 1;
        closure.clear();
        closure.push(s);
        mark[s as usize] = s;
        let mut i = 0;
        while i < closure.len() {
            let x = closure[i];
            i += 1;
            for &(l, t) in edges(x) {
                if l == Label::Epsilon && mark[t as usize] != s {
                    mark[t as usize] = s;
                    closure.push(t);
                }
            }
        }
        // States are dequeued in id order, so `s`'s edges are the next ones written.
        let mut is_final = false;
        for &c in closure.iter() {
            is_final |= nfa.finals[c as usize];
            for &(l, t) in edges(c) {
                if l != Label::Epsilon {
                    if new_id[t as usize] == u32::MAX {
                        new_id[t as usize] = out.add_state(false);
                        queue.push(t);
                    }
                    out.push_edge(l, new_id[t as usize]);
                }
            }
        }
        out.finals[new_id[s as usize] as usize] = is_final;
        out.sort_open_edges();
        out.end_state();
    }
    cancel::charge_bytes((out.edge_len() - charged) * edge_size, "epsilon removal")?;
    Ok(out)
}

/// Subset construction on an epsilon-free automaton, or `Err` with the automaton unchanged
/// when the result would exceed `max_states` states, or when the work (NFA edges read over all
/// subsets) would exceed `max_work`: subsets of hundreds of NFA states (unanchored patterns with
/// many alternatives) cost ~50 µs per DFA state, and such automata usually blow up anyway;
/// giving up early keeps compile time bounded. An automaton that is already deterministic is
/// returned as it is. It also gives up (`Err`, the automaton unchanged) once the compile's
/// watch trips: the caller's check reports the interruption.
pub(crate) fn determinize(fsm: FlatFsm, max_states: usize, max_work: usize) -> Result<FlatFsm, FlatFsm> {
    if is_deterministic(&fsm) {
        return Ok(fsm);
    }
    with_scratch(|scratch| determinize_with(fsm, None, max_states, max_work, scratch))
}

/// [`determinize`], dropping from every subset the states another member simulates (`sim`,
/// the simulation preorder of `fsm`): each subset accepts the same words with fewer states, so
/// subsets that differed only in such states become one.
pub(crate) fn determinize_pruned(
    fsm: FlatFsm,
    sim: &Simulation,
    max_states: usize,
    max_work: usize,
) -> Result<FlatFsm, FlatFsm> {
    with_scratch(|scratch| determinize_with(fsm, Some(sim), max_states, max_work, scratch))
}

fn determinize_with(
    fsm: FlatFsm,
    prune: Option<&Simulation>,
    max_states: usize,
    max_work: usize,
    scratch: &mut Scratch,
) -> Result<FlatFsm, FlatFsm> {
    let mut out = FlatFsm::with_capacity(fsm.state_len(), fsm.edge_len());
    let Scratch { subsets, subset, points, byte_edges, rule_edges, group, interval_targets, .. } = scratch;
    subsets.clear();
    subsets.intern(&[fsm.start]);
    out.add_state(false);
    out.start = 0;
    let mut work = 0usize;
    let mut me = 0u32;
    while (me as usize) < subsets.len() {
        if cancel::check_at(me as usize, "subset construction").is_err() {
            return Err(fsm);
        }
        subset.clear();
        subset.extend_from_slice(subsets.get(me));
        out.finals[me as usize] = subset.iter().any(|&s| fsm.finals[s as usize]);
        // Byte edges: split into elementary intervals.
        points.clear();
        byte_edges.clear();
        rule_edges.clear();
        for &s in subset.iter() {
            let edges = fsm.edges(s);
            work += edges.len();
            for &(l, t) in edges {
                match l {
                    Label::Bytes(lo, hi) => {
                        points.push(lo as u16);
                        points.push(hi as u16 + 1);
                        byte_edges.push((lo, hi, t));
                    }
                    Label::Rule(r) => rule_edges.push((r, t)),
                    Label::Epsilon => unreachable!("determinize runs on epsilon-free automata"),
                }
            }
        }
        points.sort_unstable();
        points.dedup();
        // Targets per elementary interval `points[k]..points[k + 1]`: each edge adds its target
        // to the intervals it covers (a sweep, instead of testing every edge per interval).
        let intervals = points.len().saturating_sub(1);
        for v in interval_targets.iter_mut().take(intervals) {
            v.clear();
        }
        if interval_targets.len() < intervals {
            interval_targets.resize_with(intervals, Vec::new);
        }
        for &(lo, hi, t) in byte_edges.iter() {
            let first = points.partition_point(|&p| p < lo as u16);
            let last = points.partition_point(|&p| p <= hi as u16);
            for v in &mut interval_targets[first..last] {
                v.push(t);
            }
        }
        for (k, w) in points.windows(2).enumerate() {
            let (a, b) = (w[0], w[1] - 1);
            let targets = &mut interval_targets[k];
            if targets.is_empty() {
                continue;
            }
            targets.sort_unstable();
            targets.dedup();
            if let Some(sim) = prune {
                sim.prune(targets);
            }
            let t = intern(subsets, &mut out, targets);
            // Merge with the previous edge when contiguous and same target.
            if let Some((Label::Bytes(_, phi), pt)) = out.open_edges().last_mut() {
                if *pt == t && *phi as u16 + 1 == a {
                    *phi = b as u8;
                    continue;
                }
            }
            out.push_edge(Label::Bytes(a as u8, b as u8), t);
        }
        rule_edges.sort_unstable();
        for run in rule_edges.chunk_by(|x, y| x.0 == y.0) {
            group.clear();
            group.extend(run.iter().map(|&(_, t)| t));
            group.dedup();
            if let Some(sim) = prune {
                sim.prune(group);
            }
            let t = intern(subsets, &mut out, group);
            out.push_edge(Label::Rule(run[0].0), t);
        }
        out.end_state();
        me += 1;
        if out.state_len() > max_states || work > max_work {
            return Err(fsm);
        }
    }
    Ok(out)
}

/// The DFA state of the subset `set`, declared when new.
fn intern(subsets: &mut SliceInterner<u32>, out: &mut FlatFsm, set: &[u32]) -> u32 {
    let (id, new) = subsets.intern(set);
    if new {
        out.add_state(false);
    }
    id
}

/// Whether every state has disjoint byte edges and at most one edge per rule (edges sorted as
/// the passes leave them: byte labels first, by `lo`, then rules), and no epsilon edge.
pub(crate) fn is_deterministic(fsm: &FlatFsm) -> bool {
    (0..fsm.state_len() as u32).all(|s| {
        let mut last_hi: i32 = -1;
        let mut last_rule: i64 = -1;
        fsm.edges(s).iter().all(|&(l, _)| match l {
            Label::Bytes(lo, hi) => {
                let ok = lo as i32 > last_hi;
                last_hi = hi as i32;
                ok
            }
            Label::Rule(r) => {
                let ok = r as i64 > last_rule;
                last_rule = r as i64;
                ok
            }
            Label::Epsilon => false,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::minimize::moore_block_count;
    use crate::fsm::Fsm;
    use proptest::prelude::*;

    /// A random automaton over bytes `a..=c` (as single bytes and ranges) and two rule
    /// symbols, with epsilon edges.
    fn automaton() -> impl Strategy<Value = Fsm> {
        (2usize..9).prop_flat_map(|n| {
            let label = prop_oneof![
                (b'a'..=b'c').prop_map(|b| Label::Bytes(b, b)),
                Just(Label::Bytes(b'a', b'b')),
                Just(Label::Bytes(b'b', b'c')),
                (0u32..2).prop_map(Label::Rule),
                Just(Label::Epsilon),
            ];
            (
                prop::collection::vec(prop::collection::vec((label, 0..n as u32), 0..4), n),
                prop::collection::vec(any::<bool>(), n),
            )
                .prop_map(|(edges, finals)| Fsm { edges, finals, start: 0 })
        })
    }

    /// The same automaton as Thompson construction's representation.
    fn nfa_of(fsm: &Fsm) -> Nfa {
        let mut nfa = Nfa::default();
        nfa.start = fsm.start;
        nfa.finals = fsm.finals.clone();
        for (s, edges) in fsm.edges.iter().enumerate() {
            nfa.edges.extend(edges.iter().map(|&(l, t)| (s as u32, l, t)));
        }
        nfa
    }

    /// Whether `fsm` accepts `word` (symbols: bytes, or `Label::Rule`), by NFA simulation.
    fn accepts(fsm: &Fsm, word: &[Label]) -> bool {
        let closure = |set: Vec<u32>| {
            let mut out = set;
            let mut i = 0;
            while i < out.len() {
                for &(l, t) in &fsm.edges[out[i] as usize] {
                    if l == Label::Epsilon && !out.contains(&t) {
                        out.push(t);
                    }
                }
                i += 1;
            }
            out
        };
        let mut cur = closure(vec![fsm.start]);
        for sym in word {
            let mut next = Vec::new();
            for &s in &cur {
                for &(l, t) in &fsm.edges[s as usize] {
                    let hit = match (l, sym) {
                        (Label::Bytes(lo, hi), Label::Bytes(b, _)) => lo <= *b && *b <= hi,
                        (Label::Rule(r), Label::Rule(x)) => r == *x,
                        _ => false,
                    };
                    if hit && !next.contains(&t) {
                        next.push(t);
                    }
                }
            }
            cur = closure(next);
        }
        cur.iter().any(|&s| fsm.finals[s as usize])
    }

    fn words(max_len: usize) -> Vec<Vec<Label>> {
        crate::fsm::all_words(
            &[
                Label::Bytes(b'a', b'a'),
                Label::Bytes(b'b', b'b'),
                Label::Bytes(b'c', b'c'),
                Label::Rule(0),
                Label::Rule(1),
            ],
            max_len,
        )
    }

    /// A DFA over bytes `a..=c` and rule 0: `k` classes, each blown up into `copies` states
    /// whose edges go to random copies of the class's targets (a byte range is split where
    /// neighbouring bytes reach different copies), restricted to reachable states. Copies of a
    /// class are equivalent, so minimization has much to merge, across split ranges too.
    fn copied_dfa() -> impl Strategy<Value = (FlatFsm, usize)> {
        (1usize..8, 1usize..6).prop_flat_map(|(k, copies)| {
            let n = k * copies;
            (
                prop::collection::vec(prop::collection::vec(prop::option::of(0..k as u32), 4), k),
                prop::collection::vec(any::<bool>(), k),
                prop::collection::vec(0..copies as u32, n * 4),
            )
                .prop_map(move |(rows, finals, choice)| {
                    let copies = copies as u32;
                    let mut fsm = Fsm::default();
                    for s in 0..n as u32 {
                        let class = (s / copies) as usize;
                        fsm.add_state();
                        fsm.finals[s as usize] = finals[class];
                        for (x, target) in rows[class].iter().enumerate() {
                            let Some(tc) = target else { continue };
                            let t = tc * copies + choice[s as usize * 4 + x];
                            if x == 3 {
                                fsm.add_edge(s, Label::Rule(0), t);
                                continue;
                            }
                            let b = b'a' + x as u8;
                            match fsm.edges[s as usize].last_mut() {
                                Some((Label::Bytes(_, hi), pt)) if *pt == t && *hi + 1 == b => *hi = b,
                                _ => fsm.add_edge(s, Label::Bytes(b, b), t),
                            }
                        }
                    }
                    (remove_epsilons(&nfa_of(&fsm)).unwrap(), k)
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// Every step keeps the language: epsilon removal, merging equal suffixes, subset
        /// construction (with the sweep over elementary intervals), minimization, and the
        /// whole pipeline.
        #[test]
        fn steps_keep_the_language(fsm in automaton()) {
            let plain = remove_epsilons(&nfa_of(&fsm)).unwrap();
            let merged = merge_equal_suffixes(plain.clone());
            prop_assert!(merged.state_len() <= plain.state_len());
            let dfa = determinize(merged.clone(), 10_000, usize::MAX).expect("small automata determinize");
            prop_assert!(is_deterministic(&dfa));
            let min = minimize(dfa.clone());
            // Merging suffixes before minimizing (as the pipeline once did) changes nothing.
            prop_assert_eq!(minimize(merge_equal_suffixes(dfa.clone())).state_len(), min.state_len());
            let optimized = optimize(&nfa_of(&fsm), 10_000, usize::MAX, false).unwrap();
            prop_assert_eq!(optimized.state_len(), min.state_len());
            let (plain, merged, dfa, min, optimized) =
                (plain.to_fsm(), merged.to_fsm(), dfa.to_fsm(), min.to_fsm(), optimized.to_fsm());
            for w in words(4) {
                let want = accepts(&fsm, &w);
                prop_assert_eq!(accepts(&plain, &w), want, "epsilon removal, {:?}", w);
                prop_assert_eq!(accepts(&merged, &w), want, "merged NFA, {:?}", w);
                prop_assert_eq!(accepts(&dfa, &w), want, "DFA, {:?}", w);
                prop_assert_eq!(accepts(&min, &w), want, "minimal DFA, {:?}", w);
                prop_assert_eq!(accepts(&optimized, &w), want, "pipeline, {:?}", w);
            }
        }

        /// Every pair of the simulation preorder is an inclusion of languages, and subset
        /// construction pruned by it keeps the language and, minimized, gives the minimal DFA.
        #[test]
        fn pruned_subsets_keep_the_language(fsm in automaton()) {
            let nfa = merge_equal_suffixes(remove_epsilons(&nfa_of(&fsm)).unwrap());
            let sim = Simulation::of(&nfa, usize::MAX).expect("small automata");
            let flat = nfa.to_fsm();
            let short = words(3);
            for p in 0..nfa.state_len() as u32 {
                for q in 0..nfa.state_len() as u32 {
                    if !sim.simulates(p, q) {
                        continue;
                    }
                    let (from_p, from_q) = (Fsm { start: p, ..flat.clone() }, Fsm { start: q, ..flat.clone() });
                    for w in &short {
                        prop_assert!(!accepts(&from_q, w) || accepts(&from_p, w), "{} simulates {}: {:?}", p, q, w);
                    }
                }
            }
            let pruned = determinize_pruned(nfa.clone(), &sim, 10_000, usize::MAX).expect("small automata");
            prop_assert!(is_deterministic(&pruned));
            let plain = determinize(nfa, 10_000, usize::MAX).expect("small automata");
            prop_assert_eq!(minimize(pruned.clone()).state_len(), minimize(plain).state_len());
            let pruned = pruned.to_fsm();
            for w in words(4) {
                prop_assert_eq!(accepts(&pruned, &w), accepts(&fsm, &w), "{:?}", w);
            }
        }

        /// Minimization keeps the language and finds as few states as Moore's refinement (the
        /// reference), on subset-constructed DFAs and on DFAs made of copies of equivalent
        /// states (at most one state per class remains, which also checks that byte ranges
        /// split across copies are joined); minimizing again merges nothing.
        #[test]
        fn minimize_matches_moore(nfa in automaton(), (copied, classes) in copied_dfa()) {
            let dfa = determinize(remove_epsilons(&nfa_of(&nfa)).unwrap(), 10_000, usize::MAX).expect("small automata determinize");
            prop_assert!(minimize(copied.clone()).state_len() <= classes);
            for dfa in [dfa, copied] {
                let min = minimize(dfa.clone());
                prop_assert_eq!(min.state_len(), moore_block_count(&dfa));
                prop_assert!(is_deterministic(&min));
                prop_assert_eq!(minimize(min.clone()).state_len(), min.state_len());
                let (dfa, min) = (dfa.to_fsm(), min.to_fsm());
                for w in words(4) {
                    prop_assert_eq!(accepts(&min, &w), accepts(&dfa, &w), "{:?}", w);
                }
            }
        }
    }

    /// A choice of many names (a large enum) whose NFA has more states than the DFA limit is
    /// still determinized: its DFA, a trie with shared suffixes, is smaller than the NFA. With
    /// a limit below both, the NFA is kept.
    #[test]
    fn a_large_enum_is_determinized_past_the_state_limit() {
        let mut nfa = Nfa::default();
        let start = nfa.add_state();
        nfa.start = start;
        let end = nfa.add_state();
        nfa.finals[end as usize] = true;
        // Pseudo-random names, so that few prefixes or suffixes are shared.
        let mut seed = 0x2545_f491_u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        let names: Vec<String> =
            (0..300).map(|_| (0..6 + next(5)).map(|_| (b'a' + next(26) as u8) as char).collect()).collect();
        for name in &names {
            let mut at = start;
            for &b in name.as_bytes() {
                let next = nfa.add_state();
                nfa.add_edge(at, Label::Bytes(b, b), next);
                at = next;
            }
            nfa.add_edge(at, Label::Epsilon, end);
        }
        let merged = merge_equal_suffixes(remove_epsilons(&nfa).unwrap());
        let limit = 100;
        let dfa = optimize(&nfa, limit, 0, false).unwrap();
        assert!(is_deterministic(&dfa), "{} NFA states", merged.state_len());
        // The trie has more states than the limit: without the NFA's own size as the limit,
        // subset construction would give up.
        assert!(determinize(merged.clone(), limit, usize::MAX).is_err());
        assert!(dfa.state_len() <= merged.state_len());
        let fsm = dfa.to_fsm();
        let word = |s: &str| s.bytes().map(|b| Label::Bytes(b, b)).collect::<Vec<_>>();
        for name in &names {
            assert!(accepts(&fsm, &word(name)), "{name}");
            assert!(!accepts(&fsm, &word(&name[..name.len() - 1])), "{name}");
        }
        assert!(!accepts(&fsm, &word("zzzzzzzzzzzz")));
        // Subset construction reads ~2 edges per name prefix: a work budget below that keeps
        // the NFA, whatever the state limit.
        assert!(!is_deterministic(&determinize(merged, usize::MAX, 10).unwrap_err()));
    }
}
