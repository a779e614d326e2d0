//! Grammar IR → one automaton per rule, then frozen into a [`GrammarFsm`].
//!
//! A Thompson-style construction that avoids most epsilon edges (choices share their start and
//! end states; see `Builder::expr_to` for the invariant that makes that sound), then
//! [`super::determinize::optimize`] (epsilon removal, suffix merging, subset construction,
//! minimization). Two policies live here:
//!
//! * **repetition**: expanded into the automaton when the expansion is small, else a counted
//!   rule (see [`RuleKind::Counted`]);
//! * **inlining**: a reference to a small rule is replaced by the rule's body (one level per
//!   reference, never a rule into itself, bounded in depth and size). Every rule boundary costs
//!   twice: an Earley completion per byte at run time, and in the mask cache a token that crosses
//!   the boundary is *uncertain* (checked against the parser at run time). In the builtin JSON
//!   grammar, inlining `member`, `value`, `string` and `number` into `object` and `array` makes
//!   tokens like `",` or `"}` readable inside one automaton. Rules only reached through inlined
//!   references get no automaton of their own.

use super::attrs;
use super::class::ClassLowering;
use super::determinize::optimize;
use super::flat::FlatFsm;
use super::nfa::Nfa;
use super::rule_cache::RuleFsmCache;
use super::{tag_dispatch, token, ByteEdge, FsmRule, FsmRuleId, GrammarFsm, Label, RuleEdge, RuleKind, StateId};
use crate::grammar::{Expr, Grammar, GrammarError, Rule, TagDispatch};
use crate::util::hash::FastMap;
use crate::util::scc::strongly_connected_components;
use crate::util::sentinel::Sentinel;

/// Thompson edges added between two charges to the compile's byte budget (a charge is an atomic
/// addition; per edge it would cost more than the edge).
const CHARGE_EDGES: usize = 4096;
use std::borrow::Cow;
use std::sync::Arc;

/// Limits and thresholds of automaton construction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsmLimits {
    /// A repetition is expanded when its upper bound (or lower bound, when unbounded) is at most
    /// this. Default 16: `[0-9]{4}` and `\d{1,3}` expand, `maxLength: 100` becomes a counter.
    pub max_expanded_repeat: u32,
    /// ... and when the expansion adds at most this many automaton states. Default 2,000.
    pub max_expanded_states: usize,
    /// Subset construction gives up past this many states for one rule, or past the states of
    /// the rule's NFA when it has more (the NFA is kept). Default 10,000.
    pub max_dfa_states: usize,
    /// ... or once it has read this many NFA edges, plus 16 per edge of the NFA (large subsets
    /// mean a blow-up is coming; this bounds compile time). Default 200,000.
    pub max_dfa_work: usize,
    /// The most states over all rules. Default 10,000,000.
    pub max_total_states: usize,
    /// A rule is inlined into a reference when its body, with its own inlinable references
    /// expanded, is estimated at most this many states. Default 256; 0 disables inlining.
    pub max_inline_states: usize,
    /// ... and when the copies inlining makes, `(uses - 1) × size`, add at most this many
    /// states (a rule referenced from many places, like the members of an any-order object,
    /// stays a rule), four times as many in a grammar of at most 512 states before inlining
    /// (the builtin JSON grammar). Default 256.
    pub max_inline_duplication: usize,
    /// How many nested rules deep inlining goes. Default 4.
    pub max_inline_depth: usize,
    /// Inlining stops once the automaton being built has this many states. Default 4,000.
    pub max_inlined_rule_states: usize,
}

impl Default for FsmLimits {
    fn default() -> Self {
        FsmLimits {
            max_expanded_repeat: 16,
            max_expanded_states: 2_000,
            max_dfa_states: 10_000,
            max_dfa_work: 200_000,
            max_total_states: 10_000_000,
            max_inline_states: 256,
            max_inline_duplication: 256,
            max_inline_depth: 4,
            max_inlined_rule_states: 4_000,
        }
    }
}

struct Builder<'a> {
    limits: &'a FsmLimits,
    /// Finished rule automata shared with other grammars, if any.
    cache: Option<&'a RuleFsmCache>,
    grammar: &'a Grammar,
    /// The inlining plan: estimated states of each grammar rule's body with its inlinable
    /// references expanded, and whether references to it are inlined; see [`inline_plan`].
    full_size: Vec<usize>,
    inlinable: Vec<bool>,
    /// Per grammar rule, whether it may be read in one automaton with its siblings of a
    /// choice; see [`lexical_rules`] and [`Builder::union_rule`].
    lexical: Vec<bool>,
    /// The union rule made for each set of lexical rules met as alternatives of a choice
    /// (sorted), or `None` when their union is too large to be one.
    unions: FastMap<Vec<u32>, Option<u32>>,
    /// The rule being built and the rules being inlined into it, innermost last.
    inline_stack: Vec<u32>,
    /// Rules some automaton references (and so need their own automaton).
    needed: Vec<bool>,
    queue: Vec<u32>,
    /// Rule names, kinds and bodies, grammar rules first; synthetic rules are appended.
    names: Vec<String>,
    kinds: Vec<RuleKind>,
    /// Bodies not yet built, each with the rules inlined around it where it was written (a
    /// counted rule's body must not inline them again, or a recursive rule would spawn new
    /// counted rules forever).
    pending: Vec<Option<(Cow<'a, Expr>, Vec<u32>)>>,
    states: usize,
    /// The first error met while lowering an expression (`expr` itself cannot fail).
    error: Option<GrammarError>,
    /// Per rule, for dispatch rules, the Aho-Corasick depth of each free-text state (see
    /// `tag_dispatch::DispatchFsm::free_depth`); empty for other rules.
    free_depth: Vec<Vec<u32>>,
    /// Character classes lowered so far (each distinct class is resolved once).
    classes: ClassLowering,
    /// The Thompson automaton of the rule being built (buffers kept between rules).
    nfa: Nfa,
    /// Its edges already charged to the compile's byte budget (`util::cancel::charge_bytes`).
    charged_edges: usize,
    /// The rule ids the finished automata reference (see [`RuleAutomata`]).
    rule_ids: Vec<u32>,
    /// Scratch of [`localize_rules`], indexed by rule id.
    local_of: Vec<u32>,
}

/// The finished automaton of every rule, with *local* rule labels: `Rule(i)` in rule `r`'s
/// automaton means rule `ids[ranges[r].0 + i]`. Local labels let one automaton serve every
/// rule with the same structure, whatever ids the rules it references have (the
/// [`RuleFsmCache`] shares automata across grammars); [`freeze`] writes the global ids.
struct RuleAutomata {
    fsms: Vec<Arc<FlatFsm>>,
    ids: Vec<u32>,
    ranges: Vec<(u32, u32)>,
}

impl RuleAutomata {
    /// The rule that local label `local` of rule `r`'s automaton references.
    #[inline]
    fn global(&self, r: usize, local: u32) -> u32 {
        self.ids[(self.ranges[r].0 + local) as usize]
    }
}

