//! Structural validation of a [`GrammarFsm`] that did not come from the builder (a saved
//! grammar read back): every index the parser and the mask cache follow is in range, and the
//! tables are sorted where lookups binary-search them. A value that passes can be used without
//! an out-of-bounds panic; whether it is the automaton of its grammar is the checksum's job.

use super::{GrammarFsm, StateId};

impl GrammarFsm {
    /// Checks the invariants the parser and the mask cache rely on; the error says which one
    /// fails and where.
    pub(crate) fn check_structure(&self) -> Result<(), String> {
        let states = self.finals.len();
        let rules = self.rules.len();
        if self.root.index() >= rules {
            return Err(format!("root rule {} out of range ({rules} rules)", self.root));
        }
        if self.state_rule.len() != states {
            return Err(format!("{} state rules for {states} states", self.state_rule.len()));
        }
        if let Some(s) = self.state_rule.iter().position(|r| r.index() >= rules) {
            return Err(format!("state {s} belongs to rule {} of {rules}", self.state_rule[s]));
        }
        // `rule_states` finds a rule's states by binary search.
        if let Some(s) = self.state_rule.windows(2).position(|w| w[0] > w[1]) {
            return Err(format!("state {} belongs to an earlier rule than state {s}", s + 1));
        }
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.start.index() >= states || self.state_rule[rule.start].index() != i {
                return Err(format!("rule {i} starts at state {}, not one of its states", rule.start));
            }
        }
        check_offsets("byte", &self.byte_offsets, states, self.byte_edges.len())?;
        check_offsets("rule", &self.rule_offsets, states, self.rule_edges.len())?;
        for s in self.states() {
            let rule = self.rule_of(s);
            let bytes = self.byte_edges(s);
            if bytes.iter().any(|e| e.lo > e.hi || e.target.index() >= states || self.rule_of(e.target) != rule) {
                return Err(format!("state {s}: a byte edge is empty or leaves its rule"));
            }
            if bytes.windows(2).any(|w| w[0].lo > w[1].lo) {
                return Err(format!("state {s}: byte edges are not sorted"));
            }
            let refs = self.rule_edges(s);
            if refs
                .iter()
                .any(|e| e.rule.index() >= rules || e.target.index() >= states || self.rule_of(e.target) != rule)
            {
                return Err(format!("state {s}: a rule edge is out of range or leaves its rule"));
            }
            if refs.windows(2).any(|w| w[0].rule > w[1].rule) {
                return Err(format!("state {s}: rule edges are not sorted"));
            }
        }
        check_sorted_states("token set", self.token_sets.iter().map(|e| e.0), states)?;
        if self.token_sets.iter().any(|(_, ranges)| ranges.iter().any(|&(lo, hi)| lo > hi)) {
            return Err("a token set has an empty range".into());
        }
        check_sorted_states("free-text table", self.free_text.iter().map(|e| e.0), states)?;
        for (first, depths) in &self.free_text {
            if first.index() + depths.len() > states {
                return Err(format!("the free-text table at state {first} runs past the last state"));
            }
        }
        Ok(())
    }
}

/// CSR offsets: one per state plus one, from 0, non-decreasing, ending at the edge count.
fn check_offsets(what: &str, offsets: &[u32], states: usize, edges: usize) -> Result<(), String> {
    let well_formed = offsets.len() == states + 1
        && offsets.first() == Some(&0)
        && offsets.last().map(|&o| o as usize) == Some(edges)
        && offsets.windows(2).all(|w| w[0] <= w[1]);
    if well_formed {
        Ok(())
    } else {
        Err(format!("{what} edge offsets do not index {edges} edges over {states} states"))
    }
}

/// States of a table sorted by state (strictly) and in range.
fn check_sorted_states(what: &str, mut ids: impl Iterator<Item = StateId>, states: usize) -> Result<(), String> {
    let mut previous: Option<StateId> = None;
    ids.try_for_each(|s| {
        if s.index() >= states || previous.is_some_and(|p| p >= s) {
            return Err(format!("{what}: state {s} out of range or out of order"));
        }
        previous = Some(s);
        Ok(())
    })
}
