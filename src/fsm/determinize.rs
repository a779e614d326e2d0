//! Epsilon removal and subset construction for rule automata.
//!
//! Rule references are treated as ordinary symbols (one symbol per referenced rule), so the
//! determinized automaton has at most one target per byte and per rule. Subset construction can
//! blow up; it is abandoned past a state budget and the epsilon-free NFA is kept (the Earley
//! parser handles nondeterminism, only less efficiently).

use super::{Fsm, Label};
use crate::util::hash::FastMap;

/// Returns an equivalent automaton without epsilon edges, restricted to reachable states,
/// with edges sorted and duplicates removed.
pub(crate) fn remove_epsilons(fsm: &Fsm) -> Fsm {
    let n = fsm.state_len();
    // Only the start and the targets of non-epsilon edges become states, so only their epsilon
    // closures are computed, each when the state is first dequeued.
    let mut mark = vec![u32::MAX; n];
    let mut closure: Vec<u32> = Vec::new();
    let mut edges: Vec<(Label, u32)> = Vec::new();
    let mut out = Fsm::default();
    let mut new_id = vec![u32::MAX; n];
    let mut queue = vec![fsm.start];
    new_id[fsm.start as usize] = out.add_state();
    out.start = 0;
    let mut qi = 0;
    while qi < queue.len() {
        let s = queue[qi];
        qi += 1;
        closure.clear();
        closure.push(s);
        mark[s as usize] = s;
        let mut i = 0;
        while i < closure.len() {
            let x = closure[i];
            i += 1;
            for &(l, t) in &fsm.edges[x as usize] {
                if l == Label::Epsilon && mark[t as usize] != s {
                    mark[t as usize] = s;
                    closure.push(t);
                }
            }
        }
        let ns = new_id[s as usize];
        edges.clear();
        let mut is_final = false;
        for &c in &closure {
            is_final |= fsm.finals[c as usize];
            for &(l, t) in &fsm.edges[c as usize] {
                if l != Label::Epsilon {
                    edges.push((l, t));
                }
            }
        }
        let mut mapped = Vec::with_capacity(edges.len());
        for &(l, t) in &edges {
            if new_id[t as usize] == u32::MAX {
                new_id[t as usize] = out.add_state();
                queue.push(t);
            }
            mapped.push((l, new_id[t as usize]));
        }
        mapped.sort_unstable();
        mapped.dedup();
        out.edges[ns as usize] = mapped;
        out.finals[ns as usize] = is_final;
    }
    out
}