/// Renumbers the rule labels among `labels` by first appearance (`Rule(17)`, `Rule(4)`,
/// `Rule(17)` → `Rule(0)`, `Rule(1)`, `Rule(0)`) and appends the original ids in that order to
/// `ids`. `local_of` is scratch indexed by rule id; it is left as it was found (all unset).
fn localize_rules<'l>(labels: impl Iterator<Item = &'l mut Label>, local_of: &mut Vec<u32>, ids: &mut Vec<u32>) {
    const UNSET: u32 = u32::MAX;
    let base = ids.len();
    for label in labels {
        if let Label::Rule(r) = label {
            let g = *r as usize;
            if local_of.len() <= g {
                local_of.resize(g + 1, UNSET);
            }
            if local_of[g] == UNSET {
                local_of[g] = (ids.len() - base) as u32;
                ids.push(*r);
            }
            *r = local_of[g];
        }
    }
    for &r in &ids[base..] {
        local_of[r as usize] = UNSET;
    }
}

/// Builds the automata of every rule of `grammar`.
///
/// # Errors
/// [`GrammarError::TooLarge`] when the automata exceed [`FsmLimits::max_total_states`].
pub fn build_grammar_fsm(grammar: &Grammar, limits: &FsmLimits) -> Result<GrammarFsm, GrammarError> {
    build_grammar_fsm_cached(grammar, limits, None)
}

/// [`build_grammar_fsm`], taking finished rule automata from `cache` and adding the ones it
/// builds (see [`RuleFsmCache`]); the result is the same as without the cache.
///
/// # Errors
/// As [`build_grammar_fsm`].
pub fn build_grammar_fsm_cached(
    grammar: &Grammar,
    limits: &FsmLimits,
    cache: Option<&RuleFsmCache>,
) -> Result<GrammarFsm, GrammarError> {
    let n = grammar.rules().len();
    let (full_size, inlinable) = inline_plan(grammar, limits);
    let mut b = Builder {
        limits,
        cache,
        grammar,
        full_size,
        inlinable,
        lexical: lexical_rules(grammar),
        unions: FastMap::default(),
        inline_stack: Vec::new(),
        needed: vec![false; n],
        queue: Vec::new(),
        names: grammar.rules().iter().map(|r| r.name.clone()).collect(),
        kinds: vec![RuleKind::Plain; n],
        // Grammar rules' bodies are borrowed: most are only inlined, never built (cloning them
        // all cost ~5% of building a tool-calling grammar's automata).
        pending: grammar.rules().iter().map(|r| Some((Cow::Borrowed(&r.body), Vec::new()))).collect(),
        states: 0,
        error: None,
        free_depth: Vec::new(),
        classes: ClassLowering::take_kept(),
        nfa: Nfa::default(),
        charged_edges: 0,
        rule_ids: Vec::new(),
        local_of: Vec::new(),
    };
    let root = grammar.root().as_u32();
    b.need(root);
    let mut built: Vec<Option<Arc<FlatFsm>>> = vec![None; n];
    let mut ranges: Vec<(u32, u32)> = vec![(0, 0); n];
    while let Some(r) = b.queue.pop() {
        // Per rule: a rule's own work is bounded by the limits, their number is not.
        crate::util::cancel::check_now("automaton construction")?;
        let (body, outer) = b.pending[r as usize].take().expect("every rule is built once");
        b.inline_stack = outer;
        b.inline_stack.push(r);
        let first_id = b.rule_ids.len() as u32;
        let mut fsm = b.rule_fsm(&body, r)?;
        b.inline_stack.clear();
        if let Some(rule) = grammar.rules().get(r as usize).filter(|rule| !rule.attrs.is_empty()) {
            fsm = with_attributes(fsm, rule, limits)?;
        }
        if matches!(b.kinds[r as usize], RuleKind::Counted { .. }) {
            fsm = Arc::new(with_fresh_start(&fsm));
        }
        b.states += fsm.state_len();
        if b.states > limits.max_total_states {
            return Err(GrammarError::TooLarge {
                what: "automaton states",
                actual: b.states,
                limit: limits.max_total_states,
            });
        }
        if built.len() <= r as usize {
            built.resize(r as usize + 1, None);
            ranges.resize(r as usize + 1, (0, 0));
        }
        built[r as usize] = Some(fsm);
        ranges[r as usize] = (first_id, b.rule_ids.len() as u32);
    }
    built.resize(b.names.len(), None);
    ranges.resize(b.names.len(), (0, 0));
    // Rules nothing references (all their uses were inlined) keep their ids with an empty,
    // unreachable automaton.
    let fsms: Vec<Arc<FlatFsm>> = built
        .into_iter()
        .map(|f| {
            f.unwrap_or_else(|| {
                let mut f = FlatFsm::default();
                f.start = f.add_state(false);
                f.end_state();
                Arc::new(f)
            })
        })
        .collect();
    let automata = RuleAutomata { fsms, ids: b.rule_ids, ranges };
    let nullable = nullable_rules(&automata, &b.kinds);
    // Empty iterations never count, so a counted repetition of a nullable body needs no minimum.
    for (r, kind) in b.kinds.iter_mut().enumerate() {
        if let RuleKind::Counted { min, .. } = kind {
            if nullable[r] {
                *min = 0;
            }
        }
    }
    b.classes.keep();
    let mut g = freeze(&automata, b.names, b.kinds, nullable, root);
    for (r, depths) in b.free_depth.into_iter().enumerate() {
        if !depths.is_empty() {
            // The rule's states are numbered from `start - fsm.start` in the frozen automaton.
            let first = StateId::new(g.rules[r].start.index() - automata.fsms[r].start as usize);
            g.free_text.push((first, depths.into_boxed_slice()));
        }
    }
    Ok(g)
}

/// Rule `rule`'s automaton `fsm` with its attributes enforced (`fsm/attrs.rs`); an error for
/// `max_tokens`, which no automaton over text can enforce.
fn with_attributes(fsm: Arc<FlatFsm>, rule: &Rule, limits: &FsmLimits) -> Result<Arc<FlatFsm>, GrammarError> {
    if rule.attrs.max_tokens.is_some() {
        return Err(GrammarError::UnsupportedAttribute {
            rule: rule.name.clone(),
            attribute: "max_tokens",
            reason: "is not enforced: a token budget depends on how the text is tokenized".to_string(),
        });
    }
    if !rule.attrs.restricts_language() {
        return Ok(fsm);
    }
    // A counter product is `max_chars + 1` copies of the automaton, so it gets ten times the
    // state budget of one subset construction.
    let max_states = limits.max_dfa_states.saturating_mul(10);
    Ok(Arc::new(attrs::restrict(&fsm, &rule.attrs, &rule.name, max_states)?))
}

/// Gives a counted rule's automaton a start state without incoming edges, so that "back at the
/// start" always means "a new iteration begins" (see [`RuleKind::Counted`]). The new start keeps
/// the old start's finality: for counted rules, finality marks where an iteration may end.
fn with_fresh_start(fsm: &FlatFsm) -> FlatFsm {
    let mut out = fsm.clone();
    let old = fsm.start;
    out.start = out.add_state(fsm.finals[old as usize]);
    for &(l, t) in fsm.edges(old) {
        out.push_edge(l, t);
    }
    out.end_state();
    out
}

