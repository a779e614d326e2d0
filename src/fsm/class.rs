//! Lowering character classes into byte automata, each distinct class once per grammar.
//!
//! A class becomes its UTF-8 byte-range sequences, sharing common suffixes (most end in the
//! same `[80-BF]` continuation bytes): a Unicode class takes ~8 states instead of ~20. String
//! automata are inlined in many places, so the same few classes (`[^"\\\x00-\x1F]`, digits)
//! are lowered hundreds of times per grammar; resolving the class and computing its sequences
//! each time was ~15% of automaton construction on large schemas. The first lowering records
//! the states and edges it made as a [`Template`]; later ones replay it. The continuation
//! states are shared by every class lowered into the same end state within one automaton
//! ([`Nfa::chain_state`]).

use std::cell::RefCell;

use super::nfa::Nfa;
use super::Label;
use crate::grammar::CharClass;
use crate::util::hash::FastMap;
use crate::util::utf8::utf8_sequences;

/// The lowered shape of one class. Local state 0 is the state the class starts from, 1 the
/// state where it ends, `2..` its continuation states in creation order: each has one edge,
/// into the end or an earlier continuation state, so it is a [`Nfa::chain_state`] (shared
/// with every other class lowered into the same end that needs the same continuation).
#[derive(Debug)]
struct Template {
    /// Per continuation state, its edge's label and target.
    chains: Vec<(Label, u32)>,
    /// The edges leaving the start: label and target.
    leads: Vec<(Label, u32)>,
}

/// Templates of the classes lowered so far.
///
/// # Why it is kept per thread
/// Between grammars, one value waits in a `thread_local!` (`KEPT`): the builder of a grammar
/// takes it ([`ClassLowering::take_kept`]) and puts it back when done
/// ([`ClassLowering::keep`]), so the next grammar compiled on the same thread replays the
/// templates of the classes they share. Per thread rather than in the compiler, because the
/// automaton builder is also called without a compiler and from several threads at once, and a
/// shared map would need a lock on the hottest path of class lowering. A template is a pure
/// function of its class, so replaying a kept one gives exactly the states and edges computing
/// it anew would: results never depend on what was built before. Bound: at most
/// [`MAX_KEPT_TEMPLATES`] templates (a few hundred bytes each); past that all are dropped.
#[derive(Debug, Default)]
pub(super) struct ClassLowering {
    templates: FastMap<CharClass, Template>,
    /// Scratch: the global state of each local state while a template is replayed.
    global: Vec<u32>,
}

thread_local! {
    /// The templates of the grammars built on this thread before: the same classes come back
    /// from grammar to grammar (a key trie's complement classes, string and number bodies), and
    /// computing a template (resolving the class, its UTF-8 sequences) was ~2.5 % of building
    /// a large schema grammar's automata.
    static KEPT: RefCell<ClassLowering> = RefCell::default();
}

/// Templates kept per thread at most (a few hundred bytes each).
const MAX_KEPT_TEMPLATES: usize = 4096;

impl ClassLowering {
    /// This thread's lowering, with the templates earlier grammars made.
    pub(super) fn take_kept() -> Self {
        KEPT.with(|k| std::mem::take(&mut *k.borrow_mut()))
    }

    /// Keeps this lowering's templates for the next grammar built on this thread (all of them
    /// are dropped once there are too many).
    pub(super) fn keep(mut self) {
        if self.templates.len() > MAX_KEPT_TEMPLATES {
            self.templates = FastMap::default();
        }
        KEPT.with(|k| *k.borrow_mut() = self);
    }

    /// Adds `class` to `nfa` from `from` to `to` (a new state when `None`); returns the end.
    pub(super) fn lower(&mut self, nfa: &mut Nfa, class: &CharClass, from: u32, to: Option<u32>) -> u32 {
        if !self.templates.contains_key(class) {
            self.templates.insert(class.clone(), template(class));
        }
        let t = &self.templates[class];
        let end = to.unwrap_or_else(|| nfa.add_state());
        self.global.clear();
        self.global.extend([from, end]);
        for &(label, next) in &t.chains {
            let s = nfa.chain_state(label, self.global[next as usize]);
            self.global.push(s);
        }
        for &(label, next) in &t.leads {
            nfa.add_edge(from, label, self.global[next as usize]);
        }
        end
    }
}

fn template(class: &CharClass) -> Template {
    const END: u32 = 1;
    let mut t = Template { chains: Vec::new(), leads: Vec::new() };
    let mut suffix_state: FastMap<&[(u8, u8)], u32> = FastMap::default();
    let seqs: Vec<_> = class.resolved_ranges().into_iter().flat_map(|(lo, hi)| utf8_sequences(lo, hi)).collect();
    for seq in &seqs {
        let mut next = END;
        for k in (1..seq.len()).rev() {
            next = *suffix_state.entry(&seq[k..]).or_insert_with(|| {
                t.chains.push((Label::Bytes(seq[k].0, seq[k].1), next));
                END + t.chains.len() as u32
            });
        }
        t.leads.push((Label::Bytes(seq[0].0, seq[0].1), next));
    }
    t
}
