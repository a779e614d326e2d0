//! Grammar IR → one automaton per rule, then frozen into a [`GrammarFsm`].
//!
//! Thompson construction with epsilon edges, then [`super::determinize`]. The repetition
//! policy lives here: a repetition is expanded into the automaton when the expansion is small,
//! else it becomes a counted rule (see [`RuleKind::Counted`]).

use super::determinize::{determinize, remove_epsilons};
use super::{ByteEdge, Fsm, FsmRule, GrammarFsm, Label, RuleEdge, RuleKind};
use crate::grammar::{Expr, Grammar, GrammarError};
use crate::util::hash::FastMap;
use crate::util::utf8::utf8_sequences;

/// Limits and thresholds of automaton construction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsmLimits {
    /// A repetition is expanded when its upper bound (or lower bound, when unbounded) is at most
    /// this. Default 16: `[0-9]{4}` and `\d{1,3}` expand, `maxLength: 100` becomes a counter.
    pub max_expanded_repeat: u32,
    /// ... and when the expansion adds at most this many automaton states. Default 2,000.
    pub max_expanded_states: usize,
    /// Subset construction gives up past this many states for one rule (the NFA is kept).
    /// Default 10,000.
    pub max_dfa_states: usize,
    /// The most states over all rules. Default 10,000,000.
    pub max_total_states: usize,
}

impl Default for FsmLimits {
    fn default() -> Self {
        FsmLimits {
            max_expanded_repeat: 16,
            max_expanded_states: 2_000,
            max_dfa_states: 10_000,
            max_total_states: 10_000_000,
        }
    }
}

struct Builder<'a> {
    limits: &'a FsmLimits,
    /// Rule names, kinds and bodies, grammar rules first; synthetic rules are appended.
    names: Vec<String>,
    kinds: Vec<RuleKind>,
    pending: Vec<Option<Expr>>,
    /// Counted rules, deduplicated by (body, min, max).
    counted: FastMap<(Expr, u32, u32), u32>,
    states: usize,
}

/// Builds the automata of every rule of `grammar`.
///
/// # Errors
/// [`GrammarError::TooLarge`] when the automata exceed [`FsmLimits::max_total_states`].
pub fn build_grammar_fsm(grammar: &Grammar, limits: &FsmLimits) -> Result<GrammarFsm, GrammarError> {
    let mut b = Builder {
        limits,
        names: grammar.rules().iter().map(|r| r.name.clone()).collect(),
        kinds: vec![RuleKind::Plain; grammar.rules().len()],
        pending: grammar.rules().iter().map(|r| Some(r.body.clone())).collect(),
        counted: FastMap::default(),
        states: 0,
    };
    let mut fsms: Vec<Fsm> = Vec::new();
    let mut r = 0;
    while r < b.pending.len() {
        let body = b.pending[r].take().expect("every rule has a body");
        let mut fsm = b.rule_fsm(&body)?;
        if matches!(b.kinds[r], RuleKind::Counted { .. }) {
            add_fresh_start(&mut fsm);
        }
        b.states += fsm.state_len();
        if b.states > limits.max_total_states {
            return Err(GrammarError::TooLarge {
                what: "automaton states",
                actual: b.states,
                limit: limits.max_total_states,
            });
        }
        fsms.push(fsm);
        r += 1;
    }
    let nullable = nullable_rules(&fsms, &b.kinds);
    // Empty iterations never count, so a counted repetition of a nullable body needs no minimum.
    for (r, kind) in b.kinds.iter_mut().enumerate() {
        if let RuleKind::Counted { min, .. } = kind {
            if nullable[r] {
                *min = 0;
            }
        }
    }
    Ok(freeze(fsms, b.names, b.kinds, nullable, grammar.root().index() as u32))
}

/// Gives a counted rule's automaton a start state without incoming edges, so that "back at the
/// start" always means "a new iteration begins" (see [`RuleKind::Counted`]). The new start keeps
/// the old start's finality: for counted rules, finality marks where an iteration may end.
fn add_fresh_start(fsm: &mut Fsm) {
    let old = fsm.start;
    let fresh = fsm.add_state();
    fsm.edges[fresh as usize] = fsm.edges[old as usize].clone();
    fsm.finals[fresh as usize] = fsm.finals[old as usize];
    fsm.start = fresh;
}