impl Builder<'_> {
    /// Marks rule `r` as referenced by an automaton, scheduling its own automaton.
    fn need(&mut self, r: u32) {
        if self.needed.len() <= r as usize {
            self.needed.resize(r as usize + 1, false);
        }
        if !self.needed[r as usize] {
            self.needed[r as usize] = true;
            self.queue.push(r);
        }
    }

    /// Whether a reference to grammar rule `r` from the automaton being built (now `states`
    /// states) is replaced by `r`'s body.
    fn inlines(&self, r: u32, states: usize) -> bool {
        (r as usize) < self.inlinable.len()
            && self.inlinable[r as usize]
            && self.inline_stack.len() <= self.limits.max_inline_depth
            && !self.inline_stack.contains(&r)
            && states + self.full_size[r as usize] <= self.limits.max_inlined_rule_states
    }

    fn rule_fsm(&mut self, body: &Expr, rule: u32) -> Result<Arc<FlatFsm>, GrammarError> {
        if let Expr::TagDispatch(t) = body {
            return self.dispatch_rule(t, rule).map(Arc::new);
        }
        // The Thompson automaton's buffers are reused from rule to rule (growing them anew for
        // each of thousands of rules was a visible cost).
        let mut nfa = std::mem::take(&mut self.nfa);
        nfa.clear();
        self.charged_edges = 0;
        let start = nfa.add_state();
        nfa.start = start;
        let end = self.expr(&mut nfa, body, start);
        nfa.finals[end as usize] = true;
        self.charge_edges(&nfa);
        let union = self.unions.values().any(|&u| u == Some(rule));
        let built = match self.error.take() {
            Some(e) => Err(e),
            None => self.finished(&mut nfa, union),
        };
        self.nfa = nfa;
        built
    }

    /// The finished automaton of the Thompson automaton `nfa` (whose rule labels this
    /// localizes), from the cache or built; `union` when it is a union rule.
    fn finished(&mut self, nfa: &mut Nfa, union: bool) -> Result<Arc<FlatFsm>, GrammarError> {
        // Checked before the passes over the whole automaton, which one rule can make long
        // (a million-way enum's Thompson automaton has tens of millions of edges).
        crate::util::cancel::check_now("automaton construction")?;
        localize_rules(nfa.edges.iter_mut().map(|(_, l, _)| l), &mut self.local_of, &mut self.rule_ids);
        let (max_states, max_work) = (self.limits.max_dfa_states, self.limits.max_dfa_work);
        let build = |nfa: &Nfa| optimize(nfa, max_states, max_work, union).map_err(GrammarError::from);
        match self.cache {
            Some(cache) => cache.get_or_build(nfa, &[max_states as u64, max_work as u64, union as u64], build),
            None => build(nfa).map(Arc::new),
        }
    }

    /// The automaton of a rule whose body is a `TagDispatch` (see [`tag_dispatch`]): bodies
    /// that are not rule references are lifted into rules of their own.
    fn dispatch_rule(&mut self, t: &TagDispatch, rule: u32) -> Result<FlatFsm, GrammarError> {
        let bodies: Vec<u32> = t
            .bodies
            .iter()
            .enumerate()
            .map(|(i, body)| match body {
                Expr::Rule(r) => {
                    let r = r.index() as u32;
                    self.need(r);
                    r
                }
                _ => self.synthetic_rule(format!("{}$tag{i}", self.names[rule as usize]), body),
            })
            .collect();
        let mut d = tag_dispatch::dispatch_fsm(t, &bodies, &self.names[rule as usize])?;
        localize_rules(d.fsm.edges.iter_mut().flatten().map(|(l, _)| l), &mut self.local_of, &mut self.rule_ids);
        if self.free_depth.len() <= rule as usize {
            self.free_depth.resize(rule as usize + 1, Vec::new());
        }
        self.free_depth[rule as usize] = d.free_depth;
        Ok(FlatFsm::from_fsm(&d.fsm))
    }

    /// A new plain rule for `body`, built later in the current inlining context.
    fn synthetic_rule(&mut self, name: String, body: &Expr) -> u32 {
        let r = self.names.len() as u32;
        self.names.push(name);
        self.kinds.push(RuleKind::Plain);
        self.pending.push(Some((Cow::Owned(body.clone()), self.inline_stack.clone())));
        self.need(r);
        r
    }

    /// Charges the Thompson automaton's edges added since the last charge to the compile's
    /// byte budget; over it, the error is kept and the rest of the rule skipped.
    fn charge_edges(&mut self, nfa: &Nfa) {
        let new = nfa.edges.len() - self.charged_edges;
        self.charged_edges = nfa.edges.len();
        let bytes = new * std::mem::size_of::<(u32, Label, u32)>();
        if let Err(interrupted) = crate::util::cancel::charge_bytes(bytes, "Thompson construction") {
            self.error.get_or_insert(interrupted.into());
        }
    }

    /// Adds `e` to `nfa` starting at `from`; returns the state where it ends.
    fn expr(&mut self, nfa: &mut Nfa, e: &Expr, from: u32) -> u32 {
        self.expr_to(nfa, e, from, None)
    }

    /// Adds `e` to `nfa` from `from` to `to` (a new state when `None`); returns the end.
    ///
    /// The construction needs far fewer epsilon edges and states than Thompson's textbook
    /// one (epsilon removal was a fifth of automaton construction), thanks to one invariant:
    /// **no edge is ever added into `from`**, and the only edges into `to` are those that
    /// finish `e`. So the alternatives of a choice start at the choice's own `from` and end in
    /// its `to` (no fresh state and epsilon pair per alternative), a sequence's last item ends
    /// in `to`, and a star loops on its own fresh hub (built from the hub into the hub).
    /// Sharing `from` is sound because no alternative can come back to it and start another
    /// alternative; sharing `to` because nothing leaves it before the caller continues.
    fn expr_to(&mut self, nfa: &mut Nfa, e: &Expr, from: u32, to: Option<u32>) -> u32 {
        // One rule can be huge (a million-way enum is one `Choice`): the watch is checked per
        // expression, and once it trips the rest of the rule is skipped and the error kept.
        if let Err(interrupted) = crate::util::cancel::check("Thompson construction") {
            self.error.get_or_insert(interrupted.into());
            return end_with_epsilon(nfa, from, to);
        }
        if nfa.edges.len() - self.charged_edges >= CHARGE_EDGES {
            self.charge_edges(nfa);
            if self.error.is_some() {
                return end_with_epsilon(nfa, from, to);
            }
        }
        match e {
            Expr::Empty => end_with_epsilon(nfa, from, to),
            Expr::Bytes(bytes) => {
                if !Sentinel::is_text(bytes) && self.error.is_none() {
                    let rule = self.inline_stack.first().map_or(0, |&r| r as usize);
                    self.error = Some(GrammarError::ReservedByte { rule: self.names[rule].clone() });
                }
                let Some((&last, init)) = bytes.split_last() else { return end_with_epsilon(nfa, from, to) };
                let mut cur = from;
                for &b in init {
                    let next = nfa.add_state();
                    nfa.add_edge(cur, Label::Bytes(b, b), next);
                    cur = next;
                }
                let end = to.unwrap_or_else(|| nfa.add_state());
                nfa.add_edge(cur, Label::Bytes(last, last), end);
                end
            }
            Expr::Class(class) => self.classes.lower(nfa, class, from, to),
            Expr::Rule(r) => {
                let r = r.index() as u32;
                if self.inlines(r, nfa.state_len()) {
                    self.inline_stack.push(r);
                    let grammar = self.grammar;
                    let body = &grammar.rule(crate::grammar::RuleId::new(r as usize)).body;
                    let end = self.expr_to(nfa, body, from, to);
                    self.inline_stack.pop();
                    return end;
                }
                self.need(r);
                rule_edge(nfa, from, r, to)
            }
            Expr::Token(set) => {
                let end = token::lower_token_set(nfa, set, from);
                end_with_epsilon(nfa, end, to)
            }
            Expr::TagDispatch(_) => {
                // A dispatch inside an expression becomes a rule of its own (its automaton is
                // built from the Aho-Corasick automaton, not by Thompson construction).
                let owner = self.inline_stack.first().map_or(0, |&r| r as usize);
                let name = format!("{}$dispatch{}", self.names[owner], self.names.len());
                let r = self.synthetic_rule(name, e);
                rule_edge(nfa, from, r, to)
            }
            Expr::Seq(items) => {
                let Some((last, init)) = items.split_last() else { return end_with_epsilon(nfa, from, to) };
                // `... x R` into a known end, with `R` kept as a reference: the state before `R`
                // is shared by every sequence that ends the same way (a key trie writes
                // `[^"\\...] rest` at each node), and so are the class's continuation states.
                if let (Some(end), Expr::Rule(r), Some((before, init))) = (to, last, init.split_last()) {
                    let r = r.index() as u32;
                    if !self.inlines(r, nfa.state_len()) {
                        self.need(r);
                        let mid = nfa.chain_state(Label::Rule(r), end);
                        let cur = init.iter().fold(from, |cur, x| self.expr(nfa, x, cur));
                        self.expr_to(nfa, before, cur, Some(mid));
                        return end;
                    }
                }
                let cur = init.iter().fold(from, |cur, x| self.expr(nfa, x, cur));
                self.expr_to(nfa, last, cur, to)
            }
            Expr::Choice(alts) => {
                let end = to.unwrap_or_else(|| nfa.add_state());
                let union = self.union_rule(alts, nfa.state_len());
                for alt in alts {
                    let in_union = |(_, members): &(u32, Vec<u32>)| matches!(alt, Expr::Rule(r) if members.binary_search(&(r.index() as u32)).is_ok());
                    if !union.as_ref().is_some_and(in_union) {
                        self.expr_to(nfa, alt, from, Some(end));
                    }
                }
                if let Some((u, _)) = union {
                    rule_edge(nfa, from, u, Some(end));
                }
                end
            }
            Expr::Repeat(rep) => {
                let copies = rep.max.unwrap_or(rep.min);
                // The body's size is only walked for repetitions short enough to expand.
                let per_copy = self.limits.max_expanded_states / copies.max(1) as usize;
                let expand = copies <= self.limits.max_expanded_repeat && self.sized(&rep.expr, per_copy) <= per_copy;
                if expand {
                    self.expand_repeat(nfa, &rep.expr, rep.min, rep.max, from, to)
                } else if rep.max == Some(1) {
                    // A body too large to inline, read at most once: a plain rule of its own,
                    // skipped when optional. A counted rule would do, but an item of one at its
                    // last iteration trusts no cached token (see `cache::counted`).
                    let once = match &rep.expr {
                        Expr::Rule(r) => {
                            self.need(r.index() as u32);
                            r.index() as u32
                        }
                        body => {
                            let name = format!("$once{}", self.names.len());
                            self.synthetic_rule(name, body)
                        }
                    };
                    let end = rule_edge(nfa, from, once, to);
                    if rep.min == 0 {
                        nfa.add_edge(from, Label::Epsilon, end);
                    }
                    end
                } else {
                    let counted = self.counted_rule(&rep.expr, rep.min, rep.max.unwrap_or(u32::MAX));
                    self.need(counted);
                    rule_edge(nfa, from, counted, to)
                }
            }
        }
    }

    /// `inner{min,max}` from `from` to `to` (see [`Builder::expr_to`] for the invariant).
    fn expand_repeat(
        &mut self,
        nfa: &mut Nfa,
        inner: &Expr,
        min: u32,
        max: Option<u32>,
        from: u32,
        to: Option<u32>,
    ) -> u32 {
        let mut cur = from;
        for _ in 0..min {
            cur = self.expr(nfa, inner, cur);
        }
        match max {
            None => {
                // A fresh hub: `cur` may have incoming edges (a loop before this one), and
                // iterations must not mix with them. The body runs from the hub into the hub.
                let hub = nfa.add_state();
                nfa.add_edge(cur, Label::Epsilon, hub);
                self.expr_to(nfa, inner, hub, Some(hub));
                end_with_epsilon(nfa, hub, to)
            }
            Some(max) => {
                if min >= max {
                    return end_with_epsilon(nfa, cur, to);
                }
                let end = to.unwrap_or_else(|| nfa.add_state());
                for _ in min..max - 1 {
                    nfa.add_edge(cur, Label::Epsilon, end);
                    cur = self.expr(nfa, inner, cur);
                }
                nfa.add_edge(cur, Label::Epsilon, end);
                self.expr_to(nfa, inner, cur, Some(end))
            }
        }
    }

    /// The estimated states `e` adds once its inlinable references are expanded, or `cap + 1`
    /// when more than `cap`.
    fn sized(&self, e: &Expr, cap: usize) -> usize {
        sized(e, &self.full_size, &self.inlinable, self.limits, cap)
    }

    /// The rule reading, as one automaton, the alternatives of `alts` that reference lexical
    /// rules kept as references (not inlined into the automaton being built, now `states`
    /// states), with those rules (sorted); `None` unless there are two or more, or when their
    /// union would be larger than an inlined automaton may be.
    ///
    /// Each such rule would be an automaton and an Earley item of its own, and a state of
    /// each a cache entry: a `oneOf` of seven string patterns (`"contains NEW"`, ...) met
    /// after its opening quote built seven loop slices of the vocabulary, one per branch,
    /// 11 ms in one step. Their union, determinized, is one automaton (for unanchored words an
    /// Aho–Corasick automaton) and one slice. The union is made once per set of rules, so
    /// every copy of the choice (an array's first and later items) shares it.
    fn union_rule(&mut self, alts: &[Expr], states: usize) -> Option<(u32, Vec<u32>)> {
        let mut members: Vec<u32> = alts
            .iter()
            .filter_map(|alt| match alt {
                Expr::Rule(r) => Some(r.index() as u32),
                _ => None,
            })
            .filter(|&r| self.lexical[r as usize] && !self.inlines(r, states))
            .collect();
        members.sort_unstable();
        members.dedup();
        if members.len() < 2 {
            return None;
        }
        if let Some(&known) = self.unions.get(&members) {
            return known.map(|u| (u, members));
        }
        let grammar = self.grammar;
        let body = Expr::Choice(members.iter().map(|&r| grammar.rules()[r as usize].body.clone()).collect());
        let cap = self.limits.max_inlined_rule_states;
        if self.sized(&body, cap) > cap {
            self.unions.insert(members, None);
            return None;
        }
        let u = self.names.len() as u32;
        self.names.push(format!("$union{u}"));
        self.kinds.push(RuleKind::Plain);
        // Lexical bodies reference no rule: no inlining context to carry.
        self.pending.push(Some((Cow::Owned(body), Vec::new())));
        self.need(u);
        self.unions.insert(members.clone(), Some(u));
        Some((u, members))
    }

    /// A new counted rule for `e{min,max}`. Each occurrence gets its own rule (no sharing), so
    /// that it has a single use site and the mask cache can read on into its parent.
    fn counted_rule(&mut self, e: &Expr, min: u32, max: u32) -> u32 {
        let r = self.names.len() as u32;
        let bound = if max == u32::MAX { String::new() } else { max.to_string() };
        self.names.push(format!("$repeat{r}{{{min},{bound}}}"));
        self.kinds.push(RuleKind::Counted { min, max });
        self.pending.push(Some((Cow::Owned(e.clone()), self.inline_stack.clone())));
        r
    }
}

