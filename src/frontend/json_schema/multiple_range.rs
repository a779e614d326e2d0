//! `multipleOf` together with bounds on integers: the product of the range automaton (how the
//! digits read so far compare with the bounds' digits) and the residue automaton of
//! `multiple_of.rs`, built by a breadth-first walk over the reachable product states, one
//! right-linear rule per state, within [`RESIDUE_STATES_MAX`] states.
//!
//! A canonical integer `y ≥ 0` in `[from, to]` (digit strings, `to` optional) is read digit
//! by digit; a state is the number of digits read (capped where it no longer matters), how
//! the prefix compares with the first digits of `from` and of `to`, and the residue mod `k`.
//! The text may end where it has as many digits as `from` and compares not below it (or more
//! digits), as many as `to` and not above it (or fewer), and the residue is 0. Negative
//! values are `-` and the magnitudes in the mirrored range.

use std::cmp::Ordering;

use super::lower::{choice, seq, Lowerer};
use super::multiple_of::RESIDUE_STATES_MAX;
use super::number::dec_digit;
use crate::grammar::{Expr, RuleId};
use crate::util::hash::FastMap;

/// One product state (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct State {
    /// Digits read, capped at `from.len() + 1` when `to` is unbounded.
    len: usize,
    /// The prefix against `from`'s first `len` digits (`Greater` once longer than `from`).
    from: Ordering,
    /// The prefix against `to`'s first `len` digits (`Less` when `to` is unbounded).
    to: Ordering,
    residue: u64,
}

/// The range `[from, to]` of non-negative integers (canonical digit strings) and the divisor.
struct Range<'d> {
    from: &'d [u8],
    to: Option<&'d [u8]>,
    k: u64,
}

impl Range<'_> {
    /// The state after the digit `d`, `None` when no text through it can end in the range.
    fn step(&self, s: State, d: u8) -> Option<State> {
        let cmp = |bound: &[u8], before: Ordering| match bound.get(s.len) {
            Some(&b) if before == Ordering::Equal => (b'0' + d).cmp(&b),
            Some(_) => before,
            None => Ordering::Greater, // longer than the bound
        };
        let to = match self.to {
            Some(t) if s.len >= t.len() => return None,
            Some(t) => cmp(t, s.to),
            None => Ordering::Less,
        };
        let from = cmp(self.from, s.from);
        let len = match self.to {
            None => (s.len + 1).min(self.from.len() + 1),
            Some(_) => s.len + 1,
        };
        Some(State { len, from, to, residue: (s.residue * 10 + u64::from(d)) % self.k })
    }

    /// Whether a text may end in state `s` (at least one digit read).
    fn accepts(&self, s: State) -> bool {
        let above_from = s.len > self.from.len() || (s.len == self.from.len() && s.from != Ordering::Less);
        let below_to = match self.to {
            None => true,
            Some(t) => s.len < t.len() || (s.len == t.len() && s.to != Ordering::Greater),
        };
        s.residue == 0 && above_from && below_to
    }
}

/// The reachable product states, numbered in the order reached, with their edges.
#[derive(Default)]
struct Product {
    index: FastMap<State, usize>,
    states: Vec<State>,
    /// `edges[i]`: the digits out of state `i` and the states they lead to.
    edges: Vec<Vec<(u8, usize)>>,
}

impl Product {
    /// The number of `s`, numbering it when new; `None` past the state budget.
    fn number(&mut self, s: State) -> Option<usize> {
        if let Some(&i) = self.index.get(&s) {
            return Some(i);
        }
        if self.states.len() as u64 >= RESIDUE_STATES_MAX {
            return None;
        }
        self.index.insert(s, self.states.len());
        self.states.push(s);
        self.edges.push(Vec::new());
        Some(self.states.len() - 1)
    }

    /// The states reachable from `start` by the first digits 1-9, breadth first; returns the
    /// first digits' edges, or `None` past the budget.
    fn explore(&mut self, range: &Range<'_>, start: State) -> Option<Vec<(u8, usize)>> {
        let mut first = Vec::new();
        for d in 1..=9 {
            if let Some(s) = range.step(start, d) {
                first.push((d, self.number(s)?));
            }
        }
        let mut next = 0;
        while next < self.states.len() {
            let s = self.states[next];
            for d in 0..=9 {
                if let Some(t) = range.step(s, d) {
                    let i = self.number(t)?;
                    self.edges[next].push((d, i));
                }
            }
            next += 1;
        }
        Some(first)
    }
}

impl Lowerer<'_> {
    /// The canonical texts of the multiples of `k` in `[from, to]` (non-negative, canonical
    /// digit strings; `to` unbounded when `None`), or `None` when the product automaton
    /// exceeds [`RESIDUE_STATES_MAX`] states.
    pub(super) fn nonneg_multiples_between(&mut self, from: &str, to: Option<&str>, k: u64) -> Option<Expr> {
        let range = Range { from: from.as_bytes(), to: to.map(str::as_bytes), k };
        let start = State { len: 0, from: Ordering::Equal, to: Ordering::Equal, residue: 0 };
        let mut product = Product::default();
        let first = product.explore(&range, start)?;
        if product.states.len() > self.rules_left() {
            return None;
        }
        let ids: Vec<RuleId> = product.states.iter().map(|_| self.new_rule("mult_range")).collect();
        let step = |(d, i): &(u8, usize)| seq(vec![dec_digit(*d, *d), Expr::Rule(ids[*i])]);
        for (i, s) in product.states.iter().enumerate() {
            let mut alts: Vec<Expr> = product.edges[i].iter().map(step).collect();
            if range.accepts(*s) {
                alts.push(Expr::Empty);
            }
            self.define(ids[i], choice(alts));
        }
        // `0` is a multiple of every `k`; it is in range when `from` is 0.
        let zero = (from == "0").then(|| Expr::literal("0"));
        Some(choice(zero.into_iter().chain(first.iter().map(step)).collect()))
    }
}
