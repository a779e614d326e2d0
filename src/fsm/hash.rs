//! The hierarchical structural hash of rule automata: the cross-grammar half of a mask-cache key
//! (XGrammar-2 §3.3, Algorithms 1 and 2, appendices A and C).
//!
//! This module owns the FSM structural hash; nothing else in the crate hashes automata
//! structure. [`hash_rules`] gives every rule of a [`GrammarFsm`] an optional 64-bit hash and
//! every state a canonical number within its rule, so that a cache entry computed for state `s`
//! of one grammar can be found again from any other grammar with a structurally equal rule: the
//! key is [`FsmHashes::state_key`] `(rule hash, canonical state)`, plus a hash of the lookahead
//! the entry was built with (not computed here).
//!
//! # Canonical numbering
//!
//! Global state ids depend on where a rule sits in its grammar and on the order in which the
//! builder happened to create states, so they cannot be part of a key. Instead each rule's
//! states are numbered by a breadth-first search from the rule's start, visiting the edges of a
//! state in a fixed order: byte edges by `(lo, hi)` (as stored), then rule edges by the
//! referenced rule's hash, then target. A state gets its number when first seen, so the start is
//! always 0. For a deterministic automaton (the usual case: see [`crate::fsm`]) the order of the
//! edges of a state depends only on their labels, so two isomorphic automata get the same
//! numbering whatever their global ids. States not reachable from their rule's start get
//! [`UNREACHABLE`]: the parser never holds an item there.
//!
//! # What is hashed
//!
//! The hash of a rule is xxh3-64 of an explicit, length-prefixed byte encoding of: a format
//! version, the rule kind (plain, or counted with `min` and `max`), the nullable flag, then for
//! every reachable state in canonical order its finality, its byte edges `(lo, hi, canonical
//! target)` and its rule edges `(label, canonical target)`, where the label is the referenced
//! rule's hash, and finally the number of states. (Frozen automata have no epsilon edges, so
//! Algorithm 1's epsilon case does not arise.) Every list is preceded by its length and every
//! field has a fixed width, so the encoding decodes uniquely: **equal hash ⇒ equal structure**
//! (barring a 64-bit collision), where structure means everything the parser can reach from the
//! rule, referenced rules included, up to renumbering. Rule names and global ids never enter the
//! hash, so renamed and reordered rules hash equal.
//!
//! # Order: leaves, acyclic part, simple cycles
//!
//! A rule's hash needs the hashes of the rules it references, so rules are processed by
//! strongly connected components of the reference graph (rule `a` → rule `b` when a state
//! reachable in `a` has an edge referencing `b`; `util::scc`, an iterative Tarjan
//! search), every component after all components it references. A component that is a single rule
//! without a self-reference is hashed directly (the leaves and the acyclic part of the graph).
//!
//! A **simple cycle** is a cyclic component in which every member references exactly one
//! distinct member of the component (counting rules, not edges: `a ::= "(" a ")" | a a | "x"`
//! is a simple cycle of length 1). Such a component is one directed cycle `m0 → m1 → … → m0`,
//! and every in-component edge of a member points at its successor. Each member is first hashed
//! *locally*, with a placeholder label for its in-component edges (its references outside the
//! component are already hashed); the local hash and the placeholder determine the member's
//! automaton given its successor's. The final hash of a member must then depend on the whole
//! cycle, in order, starting at the member: that is Algorithm 2 of appendix A, which hashes the
//! rotation `L[i], L[i+1], …, L[i-1]` of the local hashes for each member `i`. That costs
//! `O(k²)` for a cycle of `k` rules; this module computes the same information in `O(k)`: the
//! cycle hash `C` is the hash of the lexicographically least rotation of `L`, reduced to its
//! smallest period `p` (so that `[A, B, A, B]` and `[A, B]`, which unfold to the same
//! structure, agree), and member `i` gets the hash of `(C, d)` where `d` is its offset from the
//! least rotation modulo `p`. Equal member hashes imply equal `C` and `d`, hence equal rotations
//! starting at the two members, hence equal unfolded structure.
//!
//! # What is not hashed, and why that is still correct
//!
//! Rules in a cyclic component that is not a simple cycle (the builtin JSON grammar's
//! `value → object → member → value` with `value → array → value`), and every rule referencing
//! such a rule directly or indirectly, get `None`: hashing them soundly needs a canonical form of
//! a general graph, which is not worth its cost here. A rule without a hash is simply not shared
//! across grammars: its cache entries are built per grammar, exactly as without a pool.
//!
//! The hash may also differ for structures that are equal (appendix C): when a state has two
//! rule edges whose referenced rules hash equal (duplicated rules), or two byte edges with the
//! same range (a nondeterministic automaton), the tie is broken by global target id; and a rule
//! outside a cycle can be structurally equal to a cycle member (`c ::= "x" b` next to the cycle
//! `a ::= "x" b`, `b ::= "y" a`) yet hash differently, because one is hashed through the cycle
//! and the other through its references. Both only cost a missed share, never a wrong one.
//!
//! # Cost
//!
//! Linear in states + edges (plus sorting the rule edges of each state): one pass for
//! reachability and the reference graph, one iterative Tarjan pass, one breadth-first encoding
//! per rule. No recursion anywhere, so deep reference chains from untrusted schemas cannot
//! overflow the stack. A 50-tool grammar from the tool corpus (289 rules, 8,862 states, 12,108
//! edges) hashes in about 170 µs (median; `cargo bench --bench fsm_hash`).

