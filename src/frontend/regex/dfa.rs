//! A deterministic automaton over code points for a [`Regex`], for front-ends that must
//! combine a pattern's language with another finite-state constraint (JSON Schema's
//! `minLength`/`maxLength` next to `pattern`: the product of this automaton with a counter).
//!
//! Construction is Thompson (an NFA with epsilon edges, repetitions expanded) then subset
//! construction; both are bounded by a state budget, and a pattern beyond it gives `None`
//! (the caller falls back to a reported relaxation), so an untrusted `a{1000}{1000}` costs
//! bounded work. Transitions of one state are disjoint code-point ranges grouped by target,
//! so a caller emits one character class per (state, target) pair.

use super::{Anchoring, Node, Regex};
use crate::grammar::{CharClass, MAX_CODE_POINT};
use crate::util::hash::FastMap;

/// A transition or NFA edge: sorted disjoint code-point ranges and the target state.
pub type RangeEdge = (Vec<(u32, u32)>, usize);

/// A DFA over code points: state 0 is the start; a missing transition rejects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodePointDfa {
    /// Per state: (sorted disjoint ranges, target state); the ranges of one state are
    /// disjoint across its entries.
    pub transitions: Vec<Vec<RangeEdge>>,
    /// Per state: whether the input read so far matches.
    pub accepting: Vec<bool>,
}

/// An NFA under construction: epsilon edges and range edges per state.
struct Nfa {
    eps: Vec<Vec<usize>>,
    edges: Vec<Vec<RangeEdge>>,
    budget: usize,
}

impl Nfa {
    fn state(&mut self) -> Option<usize> {
        if self.eps.len() >= self.budget {
            return None;
        }
        self.eps.push(Vec::new());
        self.edges.push(Vec::new());
        Some(self.eps.len() - 1)
    }

    /// Adds the fragment for `n` starting at `from`; returns its end state. `None` when over
    /// budget or for an anchor inside the pattern.
    fn fragment(&mut self, n: &Node, from: usize) -> Option<usize> {
        match n {
            Node::Empty => Some(from),
            Node::Class(r) => {
                let s = self.state()?;
                if !r.is_empty() {
                    self.edges[from].push((r.clone(), s));
                }
                Some(s)
            }
            Node::Seq(items) => items.iter().try_fold(from, |cur, x| self.fragment(x, cur)),
            Node::Alt(alts) => {
                let end = self.state()?;
                for a in alts {
                    let s = self.state()?;
                    self.eps[from].push(s);
                    let e = self.fragment(a, s)?;
                    self.eps[e].push(end);
                }
                Some(end)
            }
            Node::Repeat(inner, min, max) => {
                let mut cur = from;
                for _ in 0..*min {
                    cur = self.fragment(inner, cur)?;
                }
                match max {
                    None => {
                        let s = self.state()?;
                        self.eps[cur].push(s);
                        let e = self.fragment(inner, s)?;
                        self.eps[e].push(s);
                        Some(s)
                    }
                    Some(m) => {
                        let end = self.state()?;
                        self.eps[cur].push(end);
                        for _ in *min..*m {
                            cur = self.fragment(inner, cur)?;
                            self.eps[cur].push(end);
                        }
                        Some(end)
                    }
                }
            }
            Node::Start(_) | Node::End(_) => None,
        }
    }

    fn closure(&self, set: &mut Vec<usize>) {
        let mut seen = vec![false; self.eps.len()];
        let mut stack = set.clone();
        for &s in set.iter() {
            seen[s] = true;
        }
        while let Some(s) = stack.pop() {
            for &t in &self.eps[s] {
                if !seen[t] {
                    seen[t] = true;
                    set.push(t);
                    stack.push(t);
                }
            }
        }
        set.sort_unstable();
        set.dedup();
    }
}

