//! The simulation preorder of an epsilon-free automaton, which lets subset construction drop
//! from a subset the states whose words another member reads already.
//!
//! State `p` *simulates* `q` when `p` is final wherever `q` is, and every edge `q --a--> q'`
//! is answered by an edge `p --a--> p'` with `p'` simulating `q'`: then every word `q`
//! accepts, `p` accepts (rule labels count as symbols, as in subset construction). The
//! largest such relation is computed as a greatest fixpoint: start from the pairs that pass
//! the local checks (finality, the bytes and rules read), then remove pairs until every
//! remaining one is answered.
//!
//! Why: a union of unanchored patterns (`oneOf` of "contains NEW", "contains EXECUTED", …)
//! blows up under plain subset construction. Once one word is read, the subset still tracks
//! how far each other branch has got and which ones have matched, a subset per combination
//! (2^7 for seven branches), though every such subset reads the same rest of the string.
//! With the branch that matched simulating the others, each such subset shrinks to that
//! branch's state (see [`super::determinize::determinize_pruned`]).

use super::flat::FlatFsm;
use super::Label;
use crate::util::byteset::ByteSet;

/// The most states an automaton may have for its simulation to be computed: the relation
/// takes `n²` bits (128 KiB at this bound), and its first pass checks every pair.
const MAX_STATES: usize = 1024;

/// Which states simulate which: row `p` holds the bits of the states `p` simulates.
pub(crate) struct Simulation {
    words_per_row: usize,
    bits: Vec<u64>,
}

impl Simulation {
    /// The simulation preorder of `fsm`, or `None` when `fsm` has more than [`MAX_STATES`]
    /// states or the fixpoint reads more than `max_work` pairs of edges.
    pub(crate) fn of(fsm: &FlatFsm, max_work: usize) -> Option<Simulation> {
        let n = fsm.state_len();
        if n > MAX_STATES {
            return None;
        }
        let mut sim = Simulation::locally_possible(fsm);
        let mut work = 0usize;
        let mut row: Vec<u32> = Vec::new();
        loop {
            let mut changed = false;
            // A pair depends on the pairs of its successors, which breadth-first numbering
            // mostly puts later: going backwards, a removal reaches its predecessors within
            // the same pass (5 passes instead of 23 for a union of seven patterns).
            for p in (0..n as u32).rev() {
                row.clear();
                row.extend(ones(sim.row(p)));
                for &q in row.iter().rev() {
                    if q == p {
                        continue;
                    }
                    work += fsm.edges(p).len() * fsm.edges(q).len();
                    if work > max_work {
                        return None;
                    }
                    if !sim.answers(fsm, p, q) {
                        sim.remove(p, q);
                        changed = true;
                    }
                }
            }
            if !changed {
                return Some(sim);
            }
        }
    }

    /// The pairs `(p, q)` that pass the checks needing no other pair: `p` final where `q` is,
    /// reading every byte and rule `q` reads.
    fn locally_possible(fsm: &FlatFsm) -> Simulation {
        let n = fsm.state_len();
        let words_per_row = n.div_ceil(64);
        let reads: Vec<(ByteSet, Vec<u32>)> = (0..n as u32)
            .map(|s| {
                let mut bytes = ByteSet::EMPTY;
                let mut rules = Vec::new();
                for &(l, _) in fsm.edges(s) {
                    match l {
                        Label::Bytes(lo, hi) => bytes.insert_range(lo, hi),
                        Label::Rule(r) => rules.push(r),
                        Label::Epsilon => unreachable!("simulation is computed on epsilon-free automata"),
                    }
                }
                (bytes, rules)
            })
            .collect();
        let mut sim = Simulation { words_per_row, bits: vec![0; n * words_per_row] };
        for p in 0..n {
            for q in 0..n {
                let (pb, pr) = &reads[p];
                let (qb, qr) = &reads[q];
                let finality = !fsm.finals[q] || fsm.finals[p];
                let mut covered = *pb;
                if finality && !covered.union_with(qb) && qr.iter().all(|r| pr.contains(r)) {
                    sim.bits[p * words_per_row + q / 64] |= 1 << (q % 64);
                }
            }
        }
        sim
    }

    fn row(&self, p: u32) -> &[u64] {
        let at = p as usize * self.words_per_row;
        &self.bits[at..at + self.words_per_row]
    }

    fn remove(&mut self, p: u32, q: u32) {
        self.bits[p as usize * self.words_per_row + q as usize / 64] &= !(1 << (q % 64));
    }

    /// Whether `p` simulates `q`.
    pub(crate) fn simulates(&self, p: u32, q: u32) -> bool {
        self.bits[p as usize * self.words_per_row + q as usize / 64] >> (q % 64) & 1 == 1
    }

    /// Whether every edge of `q` is answered by edges of `p` into states simulating its target.
    fn answers(&self, fsm: &FlatFsm, p: u32, q: u32) -> bool {
        let p_edges = fsm.edges(p);
        fsm.edges(q).iter().all(|&(label, q_to)| match label {
            Label::Bytes(lo, hi) => {
                // `p`'s byte edges are sorted by their first byte: sweep the ones whose target
                // simulates `q_to` and see whether they cover `lo..=hi` without a gap.
                let mut next = lo as u16;
                for &(l, p_to) in p_edges {
                    let Label::Bytes(a, b) = l else { break };
                    if a as u16 > next {
                        break;
                    }
                    if b as u16 >= next && self.simulates(p_to, q_to) {
                        next = b as u16 + 1;
                        if next > hi as u16 {
                            return true;
                        }
                    }
                }
                false
            }
            Label::Rule(r) => p_edges.iter().any(|&(l, p_to)| l == Label::Rule(r) && self.simulates(p_to, q_to)),
            Label::Epsilon => false,
        })
    }

    /// Drops from `set` every state another member simulates; of states that simulate each
    /// other, the first in `set` stays. The words the set accepts are unchanged.
    pub(crate) fn prune(&self, set: &mut Vec<u32>) {
        if set.len() < 2 {
            return;
        }
        // Marked in place (a state id never has its top bit set), then dropped: subset
        // construction prunes every subset, and a copy of each would be an allocation.
        const DROPPED: u32 = 1 << 31;
        for j in 0..set.len() {
            let q = set[j] & !DROPPED;
            let read_by_another = set.iter().enumerate().any(|(i, &p)| {
                let p = p & !DROPPED;
                i != j && self.simulates(p, q) && (i < j || !self.simulates(q, p))
            });
            if read_by_another {
                set[j] |= DROPPED;
            }
        }
        set.retain(|&x| x & DROPPED == 0);
    }
}

/// The indices of the set bits of `row`.
fn ones(row: &[u64]) -> impl Iterator<Item = u32> + '_ {
    row.iter().enumerate().flat_map(|(w, &bits)| {
        let mut rest = bits;
        std::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let b = rest.trailing_zeros();
            rest &= rest - 1;
            Some(w as u32 * 64 + b)
        })
    })
}
