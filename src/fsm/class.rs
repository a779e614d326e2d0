//! Lowering character classes into byte automata, each distinct class once per grammar.
//!
//! A class becomes its UTF-8 byte-range sequences, sharing common suffixes (most end in the
//! same `[80-BF]` continuation bytes): a Unicode class takes ~8 states instead of ~20. String
//! automata are inlined in many places, so the same few classes (`[^"\\\x00-\x1F]`, digits)
//! are lowered hundreds of times per grammar; resolving the class and computing its sequences
//! each time was ~15% of automaton construction on large schemas. The first lowering records
//! the states and edges it made as a [`Template`]; later ones replay it, creating the same
//! states and edges in the same order.

use super::nfa::Nfa;
use super::Label;
use crate::grammar::CharClass;
use crate::util::hash::FastMap;
use crate::util::utf8::utf8_sequences;

/// The lowered shape of one class. Local state 0 is the state the class starts from, 1 the
/// state where it ends, `2..` the states it creates, in creation order.
#[derive(Debug)]
struct Template {
    created: u32,
    edges: Vec<(u32, Label, u32)>,
}

/// Templates of the classes lowered so far.
#[derive(Debug, Default)]
pub(super) struct ClassLowering {
    templates: FastMap<CharClass, Template>,
}

impl ClassLowering {
    /// Adds `class` to `nfa` from `from` to `to` (a new state when `None`); returns the end.
    pub(super) fn lower(&mut self, nfa: &mut Nfa, class: &CharClass, from: u32, to: Option<u32>) -> u32 {
        if !self.templates.contains_key(class) {
            self.templates.insert(class.clone(), template(class));
        }
        let t = &self.templates[class];
        // The end (when new) is created first, then the template's own states.
        let end = to.unwrap_or_else(|| nfa.add_state());
        let base = nfa.state_len() as u32;
        for _ in 0..t.created {
            nfa.add_state();
        }
        let global = |local: u32| match local {
            0 => from,
            1 => end,
            _ => base + local - 2,
        };
        for &(a, l, b) in &t.edges {
            nfa.add_edge(global(a), l, global(b));
        }
        end
    }
}

fn template(class: &CharClass) -> Template {
    const FROM: u32 = 0;
    const END: u32 = 1;
    let mut t = Template { created: 0, edges: Vec::new() };
    let mut suffix_state: FastMap<&[(u8, u8)], u32> = FastMap::default();
    let seqs: Vec<_> = class.resolved_ranges().into_iter().flat_map(|(lo, hi)| utf8_sequences(lo, hi)).collect();
    for seq in &seqs {
        let mut next = END;
        for k in (1..seq.len()).rev() {
            next = *suffix_state.entry(&seq[k..]).or_insert_with(|| {
                t.created += 1;
                let s = END + t.created;
                t.edges.push((s, Label::Bytes(seq[k].0, seq[k].1), next));
                s
            });
        }
        t.edges.push((FROM, Label::Bytes(seq[0].0, seq[0].1), next));
    }
    t
}
