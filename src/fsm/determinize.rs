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
    // Epsilon closures, computed per state with an explicit stack.
    let mut closure_of: Vec<Vec<u32>> = Vec::with_capacity(n);
    let mut mark = vec![u32::MAX; n];
    for s in 0..n as u32 {
        let mut c = vec![s];
        mark[s as usize] = s;
        let mut i = 0;
        while i < c.len() {
            let x = c[i];
            i += 1;
            for &(l, t) in &fsm.edges[x as usize] {
                if l == Label::Epsilon && mark[t as usize] != s {
                    mark[t as usize] = s;
                    c.push(t);
                }
            }
        }
        closure_of.push(c);
    }
    let mut out = Fsm::default();
    let mut new_id = vec![u32::MAX; n];
    let mut queue = vec![fsm.start];
    new_id[fsm.start as usize] = out.add_state();
    out.start = 0;
    let mut qi = 0;
    while qi < queue.len() {
        let s = queue[qi];
        qi += 1;
        let ns = new_id[s as usize];
        let mut edges = Vec::new();
        let mut is_final = false;
        for &c in &closure_of[s as usize] {
            is_final |= fsm.finals[c as usize];
            for &(l, t) in &fsm.edges[c as usize] {
                if l != Label::Epsilon {
                    edges.push((l, t));
                }
            }
        }
        let mut mapped = Vec::with_capacity(edges.len());
        for (l, t) in edges {
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
/// exceed `max_states` states.
pub(crate) fn determinize(fsm: &Fsm, max_states: usize) -> Option<Fsm> {
    if is_deterministic(fsm) {
        return Some(fsm.clone());
    }
    let mut out = Fsm::default();
    let mut ids: FastMap<Vec<u32>, u32> = FastMap::default();
    let mut subsets: Vec<Vec<u32>> = vec![vec![fsm.start]];
    ids.insert(vec![fsm.start], out.add_state());
    out.start = 0;
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
        let mut new_edges: Vec<(Label, u32)> = Vec::new();
        for w in points.windows(2) {
            let (a, b) = (w[0], w[1] - 1);
            let mut targets: Vec<u32> = byte_edges
                .iter()
                .filter(|&&(lo, hi, _)| lo as u16 <= a && b <= hi as u16)
                .map(|&(_, _, t)| t)
                .collect();
            if targets.is_empty() {
                continue;
            }
            targets.sort_unstable();
            targets.dedup();
            let t = intern(&mut ids, &mut subsets, &mut out, targets);
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
        if out.state_len() > max_states {
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