impl Builder<'_> {
    fn rule_fsm(&mut self, body: &Expr) -> Result<Fsm, GrammarError> {
        let mut nfa = Fsm::default();
        let start = nfa.add_state();
        nfa.start = start;
        let end = self.expr(&mut nfa, body, start);
        nfa.finals[end as usize] = true;
        let nfa = remove_epsilons(&nfa);
        Ok(determinize(&nfa, self.limits.max_dfa_states).unwrap_or(nfa))
    }

    /// Adds `e` to `nfa` starting at `from`; returns the state where it ends.
    fn expr(&mut self, nfa: &mut Fsm, e: &Expr, from: u32) -> u32 {
        match e {
            Expr::Empty => from,
            Expr::Bytes(bytes) => {
                let mut cur = from;
                for &b in bytes {
                    let next = nfa.add_state();
                    nfa.add_edge(cur, Label::Bytes(b, b), next);
                    cur = next;
                }
                cur
            }
            Expr::Class(class) => {
                let end = nfa.add_state();
                for (lo, hi) in class.resolved_ranges() {
                    for seq in utf8_sequences(lo, hi) {
                        let mut cur = from;
                        for (k, &(blo, bhi)) in seq.iter().enumerate() {
                            let next = if k + 1 == seq.len() { end } else { nfa.add_state() };
                            nfa.add_edge(cur, Label::Bytes(blo, bhi), next);
                            cur = next;
                        }
                    }
                }
                end
            }
            Expr::Rule(r) => {
                let next = nfa.add_state();
                nfa.add_edge(from, Label::Rule(r.index() as u32), next);
                next
            }
            Expr::Seq(items) => items.iter().fold(from, |cur, x| self.expr(nfa, x, cur)),
            Expr::Choice(alts) => {
                let end = nfa.add_state();
                for alt in alts {
                    let s = nfa.add_state();
                    nfa.add_edge(from, Label::Epsilon, s);
                    let e = self.expr(nfa, alt, s);
                    nfa.add_edge(e, Label::Epsilon, end);
                }
                end
            }
            Expr::Repeat(rep) => {
                let copies = rep.max.unwrap_or(rep.min);
                let size = estimate_states(&rep.expr);
                let expand = copies <= self.limits.max_expanded_repeat
                    && size.saturating_mul(copies.max(1) as usize) <= self.limits.max_expanded_states;
                if expand {
                    self.expand_repeat(nfa, &rep.expr, rep.min, rep.max, from)
                } else {
                    let counted = self.counted_rule(&rep.expr, rep.min, rep.max.unwrap_or(u32::MAX));
                    let next = nfa.add_state();
                    nfa.add_edge(from, Label::Rule(counted), next);
                    next
                }
            }
        }
    }

    fn expand_repeat(&mut self, nfa: &mut Fsm, inner: &Expr, min: u32, max: Option<u32>, from: u32) -> u32 {
        let mut cur = from;
        for _ in 0..min {
            let s = nfa.add_state();
            nfa.add_edge(cur, Label::Epsilon, s);
            cur = self.expr(nfa, inner, s);
        }
        match max {
            None => {
                let hub = nfa.add_state();
                nfa.add_edge(cur, Label::Epsilon, hub);
                let body = nfa.add_state();
                nfa.add_edge(hub, Label::Epsilon, body);
                let back = self.expr(nfa, inner, body);
                nfa.add_edge(back, Label::Epsilon, hub);
                hub
            }
            Some(max) => {
                let end = nfa.add_state();
                nfa.add_edge(cur, Label::Epsilon, end);
                for _ in min..max {
                    let s = nfa.add_state();
                    nfa.add_edge(cur, Label::Epsilon, s);
                    cur = self.expr(nfa, inner, s);
                    nfa.add_edge(cur, Label::Epsilon, end);
                }
                end
            }
        }
    }

    /// The counted rule for `e{min,max}`, shared by identical repetitions.
    fn counted_rule(&mut self, e: &Expr, min: u32, max: u32) -> u32 {
        let key = (e.clone(), min, max);
        if let Some(&r) = self.counted.get(&key) {
            return r;
        }
        let r = self.names.len() as u32;
        let bound = if max == u32::MAX { String::new() } else { max.to_string() };
        self.names.push(format!("$repeat{r}{{{min},{bound}}}"));
        self.kinds.push(RuleKind::Counted { min, max });
        self.pending.push(Some(e.clone()));
        self.counted.insert(key, r);
        r
    }
}