impl Regex {
    /// The pattern's DFA with `anchoring` (a search adds "any text" around unanchored ends),
    /// or `None` when the NFA or the DFA would exceed `max_states` states, or when an anchor
    /// is not at an end of the pattern (which [`Regex::to_expr`] reports as an error).
    pub fn to_dfa(&self, anchoring: Anchoring, max_states: usize) -> Option<CodePointDfa> {
        let mut nfa = Nfa { eps: Vec::new(), edges: Vec::new(), budget: max_states.saturating_mul(4) };
        let start = nfa.state()?;
        let any = vec![(0, MAX_CODE_POINT)];
        let search = anchoring == Anchoring::Search;
        let alts: Vec<&Node> = match &self.node {
            Node::Alt(alts) => alts.iter().collect(),
            n => vec![n],
        };
        let mut finals = Vec::new();
        for alt in alts {
            let items: &[Node] = match alt {
                Node::Seq(items) => items,
                n => std::slice::from_ref(n),
            };
            let (mut lo, mut hi) = (0, items.len());
            while lo < hi && matches!(items[lo], Node::Start(_)) {
                lo += 1;
            }
            while hi > lo && matches!(items[hi - 1], Node::End(_)) {
                hi -= 1;
            }
            // Fresh states for the "any text" loops, so that no loop lands inside the body.
            let a = nfa.state()?;
            nfa.eps[start].push(a);
            if search && lo == 0 {
                nfa.edges[a].push((any.clone(), a));
            }
            let b = nfa.state()?;
            nfa.eps[a].push(b);
            let e = items[lo..hi].iter().try_fold(b, |cur, x| nfa.fragment(x, cur))?;
            let f = nfa.state()?;
            nfa.eps[e].push(f);
            if search && hi == items.len() {
                nfa.edges[f].push((any.clone(), f));
            }
            finals.push(f);
        }
        let is_final = {
            let mut v = vec![false; nfa.eps.len()];
            finals.iter().for_each(|&f| v[f] = true);
            v
        };
        let mut first = vec![start];
        nfa.closure(&mut first);
        let mut index: FastMap<Vec<usize>, usize> = FastMap::default();
        index.insert(first.clone(), 0);
        let mut sets = vec![first];
        let mut dfa = CodePointDfa { transitions: Vec::new(), accepting: Vec::new() };
        let mut i = 0;
        while i < sets.len() {
            let set = sets[i].clone();
            dfa.accepting.push(set.iter().any(|&s| is_final[s]));
            // Elementary intervals of this state's edges: a sweep over their boundaries.
            let edges: Vec<&RangeEdge> = set.iter().flat_map(|&s| &nfa.edges[s]).collect();
            let mut cuts: Vec<u32> =
                edges.iter().flat_map(|(r, _)| r.iter().flat_map(|&(lo, hi)| [lo, hi + 1])).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut by_target: Vec<RangeEdge> = Vec::new();
            for w in cuts.windows(2) {
                let (lo, hi) = (w[0], w[1] - 1);
                let mut next: Vec<usize> = edges
                    .iter()
                    .filter(|(r, _)| r.iter().any(|&(a, b)| a <= lo && hi <= b))
                    .map(|&&(_, t)| t)
                    .collect();
                if next.is_empty() {
                    continue;
                }
                nfa.closure(&mut next);
                let target = match index.get(&next) {
                    Some(&t) => t,
                    None => {
                        if sets.len() >= max_states {
                            return None;
                        }
                        index.insert(next.clone(), sets.len());
                        sets.push(next);
                        sets.len() - 1
                    }
                };
                match by_target.iter_mut().find(|(_, t)| *t == target) {
                    Some((r, _)) => r.push((lo, hi)),
                    None => by_target.push((vec![(lo, hi)], target)),
                }
            }
            for (r, _) in &mut by_target {
                *r = CharClass::new(r.iter().copied(), false).ranges().to_vec();
            }
            dfa.transitions.push(by_target);
            i += 1;
        }
        Some(dfa)
    }
}

impl CodePointDfa {
    /// Per state, whether it accepts every continuation: it and every state it reaches accept
    /// and read every code point (the surrogates, which are no characters, aside). An
    /// unanchored pattern's automaton reaches such states after a match: any text may follow.
    pub fn accepting_everything(&self) -> Vec<bool> {
        let mut everything: Vec<bool> =
            (0..self.accepting.len()).map(|q| self.accepting[q] && self.reads_every_code_point(q)).collect();
        // The largest set closed under transitions: drop states reaching outside it until none.
        let mut changed = true;
        while changed {
            changed = false;
            for q in 0..everything.len() {
                if everything[q] && self.transitions[q].iter().any(|&(_, t)| !everything[t]) {
                    everything[q] = false;
                    changed = true;
                }
            }
        }
        everything
    }