/// Subset construction on an epsilon-free automaton. Returns `None` when the result would
/// exceed `max_states` states, or when the work (NFA edges read over all subsets) would exceed
/// `max_work`: subsets of hundreds of NFA states (unanchored patterns with many alternatives)
/// cost ~50 µs per DFA state, and such automata usually blow up anyway; giving up early keeps
/// compile time bounded.
pub(crate) fn determinize(fsm: &Fsm, max_states: usize, max_work: usize) -> Option<Fsm> {
    if is_deterministic(fsm) {
        return Some(fsm.clone());
    }
    let mut out = Fsm::default();
    let mut ids: FastMap<Vec<u32>, u32> = FastMap::default();
    let mut subsets: Vec<Vec<u32>> = vec![vec![fsm.start]];
    ids.insert(vec![fsm.start], out.add_state());
    out.start = 0;
    let mut interval_targets: Vec<Vec<u32>> = Vec::new();
    let mut work = 0usize;
    let mut i = 0;
    while i < subsets.len() {
        let subset = subsets[i].clone();
        let me = i as u32;
        i += 1;
        out.finals[me as usize] = subset.iter().any(|&s| fsm.finals[s as usize]);
        // Byte edges: split into elementary intervals.
        let mut points: Vec<u16> = Vec::new();
        let mut rule_targets: FastMap<u32, Vec<u32>> = FastMap::default();
        let mut byte_edges: Vec<(u8, u8, u32)> = Vec::new();
        for &s in &subset {
            for &(l, t) in &fsm.edges[s as usize] {
                match l {
                    Label::Bytes(lo, hi) => {
                        points.push(lo as u16);
                        points.push(hi as u16 + 1);
                        byte_edges.push((lo, hi, t));
                    }
                    Label::Rule(r) => rule_targets.entry(r).or_default().push(t),
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
        for &(lo, hi, t) in &byte_edges {
            let first = points.partition_point(|&p| p < lo as u16);
            let last = points.partition_point(|&p| p <= hi as u16);
            for v in &mut interval_targets[first..last] {
                v.push(t);
            }
        }
        let mut new_edges: Vec<(Label, u32)> = Vec::new();
        for (k, w) in points.windows(2).enumerate() {
            let (a, b) = (w[0], w[1] - 1);
            let targets = &mut interval_targets[k];
            if targets.is_empty() {
                continue;
            }
            targets.sort_unstable();
            targets.dedup();
            let t = intern(&mut ids, &mut subsets, &mut out, targets.clone());
            // Merge with the previous edge when contiguous and same target.
            if let Some((Label::Bytes(_, phi), pt)) = new_edges.last_mut() {
                if *pt == t && *phi as u16 + 1 == a {
                    *phi = b as u8;
                    continue;
                }
            }
            new_edges.push((Label::Bytes(a as u8, b as u8), t));
        }
        let mut rules: Vec<_> = rule_targets.into_iter().collect();
        rules.sort_unstable_by_key(|(r, _)| *r);
        for (r, mut targets) in rules {
            targets.sort_unstable();
            targets.dedup();
            let t = intern(&mut ids, &mut subsets, &mut out, targets);
            new_edges.push((Label::Rule(r), t));
        }
        out.edges[me as usize] = new_edges;
        work += subset.iter().map(|&x| fsm.edges[x as usize].len()).sum::<usize>();
        if out.state_len() > max_states || work > max_work {
            return None;
        }
    }
    Some(out)
}

fn intern(ids: &mut FastMap<Vec<u32>, u32>, subsets: &mut Vec<Vec<u32>>, out: &mut Fsm, set: Vec<u32>) -> u32 {
    if let Some(&id) = ids.get(&set) {
        return id;
    }
    let id = out.add_state();
    ids.insert(set.clone(), id);
    subsets.push(set);
    id
}

fn is_deterministic(fsm: &Fsm) -> bool {
    fsm.edges.iter().all(|edges| {
        let mut last_hi: i32 = -1;
        let mut last_rule: i64 = -1;
        // Edges are sorted: byte labels first (by lo), then rules.
        edges.iter().all(|&(l, _)| match l {
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

/// Merges equivalent states of a deterministic, epsilon-free automaton (Moore's partition
/// refinement). Equivalent states would otherwise get separate, identical mask-cache entries.
pub(crate) fn minimize(fsm: &Fsm) -> Fsm {
    let n = fsm.state_len();
    let mut class: Vec<u32> = fsm.finals.iter().map(|&f| f as u32).collect();
    let mut n_classes = {
        let mut c = class.clone();
        c.sort_unstable();
        c.dedup();
        c.len()
    };
    loop {
        let mut ids: FastMap<(u32, Vec<(Label, u32)>), u32> = FastMap::default();
        let mut next = Vec::with_capacity(n);
        for s in 0..n {
            let sig: Vec<(Label, u32)> = fsm.edges[s].iter().map(|&(l, t)| (l, class[t as usize])).collect();
            let len = ids.len() as u32;
            next.push(*ids.entry((class[s], sig)).or_insert(len));
        }
        let count = ids.len();
        class = next;
        if count == n_classes {
            break;
        }
        n_classes = count;
    }
    if n_classes == n {
        return fsm.clone();
    }
    let mut out = Fsm::default();
    for _ in 0..n_classes {
        out.add_state();
    }
    let mut done = vec![false; n_classes];
    for s in 0..n {
        let c = class[s] as usize;
        if done[c] {
            continue;
        }
        done[c] = true;
        out.finals[c] = fsm.finals[s];
        let mut edges: Vec<(Label, u32)> = Vec::new();
        for &(l, t) in &fsm.edges[s] {
            let t = class[t as usize];
            if let (Label::Bytes(lo, hi), Some((Label::Bytes(_, phi), pt))) = (l, edges.last_mut()) {
                if *pt == t && *phi as u16 + 1 == lo as u16 {
                    *phi = hi;
                    continue;
                }
            }
            edges.push((l, t));
        }
        out.edges[c] = edges;
    }
    out.start = class[fsm.start as usize];
    out
}

/// Merges states that have the same finality and the same outgoing edges once their targets
/// are merged (Revuz's register, in DFS post-order). Such states accept the same language in
/// any automaton, deterministic or not, so this is sound before subset construction as well as
/// before [`minimize`]; on acyclic parts it is already minimal. It is linear, and it removes
/// most of the copies inlining makes (every inlined string is a copy of the same few states
/// that ends in the same place), so the quadratic steps after it run on far fewer states.
pub(crate) fn merge_equal_suffixes(fsm: &Fsm) -> Fsm {
    let n = fsm.state_len();
    const UNSEEN: u32 = u32::MAX;
    // rep[s]: the representative of s once s is finished; s itself before.
    let mut rep: Vec<u32> = (0..n as u32).collect();
    let mut state = vec![0u8; n]; // 0 unseen, 1 on the stack, 2 finished
    let mut register: FastMap<(bool, Vec<(Label, u32)>), u32> = FastMap::default();
    let mut stack: Vec<(u32, usize)> = vec![(fsm.start, 0)];
    state[fsm.start as usize] = 1;
    let mut order: Vec<u32> = Vec::with_capacity(n);
    while let Some(&mut (s, ref mut pos)) = stack.last_mut() {
        let edges = &fsm.edges[s as usize];
        if *pos < edges.len() {
            let t = edges[*pos].1;
            *pos += 1;
            if state[t as usize] == 0 {
                state[t as usize] = 1;
                stack.push((t, 0));
            }
            continue;
        }
        stack.pop();
        state[s as usize] = 2;
        let mut sig: Vec<(Label, u32)> = edges.iter().map(|&(l, t)| (l, rep[t as usize])).collect();
        sig.sort_unstable();
        sig.dedup();
        let r = *register.entry((fsm.finals[s as usize], sig)).or_insert(s);
        rep[s as usize] = r;
        if r == s {
            order.push(s);
        }
    }
    if order.len() == n {
        return fsm.clone();
    }
    let mut new_id = vec![UNSEEN; n];
    let mut out = Fsm::default();
    // Number the representatives from the start, in BFS order, for a stable layout.
    let start = rep[fsm.start as usize];
    new_id[start as usize] = out.add_state();
    out.start = 0;
    let mut queue = vec![start];
    let mut qi = 0;
    while qi < queue.len() {
        let s = queue[qi];
        qi += 1;
        let mut edges: Vec<(Label, u32)> = Vec::with_capacity(fsm.edges[s as usize].len());
        for &(l, t) in &fsm.edges[s as usize] {
            let t = rep[t as usize];
            if new_id[t as usize] == UNSEEN {
                new_id[t as usize] = out.add_state();
                queue.push(t);
            }
            edges.push((l, new_id[t as usize]));
        }
        edges.sort_unstable();
        edges.dedup();
        let me = new_id[s as usize] as usize;
        out.edges[me] = edges;
        out.finals[me] = fsm.finals[s as usize];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let symbols = [
            Label::Bytes(b'a', b'a'),
            Label::Bytes(b'b', b'b'),
            Label::Bytes(b'c', b'c'),
            Label::Rule(0),
            Label::Rule(1),
        ];
        let mut all = vec![Vec::new()];
        let mut layer = vec![Vec::new()];
        for _ in 0..max_len {
            layer = layer
                .iter()
                .flat_map(|w: &Vec<Label>| {
                    symbols.iter().map(move |&s| {
                        let mut v = w.clone();
                        v.push(s);
                        v
                    })
                })
                .collect();
            all.extend(layer.iter().cloned());
        }
        all
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// Every step keeps the language: epsilon removal, merging equal suffixes (on the NFA
        /// and on the DFA), subset construction (with the sweep over elementary intervals)
        /// and minimization.
        #[test]
        fn steps_keep_the_language(fsm in automaton()) {
            let plain = remove_epsilons(&fsm);
            let merged = merge_equal_suffixes(&plain);
            prop_assert!(merged.state_len() <= plain.state_len());
            let dfa = determinize(&merged, 10_000, usize::MAX).expect("small automata determinize");
            prop_assert!(is_deterministic(&dfa));
            let min = minimize(&merge_equal_suffixes(&dfa));
            for w in words(4) {
                let want = accepts(&fsm, &w);
                prop_assert_eq!(accepts(&plain, &w), want, "epsilon removal, {:?}", w);
                prop_assert_eq!(accepts(&merged, &w), want, "merged NFA, {:?}", w);
                prop_assert_eq!(accepts(&dfa, &w), want, "DFA, {:?}", w);
                prop_assert_eq!(accepts(&min, &w), want, "minimal DFA, {:?}", w);
            }
        }
    }
}
