//! `minLength`/`maxLength` together with `pattern` (or a `format` pattern): the product of
//! the pattern's code-point DFA with a length counter, emitted as right-linear rules.
//!
//! A product state is (DFA state, characters read), the count saturating at `minLength` when
//! there is no `maxLength`; a state accepts when the DFA accepts and the count is at least
//! `minLength`. Each state becomes a rule `q_c ::= class₁ q'_(c+1) | ... | ""`, where each
//! class is one JSON string character (raw or escaped) of the DFA transition's ranges, so the
//! bound is counted in decoded code points like a plain `maxLength`. Only states reachable
//! from the start are generated; dead ones are removed with the other unproductive rules when
//! the grammar is finished. Beyond [`MAX_PRODUCT_STATES`] the caller reports a relaxation.
//!
//! A DFA state that accepts every continuation (an unanchored pattern after its match:
//! `[a-z0-9_.-]+` with `maxLength: 255`), or that accepts and loops on itself alone (the last
//! loop of an anchored pattern: `^[A-Za-z0-9_][^<>*#.%&:\\+?/]*$` with `maxLength: 260`),
//! leaves only the count to check: its product state `q_c` (from `c = minLength` on) becomes
//! the counted repetition `char{0, max - c}` of the characters it reads, rather than a chain
//! of one rule per count. Besides the rules it saves, a chain gives every count
//! its own cache entry, each a walk of the vocabulary, at nearly every step of the string
//! (`Github_hard---o45481`: 4–7 ms each); the counted repetition's entries serve every count.

use std::collections::hash_map::Entry;

use super::counter::Counter;
use super::lower::{choice, Lowerer};
use super::string::{any_json_char, json_char};
use super::SchemaError;
use crate::frontend::regex::CodePointDfa;
use crate::grammar::{CharClass, Expr, RuleId};
use crate::util::hash::FastMap;

/// The most DFA states built for a pattern that meets a length bound.
pub(super) const MAX_PATTERN_DFA_STATES: usize = 512;

/// The most (DFA state, count) pairs turned into rules for one string schema.
pub(super) const MAX_PRODUCT_STATES: usize = 8192;

impl Lowerer<'_> {
    /// String content matching `dfa` with between `min` and `max` code points, or `None` when
    /// the product is larger than [`MAX_PRODUCT_STATES`].
    pub(super) fn length_bounded(
        &mut self,
        dfa: &CodePointDfa,
        min: u32,
        max: Option<u32>,
    ) -> Result<Option<Expr>, SchemaError> {
        let counter = Counter { min, max };
        let step = |c: u32| counter.step(c);
        // Reachable product states, breadth first, with each state's successors in the order
        // of its DFA state's transitions (`succ[succ_start[k]..]`), so that the rules below
        // need no second lookup per transition.
        let mut index: FastMap<(usize, u32), usize> = FastMap::default();
        let mut states = vec![(0usize, 0u32)];
        let mut succ_start: Vec<usize> = Vec::new();
        let mut succ: Vec<usize> = Vec::new();
        index.insert((0, 0), 0);
        let mut i = 0;
        let accepts_everything = dfa.accepting_everything();
        let loops = dfa.accepting_loops();
        // From `minLength` on: the repetition then has no minimum, so that the walks of the
        // cache entries before it follow it (`cache/byte_paths.rs`).
        let counted_rest = |q: usize, c: u32| (accepts_everything[q] || loops[q].is_some()) && c >= min;
        while i < states.len() {
            let (q, c) = states[i];
            succ_start.push(succ.len());
            // From a state accepting everything only the count is left (no successors).
            if let Some(c2) = step(c).filter(|_| !counted_rest(q, c)) {
                for &(_, t) in &dfa.transitions[q] {
                    let next = match index.entry((t, c2)) {
                        Entry::Occupied(o) => *o.get(),
                        Entry::Vacant(v) => {
                            if states.len() >= MAX_PRODUCT_STATES {
                                return Ok(None);
                            }
                            v.insert(states.len());
                            states.push((t, c2));
                            states.len() - 1
                        }
                    };
                    succ.push(next);
                }
            }
            i += 1;
        }
        if self.rules_left() < states.len() {
            return Ok(None);
        }
        let ids: Vec<RuleId> = states.iter().map(|_| self.new_rule("strlen")).collect();
        // The JSON character of each DFA transition, made on first use (in the order of the
        // product states, which fixes the ids of shared `strchar` rules) and shared between
        // transitions with equal ranges.
        let mut classes: FastMap<&[(u32, u32)], Expr> = FastMap::default();
        let mut per_transition: Vec<Vec<Option<Expr>>> =
            dfa.transitions.iter().map(|ts| vec![None; ts.len()]).collect();
        for (k, &(q, c)) in states.iter().enumerate() {
            if counted_rest(q, c) {
                let ch = match &loops[q] {
                    Some(ranges) if !accepts_everything[q] => json_char(&CharClass::new(ranges.iter().copied(), false)),
                    _ => any_json_char(),
                };
                // From `minLength` on (`counted_rest`): no minimum is left.
                self.define(ids[k], Expr::repeat(ch, 0, max.map(|m| m - c)));
                continue;
            }
            let mut alts = Vec::new();
            if step(c).is_some() {
                for (j, (ranges, _)) in dfa.transitions[q].iter().enumerate() {
                    let ch = match &per_transition[q][j] {
                        Some(e) => e.clone(),
                        None => {
                            let e = match classes.get(ranges.as_slice()) {
                                Some(e) => e.clone(),
                                None => {
                                    let e = json_char(&CharClass::new(ranges.iter().copied(), false));
                                    let e = self.counted_char(e)?;
                                    classes.insert(ranges.as_slice(), e.clone());
                                    e
                                }
                            };
                            per_transition[q][j] = Some(e.clone());
                            e
                        }
                    };
                    alts.push(Expr::Seq(vec![ch, Expr::Rule(ids[succ[succ_start[k] + j]])]));
                }
            }
            if dfa.accepting[q] && c >= min {
                alts.push(Expr::Empty);
            }
            self.define(ids[k], choice(alts));
        }
        Ok(Some(Expr::Rule(ids[0])))
    }

    /// A JSON character `e` (from `json_char`) as a counted state reads it: its raw characters
    /// inline, its escapes (a dozen states each) shared as a rule rather than copied into every
    /// counted state. Were the raw characters behind the rule too, a product state's entry
    /// would end inside that rule at every character, called from hundreds of counted states:
    /// no certain context, and every token longer than one character uncertain, walked by the
    /// parser at every mask (`Github_hard---o45481`: 77k tokens, 1-2 ms a step).
    fn counted_char(&mut self, e: Expr) -> Result<Expr, SchemaError> {
        match e {
            Expr::Class(_) => Ok(e),
            Expr::Choice(mut alts) if alts.len() == 2 && matches!(alts[0], Expr::Class(_)) => {
                let escapes = alts.pop().expect("two alternatives");
                let raw = alts.pop().expect("two alternatives");
                Ok(Expr::Choice(vec![raw, self.rule_for("strchar", escapes)?]))
            }
            e => self.rule_for("strchar", e),
        }
    }
}