/// Ends an expression that reads nothing more at `at`: `at` itself, or an epsilon edge into `to`.
fn end_with_epsilon(nfa: &mut Nfa, at: u32, to: Option<u32>) -> u32 {
    match to {
        Some(t) if t != at => {
            nfa.add_edge(at, Label::Epsilon, t);
            t
        }
        _ => at,
    }
}

/// A reference to rule `r` from `from` into `to` (a new state when `None`).
fn rule_edge(nfa: &mut Nfa, from: u32, r: u32, to: Option<u32>) -> u32 {
    let end = to.unwrap_or_else(|| nfa.add_state());
    nfa.add_edge(from, Label::Rule(r), end);
    end
}

/// The reference graph of a grammar: per rule, the rules its body references, in order of
/// appearance (one flat array, no `Vec` per rule).
struct References {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl References {
    /// The rules `r`'s body references.
    fn of(&self, r: usize) -> &[u32] {
        &self.targets[self.offsets[r] as usize..self.offsets[r + 1] as usize]
    }
}

/// The reference graph, and per rule how many references to it the automata would contain
/// with every small repetition expanded (a repetition expanded into copies references its
/// body once per copy); one walk over every body.
fn references_and_uses(grammar: &Grammar, limits: &FsmLimits) -> (References, Vec<usize>) {
    let n = grammar.rules().len();
    let mut refs = References { offsets: Vec::with_capacity(n + 1), targets: Vec::new() };
    let mut uses = vec![0usize; n];
    refs.offsets.push(0);
    for rule in grammar.rules() {
        walk_references(&rule.body, 1, limits, &mut refs.targets, &mut uses);
        refs.offsets.push(refs.targets.len() as u32);
    }
    (refs, uses)
}

/// Adds to `targets` the references in `e` (pre-order), and to `uses` each counted `mult` times.
fn walk_references(e: &Expr, mult: usize, limits: &FsmLimits, targets: &mut Vec<u32>, uses: &mut [usize]) {
    match e {
        Expr::Rule(r) => {
            targets.push(r.index() as u32);
            uses[r.index()] = uses[r.index()].saturating_add(mult);
        }
        Expr::Repeat(rep) => {
            let copies = rep.max.unwrap_or(rep.min);
            let m = if copies <= limits.max_expanded_repeat { copies.max(1) as usize } else { 1 };
            walk_references(&rep.expr, mult.saturating_mul(m), limits, targets, uses);
        }
        _ => {
            for c in e.children() {
                walk_references(c, mult, limits, targets, uses);
            }
        }
    }
}

/// Per grammar rule, whether its body reads bytes only (no rule reference, token or dispatch)
/// and it has no attributes or lookahead: then its language is regular by itself, and it can
/// be read in one automaton with other such rules (see [`Builder::union_rule`]).
fn lexical_rules(grammar: &Grammar) -> Vec<bool> {
    fn reads_bytes_only(e: &Expr) -> bool {
        match e {
            Expr::Rule(_) | Expr::Token(_) | Expr::TagDispatch(_) => false,
            _ => e.children().iter().all(reads_bytes_only),
        }
    }
    grammar.rules().iter().map(|r| r.attrs.is_empty() && r.lookahead.is_none() && reads_bytes_only(&r.body)).collect()
}

/// Which recursive rules stay rule references. A cycle of references must be cut somewhere,
/// and where matters: the mask cache classifies a token that reads past the end of a rule as
/// uncertain. Cutting at rules that begin and end with a literal (`"{" ... "}"`) makes only
/// the tokens that continue after that closing literal uncertain (`},`), where cutting at a
/// rule ending in a string or number would make most tokens around every value uncertain.
/// Other recursive rules are cut by the inlining stack (a rule is never inlined into itself).
fn keeps_boundary(grammar: &Grammar, refs: &References, comp: &[u32]) -> Vec<bool> {
    let mut comp_size = vec![0usize; comp.len()];
    for &c in comp {
        comp_size[c as usize] += 1;
    }
    grammar
        .rules()
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let recursive = comp_size[comp[i] as usize] > 1 || refs.of(i).contains(&(i as u32));
            let delimited = match &rule.body {
                Expr::Seq(items) => {
                    matches!((items.first(), items.last()), (Some(Expr::Bytes(_)), Some(Expr::Bytes(_))))
                }
                _ => false,
            };
            // A dispatch is one automaton of its own, never copied into its users.
            (recursive && delimited) || matches!(rule.body, Expr::TagDispatch(_))
        })
        .collect()
}