    /// Per state, the code points it reads when it accepts and every transition leads back to
    /// it (a pattern's last loop, `[^<>]*$`), else `None`: text that reached it matches from
    /// then on exactly when the rest reads only those code points.
    pub fn accepting_loops(&self) -> Vec<Option<Vec<(u32, u32)>>> {
        (0..self.accepting.len())
            .map(|q| {
                let ts = &self.transitions[q];
                let loops = self.accepting[q] && !ts.is_empty() && ts.iter().all(|&(_, t)| t == q);
                loops.then(|| ts.iter().flat_map(|(r, _)| r.iter().copied()).collect())
            })
            .collect()
    }

    /// Whether the transitions of `q` cover every code point but the surrogates.
    fn reads_every_code_point(&self, q: usize) -> bool {
        let mut ranges: Vec<(u32, u32)> = self.transitions[q].iter().flat_map(|(r, _)| r.iter().copied()).collect();
        ranges.sort_unstable();
        // The first code point not covered yet.
        let mut next = 0u32;
        for (lo, hi) in ranges {
            if (0xD800..=0xDFFF).contains(&next) {
                next = 0xE000;
            }
            if lo > next {
                break;
            }
            next = next.max(hi.saturating_add(1));
        }
        next > MAX_CODE_POINT
    }

    /// Whether the DFA accepts `text` (for tests and cross-checks).
    #[cfg(test)]
    pub fn accepts(&self, text: &str) -> bool {
        let mut q = 0;
        for c in text.chars() {
            let c = c as u32;
            match self.transitions[q].iter().find(|(r, _)| r.iter().any(|&(lo, hi)| lo <= c && c <= hi)) {
                Some(&(_, t)) => q = t,
                None => return false,
            }
        }
        self.accepting[q]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dfa_agrees_with_the_reference_matcher() {
        let texts = ["", "a", "ab", "abc", "xabcx", "aaa", "ba", "a-1", "12-345", "é", "a\nb", "abab"];
        for p in ["^a+$", "abc", "^(a|ab)(c|bcd)?$", "b{2}", "^[0-9]{2}-[0-9]{2,3}$", ".", "^$", "", "a|^b$", "(ab)*$"]
        {
            let re = Regex::parse(p).unwrap();
            for anch in [Anchoring::Search, Anchoring::FullMatch] {
                let dfa = re.to_dfa(anch, 1000).unwrap();
                for t in texts {
                    assert_eq!(dfa.accepts(t), re.is_match(t, anch), "{p} {anch:?} {t:?}");
                }
            }
        }
    }

    #[test]
    fn a_state_accepting_everything_is_found() {
        let universal = |p: &str, anch| {
            let dfa = Regex::parse(p).unwrap().to_dfa(anch, 1000).unwrap();
            dfa.accepting_everything().iter().filter(|&&e| e).count()
        };
        // A search keeps looking for matches after one: several states, all accepting.
        assert!(universal("[a-z0-9_.-]+", Anchoring::Search) >= 1, "after a match, anything");
        assert!(universal("^a", Anchoring::Search) >= 1);
        assert_eq!(universal("^a+$", Anchoring::Search), 0);
        assert_eq!(universal("[a-z0-9_.-]+", Anchoring::FullMatch), 0);
        assert!(universal(r"^[\s\S]*$", Anchoring::Search) >= 1, "every code point");
        assert_eq!(universal("^.*$", Anchoring::Search), 0, "`.` leaves out line ends");
    }

    #[test]
    fn an_accepting_loop_is_found_with_what_it_reads() {
        let loops = |p: &str| {
            let dfa = Regex::parse(p).unwrap().to_dfa(Anchoring::FullMatch, 1000).unwrap();
            dfa.accepting_loops().into_iter().flatten().collect::<Vec<_>>()
        };
        assert_eq!(loops("^[A-Z][a-c]*$"), vec![vec![(u32::from(b'a'), u32::from(b'c'))]]);
        assert_eq!(loops("^x[a-c]+$").len(), 1, "the state after the first `[a-c]`");
        assert!(loops("^[a-c]+x$").is_empty(), "no accepting state loops");
        assert!(loops("^(ab)*$").is_empty(), "the accepting state leaves on `a`");
    }

    #[test]
    fn budget_and_inner_anchors_give_none() {
        assert!(Regex::parse("(?:a{1000}){1000}").unwrap().to_dfa(Anchoring::FullMatch, 5000).is_none());
        assert!(Regex::parse("a^b").unwrap().to_dfa(Anchoring::Search, 100).is_none());
        assert!(Regex::parse("[ab]*a[ab]{12}").unwrap().to_dfa(Anchoring::FullMatch, 1000).is_none());
    }
}