use xxhash_rust::xxh3::xxh3_64;

use super::{FsmRuleId, GrammarFsm, RuleKind, StateId};
use crate::util::scc::strongly_connected_components;

/// The canonical number of a state that is not reachable from its rule's start.
pub const UNREACHABLE: u32 = u32::MAX;

/// Version of the encoding: bump it whenever the encoding changes.
const VERSION: u8 = 1;
/// Domain tags: the first bytes after the version, so encodings of different kinds never meet.
const DOMAIN_RULE: u8 = 0;
const DOMAIN_CYCLE: u8 = 1;
const DOMAIN_MEMBER: u8 = 2;
const DOMAIN_ROOTED: u8 = 3;

/// The buffers of [`FsmHashes::rooted_hash`], kept per thread: a walk allocates nothing once
/// they have grown to its rule's size (a hash map grown per call took three quarters of its
/// time). A state's number is kept by its offset in its rule, valid where `seen` holds the
/// current walk's `mark`. They stay at the largest rule walked on the thread: 8 bytes per
/// state of that rule.
#[derive(Default)]
struct RootedScratch {
    number: Vec<u32>,
    seen: Vec<u32>,
    mark: u32,
    queue: Vec<StateId>,
    buf: Vec<u8>,
    edges: Vec<(u64, StateId)>,
}

impl RootedScratch {
    /// Starts a walk of a rule of `states` states.
    fn begin(&mut self, states: usize) {
        if self.seen.len() < states {
            self.seen.resize(states, 0);
            self.number.resize(states, 0);
        }
        self.mark = self.mark.wrapping_add(1);
        if self.mark == 0 {
            // Marks wrapped around: forget them all.
            self.seen.fill(0);
            self.mark = 1;
        }
        self.queue.clear();
        self.buf.clear();
    }
}

thread_local! {
    static ROOTED_SCRATCH: std::cell::RefCell<RootedScratch> = std::cell::RefCell::default();
}

/// Structural hashes of the rules of a [`GrammarFsm`] and canonical numbers of its states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsmHashes {
    rule_hash: Vec<Option<u64>>,
    canonical: Vec<u32>,
    state_rule: Vec<FsmRuleId>,
}

impl FsmHashes {
    /// The structural hash of rule `r`, or `None` when it cannot be hashed soundly (it lies on,
    /// or references, a reference cycle that is not a simple cycle).
    ///
    /// # Panics
    /// When `r` is not a rule of the hashed automata.
    #[inline]
    pub fn rule_hash(&self, r: FsmRuleId) -> Option<u64> {
        self.rule_hash[r]
    }

    /// The canonical number of state `s` within its rule: its breadth-first visiting order from
    /// the rule's start over sorted edges (the start is 0), or [`UNREACHABLE`]. The number is
    /// comparable across grammars only for rules with a hash.
    ///
    /// # Panics
    /// When `s` is not a state of the hashed automata.
    #[inline]
    pub fn canonical_state(&self, s: StateId) -> u32 {
        self.canonical[s]
    }

    /// The cross-grammar key of state `s`: its rule's hash and its canonical number, or `None`
    /// when the rule has no hash or `s` is unreachable.
    ///
    /// # Panics
    /// When `s` is not a state of the hashed automata.
    #[inline]
    pub fn state_key(&self, s: StateId) -> Option<(u64, u32)> {
        let c = self.canonical[s];
        let h = self.rule_hash[self.state_rule[s]]?;
        (c != UNREACHABLE).then_some((h, c))
    }