/// The inlining plan: per grammar rule, its estimated size with its inlinable references
/// expanded, and whether references to it are inlined.
///
/// Sizes are computed bottom-up over the reference graph (a reference inside the same cycle
/// counts as one state), so a rule is judged by what inlining it really adds, not by its own
/// body: a chain of small rules that each inline the next no longer multiplies into one large
/// automaton per rule. A rule is inlined when it is not a kept boundary ([`keeps_boundary`]),
/// its expanded size is at most [`FsmLimits::max_inline_states`], and the copies inlining
/// makes, `(uses - 1) × size`, stay within [`FsmLimits::max_inline_duplication`]. Without the
/// last condition, the subset rules of an any-order object (2^n rules, each referencing the
/// members) inlined every member into every subset: 1.5 million states for one MaskBench
/// schema, seconds of subset construction before the first mask.
fn inline_plan(grammar: &Grammar, limits: &FsmLimits) -> (Vec<usize>, Vec<bool>) {
    let n = grammar.rules().len();
    let (refs, uses) = references_and_uses(grammar, limits);
    let comp = strongly_connected_components(n, |r| refs.of(r).iter().map(|&x| x as usize));
    let keep = keeps_boundary(grammar, &refs, &comp);
    let duplication = duplication_limit(grammar, limits);
    // Components are numbered so that successors come first.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&r| comp[r]);
    let mut full_size = vec![1usize; n];
    let mut inlinable = vec![false; n];
    let mut i = 0;
    while i < order.len() {
        let c = comp[order[i]];
        let j = i + order[i..].iter().take_while(|&&r| comp[r] == c).count();
        // Members of one component see each other as plain references (not yet inlinable).
        for &r in &order[i..j] {
            // Sizes past the inlining bound decide nothing (only inlinable rules' are read).
            full_size[r] = sized(&grammar.rules()[r].body, &full_size, &inlinable, limits, limits.max_inline_states);
        }
        for &r in &order[i..j] {
            let size = full_size[r];
            // A rule with attributes keeps its own automaton, where they are enforced.
            inlinable[r] = limits.max_inline_states > 0
                && !keep[r]
                && grammar.rules()[r].attrs.is_empty()
                && size <= limits.max_inline_states
                && uses[r].saturating_sub(1).saturating_mul(size) <= duplication;
        }
        i = j;
    }
    (full_size, inlinable)
}

/// A grammar whose rules hold at most this many states in all (before inlining) is small.
const SMALL_GRAMMAR_STATES: usize = 512;

/// The most states inlining may copy in `grammar`: [`FsmLimits::max_inline_duplication`], four
/// times that for a small grammar. A small grammar's automaton stays small with every copy,
/// and each copy of a rule knows what follows it: in the builtin JSON grammar, a string in an
/// object's value is followed by `,` or `}`, not by anything a value may be followed by, so its
/// cache entry leaves far fewer tokens to check at every new nesting (warm mask p99 halved).
fn duplication_limit(grammar: &Grammar, limits: &FsmLimits) -> usize {
    let n = grammar.rules().len();
    // Every rule is a state at least: a large grammar is told apart before anything is sized.
    if n > SMALL_GRAMMAR_STATES {
        return limits.max_inline_duplication;
    }
    let (unit, plain) = (vec![1usize; n], vec![false; n]);
    let mut states = 0usize;
    for r in grammar.rules() {
        states = states.saturating_add(sized(&r.body, &unit, &plain, limits, SMALL_GRAMMAR_STATES - states));
        if states > SMALL_GRAMMAR_STATES {
            return limits.max_inline_duplication;
        }
    }
    limits.max_inline_duplication.saturating_mul(4)
}

