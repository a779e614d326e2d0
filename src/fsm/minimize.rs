//! DFA minimization by partition refinement in O(E log n) signature computations.
//!
//! Equivalent states would otherwise get separate, identical mask-cache entries. Moore's
//! refinement recomputes every state's signature each round, and the number of rounds is the
//! length of the longest shortest distinguishing word: 20–160 on real rule automata (long
//! literals, schema keys), which made it the costliest pass of automaton construction.
//!
//! Here a state's **signature** is its outgoing edges with targets replaced by their blocks, and
//! adjacent byte ranges that reach the same block joined (so `[a-b]→X, [c]→Y` and `[a-c]→X` agree
//! once `X` and `Y` share a block). Only states whose signature may have changed are
//! recomputed: when a block splits, the parts that get new block ids have their predecessors
//! *marked*, and a block is split by comparing the signatures of its marked states with that of
//! one unmarked state (all unmarked states of a block share a signature). The largest part keeps
//! the block id, so a state's block id changes only when its block at least halves (Hopcroft's
//! argument): O(log n) changes per state, each marking its predecessors.
//!
//! Blocks are ranges of one permutation of the states (`elems`), with a block's marked states
//! kept at the front of its range, so marking, splitting and enumerating are swaps and slices.

use super::flat::FlatFsm;
use super::Label;
use crate::util::interner::SliceInterner;

/// The minimal DFA equivalent to a deterministic, epsilon-free automaton (states that reach
/// no final state are not merged into missing edges: signatures compare edges as they are).
/// Returns `fsm` itself when no two states are equivalent; otherwise the blocks, numbered in
/// breadth-first order from the start, edges in the order of the states they come from.
pub(crate) fn minimize(fsm: FlatFsm) -> FlatFsm {
    let n = fsm.state_len();
    if n <= 1 {
        return fsm;
    }
    let preds = Predecessors::new(&fsm);
    let mut p = Partition::by_finality(&fsm.finals);
    let mut sigs: SliceInterner<(Label, u32)> = SliceInterner::new();
    let mut sig: Vec<(Label, u32)> = Vec::new();
    // Per marked state of the block being split: (signature id, state); the part keeping the
    // block id gets the key `u32::MAX` so that it sorts last, next to the unmarked states.
    let mut items: Vec<(u32, u32)> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    let mut moved: Vec<u32> = Vec::new();
    while let Some(b) = p.worklist.pop() {
        let (f, e) = (p.first[b as usize] as usize, p.end[b as usize] as usize);
        let m = std::mem::take(&mut p.marked[b as usize]) as usize;
        if e - f == 1 {
            continue;
        }
        sigs.clear();
        let has_unmarked = f + m < e;
        if has_unmarked {
            // Signature id 0: the one all unmarked states share.
            signature(&fsm, &p.block, p.elems[f + m], &mut sig);
            sigs.intern(&sig);
        }
        items.clear();
        for &s in &p.elems[f..f + m] {
            signature(&fsm, &p.block, s, &mut sig);
            items.push((sigs.intern(&sig).0, s));
        }
        if sigs.len() == 1 {
            continue;
        }
        counts.clear();
        counts.resize(sigs.len(), 0);
        for &(id, _) in &items {
            counts[id as usize] += 1;
        }
        if has_unmarked {
            counts[0] += e - f - m;
        }
        let keep = (0..counts.len()).max_by_key(|&i| (counts[i], std::cmp::Reverse(i))).expect("two parts") as u32;
        // Rewrite the marked range only when the unmarked states keep the block id; else the
        // whole block (the unmarked states then move, and are no more than the kept part).
        let region_end = if keep == 0 && has_unmarked {
            f + m
        } else {
            items.extend(p.elems[f + m..e].iter().map(|&s| (0, s)));
            e
        };
        for item in items.iter_mut() {
            if item.0 == keep {
                item.0 = u32::MAX;
            }
        }
        items.sort_unstable();
        moved.clear();
        // The kept part is last in the region (and may have no marked state in it).
        p.first[b as usize] = region_end as u32;
        let mut at = f;
        for run in items.chunk_by(|x, y| x.0 == y.0) {
            let new_block = if run[0].0 == u32::MAX {
                p.first[b as usize] = at as u32;
                b
            } else {
                p.first.push(at as u32);
                p.end.push((at + run.len()) as u32);
                p.marked.push(0);
                (p.first.len() - 1) as u32
            };
            for &(_, s) in run {
                p.elems[at] = s;
                p.pos[s as usize] = at as u32;
                if new_block != b {
                    p.block[s as usize] = new_block;
                    moved.push(s);
                }
                at += 1;
            }
        }
        debug_assert_eq!(at, region_end);
        for &s in &moved {
            for &q in preds.of(s) {
                p.mark(q);
            }
        }
    }
    let blocks = p.first.len();
    if blocks == n {
        return fsm;
    }
    // One representative per block, blocks numbered breadth-first from the start's.
    const UNSEEN: u32 = u32::MAX;
    let mut new_id = vec![UNSEEN; blocks];
    let mut out = FlatFsm::with_capacity(blocks, fsm.edge_len());
    let start_block = p.block[fsm.start as usize];
    new_id[start_block as usize] = out.add_state(fsm.finals[fsm.start as usize]);
    out.start = 0;
    let mut queue = vec![start_block];
    let mut qi = 0;
    while qi < queue.len() {
        let s = p.elems[p.first[queue[qi] as usize] as usize];
        qi += 1;
        for &(l, t) in fsm.edges(s) {
            let tb = p.block[t as usize];
            if new_id[tb as usize] == UNSEEN {
                new_id[tb as usize] = out.add_state(fsm.finals[t as usize]);
                queue.push(tb);
            }
            let t = new_id[tb as usize];
            if let (Label::Bytes(lo, hi), Some((Label::Bytes(_, phi), pt))) = (l, out.open_edges().last_mut()) {
                if *pt == t && *phi as u16 + 1 == lo as u16 {
                    *phi = hi;
                    continue;
                }
            }
            out.push_edge(l, t);
        }
        out.end_state();
    }
    out
}

