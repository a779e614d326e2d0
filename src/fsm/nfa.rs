//! The automaton Thompson construction writes: states numbered as created, edges appended in
//! any order to one flat list.
//!
//! Thompson construction adds edges to states created long before (a choice's end, a
//! repetition's hub), so its output cannot be written state by state like [`super::flat`]'s.
//! One `(from, label, to)` list instead of a `Vec` per state saves an allocation per state;
//! epsilon removal buckets the list by source once (a counting sort, keeping insertion order).

use super::Label;

/// A Thompson automaton under construction (epsilon edges allowed).
#[derive(Clone, Debug, Default)]
pub(crate) struct Nfa {
    /// Every edge `(from, label, to)`, in insertion order.
    pub(crate) edges: Vec<(u32, Label, u32)>,
    /// Accepting states.
    pub(crate) finals: Vec<bool>,
    /// The initial state.
    pub(crate) start: u32,
}

impl Nfa {
    /// Adds a state and returns its id.
    #[inline]
    pub(crate) fn add_state(&mut self) -> u32 {
        self.finals.push(false);
        (self.finals.len() - 1) as u32
    }
    /// Adds an edge.
    #[inline]
    pub(crate) fn add_edge(&mut self, from: u32, label: Label, to: u32) {
        self.edges.push((from, label, to));
    }
    /// The number of states.
    #[inline]
    pub(crate) fn state_len(&self) -> usize {
        self.finals.len()
    }

    /// The edges grouped by source, each group in insertion order: `(offsets, edges)` with the
    /// edges of `s` at `edges[offsets[s]..offsets[s + 1]]`.
    pub(crate) fn by_source(&self) -> (Vec<u32>, Vec<(Label, u32)>) {
        let n = self.state_len();
        let mut offsets = vec![0u32; n + 1];
        for &(from, _, _) in &self.edges {
            offsets[from as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut out = vec![(Label::Epsilon, 0); self.edges.len()];
        for &(from, l, to) in &self.edges {
            out[fill[from as usize] as usize] = (l, to);
            fill[from as usize] += 1;
        }
        (offsets, out)
    }
}
