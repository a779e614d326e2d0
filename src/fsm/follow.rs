//! What may come after a rule ends, beyond its first byte (XGrammar §3.2, context expansion):
//! an automaton that over-approximates the language of every possible rest of the input once
//! a rule has ended, with the stack unknown.
//!
//! [`crate::fsm::lookahead`] keeps one byte of that language per rule. This automaton reads a
//! whole byte string: the mask cache gives it the bytes of an uncertain token after the rule
//! could have ended, and a token none of whose ends leaves a readable rest is rejected at
//! entry build instead of being checked at every step.
//!
//! It runs on the grammar's own automata without a stack. A rule's end continues at the return
//! state of *every* rule edge that calls it (the real stack would pick one), and a rule edge
//! enters the callee's start (whose end again continues at every call site). Every run of the
//! pushdown reading is therefore a run here, so a byte string this automaton refuses cannot
//! follow the rule in any context: rejecting on that ground is exact. The converse does not
//! hold (the automaton accepts more), which only leaves a token uncertain.
//!
//! Counted repetitions are read as unbounded (an iteration end may end the rule or start the
//! next iteration), as [`crate::fsm::lookahead`] does; states of `TagDispatch` free text or
//! token-level elements are not followed (the automaton then answers "maybe").

use std::sync::{Mutex, OnceLock, PoisonError};

use super::{FsmRuleId, GrammarFsm, RuleKind, StateId};
use crate::util::hash::{FastMap, FastSet};
use crate::util::sentinel::Sentinel;

/// States a single reading may visit before it answers "maybe": bounds the time one token
/// costs on a huge grammar (the answer stays exact, only less sharp). A visit costs 15–150 ns:
/// 20,000 let the end closure of a string character shared by a length-counted pattern's
/// 1,500 product rules (9,600 states) take 1.5 ms, and each reading from it 0.3 ms, to reject
/// 2 of 30 tokens (`Github_ultra---o62059`).
const MAX_VISITED: usize = 4_096;
/// Sets the shared reading automaton ([`ReadingSets`]) numbers, and states it stores in all,
/// before further steps are computed without being stored (the same answers, no reuse): at
/// most about 2 MiB per grammar (a 1 KiB row per set), where the sets readings meet are
/// usually a few dozen.
const MAX_SETS: usize = 1024;
const MAX_STORED_STATES: usize = 1 << 18;

/// The stack-free automaton of what may follow each rule of a [`GrammarFsm`] (see the module
/// documentation).
#[derive(Debug)]
pub struct FollowAutomaton {
    /// Per rule, the return states of the rule edges that call it.
    returns: Vec<Vec<StateId>>,
    /// Per rule, the closure of the states reached once it has ended (sorted), or `None` when
    /// computing it gave up; computed on first use. Every reading after the rule starts there,
    /// so a rule called from hundreds of places (a character class shared by every step of a
    /// counted string) pays for its closure once, not once per token.
    ends: Vec<OnceLock<Option<Box<[StateId]>>>>,
    /// The state sets readings meet and their steps, shared by every reading: the uncertain
    /// tokens of an entry (and of the grammar's other entries) mostly read the same few rests
    /// (`,`, `}`, `\n  "`) from the same sets, and each step is computed once.
    sets: Mutex<ReadingSets>,
}

/// What a series of readings may still spend, in visited states: lets a caller bound the
/// total work of many readings (a cache entry's uncertain tokens), not only each one.
#[derive(Clone, Copy, Debug)]
pub struct ReadBudget {
    left: usize,
}

impl ReadBudget {
    /// A budget of `states` visited states.
    pub fn new(states: usize) -> Self {
        ReadBudget { left: states }
    }

    /// Whether nothing is left: every further reading answers "maybe" at once.
    pub fn is_spent(&self) -> bool {
        self.left == 0
    }
}

impl FollowAutomaton {
    /// Collects the call sites of every rule of `fsm`.
    pub fn new(fsm: &GrammarFsm) -> Self {
        let mut returns = vec![Vec::new(); fsm.rules().len()];
        for s in fsm.states() {
            for e in fsm.rule_edges(s) {
                returns[e.rule.index()].push(e.target);
            }
        }
        for r in &mut returns {
            r.sort_unstable();
            r.dedup();
        }
        let ends = (0..returns.len()).map(|_| OnceLock::new()).collect();
        FollowAutomaton { returns, ends, sets: Mutex::new(ReadingSets::default()) }
    }