    /// The structural hash of what the parser can reach from state `s` inside its rule: the
    /// sub-automaton of the states reachable from `s` (numbered breadth-first from `s`, encoded
    /// as rules are), with referenced rules labelled by their hashes. `None` when a referenced
    /// rule has no hash.
    ///
    /// For a state of a plain rule this is finer than [`FsmHashes::state_key`]: two states
    /// whose futures are equal get equal hashes even when the rules around them differ (the
    /// same tool-parameter object inlined into two different request automata). It does not
    /// cover the rule's start, so it is not a sound key for states of counted repetitions
    /// (which loop back to the start); use `state_key` there. Linear in the reachable part.
    ///
    /// When more than `limit` states are reachable, the key falls back to the whole rule's
    /// ([`FsmHashes::state_key`], in its own domain): equally sound, shared less, and it keeps
    /// keying a large automaton linear instead of quadratic in its states.
    pub fn rooted_hash(&self, fsm: &GrammarFsm, s: StateId, limit: usize) -> Option<u64> {
        ROOTED_SCRATCH.with_borrow_mut(|scratch| self.rooted_hash_in(fsm, s, limit, scratch))
    }

    /// [`FsmHashes::rooted_hash`] with the buffers of `scratch`.
    fn rooted_hash_in(&self, fsm: &GrammarFsm, s: StateId, limit: usize, scratch: &mut RootedScratch) -> Option<u64> {
        // Every state the walk reaches is a state of `s`'s rule: edges never leave their rule.
        let states = fsm.rule_states(fsm.rule_of(s));
        let base = states.clone().next().map_or(0, StateId::index);
        scratch.begin(states.len());
        let RootedScratch { number, seen, mark, queue, buf, edges } = scratch;
        let mark = *mark;
        let mut number = |t: StateId, queue: &mut Vec<StateId>| -> u32 {
            let i = t.index() - base;
            if seen[i] != mark {
                seen[i] = mark;
                number[i] = queue.len() as u32;
                queue.push(t);
            }
            number[i]
        };
        number(s, queue);
        buf.extend_from_slice(&[VERSION, DOMAIN_ROOTED]);
        let mut head = 0;
        while head < queue.len() {
            if queue.len() > limit {
                let (h, c) = self.state_key(s)?;
                let mut whole = vec![VERSION, DOMAIN_RULE];
                put_u64(&mut whole, h);
                put_u32(&mut whole, c);
                return Some(xxh3_64(&whole));
            }
            let q = queue[head];
            head += 1;
            buf.push(fsm.is_final(q) as u8);
            let bytes = fsm.byte_edges(q);
            put_u32(buf, bytes.len() as u32);
            for e in bytes {
                let t = number(e.target, queue);
                buf.extend_from_slice(&[e.lo, e.hi]);
                put_u32(buf, t);
            }
            edges.clear();
            for e in fsm.rule_edges(q) {
                edges.push((self.rule_hash[e.rule]?, e.target));
            }
            edges.sort_unstable();
            put_u32(buf, edges.len() as u32);
            for &(h, target) in edges.iter() {
                put_u64(buf, h);
                let t = number(target, queue);
                put_u32(buf, t);
            }
        }
        put_u32(buf, queue.len() as u32);
        Some(xxh3_64(buf))
    }

    /// The number of rules.
    #[inline]
    pub fn rule_len(&self) -> usize {
        self.rule_hash.len()
    }

    /// The number of rules with a hash.
    pub fn hashed_rule_len(&self) -> usize {
        self.rule_hash.iter().filter(|h| h.is_some()).count()
    }

    /// Heap bytes used.
    pub fn memory_usage(&self) -> usize {
        self.rule_hash.capacity() * std::mem::size_of::<Option<u64>>()
            + self.canonical.capacity() * 4
            + self.state_rule.capacity() * 4
    }
}