/// Writes the signature of `s` into `sig`: its edges (sorted, as the passes leave them) with
/// targets replaced by their blocks, contiguous byte ranges into the same block joined.
fn signature(fsm: &FlatFsm, block: &[u32], s: u32, sig: &mut Vec<(Label, u32)>) {
    sig.clear();
    for &(l, t) in fsm.edges(s) {
        let c = block[t as usize];
        if let (Label::Bytes(lo, hi), Some((Label::Bytes(_, phi), pc))) = (l, sig.last_mut()) {
            if *pc == c && *phi as u16 + 1 == lo as u16 {
                *phi = hi;
                continue;
            }
        }
        sig.push((l, c));
    }
}

/// The reverse edges, as one flat array (a state appears once per edge into the target).
struct Predecessors {
    offsets: Vec<u32>,
    sources: Vec<u32>,
}

impl Predecessors {
    fn new(fsm: &FlatFsm) -> Self {
        let n = fsm.state_len();
        let mut offsets = vec![0u32; n + 1];
        for s in 0..n as u32 {
            for &(_, t) in fsm.edges(s) {
                offsets[t as usize + 1] += 1;
            }
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut sources = vec![0u32; fsm.edge_len()];
        for s in 0..n as u32 {
            for &(_, t) in fsm.edges(s) {
                sources[fill[t as usize] as usize] = s;
                fill[t as usize] += 1;
            }
        }
        Predecessors { offsets, sources }
    }

    #[inline]
    fn of(&self, s: u32) -> &[u32] {
        &self.sources[self.offsets[s as usize] as usize..self.offsets[s as usize + 1] as usize]
    }
}

/// Blocks of states as ranges `first[b]..end[b]` of the permutation `elems`, the first
/// `marked[b]` of them marked; blocks with marked states are on `worklist` (once each).
struct Partition {
    elems: Vec<u32>,
    pos: Vec<u32>,
    block: Vec<u32>,
    first: Vec<u32>,
    end: Vec<u32>,
    marked: Vec<u32>,
    worklist: Vec<u32>,
}

impl Partition {
    /// Non-final states, then final ones (one block when all agree), every state marked.
    fn by_finality(finals: &[bool]) -> Self {
        let n = finals.len();
        let mut elems: Vec<u32> = (0..n as u32).filter(|&s| !finals[s as usize]).collect();
        let non_final = elems.len();
        elems.extend((0..n as u32).filter(|&s| finals[s as usize]));
        let mut pos = vec![0u32; n];
        for (i, &s) in elems.iter().enumerate() {
            pos[s as usize] = i as u32;
        }
        let mut p = Partition {
            elems,
            pos,
            block: vec![0; n],
            first: Vec::new(),
            end: Vec::new(),
            marked: Vec::new(),
            worklist: Vec::new(),
        };
        for (lo, hi) in [(0, non_final), (non_final, n)] {
            if lo < hi {
                let b = p.first.len() as u32;
                p.first.push(lo as u32);
                p.end.push(hi as u32);
                p.marked.push((hi - lo) as u32);
                p.worklist.push(b);
                for i in lo..hi {
                    p.block[p.elems[i] as usize] = b;
                }
            }
        }
        p
    }

    /// Marks `s` (its signature may have changed), scheduling its block.
    #[inline]
    fn mark(&mut self, s: u32) {
        let b = self.block[s as usize] as usize;
        let m = self.first[b] + self.marked[b];
        let at = self.pos[s as usize];
        if at < m {
            return;
        }
        let other = self.elems[m as usize];
        self.elems.swap(at as usize, m as usize);
        self.pos[other as usize] = at;
        self.pos[s as usize] = m;
        self.marked[b] += 1;
        if self.marked[b] == 1 {
            self.worklist.push(b as u32);
        }
    }
}

/// Moore's refinement (every signature recomputed every round, until the number of blocks
/// stops growing), with the same signatures as [`minimize`]: the reference its state counts are
/// checked against.
#[cfg(test)]
pub(crate) fn moore_block_count(fsm: &FlatFsm) -> usize {
    let n = fsm.state_len();
    let mut block: Vec<u32> = fsm.finals.iter().map(|&f| f as u32).collect();
    let mut count = fsm.finals.iter().collect::<std::collections::HashSet<_>>().len();
    let mut sig = Vec::new();
    loop {
        let mut ids: std::collections::HashMap<(u32, Vec<(Label, u32)>), u32> = Default::default();
        let mut next = Vec::with_capacity(n);
        for s in 0..n as u32 {
            signature(fsm, &block, s, &mut sig);
            let len = ids.len() as u32;
            next.push(*ids.entry((block[s as usize], sig.clone())).or_insert(len));
        }
        block = next;
        if ids.len() == count {
            return count;
        }
        count = ids.len();
    }
}