    /// Whether `rest` may be read right after rule `rule` ends, in some context: `false` only
    /// when no stack can read it (the root's end with an empty stack reads nothing more).
    pub fn may_follow(&self, fsm: &GrammarFsm, rule: FsmRuleId, rest: &[u8]) -> bool {
        self.may_follow_within(fsm, rule, rest, &mut ReadBudget::new(usize::MAX))
    }

    /// [`FollowAutomaton::may_follow`], charging the states it scans and visits to `budget`
    /// (each reading is also bounded on its own); once the budget is spent the answer is
    /// "maybe". A step costs the states of the set it steps from and of its closure whether or
    /// not an earlier reading computed it, so an answer does not depend on which readings came
    /// before.
    pub fn may_follow_within(&self, fsm: &GrammarFsm, rule: FsmRuleId, rest: &[u8], budget: &mut ReadBudget) -> bool {
        if rest.is_empty() || !Sentinel::is_text(rest) || budget.is_spent() {
            // Nothing to read, not text (how the parsers treat that is theirs to say), or no
            // budget left.
            return true;
        }
        let Some(start) = self.end_closure(fsm, rule) else {
            return true;
        };
        let limit = MAX_VISITED.min(budget.left);
        let mut visited = 0;
        // A panic while the lock was held (out of memory) leaves numbered sets whole.
        let mut sets = self.sets.lock().unwrap_or_else(PoisonError::into_inner);
        let mut current = Target::Stored(sets.start_of(rule, start));
        let mut gave_up = false;
        for &b in rest {
            if sets.states_of(&current).is_empty() {
                break;
            }
            let (next, cost) = match &current {
                Target::Stored(id) => sets.step(self, fsm, *id, b),
                Target::Unstored(states) => Closure::after(self, fsm, states, b).into_target(),
                Target::GaveUp => unreachable!("a reading stops where it gives up"),
            };
            visited += cost;
            if matches!(next, Target::GaveUp) || visited > limit {
                gave_up = true;
                break;
            }
            current = next;
        }
        budget.left -= visited.min(budget.left);
        gave_up || !sets.states_of(&current).is_empty()
    }

    /// Heap bytes held by the readings' shared sets (see [`FollowAutomaton::may_follow_within`]).
    pub fn memory_usage(&self) -> usize {
        let sets = self.sets.lock().unwrap_or_else(PoisonError::into_inner);
        sets.next.len() * std::mem::size_of::<[u32; 256]>() + sets.stored * 2 * std::mem::size_of::<StateId>()
    }

    /// The return states of the rule edges that call `rule` (sorted, without repeats): where
    /// its callers continue once it has ended.
    pub fn returns(&self, rule: FsmRuleId) -> &[StateId] {
        &self.returns[rule.index()]
    }

    /// Whether the closure of the states reached once `rule` has ended is small enough to
    /// read from: when it is not, every reading after `rule` answers "maybe".
    pub fn can_read_after(&self, fsm: &GrammarFsm, rule: FsmRuleId) -> bool {
        self.end_closure(fsm, rule).is_some()
    }

    /// The states reached once `rule` has ended, closed (see [`FollowAutomaton::ends`]).
    fn end_closure(&self, fsm: &GrammarFsm, rule: FsmRuleId) -> Option<&[StateId]> {
        self.ends[rule.index()]
            .get_or_init(|| {
                let mut reading = Reading::new(fsm, self);
                let mut set = FastSet::default();
                reading.end_rule(rule, &mut Vec::new(), &mut set);
                (!reading.gave_up).then(|| {
                    let mut states: Vec<StateId> = set.into_iter().collect();
                    states.sort_unstable();
                    states.into_boxed_slice()
                })
            })
            .as_deref()
    }
}

/// Where a reading's step leads.
enum Target {
    /// A set numbered in [`ReadingSets`].
    Stored(u32),
    /// A set computed after [`ReadingSets`] filled up (sorted).
    Unstored(Vec<StateId>),
    /// The closure met a state the automaton does not follow, or visited too many states.
    GaveUp,
}

/// The state sets readings have met, numbered, with their steps: a subset automaton of the
/// follow automaton built as readings need it.
#[derive(Debug, Default)]
struct ReadingSets {
    /// Per set, its states (sorted; the empty set is dead).
    states: Vec<Box<[StateId]>>,
    ids: FastMap<Box<[StateId]>, u32>,
    /// Per set and byte: [`ReadingSets::UNKNOWN`], the next set's number, or
    /// [`ReadingSets::GAVE_UP`] with the states the closure visited in the low bits.
    next: Vec<[u32; 256]>,
    /// Per rule met so far, the number of its end closure.
    start: FastMap<FsmRuleId, u32>,
    /// States held by `states`.
    stored: usize,
}