/// The estimated states `e` adds when references to inlinable rules are expanded to their
/// `full_size`, or `cap + 1` when that is more than `cap`: the walk stops there (every decision
/// compares a size with a bound, and a large rule's body need not be walked past it).
fn sized(e: &Expr, full_size: &[usize], inlinable: &[bool], limits: &FsmLimits, cap: usize) -> usize {
    let over = cap.saturating_add(1);
    match e {
        Expr::Rule(r) if inlinable[r.index()] => full_size[r.index()].min(over),
        Expr::Seq(v) | Expr::Choice(v) => {
            let mut total = 1usize;
            for x in v {
                if total > cap {
                    return over;
                }
                total = total.saturating_add(sized(x, full_size, inlinable, limits, cap - total));
            }
            total.min(over)
        }
        Expr::Repeat(r) => {
            let copies = r.max.unwrap_or(r.min).max(1) as usize;
            // Large repetitions become counted rules: a reference here (see `Builder::expr`).
            if copies > limits.max_expanded_repeat as usize {
                return 2.min(over);
            }
            let per_copy = limits.max_expanded_states / copies;
            let body = sized(&r.expr, full_size, inlinable, limits, per_copy);
            match body > per_copy {
                true => 2.min(over),
                false => (body * copies).saturating_add(2).min(over),
            }
        }
        _ => estimate_states(e).min(over),
    }
}

/// A rough count of the automaton states an expression adds (saturating), references
/// counting one.
fn estimate_states(e: &Expr) -> usize {
    match e {
        Expr::Empty => 0,
        Expr::Bytes(b) => b.len(),
        Expr::Class(c) => 1 + 3 * c.resolved_range_count().min(64),
        Expr::Rule(_) => 1,
        Expr::Token(_) => 6,
        Expr::TagDispatch(t) => {
            let text: usize = t
                .triggers
                .iter()
                .chain(&t.excludes)
                .map(|x| match x {
                    crate::grammar::Trigger::Text(b) => b.len(),
                    crate::grammar::Trigger::Token(_) => 5,
                })
                .sum();
            text.saturating_add(t.stop_strings.iter().map(Vec::len).sum()).saturating_add(8)
        }
        Expr::Seq(v) | Expr::Choice(v) => v.iter().map(estimate_states).fold(1usize, |a, b| a.saturating_add(b)),
        Expr::Repeat(r) => {
            let copies = r.max.unwrap_or(r.min).max(1) as usize;
            estimate_states(&r.expr).saturating_mul(copies.min(1 << 20)).saturating_add(2)
        }
    }
}

