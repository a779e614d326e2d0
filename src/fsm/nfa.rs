//! The automaton Thompson construction writes: states numbered as created, edges appended in
//! any order to one flat list.
//!
//! Thompson construction adds edges to states created long before (a choice's end, a
//! repetition's hub), so its output cannot be written state by state like [`super::flat`]'s.
//! One `(from, label, to)` list instead of a `Vec` per state saves an allocation per state;
//! epsilon removal buckets the list by source once (a counting sort, keeping insertion order).

use super::Label;
use crate::util::cancel::{self, Interrupted};
use crate::util::hash::FastMap;

/// A Thompson automaton under construction (epsilon edges allowed).
#[derive(Clone, Debug, Default)]
pub(crate) struct Nfa {
    /// Every edge `(from, label, to)`, in insertion order.
    pub(crate) edges: Vec<(u32, Label, u32)>,
    /// Accepting states.
    pub(crate) finals: Vec<bool>,
    /// The initial state.
    pub(crate) start: u32,
    /// The states made by [`Nfa::chain_state`], by their one edge.
    chains: FastMap<(Label, u32), u32>,
}

impl Nfa {
    /// Removes every state and edge, keeping the buffers.
    pub(crate) fn clear(&mut self) {
        self.edges.clear();
        self.finals.clear();
        self.chains.clear();
        self.start = 0;
    }
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
    /// A state whose only edge is `label` into `next`, shared by every caller asking for the
    /// same edge. Sharing is sound because such a state has one future ("read `label`, then
    /// go on from `next`"), whoever enters it: it is never final and never gets another edge.
    /// The UTF-8 continuation states of character classes and the state before a trailing rule
    /// reference are made this way: a key trie writes `[^"\\...] rest` at every node, and
    /// without sharing each node got its own copy of the class's continuation states (the
    /// passes then merged them again).
    pub(crate) fn chain_state(&mut self, label: Label, next: u32) -> u32 {
        if let Some(&s) = self.chains.get(&(label, next)) {
            return s;
        }
        let s = self.add_state();
        self.add_edge(s, label, next);
        self.chains.insert((label, next), s);
        s
    }
    /// The number of states.
    #[inline]
    pub(crate) fn state_len(&self) -> usize {
        self.finals.len()
    }

    /// The edges grouped by source, each group in insertion order, written into `offsets` and
    /// `edges` (previous contents replaced): the edges of `s` are
    /// `edges[offsets[s]..offsets[s + 1]]`.
    ///
    /// # Errors
    /// [`Interrupted`] when the compile's watch trips (checked every
    /// [`cancel::POLL_EVERY`] edges: a million-way enum's automaton has tens of millions).
    pub(crate) fn by_source(&self, offsets: &mut Vec<u32>, edges: &mut Vec<(Label, u32)>) -> Result<(), Interrupted> {
        let n = self.state_len();
        offsets.clear();
        offsets.resize(n + 1, 0);
        for (i, &(from, _, _)) in self.edges.iter().enumerate() {
            cancel::check_at(i, "epsilon removal")?;
            offsets[from as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        edges.clear();
        edges.resize(self.edges.len(), (Label::Epsilon, 0));
        // Back to front, so that `offsets[from + 1]` walks down to the group's start: then
        // `offsets[k + 1]` is the start of group `k`, and one shift restores the end form.
        for &(from, l, to) in self.edges.iter().rev() {
            offsets[from as usize + 1] -= 1;
            edges[offsets[from as usize + 1] as usize] = (l, to);
        }
        offsets.remove(0);
        offsets.push(self.edges.len() as u32);
        Ok(())
    }
}