impl ReadingSets {
    const UNKNOWN: u32 = u32::MAX;
    const GAVE_UP: u32 = 1 << 31;

    /// The number of the end closure of `rule` (`closure`).
    fn start_of(&mut self, rule: FsmRuleId, closure: &[StateId]) -> u32 {
        if let Some(&id) = self.start.get(&rule) {
            return id;
        }
        // An end closure is at most `MAX_VISITED` states: stored even when the sets are full,
        // so a reading always starts from a number.
        let id = self.intern(closure.to_vec()).unwrap_or_else(|states| self.push(states));
        self.start.insert(rule, id);
        id
    }

    /// The states of `target` (none once it gave up).
    fn states_of<'s>(&'s self, target: &'s Target) -> &'s [StateId] {
        match target {
            Target::Stored(id) => &self.states[*id as usize],
            Target::Unstored(states) => states,
            Target::GaveUp => &[],
        }
    }

    /// The step of set `id` on `b`, and the states its closure visited.
    fn step(&mut self, follow: &FollowAutomaton, fsm: &GrammarFsm, id: u32, b: u8) -> (Target, usize) {
        let known = self.next[id as usize][b as usize];
        if known == Self::UNKNOWN {
            let closure = Closure::after(follow, fsm, &self.states[id as usize], b);
            if closure.gave_up {
                self.next[id as usize][b as usize] = Self::GAVE_UP | closure.visited as u32;
                return (Target::GaveUp, closure.visited);
            }
            let visited = closure.visited;
            return match self.intern(closure.states) {
                Ok(next) => {
                    self.next[id as usize][b as usize] = next;
                    (Target::Stored(next), visited)
                }
                Err(states) => (Target::Unstored(states), visited),
            };
        }
        if known & Self::GAVE_UP != 0 {
            return (Target::GaveUp, (known & !Self::GAVE_UP) as usize);
        }
        // What computing the step costs (see `Closure::after`), memoized or not.
        (Target::Stored(known), self.states[id as usize].len() + self.states[known as usize].len())
    }

    /// The number of the set `states`, numbered now if it is new, or `Err(states)` when the
    /// sets are full.
    fn intern(&mut self, states: Vec<StateId>) -> Result<u32, Vec<StateId>> {
        if let Some(&id) = self.ids.get(&states[..]) {
            return Ok(id);
        }
        if self.states.len() >= MAX_SETS || self.stored + states.len() > MAX_STORED_STATES {
            return Err(states);
        }
        Ok(self.push(states))
    }

    /// Numbers `states` (not yet numbered).
    fn push(&mut self, states: Vec<StateId>) -> u32 {
        let id = self.states.len() as u32;
        let states = states.into_boxed_slice();
        self.stored += states.len();
        self.ids.insert(states.clone(), id);
        self.states.push(states);
        self.next.push([Self::UNKNOWN; 256]);
        id
    }
}

/// The states reached from a set by one byte, closed.
struct Closure {
    /// Sorted (empty when the closure gave up).
    states: Vec<StateId>,
    /// The states scanned (the set stepped from) and visited (the closure).
    visited: usize,
    gave_up: bool,
}

impl Closure {
    fn after(follow: &FollowAutomaton, fsm: &GrammarFsm, from: &[StateId], b: u8) -> Closure {
        let mut work = Vec::new();
        for &s in from {
            for e in fsm.byte_edges(s) {
                if e.lo <= b && b <= e.hi {
                    work.push(e.target);
                }
            }
        }
        let mut reading = Reading::new(fsm, follow);
        let mut set = FastSet::default();
        reading.close(&mut work, &mut set);
        let mut states: Vec<StateId> = if reading.gave_up { Vec::new() } else { set.into_iter().collect() };
        states.sort_unstable();
        // The scan of `from` is charged too: from a set of thousands of states (everything after a
        // character shared by a counted pattern's product rules) it is most of a step's time.
        Closure { states, visited: from.len() + reading.visited, gave_up: reading.gave_up }
    }

    fn into_target(self) -> (Target, usize) {
        let target = if self.gave_up { Target::GaveUp } else { Target::Unstored(self.states) };
        (target, self.visited)
    }
}