/// A rough count of the automaton states an expression adds (saturating).
fn estimate_states(e: &Expr) -> usize {
    match e {
        Expr::Empty => 0,
        Expr::Bytes(b) => b.len(),
        Expr::Class(c) => 1 + 3 * c.resolved_ranges().len().min(64),
        Expr::Rule(_) => 1,
        Expr::Seq(v) | Expr::Choice(v) => v.iter().map(estimate_states).fold(1usize, |a, b| a.saturating_add(b)),
        Expr::Repeat(r) => {
            let copies = r.max.unwrap_or(r.min).max(1) as usize;
            estimate_states(&r.expr).saturating_mul(copies.min(1 << 20)).saturating_add(2)
        }
    }
}

/// Which rules match the empty string: a fixpoint over "start reaches a final state through
/// references to nullable rules".
fn nullable_rules(fsms: &[Fsm], kinds: &[RuleKind]) -> Vec<bool> {
    let mut nullable = vec![false; fsms.len()];
    loop {
        let mut changed = false;
        for (r, fsm) in fsms.iter().enumerate() {
            if nullable[r] {
                continue;
            }
            let n = match kinds[r] {
                RuleKind::Counted { min: 0, .. } => true,
                // A counted rule's start keeps the body's finality, so this checks the body.
                RuleKind::Counted { .. } | RuleKind::Plain => {
                    let mut seen = vec![false; fsm.state_len()];
                    let mut stack = vec![fsm.start];
                    seen[fsm.start as usize] = true;
                    let mut found = false;
                    while let Some(s) = stack.pop() {
                        if fsm.finals[s as usize] {
                            found = true;
                            break;
                        }
                        for &(l, t) in &fsm.edges[s as usize] {
                            if let Label::Rule(x) = l {
                                if nullable[x as usize] && !seen[t as usize] {
                                    seen[t as usize] = true;
                                    stack.push(t);
                                }
                            }
                        }
                    }
                    found
                }
            };
            if n {
                nullable[r] = true;
                changed = true;
            }
        }
        if !changed {
            return nullable;
        }
    }
}

fn freeze(fsms: Vec<Fsm>, names: Vec<String>, kinds: Vec<RuleKind>, nullable: Vec<bool>, root: u32) -> GrammarFsm {
    let total: usize = fsms.iter().map(|f| f.state_len()).sum();
    let mut g = GrammarFsm {
        rules: Vec::with_capacity(fsms.len()),
        root,
        state_rule: Vec::with_capacity(total),
        finals: Vec::with_capacity(total),
        byte_offsets: Vec::with_capacity(total + 1),
        byte_edges: Vec::new(),
        rule_offsets: Vec::with_capacity(total + 1),
        rule_edges: Vec::new(),
    };
    let mut base = 0u32;
    for (r, fsm) in fsms.iter().enumerate() {
        g.rules.push(FsmRule {
            name: names[r].clone(),
            start: base + fsm.start,
            kind: kinds[r],
            nullable: nullable[r],
        });
        for s in 0..fsm.state_len() {
            g.state_rule.push(r as u32);
            g.finals.push(fsm.finals[s]);
            g.byte_offsets.push(g.byte_edges.len() as u32);
            g.rule_offsets.push(g.rule_edges.len() as u32);
            let mut bytes: Vec<ByteEdge> = Vec::new();
            let mut rules: Vec<RuleEdge> = Vec::new();
            for &(l, t) in &fsm.edges[s] {
                match l {
                    Label::Bytes(lo, hi) => bytes.push(ByteEdge { lo, hi, target: base + t }),
                    Label::Rule(x) => rules.push(RuleEdge { rule: x, target: base + t }),
                    Label::Epsilon => unreachable!("frozen automata have no epsilon edges"),
                }
            }
            bytes.sort_unstable_by_key(|e| (e.lo, e.hi, e.target));
            rules.sort_unstable_by_key(|e| (e.rule, e.target));
            g.byte_edges.extend(bytes);
            g.rule_edges.extend(rules);
        }
        base += fsm.state_len() as u32;
    }
    g.byte_offsets.push(g.byte_edges.len() as u32);
    g.rule_offsets.push(g.rule_edges.len() as u32);
    g
}