/// Hashes every rule of `fsm` and numbers its states canonically (see the module docs).
///
/// Linear in states + edges; never recursive.
pub fn hash_rules(fsm: &GrammarFsm) -> FsmHashes {
    let n_rules = fsm.rules().len();
    let refs = reference_graph(fsm);
    let sccs = strongly_connected(&refs, n_rules);
    let mut rule_hash: Vec<Option<u64>> = vec![None; n_rules];
    let mut enc = Encoder {
        fsm,
        canonical: vec![UNREACHABLE; fsm.state_len()],
        queue: Vec::new(),
        rule_edges: Vec::new(),
        buf: Vec::new(),
    };
    // The reference label of an already processed rule.
    fn key_of(rule_hash: &[Option<u64>], x: u32) -> RefKey {
        match rule_hash[x as usize] {
            Some(h) => RefKey::Hashed(h),
            None => RefKey::Unhashed(x),
        }
    }
    let mut order: Vec<u32> = Vec::new();
    let mut locals: Vec<u64> = Vec::new();
    for c in 0..sccs.len() {
        let members = sccs.members(c);
        let cyclic = members.len() > 1 || refs.of(members[0]).contains(&members[0]);
        if !cyclic {
            let r = members[0];
            let hashed = refs.of(r).iter().all(|&x| rule_hash[x as usize].is_some());
            let h = enc.rule(r, |x| key_of(&rule_hash, x));
            rule_hash[r as usize] = hashed.then_some(h);
            continue;
        }
        let c = c as u32;
        let inside = |x: u32| sccs.comp_of[x as usize] == c;
        let simple = members.iter().all(|&m| refs.of(m).iter().filter(|&&x| inside(x)).count() == 1);
        let outside_hashed =
            members.iter().all(|&m| refs.of(m).iter().all(|&x| inside(x) || rule_hash[x as usize].is_some()));
        if !(simple && outside_hashed) {
            // Not hashable: number the states anyway (in-component rules have no hash yet, so
            // `key_of` labels them by id), and leave the hashes `None`.
            for &m in members {
                enc.rule(m, |x| key_of(&rule_hash, x));
            }
            continue;
        }
        // A simple cycle: walk it from any member by successors.
        let successor =
            |m: u32| *refs.of(m).iter().find(|&&x| inside(x)).expect("a simple cycle member has a successor");
        order.clear();
        let mut m = members[0];
        for _ in 0..members.len() {
            order.push(m);
            m = successor(m);
        }
        debug_assert_eq!(m, members[0], "a strongly connected functional graph is one cycle");
        locals.clear();
        for &m in &order {
            let local = enc.rule(m, |x| if inside(x) { RefKey::InCycle } else { key_of(&rule_hash, x) });
            locals.push(local);
        }
        let k = locals.len();
        let (start, period) = least_rotation_and_period(&locals);
        let buf = &mut enc.buf;
        buf.clear();
        buf.extend_from_slice(&[VERSION, DOMAIN_CYCLE]);
        put_u32(buf, period as u32);
        for t in 0..period {
            put_u64(buf, locals[(start + t) % k]);
        }
        let cycle = xxh3_64(buf);
        for (i, &m) in order.iter().enumerate() {
            let offset = ((i + k - start) % k) % period;
            buf.clear();
            buf.extend_from_slice(&[VERSION, DOMAIN_MEMBER]);
            put_u64(buf, cycle);
            put_u32(buf, offset as u32);
            rule_hash[m as usize] = Some(xxh3_64(buf));
        }
    }
    FsmHashes { rule_hash, canonical: enc.canonical, state_rule: fsm.states().map(|s| fsm.rule_of(s)).collect() }
}

/// The label of a rule-reference edge, in sort order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum RefKey {
    /// A rule with a hash.
    Hashed(u64),
    /// The successor of a simple-cycle member, while hashing the member locally.
    InCycle,
    /// A rule without a hash (only while numbering rules that get no hash either).
    Unhashed(u32),
}

/// Distinct rules referenced from the reachable states of each rule, as rows of one array.
struct References {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl References {
    fn of(&self, r: u32) -> &[u32] {
        &self.targets[self.offsets[r as usize] as usize..self.offsets[r as usize + 1] as usize]
    }
}

fn reference_graph(fsm: &GrammarFsm) -> References {
    let mut seen = vec![false; fsm.state_len()];
    let mut stamp = vec![u32::MAX; fsm.rules().len()];
    let mut stack: Vec<StateId> = Vec::new();
    let mut offsets = Vec::with_capacity(fsm.rules().len() + 1);
    let mut targets = Vec::new();
    offsets.push(0);
    for (r, rule) in fsm.rules().iter().enumerate() {
        let r = r as u32;
        // States belong to exactly one rule, so `seen` never needs clearing.
        seen[rule.start] = true;
        stack.push(rule.start);
        while let Some(s) = stack.pop() {
            for e in fsm.byte_edges(s) {
                if !std::mem::replace(&mut seen[e.target], true) {
                    stack.push(e.target);
                }
            }
            for e in fsm.rule_edges(s) {
                if !std::mem::replace(&mut seen[e.target], true) {
                    stack.push(e.target);
                }
                if std::mem::replace(&mut stamp[e.rule], r) != r {
                    targets.push(e.rule.as_u32());
                }
            }
        }
        offsets.push(targets.len() as u32);
    }
    References { offsets, targets }
}

/// Strongly connected components, numbered so that every component comes after those it references.
struct Components {
    comp_of: Vec<u32>,
    offsets: Vec<u32>,
    members: Vec<u32>,
}

impl Components {
    fn len(&self) -> usize {
        self.offsets.len() - 1
    }
    fn members(&self, c: usize) -> &[u32] {
        &self.members[self.offsets[c] as usize..self.offsets[c + 1] as usize]
    }
}

/// The strongly connected components of the reference graph ([`strongly_connected_components`]:
/// referenced components get smaller numbers), with each component's members listed together
/// in rule order. The hashes do not depend on that order (a simple cycle is hashed by its least
/// rotation; other components get no hash).
fn strongly_connected(refs: &References, n: usize) -> Components {
    let comp_of = strongly_connected_components(n, |r| refs.of(r as u32).iter().map(|&x| x as usize));
    let count = comp_of.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
    let mut offsets = vec![0u32; count + 1];
    for &c in &comp_of {
        offsets[c as usize + 1] += 1;
    }
    for c in 0..count {
        offsets[c + 1] += offsets[c];
    }
    let mut fill = offsets.clone();
    let mut members = vec![0u32; n];
    for (r, &c) in comp_of.iter().enumerate() {
        members[fill[c as usize] as usize] = r as u32;
        fill[c as usize] += 1;
    }
    Components { comp_of, offsets, members }
}

/// Scratch space for numbering and encoding rules one at a time.
struct Encoder<'a> {
    fsm: &'a GrammarFsm,
    canonical: Vec<u32>,
    queue: Vec<StateId>,
    rule_edges: Vec<(RefKey, StateId)>,
    buf: Vec<u8>,
}

