//! DFA minimization by partition refinement in O(E log n) signature computations.
//!
//! Equivalent states would otherwise get separate, identical mask-cache entries. Moore's
//! refinement recomputes every state's signature each round, and the number of rounds is the
//! length of the longest shortest distinguishing word: up to 161 on real rule automata (~45 on
//! average on large MaskBench schemas: long literals, schema keys), which made it the costliest
//! pass of automaton construction.
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
use crate::util::cancel;
use crate::util::interner::SliceInterner;
use std::cell::RefCell;

/// The minimal DFA equivalent to a deterministic, epsilon-free automaton (states that reach
/// no final state are not merged into missing edges: signatures compare edges as they are).
/// Returns `fsm` itself when no two states are equivalent; otherwise the blocks, numbered in
/// breadth-first order from the start, edges in the order of the states they come from. Also
/// returns `fsm` itself once the compile's watch trips (`util::cancel`; the caller reports it).
pub(crate) fn minimize(fsm: FlatFsm) -> FlatFsm {
    if fsm.state_len() <= 1 {
        return fsm;
    }
    SCRATCH.with_borrow_mut(|scratch| {
        let out = minimize_with(fsm, scratch);
        scratch.trim();
        out
    })
}

thread_local! {
    /// Buffers reused by every minimization on this thread: a grammar's rule automata are
    /// minimized by the thousands (most have tens of states), and allocating and freeing ~20
    /// buffers per call was a third of the time minimization took.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The working memory of [`minimize`] (contents are meaningless between calls).
///
/// # Why it is per thread
/// One value lives in a `thread_local!` (`SCRATCH`) rather than being passed down by the
/// caller: minimization runs once per deterministic rule automaton, thousands of times per
/// grammar, on whichever thread compiles (several at once in a server), and an explicit value
/// would have to travel through every construction function for no other use. It holds only
/// buffers that every call clears before use, so results never depend on earlier calls.
/// Bound: [`Scratch::trim`] drops the buffers after a call that grew them past 2^16 partition
/// elements or 2^17 predecessor edges, so a thread keeps at most a few megabytes.
#[derive(Default)]
struct Scratch {
    preds: Predecessors,
    p: Partition,
    sigs: SliceInterner<(Label, u32)>,
    sig: Vec<(Label, u32)>,
    /// Per marked state of the block being split: (signature id, state); the part keeping the
    /// block id gets the key `u32::MAX` so that it sorts last, next to the unmarked states.
    items: Vec<(u32, u32)>,
    counts: Vec<usize>,
    moved: Vec<u32>,
    new_id: Vec<u32>,
    queue: Vec<u32>,
}

impl Scratch {
    /// Drops buffers grown by an unusually large automaton, so that a thread does not keep
    /// megabytes for the rest of its life.
    fn trim(&mut self) {
        if self.p.elems.capacity() > 1 << 16 || self.preds.sources.capacity() > 1 << 17 {
            *self = Scratch::default();
        }
    }
}

fn minimize_with(fsm: FlatFsm, scratch: &mut Scratch) -> FlatFsm {
    let n = fsm.state_len();
    let Scratch { preds, p, sigs, sig, items, counts, moved, new_id, queue } = scratch;
    let sig = &mut *sig;
    preds.fill(&fsm);
    p.reset_by_finality(&fsm.finals);
    let mut splits = 0usize;
    while let Some(b) = p.worklist.pop() {
        if cancel::check_at(splits, "minimization").is_err() {
            return fsm;
        }
        splits += 1;
        let (f, e) = (p.first[b as usize] as usize, p.end[b as usize] as usize);
        let m = std::mem::take(&mut p.marked[b as usize]) as usize;
        if e - f == 1 {
            continue;
        }
        sigs.clear();
        let has_unmarked = f + m < e;
        if has_unmarked {
            // Signature id 0: the one all unmarked states share.
            signature(&fsm, &p.block, p.elems[f + m], sig);
            sigs.intern(sig);
        }
        items.clear();
        for &s in &p.elems[f..f + m] {
            signature(&fsm, &p.block, s, sig);
            items.push((sigs.intern(sig).0, s));
        }
        if sigs.len() == 1 {
            continue;
        }
        counts.clear();
        counts.resize(sigs.len(), 0);
        for &(id, _) in items.iter() {
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
        for &s in moved.iter() {
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
    new_id.clear();
    new_id.resize(blocks, UNSEEN);
    let mut out = FlatFsm::with_capacity(blocks, fsm.edge_len());
    let start_block = p.block[fsm.start as usize];
    new_id[start_block as usize] = out.add_state(fsm.finals[fsm.start as usize]);
    out.start = 0;
    queue.clear();
    queue.push(start_block);
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
#[derive(Default)]
struct Predecessors {
    offsets: Vec<u32>,
    sources: Vec<u32>,
}

impl Predecessors {
    /// The reverse edges of `fsm`, replacing the previous contents.
    fn fill(&mut self, fsm: &FlatFsm) {
        let n = fsm.state_len();
        let offsets = &mut self.offsets;
        offsets.clear();
        offsets.resize(n + 1, 0);
        for s in 0..n as u32 {
            for &(_, t) in fsm.edges(s) {
                offsets[t as usize + 1] += 1;
            }
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        self.sources.clear();
        self.sources.resize(fsm.edge_len(), 0);
        // Fill each target's range back to front, walking sources backwards, so that
        // `offsets[t]` ends at the range's start without a second cursor array.
        for s in (0..n as u32).rev() {
            for &(_, t) in fsm.edges(s).iter().rev() {
                offsets[t as usize + 1] -= 1;
                self.sources[offsets[t as usize + 1] as usize] = s;
            }
        }
        // Now `offsets[t + 1]` is the start of `t`'s range; shift back to (start, end) form.
        offsets.remove(0);
        offsets.push(fsm.edge_len() as u32);
    }

    #[inline]
    fn of(&self, s: u32) -> &[u32] {
        &self.sources[self.offsets[s as usize] as usize..self.offsets[s as usize + 1] as usize]
    }
}

/// Blocks of states as ranges `first[b]..end[b]` of the permutation `elems`, the first
/// `marked[b]` of them marked; blocks with marked states are on `worklist` (once each).
#[derive(Default)]
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
    /// Non-final states, then final ones (one block when all agree), every state marked;
    /// replaces the previous contents.
    fn reset_by_finality(&mut self, finals: &[bool]) {
        let n = finals.len();
        self.elems.clear();
        self.elems.extend((0..n as u32).filter(|&s| !finals[s as usize]));
        let non_final = self.elems.len();
        self.elems.extend((0..n as u32).filter(|&s| finals[s as usize]));
        self.pos.clear();
        self.pos.resize(n, 0);
        for (i, &s) in self.elems.iter().enumerate() {
            self.pos[s as usize] = i as u32;
        }
        self.block.clear();
        self.block.resize(n, 0);
        self.first.clear();
        self.end.clear();
        self.marked.clear();
        self.worklist.clear();
        for (lo, hi) in [(0, non_final), (non_final, n)] {
            if lo < hi {
                let b = self.first.len() as u32;
                self.first.push(lo as u32);
                self.end.push(hi as u32);
                self.marked.push((hi - lo) as u32);
                self.worklist.push(b);
                for i in lo..hi {
                    self.block[self.elems[i] as usize] = b;
                }
            }
        }
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