/// The closure of state sets under entering called rules and ending rules, with its budget.
struct Reading<'a> {
    fsm: &'a GrammarFsm,
    follow: &'a FollowAutomaton,
    visited: usize,
    /// The most states this reading may visit.
    limit: usize,
    /// Set when the budget ran out or a state the automaton does not follow was reached.
    gave_up: bool,
    /// The rules whose end this reading has met: their callers' return states go on the work
    /// list once. (Every final state of a rule ends it, and pushing the return states at each
    /// one repeated them once per final state: thousands of pushes for a string character
    /// called from every product rule of a length-counted pattern.)
    ended: FastSet<FsmRuleId>,
}

impl<'a> Reading<'a> {
    fn new(fsm: &'a GrammarFsm, follow: &'a FollowAutomaton) -> Self {
        Reading { fsm, follow, visited: 0, limit: MAX_VISITED, gave_up: false, ended: FastSet::default() }
    }

    /// Adds to `set` the states reached once `rule` has ended (its callers' return states) and
    /// their closure.
    fn end_rule(&mut self, rule: FsmRuleId, work: &mut Vec<StateId>, set: &mut FastSet<StateId>) {
        self.end(rule, work);
        self.close(work, set);
    }

    /// Pushes the return states of `rule` onto `work`, the first time the reading ends it.
    fn end(&mut self, rule: FsmRuleId, work: &mut Vec<StateId>) {
        if self.ended.insert(rule) {
            work.extend_from_slice(&self.follow.returns[rule.index()]);
        }
    }

    /// Adds the states of `work` to `set`, closed under entering called rules and ending rules.
    fn close(&mut self, work: &mut Vec<StateId>, set: &mut FastSet<StateId>) {
        let fsm = self.fsm;
        while let Some(s) = work.pop() {
            if !set.insert(s) {
                continue;
            }
            self.visited += 1;
            if self.visited > self.limit || fsm.is_free_text(s) || fsm.reads_token(s) {
                self.gave_up = true;
                work.clear();
                return;
            }
            for e in fsm.rule_edges(s) {
                work.push(fsm.rule(e.rule).start);
            }
            let rule = fsm.rule_of(s);
            let (ends, repeats) = match fsm.rule(rule).kind {
                RuleKind::Plain => (fsm.is_final(s), false),
                // Out of context any count is possible: an iteration end may end the rule or
                // start the next iteration.
                RuleKind::Counted { .. } => (s == fsm.rule(rule).start || fsm.is_final(s), fsm.is_final(s)),
            };
            if repeats {
                work.push(fsm.rule(rule).start);
            }
            if ends {
                self.end(rule, work);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{build_grammar_fsm, FsmLimits};

    /// The automata of `ebnf` with every rule kept (no inlining), so tests can name them.
    fn fsm(ebnf: &str) -> GrammarFsm {
        let limits = FsmLimits { max_inline_states: 0, ..FsmLimits::default() };
        build_grammar_fsm(&crate::parse_ebnf(ebnf, "root").unwrap(), &limits).unwrap()
    }

    fn rule(fsm: &GrammarFsm, name: &str) -> FsmRuleId {
        FsmRuleId::new(fsm.rules().iter().position(|r| r.name == name).unwrap())
    }

    #[test]
    fn reads_past_the_first_byte_through_every_caller() {
        let g = fsm(r#"root ::= "[" item "]" | "{" item ";" "}"
            item ::= [a-z]+"#);
        let f = FollowAutomaton::new(&g);
        let item = rule(&g, "item");
        assert!(f.may_follow(&g, item, b"]") && f.may_follow(&g, item, b";}"));
        // The one-byte follow set admits `]` and `;`; the second byte decides.
        assert!(!f.may_follow(&g, item, b"]]") && !f.may_follow(&g, item, b";;"));
        assert!(!f.may_follow(&g, g.root(), b"x"), "nothing follows the root");
    }

    #[test]
    fn an_ended_callee_returns_into_its_caller_and_beyond() {
        let g = fsm(r#"root ::= "(" list ")" "!"
            list ::= elem ("," elem)*
            elem ::= "x" | "(" list ")""#);
        let f = FollowAutomaton::new(&g);
        let elem = rule(&g, "elem");
        assert!(f.may_follow(&g, elem, b",x,(x))!"));
        assert!(f.may_follow(&g, elem, b")!"));
        assert!(!f.may_follow(&g, elem, b")!!") && !f.may_follow(&g, elem, b",,"));
    }
}