impl Encoder<'_> {
    /// Numbers the reachable states of rule `r` canonically and returns the xxh3 of its
    /// encoding, labelling each referenced rule `x` with `key(x)`.
    fn rule(&mut self, r: u32, key: impl Fn(u32) -> RefKey) -> u64 {
        let Encoder { fsm, canonical, queue, rule_edges, buf } = self;
        let rule = &fsm.rules()[r as usize];
        buf.clear();
        buf.extend_from_slice(&[VERSION, DOMAIN_RULE]);
        match rule.kind {
            RuleKind::Plain => buf.push(0),
            RuleKind::Counted { min, max } => {
                buf.push(1);
                put_u32(buf, min);
                put_u32(buf, max);
            }
        }
        buf.push(rule.nullable as u8);
        queue.clear();
        queue.push(rule.start);
        canonical[rule.start] = 0;
        let mut number = |t: StateId, queue: &mut Vec<StateId>| -> u32 {
            let c = &mut canonical[t];
            if *c == UNREACHABLE {
                *c = queue.len() as u32;
                queue.push(t);
            }
            *c
        };
        let mut head = 0;
        while head < queue.len() {
            let s = queue[head];
            head += 1;
            buf.push(fsm.is_final(s) as u8);
            // Byte edges are stored sorted by (lo, hi, target).
            let bytes = fsm.byte_edges(s);
            put_u32(buf, bytes.len() as u32);
            for e in bytes {
                let t = number(e.target, queue);
                buf.extend_from_slice(&[e.lo, e.hi]);
                put_u32(buf, t);
            }
            rule_edges.clear();
            rule_edges.extend(fsm.rule_edges(s).iter().map(|e| (key(e.rule.as_u32()), e.target)));
            rule_edges.sort_unstable();
            put_u32(buf, rule_edges.len() as u32);
            for &(k, target) in rule_edges.iter() {
                match k {
                    RefKey::Hashed(h) => {
                        buf.push(0);
                        put_u64(buf, h);
                    }
                    RefKey::InCycle => buf.push(1),
                    RefKey::Unhashed(x) => {
                        buf.push(2);
                        put_u32(buf, x);
                    }
                }
                let t = number(target, queue);
                put_u32(buf, t);
            }
        }
        put_u32(buf, queue.len() as u32);
        xxh3_64(buf)
    }
}

