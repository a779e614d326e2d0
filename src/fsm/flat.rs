//! The automaton representation of the construction passes (epsilon removal, suffix merging,
//! subset construction, minimization): one flat edge array with per-state offsets (CSR).
//!
//! Every pass produces its states in order (a breadth-first numbering, or subsets in the order
//! they are dequeued), so a state's edges can be appended when it is written and closed with
//! [`FlatFsm::end_state`]: a pass allocates its output once instead of one `Vec` per state, which
//! (with the per-state signature vectors) used to make malloc/free the largest cost of building
//! automata. A finished rule automaton stays flat (the rule cache keeps it, and freezing the
//! grammar reads its edges in order); only dispatch automata are built as [`Fsm`]s and
//! converted ([`FlatFsm::from_fsm`]).

use super::{Fsm, Label};

/// An automaton whose states' edges are stored contiguously, in state order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FlatFsm {
    /// The edges of state `s` are `edges[offsets[s]..offsets[s + 1]]`; `offsets` has one entry
    /// more than the number of states whose edges are written.
    offsets: Vec<u32>,
    edges: Vec<(Label, u32)>,
    /// Per state (declared states included, even before their edges are written).
    pub(crate) finals: Vec<bool>,
    /// The initial state.
    pub(crate) start: u32,
}

impl Default for FlatFsm {
    fn default() -> Self {
        FlatFsm { offsets: vec![0], edges: Vec::new(), finals: Vec::new(), start: 0 }
    }
}

impl FlatFsm {
    /// An empty automaton with room for `states` states and `edges` edges.
    pub(crate) fn with_capacity(states: usize, edges: usize) -> Self {
        let mut offsets = Vec::with_capacity(states + 1);
        offsets.push(0);
        FlatFsm { offsets, edges: Vec::with_capacity(edges), finals: Vec::with_capacity(states), start: 0 }
    }

    /// The number of declared states.
    #[inline]
    pub(crate) fn state_len(&self) -> usize {
        self.finals.len()
    }

    /// The number of edges written.
    #[inline]
    pub(crate) fn edge_len(&self) -> usize {
        self.edges.len()
    }

    /// The outgoing edges of a written state.
    #[inline]
    pub(crate) fn edges(&self, s: u32) -> &[(Label, u32)] {
        &self.edges[self.offsets[s as usize] as usize..self.offsets[s as usize + 1] as usize]
    }

    /// Declares a state (its edges are written later, in state order) and returns its id.
    #[inline]
    pub(crate) fn add_state(&mut self, is_final: bool) -> u32 {
        self.finals.push(is_final);
        (self.finals.len() - 1) as u32
    }

    /// Appends an edge to the state being written (the first state whose edges are not closed).
    #[inline]
    pub(crate) fn push_edge(&mut self, label: Label, target: u32) {
        self.edges.push((label, target));
    }

    /// The edges written so far for the state being written.
    #[inline]
    pub(crate) fn open_edges(&mut self) -> &mut [(Label, u32)] {
        let begin = *self.offsets.last().expect("offsets starts with 0") as usize;
        &mut self.edges[begin..]
    }

    /// Sorts the open edges and removes duplicates (passes that gather edges from several
    /// states want the canonical order of [`Fsm`] rule automata: bytes by `lo`, then rules).
    pub(crate) fn sort_open_edges(&mut self) {
        let begin = *self.offsets.last().expect("offsets starts with 0") as usize;
        let tail = &mut self.edges[begin..];
        tail.sort_unstable();
        let mut w = 0;
        for r in 0..tail.len() {
            if w == 0 || tail[r] != tail[w - 1] {
                tail[w] = tail[r];
                w += 1;
            }
        }
        self.edges.truncate(begin + w);
    }

    /// Closes the edges of the state being written.
    #[inline]
    pub(crate) fn end_state(&mut self) {
        debug_assert!(self.offsets.len() <= self.finals.len(), "edges written for an undeclared state");
        self.offsets.push(u32::try_from(self.edges.len()).expect("automaton edges fit u32"));
    }

    /// Releases the spare capacity the passes left (a finished automaton is kept in caches).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.offsets.shrink_to_fit();
        self.edges.shrink_to_fit();
        self.finals.shrink_to_fit();
    }

    /// The same automaton, same numbering.
    pub(crate) fn from_fsm(fsm: &Fsm) -> FlatFsm {
        let mut flat = FlatFsm::with_capacity(fsm.state_len(), fsm.edges.iter().map(Vec::len).sum());
        for (edges, &is_final) in fsm.edges.iter().zip(&fsm.finals) {
            flat.add_state(is_final);
            flat.edges.extend_from_slice(edges);
            flat.end_state();
        }
        flat.start = fsm.start;
        flat
    }

    /// The same automaton as an [`Fsm`].
    #[cfg(test)]
    pub(crate) fn to_fsm(&self) -> Fsm {
        debug_assert_eq!(self.offsets.len(), self.finals.len() + 1, "every declared state is written");
        Fsm {
            edges: (0..self.state_len() as u32).map(|s| self.edges(s).to_vec()).collect(),
            finals: self.finals.clone(),
            start: self.start,
        }
    }
}

impl crate::util::interner::InternKey for (Label, u32) {
    #[inline]
    fn word(&self) -> u64 {
        let label = match self.0 {
            Label::Bytes(lo, hi) => (lo as u64) << 8 | hi as u64,
            Label::Rule(r) => 1 << 40 | r as u64,
            Label::Epsilon => 2 << 40,
        };
        label << 20 ^ self.1 as u64
    }
}
