//! Byte steps as dense tables, for walks of the whole vocabulary through a small automaton
//! (the count tables and bounds of `counted.rs`): one rule's states ([`RuleSteps`]), or the
//! states a walk visits ([`StateRows`]).
//!
//! `lexical_loop::step` scans a state's byte edges one by one, and a JSON string character has
//! dozens of UTF-8 ranges: the table of every Llama 3 token's count through a string's length
//! counter took 7 ms that way. A table of 256 targets per state makes each step one load.

use crate::fsm::{FsmRuleId, GrammarFsm, StateId};

/// The most states a rule may have for its table (256 KiB at this bound); larger rules step
/// through their edges.
const MAX_TABLE_STATES: usize = 256;

/// No byte edge reads the byte.
const NONE: u32 = u32::MAX;

/// Writes into `row` (256 entries, [`NONE`] before) the target of each byte `s` reads.
fn fill_row(fsm: &GrammarFsm, s: StateId, row: &mut [u32]) {
    for e in fsm.byte_edges(s) {
        row[e.lo as usize..=e.hi as usize].fill(e.target.index() as u32);
    }
}

/// The byte steps of one rule whose states have one edge per byte.
#[derive(Debug)]
pub(crate) struct RuleSteps {
    /// The rule's first state (a rule's states are numbered contiguously).
    first: usize,
    /// Its number of states, or 0 when it has no table.
    len: usize,
    /// `next[(s - first) * 256 + b]`: the target of `s` reading `b`, or [`NONE`].
    next: Box<[u32]>,
}

impl RuleSteps {
    /// The table of rule `r`, whose states have disjoint byte edges.
    pub(crate) fn new(fsm: &GrammarFsm, r: FsmRuleId) -> Self {
        let states = fsm.rule_states(r);
        let (first, len) = (states.clone().next().map_or(0, |s| s.index()), states.len());
        if len > MAX_TABLE_STATES {
            return RuleSteps { first, len: 0, next: Box::default() };
        }
        let mut next = vec![NONE; len * 256].into_boxed_slice();
        for s in states {
            fill_row(fsm, s, &mut next[(s.index() - first) * 256..][..256]);
        }
        RuleSteps { first, len, next }
    }

    /// The target of `s` (a state of the rule) reading `b`.
    #[inline]
    pub(crate) fn step(&self, fsm: &GrammarFsm, s: StateId, b: u8) -> Option<StateId> {
        let i = s.index().wrapping_sub(self.first);
        if i >= self.len {
            return super::lexical_loop::step(fsm, s, b);
        }
        let t = self.next[i * 256 + b as usize];
        (t != NONE).then(|| StateId::new(t as usize))
    }

    /// Heap bytes used.
    pub(crate) fn memory_usage(&self) -> usize {
        self.next.len() * 4
    }
}

/// The most states a [`StateRows`] tables (1 KiB each).
const MAX_ROWS: usize = 1024;

/// Slots of the [`StateRows`] index (a power of two).
const SLOTS: usize = 4096;

/// The byte steps of the states a walk visits, tabled on first visit: the walks of a word
/// count's caller after the count ends visit a few hundred of its states (a state per
/// character count, in a length-counted pattern), whose edges (a JSON string character's
/// UTF-8 ranges) cost dozens of comparisons per byte scanned one by one.
#[derive(Debug, Default)]
pub(crate) struct StateRows {
    /// Direct-mapped by a hash of the state: `(state, row)`, or `NONE` as the state when empty.
    /// A state whose slot another takes builds a new row when visited again.
    slots: Vec<(u32, u32)>,
    rows: Vec<[u32; 256]>,
}

impl StateRows {
    /// The target of `s` (a state with one edge per byte) reading `b`.
    #[inline]
    pub(crate) fn step(&mut self, fsm: &GrammarFsm, s: StateId, b: u8) -> Option<StateId> {
        if self.slots.is_empty() {
            self.slots = vec![(NONE, 0); SLOTS];
        }
        let state = s.index() as u32;
        let slot = (state.wrapping_mul(0x9E37_79B1) >> (32 - SLOTS.trailing_zeros())) as usize;
        let row = match self.slots[slot] {
            (x, row) if x == state => row,
            _ if self.rows.len() < MAX_ROWS => {
                let mut row = [NONE; 256];
                fill_row(fsm, s, &mut row);
                self.rows.push(row);
                self.slots[slot] = (state, self.rows.len() as u32 - 1);
                self.rows.len() as u32 - 1
            }
            _ => return super::lexical_loop::step(fsm, s, b),
        };
        let t = self.rows[row as usize][b as usize];
        (t != NONE).then(|| StateId::new(t as usize))
    }

    /// Heap bytes used.
    pub(crate) fn memory_usage(&self) -> usize {
        self.rows.capacity() * 1024 + self.slots.capacity() * 8
    }
}