#[inline]
fn put_u32(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

#[inline]
fn put_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// The start of the lexicographically least rotation of `s` (non-empty) and the smallest
/// period of `s` as a cyclic sequence (a divisor of `s.len()`), both in linear time.
fn least_rotation_and_period(s: &[u64]) -> (usize, usize) {
    let n = s.len();
    // Two-candidate scan for the least rotation: candidates i and j, common length k.
    let (mut i, mut j, mut k) = (0usize, 1usize, 0usize);
    while i < n && j < n && k < n {
        let (a, b) = (s[(i + k) % n], s[(j + k) % n]);
        if a == b {
            k += 1;
            continue;
        }
        if a > b {
            i += k + 1;
        } else {
            j += k + 1;
        }
        if i == j {
            j += 1;
        }
        k = 0;
    }
    let start = i.min(j);
    // Smallest period of the rotation (the same for every rotation) by the prefix function:
    // a cyclic sequence has period p < n iff p divides n and the linear sequence has period p.
    let at = |q: usize| s[(start + q) % n];
    let mut border = vec![0usize; n];
    for q in 1..n {
        let mut b = border[q - 1];
        while b > 0 && at(q) != at(b) {
            b = border[b - 1];
        }
        if at(q) == at(b) {
            b += 1;
        }
        border[q] = b;
    }
    let p = n - border[n - 1];
    (start, if n % p == 0 { p } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Automata without rule inlining: every test rule keeps its own automaton.
    fn no_inline(g: &crate::grammar::Grammar) -> GrammarFsm {
        crate::fsm::build_grammar_fsm(g, &crate::fsm::FsmLimits { max_inline_states: 0, ..Default::default() }).unwrap()
    }
    use crate::grammar::{Expr, Grammar, GrammarBuilder, RuleId};

    fn grammar(rules: &[(&str, Expr)], root: &str) -> GrammarFsm {
        let mut b = GrammarBuilder::new();
        let ids: Vec<RuleId> = rules.iter().map(|(n, _)| b.rule(n)).collect();
        for (id, (_, body)) in ids.into_iter().zip(rules) {
            b.define(id, body.clone(), None).unwrap();
        }
        let g: Grammar = b.build(root).unwrap();
        no_inline(&g)
    }

    fn rule(fsm: &GrammarFsm, name: &str) -> FsmRuleId {
        FsmRuleId::new(fsm.rules().iter().position(|r| r.name == name).unwrap())
    }

    fn r(i: usize) -> Expr {
        Expr::Rule(RuleId::new(i))
    }

    fn lit(s: &str) -> Expr {
        Expr::literal(s)
    }

    fn seq(v: Vec<Expr>) -> Expr {
        Expr::Seq(v)
    }

    fn alt(v: Vec<Expr>) -> Expr {
        Expr::Choice(v)
    }

    fn brute_least_rotation(s: &[u64]) -> Vec<u64> {
        (0..s.len()).map(|i| s[i..].iter().chain(&s[..i]).copied().collect::<Vec<_>>()).min().unwrap()
    }

    fn brute_period(s: &[u64]) -> usize {
        (1..=s.len()).find(|&p| s.len() % p == 0 && (0..s.len()).all(|i| s[i] == s[(i + p) % s.len()])).unwrap()
    }

    #[test]
    fn least_rotation_and_period_match_brute_force() {
        // Every sequence over {0, 1, 2} up to length 7.
        for n in 1..=7usize {
            for code in 0..3usize.pow(n as u32) {
                let s: Vec<u64> = (0..n).map(|i| (code / 3usize.pow(i as u32) % 3) as u64).collect();
                let (start, p) = least_rotation_and_period(&s);
                let rot: Vec<u64> = s[start..].iter().chain(&s[..start]).copied().collect();
                assert_eq!(rot, brute_least_rotation(&s), "{s:?}");
                assert_eq!(p, brute_period(&s), "{s:?}");
            }
        }
    }

    /// The rooted hashes of every state of a grammar with rules of different sizes.
    fn all_rooted(
        hashes: &FsmHashes,
        fsm: &GrammarFsm,
        order: impl Iterator<Item = StateId>,
    ) -> Vec<(StateId, Option<u64>)> {
        let mut all: Vec<_> = order.map(|s| (s, hashes.rooted_hash(fsm, s, 4096))).collect();
        all.sort_unstable_by_key(|x| x.0);
        all
    }

    #[test]
    fn rooted_hashes_follow_the_future_and_not_earlier_walks() {
        let g = crate::parse_ebnf(
            r#"root ::= "a" tail | "bb" other | big
               tail ::= "xyz" [0-9]+ ";"
               other ::= "q" "xyz" [0-9]+ ";"
               big ::= "k" ("0" | "1" | "2" | "3" | "4" | "5")* "end" tail"#,
            "root",
        )
        .unwrap();
        let fsm = no_inline(&g);
        let hashes = hash_rules(&fsm);
        // `other` after its "q" has the future of `tail` from its start.
        let at = |rule_name: &str, byte: u8| {
            let start = fsm.rule(self::rule(&fsm, rule_name)).start;
            fsm.byte_edges(start).iter().find(|e| e.lo <= byte && byte <= e.hi).unwrap().target
        };
        let tail_start = fsm.rule(self::rule(&fsm, "tail")).start;
        let after_q = at("other", b'q');
        assert_eq!(hashes.rooted_hash(&fsm, after_q, 4096), hashes.rooted_hash(&fsm, tail_start, 4096));
        assert_ne!(hashes.rooted_hash(&fsm, at("tail", b'x'), 4096), hashes.rooted_hash(&fsm, tail_start, 4096));
        // The per-thread buffers carry nothing from one walk to the next: any order, any thread.
        let forward = all_rooted(&hashes, &fsm, fsm.states());
        assert_eq!(forward, all_rooted(&hashes, &fsm, fsm.states().rev()));
        let fresh = std::thread::scope(|t| t.spawn(|| all_rooted(&hashes, &fsm, fsm.states())).join().unwrap());
        assert_eq!(forward, fresh);
    }

    #[test]
    fn renamed_reordered_rules_hash_equal() {
        let digits = Expr::plus(Expr::class([('0' as u32, '9' as u32)], false));
        let a = grammar(
            &[("root", seq(vec![lit("{"), r(1), lit("}")])), ("obj", seq(vec![lit("a"), digits.clone()]))],
            "root",
        );
        let b = grammar(
            &[
                ("thing", seq(vec![lit("a"), digits])),
                ("x", lit("q")),
                ("root", alt(vec![seq(vec![lit("["), r(0), lit("]")]), r(1)])),
            ],
            "root",
        );
        let (ha, hb) = (hash_rules(&a), hash_rules(&b));
        let (obj, thing) = (rule(&a, "obj"), rule(&b, "thing"));
        assert!(ha.rule_hash(obj).is_some());
        assert_eq!(ha.rule_hash(obj), hb.rule_hash(thing));
        assert_ne!(ha.rule_hash(rule(&a, "root")), hb.rule_hash(rule(&b, "root")));
        // Corresponding states: walk both automata along the same bytes.
        let (mut sa, mut sb) = (a.rules()[obj].start, b.rules()[thing].start);
        for byte in [b'a', b'1', b'2'] {
            assert_eq!(ha.canonical_state(sa), hb.canonical_state(sb));
            assert_eq!(ha.state_key(sa), hb.state_key(sb));
            let step =
                |f: &GrammarFsm, s| f.byte_edges(s).iter().find(|e| e.lo <= byte && byte <= e.hi).unwrap().target;
            sa = step(&a, sa);
            sb = step(&b, sb);
        }
        assert_eq!(ha.state_key(sa), hb.state_key(sb));
    }

    #[test]
    fn everything_reachable_is_covered() {
        // Same shape, differing only inside a referenced rule, a range, a finality or a kind.
        let base = grammar(&[("root", seq(vec![lit("a"), r(1)])), ("x", lit("b"))], "root");
        let deep = grammar(&[("root", seq(vec![lit("a"), r(1)])), ("x", lit("c"))], "root");
        let opt = grammar(&[("root", seq(vec![lit("a"), Expr::opt(r(1))])), ("x", lit("b"))], "root");
        let hashes: Vec<Option<u64>> =
            [&base, &deep, &opt].iter().map(|f| hash_rules(f).rule_hash(FsmRuleId::new(0))).collect();
        assert!(hashes.iter().all(Option::is_some));
        assert_ne!(hashes[0], hashes[1]);
        assert_ne!(hashes[0], hashes[2]);
        assert_ne!(hashes[1], hashes[2]);
    }

    #[test]
    fn counted_bounds_are_hashed() {
        let limits = crate::fsm::FsmLimits { max_expanded_repeat: 0, max_inline_states: 0, ..Default::default() };
        let build = |min, max| {
            let mut b = GrammarBuilder::new();
            let root = b.rule("root");
            b.define(root, Expr::repeat(lit("a"), min, max), None).unwrap();
            crate::fsm::build_grammar_fsm(&b.build("root").unwrap(), &limits).unwrap()
        };
        let fsms = [build(1, Some(5)), build(1, Some(6)), build(2, Some(5)), build(1, None)];
        let counted: Vec<u64> = fsms
            .iter()
            .map(|f| {
                let r = f.rules().iter().position(|r| matches!(r.kind, RuleKind::Counted { .. })).unwrap();
                hash_rules(f).rule_hash(FsmRuleId::new(r)).unwrap()
            })
            .collect();
        for i in 0..counted.len() {
            for j in 0..i {
                assert_ne!(counted[i], counted[j]);
            }
        }
    }

    #[test]
    fn simple_cycles_hash_and_rotations_match() {
        // a ::= "x" b | "y"   b ::= "z" a
        let g1 =
            grammar(&[("a", alt(vec![seq(vec![lit("x"), r(1)]), lit("y")])), ("b", seq(vec![lit("z"), r(0)]))], "a");
        // The same cycle entered at b, with other names and order.
        let g2 =
            grammar(&[("q", seq(vec![lit("z"), r(1)])), ("p", alt(vec![seq(vec![lit("x"), r(0)]), lit("y")]))], "q");
        let (h1, h2) = (hash_rules(&g1), hash_rules(&g2));
        let (a, b) = (rule(&g1, "a"), rule(&g1, "b"));
        let (p, q) = (rule(&g2, "p"), rule(&g2, "q"));
        assert!(h1.rule_hash(a).is_some() && h1.rule_hash(b).is_some());
        assert_ne!(h1.rule_hash(a), h1.rule_hash(b));
        assert_eq!(h1.rule_hash(a), h2.rule_hash(p));
        assert_eq!(h1.rule_hash(b), h2.rule_hash(q));
        // Three members with the same local shapes, linked in two different orders.
        let member = |tag: &str, next: usize, stop: &str| alt(vec![seq(vec![lit(tag), r(next)]), lit(stop)]);
        let abc = grammar(&[("a", member("x", 1, "1")), ("b", member("y", 2, "2")), ("c", member("z", 0, "3"))], "a");
        let acb = grammar(&[("a", member("x", 2, "1")), ("b", member("y", 0, "2")), ("c", member("z", 1, "3"))], "a");
        let (habc, hacb) = (hash_rules(&abc), hash_rules(&acb));
        for m in FsmRuleId::range(3) {
            assert!(habc.rule_hash(m).is_some() && hacb.rule_hash(m).is_some());
            assert_ne!(habc.rule_hash(m), hacb.rule_hash(m));
        }
    }

    #[test]
    fn self_reference_is_a_simple_cycle() {
        // a ::= "(" a ")" | a a | "x": several edges, one referenced member.
        let g = grammar(&[("a", alt(vec![seq(vec![lit("("), r(0), lit(")")]), seq(vec![r(0), r(0)]), lit("x")]))], "a");
        assert!(hash_rules(&g).rule_hash(FsmRuleId::new(0)).is_some());
    }

    #[test]
    fn periodic_cycles_agree_with_their_period() {
        // a ::= "x" b | "y", b ::= "x" a | "y" (period 1 over 2 members) vs c ::= "x" c | "y".
        let two = grammar(
            &[
                ("a", alt(vec![seq(vec![lit("x"), r(1)]), lit("y")])),
                ("b", alt(vec![seq(vec![lit("x"), r(0)]), lit("y")])),
            ],
            "a",
        );
        let one = grammar(&[("c", alt(vec![seq(vec![lit("x"), r(0)]), lit("y")]))], "c");
        let (h2, h1) = (hash_rules(&two), hash_rules(&one));
        assert_eq!(h2.rule_hash(FsmRuleId::new(0)), h2.rule_hash(FsmRuleId::new(1)));
        assert_eq!(h2.rule_hash(FsmRuleId::new(0)), h1.rule_hash(FsmRuleId::new(0)));
    }

    #[test]
    fn non_simple_cycles_are_not_hashed() {
        // v ::= "[" v "," w "]" | "0"   w ::= "{" v "}": v references v and w.
        let g = grammar(
            &[
                ("top", seq(vec![lit("<"), r(1), lit(">")])),
                ("v", alt(vec![seq(vec![lit("["), r(1), lit(","), r(2), lit("]")]), lit("0")])),
                ("w", seq(vec![lit("{"), r(1), lit("}")])),
                ("leaf", lit("z")),
            ],
            "top",
        );
        let h = hash_rules(&g);
        assert_eq!(h.rule_hash(rule(&g, "v")), None);
        assert_eq!(h.rule_hash(rule(&g, "w")), None);
        assert_eq!(h.rule_hash(rule(&g, "top")), None);
        let v = &g.rules()[rule(&g, "v")];
        assert_eq!(h.canonical_state(v.start), 0);
        assert_eq!(h.state_key(v.start), None);
    }

    #[test]
    fn deep_reference_chains_do_not_recurse() {
        // r0 ::= "a" r1, r1 ::= "a" r2, ..., a chain of 50,000 rules.
        let n = 50_000;
        let mut b = GrammarBuilder::new();
        let ids: Vec<RuleId> = (0..n).map(|i| b.rule(&format!("r{i}"))).collect();
        for i in 0..n {
            let body = if i + 1 < n { seq(vec![lit("a"), Expr::Rule(ids[i + 1])]) } else { lit("b") };
            b.define(ids[i], body, None).unwrap();
        }
        let fsm = no_inline(&b.build("r0").unwrap());
        let h = hash_rules(&fsm);
        assert_eq!(h.hashed_rule_len(), n);
        // And a cycle through all of them.
        let mut b = GrammarBuilder::new();
        let ids: Vec<RuleId> = (0..n).map(|i| b.rule(&format!("r{i}"))).collect();
        for i in 0..n {
            let body = alt(vec![seq(vec![lit("a"), Expr::Rule(ids[(i + 1) % n])]), lit("b")]);
            b.define(ids[i], body, None).unwrap();
        }
        let fsm = no_inline(&b.build("r0").unwrap());
        let h = hash_rules(&fsm);
        // Every member has the same local shape: period 1, so all hash equal.
        assert_eq!(h.hashed_rule_len(), n);
        assert!(FsmRuleId::range(n).all(|r| h.rule_hash(r) == h.rule_hash(FsmRuleId::new(0))));
    }
}