/// Which rules match the empty string: a fixpoint over "start reaches a final state through
/// references to nullable rules".
fn nullable_rules(automata: &RuleAutomata, kinds: &[RuleKind]) -> Vec<bool> {
    let fsms = &automata.fsms;
    let mut nullable = vec![false; fsms.len()];
    // One search's buffers for every rule and round (a grammar has thousands of rules).
    let mut seen: Vec<bool> = Vec::new();
    let mut stack: Vec<u32> = Vec::new();
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
                    seen.clear();
                    seen.resize(fsm.state_len(), false);
                    stack.clear();
                    stack.push(fsm.start);
                    seen[fsm.start as usize] = true;
                    let mut found = false;
                    while let Some(s) = stack.pop() {
                        if fsm.finals[s as usize] {
                            found = true;
                            break;
                        }
                        for &(l, t) in fsm.edges(s) {
                            if let Label::Rule(x) = l {
                                if nullable[automata.global(r, x) as usize] && !seen[t as usize] {
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

fn freeze(
    automata: &RuleAutomata,
    names: Vec<String>,
    kinds: Vec<RuleKind>,
    nullable: Vec<bool>,
    root: u32,
) -> GrammarFsm {
    let fsms = &automata.fsms;
    let total: usize = fsms.iter().map(|f| f.state_len()).sum();
    // Most edges are byte edges: room for all of them there (counting the rule edges apart
    // would read every automaton once more).
    let edges: usize = fsms.iter().map(|f| f.edge_len()).sum();
    let mut g = GrammarFsm {
        rules: Vec::with_capacity(fsms.len()),
        root: FsmRuleId::from_u32(root),
        state_rule: Vec::with_capacity(total),
        finals: Vec::with_capacity(total),
        byte_offsets: Vec::with_capacity(total + 1),
        byte_edges: Vec::with_capacity(edges),
        rule_offsets: Vec::with_capacity(total + 1),
        rule_edges: Vec::new(),
        token_sets: Vec::new(),
        free_text: Vec::new(),
    };
    let mut base = 0u32;
    // Per-state scratch, reused (one allocation per state was a visible cost).
    let mut bytes: Vec<ByteEdge> = Vec::new();
    let mut rules: Vec<RuleEdge> = Vec::new();
    for (r, (fsm, name)) in fsms.iter().zip(names).enumerate() {
        // The rule's local state `s` becomes the global state `base + s`.
        let global = |s: u32| StateId::from_u32(base + s);
        g.rules.push(FsmRule { name, start: global(fsm.start), kind: kinds[r], nullable: nullable[r] });
        for s in 0..fsm.state_len() {
            g.state_rule.push(FsmRuleId::new(r));
            g.finals.push(fsm.finals[s]);
            g.byte_offsets.push(g.byte_edges.len() as u32);
            g.rule_offsets.push(g.rule_edges.len() as u32);
            bytes.clear();
            rules.clear();
            for &(l, t) in fsm.edges(s as u32) {
                match l {
                    Label::Bytes(lo, hi) => bytes.push(ByteEdge { lo, hi, target: global(t) }),
                    Label::Rule(x) => {
                        rules.push(RuleEdge { rule: FsmRuleId::from_u32(automata.global(r, x)), target: global(t) })
                    }
                    Label::Epsilon => unreachable!("frozen automata have no epsilon edges"),
                }
            }
            bytes.sort_unstable_by_key(|e| (e.lo, e.hi, e.target));
            rules.sort_unstable_by_key(|e| (e.rule, e.target));
            g.byte_edges.extend_from_slice(&bytes);
            g.rule_edges.extend_from_slice(&rules);
        }
        base += fsm.state_len() as u32;
    }
    g.byte_offsets.push(g.byte_edges.len() as u32);
    g.rule_offsets.push(g.rule_edges.len() as u32);
    g.token_sets = token::token_sets(&g);
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::{GrammarBuilder, RuleId};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// A symbol of a test word: a byte, or a complete match of rule `one` (when it is not
    /// inlined).
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Sym {
        Byte(u8),
        One,
    }

    /// The body of rule `one` in the test grammars.
    fn one_body() -> Expr {
        Expr::Choice(vec![Expr::literal("c"), Expr::literal("ab")])
    }

    /// Random rule bodies over bytes `a..=c` (literals, classes, one negated), references to
    /// rule `one`, the empty string, sequences, choices and small repetitions (expanded).
    fn body() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            Just(Expr::Empty),
            prop::collection::vec(b'a'..=b'c', 1..3).prop_map(Expr::Bytes),
            Just(Expr::class([(b'a' as u32, b'b' as u32)], false)),
            Just(Expr::class([(b'b' as u32, b'b' as u32)], true)),
            Just(Expr::Rule(RuleId::new(1))),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Expr::Seq),
                prop::collection::vec(inner.clone(), 1..4).prop_map(Expr::Choice),
                (inner, 0u32..3, prop::option::of(0u32..3)).prop_map(|(e, min, extra)| Expr::repeat(
                    e,
                    min,
                    extra.map(|x| min + x)
                )),
            ]
        })
    }

    /// The positions where a match of `e` starting at `i` in `word` can end (the reference
    /// semantics, straight from the expression).
    fn ends(e: &Expr, word: &[Sym], i: usize, inline: bool) -> BTreeSet<usize> {
        let byte = |k: usize| match word.get(k) {
            Some(Sym::Byte(b)) => Some(*b as u32),
            _ => None,
        };
        match e {
            Expr::Empty => BTreeSet::from([i]),
            Expr::Bytes(bs) => {
                let hit = bs.iter().enumerate().all(|(k, &b)| byte(i + k) == Some(b as u32));
                if hit {
                    BTreeSet::from([i + bs.len()])
                } else {
                    BTreeSet::new()
                }
            }
            Expr::Class(c) => match byte(i) {
                Some(b) if c.resolved_ranges().iter().any(|&(lo, hi)| lo <= b && b <= hi) => BTreeSet::from([i + 1]),
                _ => BTreeSet::new(),
            },
            Expr::Rule(_) if inline => ends(&one_body(), word, i, inline),
            Expr::Rule(_) if word.get(i) == Some(&Sym::One) => BTreeSet::from([i + 1]),
            Expr::Rule(_) => BTreeSet::new(),
            Expr::Seq(items) => items
                .iter()
                .fold(BTreeSet::from([i]), |cur, x| cur.iter().flat_map(|&j| ends(x, word, j, inline)).collect()),
            Expr::Choice(alts) => alts.iter().flat_map(|x| ends(x, word, i, inline)).collect(),
            Expr::Repeat(r) => {
                let max = r.max.map_or(r.min as usize + word.len() + 1, |m| m as usize);
                let mut cur = BTreeSet::from([i]);
                let mut out = BTreeSet::new();
                for k in 0..=max {
                    if k >= r.min as usize {
                        out.extend(cur.iter().copied());
                    }
                    cur = cur.iter().flat_map(|&j| ends(&r.expr, word, j, inline)).collect();
                }
                out
            }
            other => unreachable!("not generated: {other:?}"),
        }
    }

    /// Whether the automaton of rule 0 accepts `word` (NFA simulation over global states).
    fn accepts(fsm: &GrammarFsm, word: &[Sym]) -> bool {
        let mut cur = vec![fsm.rules()[0].start];
        for sym in word {
            let mut next: Vec<StateId> = Vec::new();
            for &s in &cur {
                match *sym {
                    Sym::Byte(b) => {
                        next.extend(fsm.byte_edges(s).iter().filter(|e| e.lo <= b && b <= e.hi).map(|e| e.target))
                    }
                    Sym::One => {
                        next.extend(fsm.rule_edges(s).iter().filter(|e| e.rule == FsmRuleId::new(1)).map(|e| e.target))
                    }
                }
            }
            next.sort_unstable();
            next.dedup();
            cur = next;
        }
        cur.iter().any(|&s| fsm.is_final(s))
    }

    fn words(max_len: usize) -> Vec<Vec<Sym>> {
        crate::fsm::all_words(&[Sym::Byte(b'a'), Sym::Byte(b'b'), Sym::Byte(b'c'), Sym::One], max_len)
    }

    /// The shape of a key trie (`"p" [^a"] rest | "q" [^b"] rest | ...`): the Unicode classes
    /// share their continuation states and the state before `rest`, and each branch still
    /// reads exactly its own class, one to four bytes long.
    #[test]
    fn classes_before_a_shared_reference_keep_their_own_language() {
        let classes = [
            ("p", Expr::class([(b'a' as u32, b'a' as u32), (b'"' as u32, b'"' as u32)], true)),
            ("q", Expr::class([(b'b' as u32, b'b' as u32), (0xE9, 0xE9)], true)),
            ("r", Expr::class([(0x80, 0x7FF), (0x1F600, 0x1F600)], false)),
            ("s", Expr::class([(0x20AC, 0x10FFFF)], false)),
        ];
        let mut b = GrammarBuilder::new();
        let root = b.rule("root");
        let one = b.rule("one");
        let alts = classes
            .iter()
            .map(|(p, c)| Expr::Seq(vec![Expr::literal(p), c.clone(), Expr::Rule(RuleId::new(1))]))
            .collect();
        b.define(root, Expr::Choice(alts), None).expect("defined once");
        b.define(one, one_body(), None).expect("defined once");
        let grammar = b.build("root").expect("a valid grammar");
        let limits = FsmLimits { max_inline_states: 0, ..FsmLimits::default() };
        let fsm = build_grammar_fsm(&grammar, &limits).expect("small automata");
        for (p, class) in &classes {
            let Expr::Class(c) = class else { unreachable!() };
            for ch in ['a', 'b', '"', 'x', '\u{e9}', '\u{7ff}', '\u{800}', '\u{20ac}', '\u{1f600}', '\u{10ffff}'] {
                let inside = c.resolved_ranges().iter().any(|&(lo, hi)| lo <= ch as u32 && ch as u32 <= hi);
                let mut word: Vec<Sym> = p.bytes().map(Sym::Byte).collect();
                word.extend(ch.to_string().bytes().map(Sym::Byte));
                assert!(!accepts(&fsm, &word), "{p} {ch:?} without the reference");
                word.push(Sym::One);
                assert_eq!(accepts(&fsm, &word), inside, "{p} {ch:?}");
            }
        }
    }

    /// The size the capped walk must agree with: every node walked, as the inlining plan sized
    /// rules before the cap.
    fn uncapped_size(e: &Expr, full_size: &[usize], inlinable: &[bool], limits: &FsmLimits) -> usize {
        match e {
            Expr::Rule(r) if inlinable[r.index()] => full_size[r.index()],
            Expr::Seq(v) | Expr::Choice(v) => v
                .iter()
                .map(|x| uncapped_size(x, full_size, inlinable, limits))
                .fold(1usize, |a, b| a.saturating_add(b)),
            Expr::Repeat(r) => {
                let copies = r.max.unwrap_or(r.min).max(1) as usize;
                let expanded = uncapped_size(&r.expr, full_size, inlinable, limits).saturating_mul(copies);
                match copies > limits.max_expanded_repeat as usize || expanded > limits.max_expanded_states {
                    true => 2,
                    false => expanded + 2,
                }
            }
            _ => estimate_states(e),
        }
    }

    /// The ends of the matches of rule `r` that start at `i` in `text` (rule edges recurse;
    /// the test grammars are not left-recursive).
    fn rule_ends(fsm: &GrammarFsm, r: FsmRuleId, text: &[u8], i: usize) -> BTreeSet<usize> {
        let mut seen = BTreeSet::from([(fsm.rules()[r.index()].start, i)]);
        let mut stack: Vec<(StateId, usize)> = seen.iter().copied().collect();
        let mut ends = BTreeSet::new();
        while let Some((s, at)) = stack.pop() {
            if fsm.is_final(s) {
                ends.insert(at);
            }
            let mut next: Vec<(StateId, usize)> = Vec::new();
            if let Some(&b) = text.get(at) {
                next.extend(fsm.byte_edges(s).iter().filter(|e| e.lo <= b && b <= e.hi).map(|e| (e.target, at + 1)));
            }
            for e in fsm.rule_edges(s) {
                next.extend(rule_ends(fsm, e.rule, text, at).into_iter().map(|end| (e.target, end)));
            }
            for n in next {
                if seen.insert(n) {
                    stack.push(n);
                }
            }
        }
        ends
    }

    /// A choice of lexical rules kept as references (here with inlining off; in schemas, rules
    /// too large to copy into each use) is read by one union rule, shared by both copies of
    /// the choice. Its automaton is deterministic within 100 states, though plain subset
    /// construction blows up on a union of unanchored words (a subset per set of words read).
    #[test]
    fn a_choice_of_lexical_rules_is_one_deterministic_union() {
        let words = ["cat", "dog", "emu", "fox", "gnu", "hen"];
        let refs = "w0 | w1 | w2 | w3 | w4 | w5";
        let mut text = format!("root ::= ({refs} | \"z\") \"!\" ({refs})\n");
        for (i, w) in words.iter().enumerate() {
            text += &format!("w{i} ::= [a-z]* \"{w}\" [a-z]*\n");
        }
        let grammar = crate::parse_ebnf(&text, "root").expect("a valid grammar");
        let limits = FsmLimits { max_inline_states: 0, max_dfa_states: 100, ..FsmLimits::default() };
        let fsm = build_grammar_fsm(&grammar, &limits).expect("small automata");
        let unions: Vec<FsmRuleId> =
            (0..fsm.rules().len()).filter(|&r| fsm.rules()[r].name.starts_with("$union")).map(FsmRuleId::new).collect();
        assert_eq!(unions.len(), 1, "one union for both copies");
        // A union larger than an inlined automaton may be is not made.
        let small = FsmLimits { max_inlined_rule_states: 40, ..limits.clone() };
        let separate = build_grammar_fsm(&grammar, &small).expect("small automata");
        assert!(separate.rules().iter().all(|r| !r.name.starts_with("$union")), "no union past the size limit");
        for s in fsm.states().filter(|&s| fsm.rule_of(s) == unions[0]) {
            let edges = fsm.byte_edges(s);
            assert!(edges.windows(2).all(|w| w[0].hi < w[1].lo), "a deterministic union");
        }
        let has_word = |t: &str| t.bytes().all(|b| b.is_ascii_lowercase()) && words.iter().any(|w| t.contains(w));
        let root = FsmRuleId::new(grammar.root().index());
        for left in ["", "z", "zz", "cat", "xdogy", "fo", "hencat", "ca", "emuemu"] {
            for right in ["", "gnu", "agnub", "he", "z", "foxy", "catdog"] {
                let t = format!("{left}!{right}");
                let want = (left == "z" || has_word(left)) && has_word(right);
                assert_eq!(rule_ends(&fsm, root, t.as_bytes(), 0).contains(&t.len()), want, "{t}");
            }
        }
    }

    /// A rule used four times, of 101 states: its three copies (303 states) pass the
    /// duplication limit of a small grammar only.
    #[test]
    fn small_grammars_may_copy_more_when_inlining() {
        let plan = |filler_len: usize| {
            let mut b = GrammarBuilder::new();
            let (root, one, filler) = (b.rule("root"), b.rule("one"), b.rule("filler"));
            let mut uses = vec![Expr::Rule(RuleId::new(1)); 4];
            uses.push(Expr::Rule(RuleId::new(2)));
            b.define(root, Expr::Seq(uses), None).expect("defined once");
            b.define(one, Expr::literal("x".repeat(101)), None).expect("defined once");
            b.define(filler, Expr::literal("y".repeat(filler_len)), None).expect("defined once");
            let grammar = b.build("root").expect("a valid grammar");
            inline_plan(&grammar, &FsmLimits::default()).1
        };
        assert!(plan(1)[1], "a grammar of about 100 states copies the rule");
        assert!(!plan(600)[1], "a grammar of about 700 states keeps it a rule");
        let limits = FsmLimits { max_inline_duplication: 0, ..FsmLimits::default() };
        let mut b = GrammarBuilder::new();
        let (root, one) = (b.rule("root"), b.rule("one"));
        b.define(root, Expr::Seq(vec![Expr::Rule(RuleId::new(1)); 2]), None).expect("defined once");
        b.define(one, Expr::literal("ab"), None).expect("defined once");
        let grammar = b.build("root").expect("a valid grammar");
        assert!(!inline_plan(&grammar, &limits).1[1], "no copies allowed stays no copies in a small grammar");
    }

    #[test]
    fn rule_labels_are_numbered_by_first_appearance() {
        let mut labels =
            vec![Label::Rule(17), Label::Bytes(b'a', b'z'), Label::Rule(4), Label::Rule(17), Label::Epsilon];
        let (mut local_of, mut ids) = (vec![u32::MAX; 3], vec![99]);
        localize_rules(labels.iter_mut(), &mut local_of, &mut ids);
        assert_eq!(labels, [Label::Rule(0), Label::Bytes(b'a', b'z'), Label::Rule(1), Label::Rule(0), Label::Epsilon]);
        assert_eq!(ids, [99, 17, 4], "appended after what was there");
        assert!(local_of.iter().all(|&l| l == u32::MAX), "the scratch is left unset");
        let automata = RuleAutomata { fsms: Vec::new(), ids, ranges: vec![(1, 3)] };
        assert_eq!((automata.global(0, 0), automata.global(0, 1)), (17, 4));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// A capped size is the full size, or `cap + 1` when that is larger: stopping the walk
        /// at the cap changes no decision.
        #[test]
        fn a_capped_size_is_the_size_up_to_the_cap(e in body(), cap in 0usize..40, one_inlined in any::<bool>()) {
            let limits = FsmLimits { max_expanded_states: 24, ..FsmLimits::default() };
            let (full_size, inlinable) = (vec![1, 7], vec![false, one_inlined]);
            let full = uncapped_size(&e, &full_size, &inlinable, &limits);
            prop_assert_eq!(sized(&e, &full_size, &inlinable, &limits, usize::MAX - 1), full);
            prop_assert_eq!(sized(&e, &full_size, &inlinable, &limits, cap), full.min(cap + 1));
        }

        /// The construction (choices sharing their start and end states, stars looping on one
        /// hub, repetitions without a fresh state per copy) and the passes after it accept
        /// exactly the language of the expression, with references inlined or kept.
        #[test]
        fn rule_automata_accept_the_language_of_their_body(e in body(), inline in any::<bool>()) {
            let mut b = GrammarBuilder::new();
            let root = b.rule("root");
            let one = b.rule("one");
            b.define(root, e.clone(), None).expect("defined once");
            b.define(one, one_body(), None).expect("defined once");
            let grammar = b.build("root").expect("a valid grammar");
            let limits = FsmLimits { max_inline_states: if inline { 256 } else { 0 }, ..FsmLimits::default() };
            let fsm = build_grammar_fsm(&grammar, &limits).expect("small automata");
            for w in words(4) {
                let want = ends(&e, &w, 0, inline).contains(&w.len());
                prop_assert_eq!(accepts(&fsm, &w), want, "{:?} on {:?}", e, w);
            }
        }
    }
}
